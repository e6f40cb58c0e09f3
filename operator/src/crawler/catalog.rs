//! The retained catalog: tools, resources and resource templates as the crawler keeps
//! them, read from the listed JSON, and their digests.
//!
//! A tool's contract digest is `sha256:` over the canonical JSON (sorted keys, no
//! whitespace) of `{name, title, description, inputSchema, outputSchema, annotations}`,
//! with absent fields left out rather than written as `null`, and `annotations` left out
//! when it holds no known hint: a server that sends `"title": null` or `"annotations": {}`
//! has the same contract as one that omits them. Only the five known annotation fields
//! count. The catalog digest covers each tool's name and contract digest plus the
//! resources and templates, all sorted, so it changes exactly when the catalog does.

use super::CrawlError;
use mcpgov_engine::canonical::digest_of;
use serde::Serialize;
use serde_json::{Map, Value, json};

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
    /// Serialized size of the retained tools, resources and templates.
    pub bytes: usize,
    pub catalog_digest: String,
    /// List requests made, all lists together.
    pub pages: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    pub contract_digest: String,
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

fn bad(what: &str, index: usize, msg: &str) -> CrawlError {
    CrawlError::Protocol(format!("{what} #{index}: {msg}"))
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{key} is not a string")),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{key} is not a boolean")),
    }
}

fn opt_object(obj: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(_) => Err(format!("{key} is not an object")),
    }
}

fn required_string(obj: &Map<String, Value>, key: &str) -> Result<String, String> {
    match opt_string(obj, key)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(format!("{key} is missing or empty")),
    }
}

/// The digest of a tool's contract; see the module comment for what it covers.
pub(crate) fn contract_digest(
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
    input_schema: &Value,
    output_schema: Option<&Value>,
    annotations: &Annotations,
) -> String {
    let mut contract = Map::new();
    contract.insert("name".into(), json!(name));
    if let Some(t) = title {
        contract.insert("title".into(), json!(t));
    }
    if let Some(d) = description {
        contract.insert("description".into(), json!(d));
    }
    contract.insert("inputSchema".into(), input_schema.clone());
    if let Some(o) = output_schema {
        contract.insert("outputSchema".into(), o.clone());
    }
    if !annotations.is_empty() {
        contract.insert("annotations".into(), json!(annotations));
    }
    digest_of(&Value::Object(contract))
}

/// One `tools/list` item as the crawler retains it.
pub(crate) fn tool_from_json(v: &Value, index: usize) -> Result<Tool, CrawlError> {
    let read = || -> Result<Tool, String> {
        let obj = v.as_object().ok_or("not an object")?;
        let name = required_string(obj, "name")?;
        let title = opt_string(obj, "title")?;
        let description = opt_string(obj, "description")?;
        let input_schema = opt_object(obj, "inputSchema")?.ok_or("inputSchema is missing")?;
        let output_schema = opt_object(obj, "outputSchema")?;
        let annotations = match opt_object(obj, "annotations")? {
            None => Annotations::default(),
            Some(Value::Object(a)) => Annotations {
                title: opt_string(&a, "title")?,
                read_only_hint: opt_bool(&a, "readOnlyHint")?,
                destructive_hint: opt_bool(&a, "destructiveHint")?,
                idempotent_hint: opt_bool(&a, "idempotentHint")?,
                open_world_hint: opt_bool(&a, "openWorldHint")?,
            },
            Some(_) => unreachable!("opt_object returns objects"),
        };
        let contract_digest = contract_digest(
            &name,
            title.as_deref(),
            description.as_deref(),
            &input_schema,
            output_schema.as_ref(),
            &annotations,
        );
        Ok(Tool {
            name,
            title,
            description,
            input_schema,
            output_schema,
            annotations,
            contract_digest,
        })
    };
    read().map_err(|m| bad("tool", index, &m))
}

pub(crate) fn resource_from_json(v: &Value, index: usize) -> Result<Resource, CrawlError> {
    let read = || -> Result<Resource, String> {
        let obj = v.as_object().ok_or("not an object")?;
        Ok(Resource {
            uri: required_string(obj, "uri")?,
            name: opt_string(obj, "name")?,
            mime_type: opt_string(obj, "mimeType")?,
        })
    };
    read().map_err(|m| bad("resource", index, &m))
}

pub(crate) fn template_from_json(v: &Value, index: usize) -> Result<ResourceTemplate, CrawlError> {
    let read = || -> Result<ResourceTemplate, String> {
        let obj = v.as_object().ok_or("not an object")?;
        Ok(ResourceTemplate {
            uri_template: required_string(obj, "uriTemplate")?,
            name: opt_string(obj, "name")?,
        })
    };
    read().map_err(|m| bad("resource template", index, &m))
}

/// Serialized size of one retained item, the unit of `maxBytes`.
pub(crate) fn retained_bytes<T: Serialize>(item: &T) -> usize {
    serde_json::to_vec(item).map(|v| v.len()).unwrap_or(0)
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

    fn tool(v: Value) -> Tool {
        tool_from_json(&v, 0).unwrap()
    }

    #[test]
    fn same_tool_same_digest_whatever_the_key_order() {
        let a = tool(json!({
            "name": "search",
            "description": "Search things",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }));
        let b = tool(json!({
            "annotations": {"openWorldHint": false, "readOnlyHint": true},
            "inputSchema": {"required": ["q"], "properties": {"n": {"type": "integer"}, "q": {"type": "string"}}, "type": "object"},
            "description": "Search things",
            "name": "search"
        }));
        assert_eq!(a.contract_digest, b.contract_digest);
        assert!(a.contract_digest.starts_with("sha256:"));
        assert_eq!(a.contract_digest.len(), 7 + 64);
        // Recomputing gives the same value: the digest is a pure function of the contract.
        assert_eq!(tool(json!({
            "name": "search",
            "description": "Search things",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })).contract_digest, a.contract_digest);
    }

    #[test]
    fn null_empty_and_absent_are_the_same_contract() {
        let a = tool(json!({"name": "t", "inputSchema": {"type": "object"}}));
        let b = tool(
            json!({"name": "t", "title": null, "inputSchema": {"type": "object"},
            "annotations": {}, "outputSchema": null, "_meta": {"x": 1}, "icons": []}),
        );
        assert_eq!(a.contract_digest, b.contract_digest);
    }

    #[test]
    fn every_contract_field_changes_the_digest() {
        let base = json!({"name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"title": "A", "readOnlyHint": true, "destructiveHint": false,
                "idempotentHint": true, "openWorldHint": false}});
        let d0 = tool(base.clone()).contract_digest;
        let changes: Vec<(&str, Value)> = vec![
            ("/name", json!("u")),
            ("/title", json!("T2")),
            ("/description", json!("d2")),
            ("/inputSchema", json!({"type": "object", "properties": {}})),
            ("/outputSchema", json!({"type": "string"})),
            ("/annotations/title", json!("B")),
            ("/annotations/readOnlyHint", json!(false)),
            ("/annotations/destructiveHint", json!(true)),
            ("/annotations/idempotentHint", json!(false)),
            ("/annotations/openWorldHint", json!(true)),
        ];
        for (path, value) in changes {
            let mut v = base.clone();
            *v.pointer_mut(path).unwrap() = value;
            assert_ne!(tool(v).contract_digest, d0, "{path}");
        }
    }

    #[test]
    fn malformed_items_are_protocol_errors() {
        for v in [
            json!("x"),
            json!({"inputSchema": {}}),
            json!({"name": "", "inputSchema": {}}),
            json!({"name": "t"}),
            json!({"name": "t", "inputSchema": []}),
            json!({"name": "t", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}),
        ] {
            let e = tool_from_json(&v, 3).unwrap_err();
            assert!(e.to_string().contains("tool #3"), "{e}");
        }
        assert!(resource_from_json(&json!({"name": "n"}), 0).is_err());
        assert!(template_from_json(&json!({"uri": "x"}), 0).is_err());
    }

    #[test]
    fn catalog_is_sorted_and_its_digest_ignores_listing_order() {
        let agreed = Agreed {
            protocol_version: "2025-11-25".into(),
            server_name: "s".into(),
            server_version: None,
            client_capabilities: json!({}),
        };
        let t = |n: &str| tool(json!({"name": n, "inputSchema": {"type": "object"}}));
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
