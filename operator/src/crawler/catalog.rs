//! The retained catalog: tools, resources and resource templates as the crawler keeps
//! them (read by `page`), and the catalog digest.
//!
//! A tool's contract digest (`mcpgov_core::contract`, shared with the gateway) is
//! `sha256:` over the RFC 8785 canonical JSON of `{name, title, description,
//! inputSchema, outputSchema, annotations}`,
//! as the server sent them, with absent fields left out rather than written as `null`,
//! and `annotations` left out when it holds no known hint: a server that sends
//! `"title": null` or `"annotations": {}` has the same contract as one that omits them.
//! Only the five known annotation fields count. The schemas themselves are not kept:
//! nothing downstream reads them, and they are the bulk of a catalog. The catalog digest
//! covers each tool's name and contract digest plus the resources and templates, all
//! sorted, so it changes exactly when the catalog does.

use super::CrawlError;
use mcpgov_engine::canonical::digest_of;
use serde::Serialize;
use serde_json::{Value, json};

/// What the handshake settled, recorded in the catalog.
#[derive(Clone, Debug)]
pub(crate) struct Agreed {
    pub protocol_version: String,
    pub server_name: String,
    pub server_version: Option<String>,
    pub client_capabilities: Value,
}

/// A crawled catalog. Produced only by a crawl that completed within every cap.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    /// The protocol version the handshake agreed on.
    pub protocol_version: String,
    /// `serverInfo.name`; empty when a 2026-07-28 server does not send one.
    pub server_name: String,
    pub server_version: Option<String>,
    /// The capabilities the crawler declared (the same on every crawl).
    pub client_capabilities: Value,
    /// Sorted by name; names are unique.
    pub tools: Vec<Tool>,
    /// Sorted by URI.
    pub resources: Vec<Resource>,
    /// Sorted by URI template.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Listing methods the server does not offer: not declared in its capabilities, or
    /// answered with method-not-found (-32601).
    pub not_implemented: Vec<String>,
    /// Bytes of list responses read (what `maxBytes` bounds).
    pub bytes: usize,
    pub catalog_digest: String,
    /// List requests made, all lists together.
    pub pages: usize,
}

/// A tool as kept: its name as the server sent it; title, description and annotation
/// title escaped and bounded for display; the digest of its whole contract.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    pub contract_digest: String,
    /// The digest of each part of the contract, for approval diffs (not reported).
    #[serde(skip)]
    pub parts: mcpgov_core::contract::ContractParts,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    pub fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    pub uri_template: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What the listing phase collected, before sorting and digesting.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub not_implemented: Vec<String>,
    pub bytes: usize,
    pub pages: usize,
}

/// Digest of the whole catalog; inputs must already be sorted.
pub(crate) fn catalog_digest(
    tools: &[Tool],
    resources: &[Resource],
    templates: &[ResourceTemplate],
) -> String {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "contractDigest": t.contract_digest}))
        .collect();
    digest_of(&json!({
        "tools": tools,
        "resources": resources,
        "resourceTemplates": templates,
    }))
}

/// Sort, check tool names are unique, and digest.
pub(crate) fn finish(agreed: Agreed, mut listed: Listed) -> Result<Catalog, CrawlError> {
    listed.tools.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = listed.tools.windows(2).find(|w| w[0].name == w[1].name) {
        // Two contracts under one name cannot be governed; usually a paging bug.
        return Err(CrawlError::Protocol(format!(
            "tool {:?} is listed twice",
            w[0].name
        )));
    }
    listed.resources.sort_by(|a, b| a.uri.cmp(&b.uri));
    listed.resources.dedup();
    listed
        .resource_templates
        .sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
    listed.resource_templates.dedup();
    let catalog_digest =
        catalog_digest(&listed.tools, &listed.resources, &listed.resource_templates);
    Ok(Catalog {
        protocol_version: agreed.protocol_version,
        server_name: agreed.server_name,
        server_version: agreed.server_version,
        client_capabilities: agreed.client_capabilities,
        tools: listed.tools,
        resources: listed.resources,
        resource_templates: listed.resource_templates,
        not_implemented: listed.not_implemented,
        bytes: listed.bytes,
        catalog_digest,
        pages: listed.pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        let raw = serde_json::to_string(&json!({"name": name, "inputSchema": {"type": "object"}}))
            .unwrap();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&raw).unwrap();
        super::super::page::tool(raw, 0, &super::super::page::Clock::unbounded()).unwrap()
    }

    #[test]
    fn catalog_is_sorted_and_its_digest_ignores_listing_order() {
        let agreed = Agreed {
            protocol_version: "2025-11-25".into(),
            server_name: "s".into(),
            server_version: None,
            client_capabilities: json!({}),
        };
        let t = tool;
        let r = |u: &str| Resource {
            uri: u.into(),
            name: None,
            mime_type: None,
        };
        let one = finish(
            agreed.clone(),
            Listed {
                tools: vec![t("b"), t("a")],
                resources: vec![r("z://2"), r("z://1")],
                ..Listed::default()
            },
        )
        .unwrap();
        let two = finish(
            agreed.clone(),
            Listed {
                tools: vec![t("a"), t("b")],
                resources: vec![r("z://1"), r("z://2")],
                ..Listed::default()
            },
        )
        .unwrap();
        assert_eq!(one.tools[0].name, "a");
        assert_eq!(one.resources[0].uri, "z://1");
        assert_eq!(one.catalog_digest, two.catalog_digest);
        let three = finish(
            agreed.clone(),
            Listed {
                tools: vec![t("a")],
                ..Listed::default()
            },
        )
        .unwrap();
        assert_ne!(three.catalog_digest, one.catalog_digest);
        let dup = finish(
            agreed,
            Listed {
                tools: vec![t("a"), t("a")],
                ..Listed::default()
            },
        );
        assert_eq!(dup.unwrap_err().reason(), "ProtocolError");
    }
}
