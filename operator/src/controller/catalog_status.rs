//! The crawler's part of MCPServer status (field manager `mcpgov-crawler`): the catalog,
//! kept bounded, and the `Crawled` condition. On failure the last good catalog is
//! re-applied unchanged, so it stays (stale, with its age) rather than vanishing.
//!
//! Bounded as a whole, whatever the server sends: the API server refuses an object over
//! its request limit (etcd's 1.5 MiB by default, spec and metadata included), and a
//! refused write would leave no `Crawled` condition at all. Every string in it is already
//! bounded and escaped by the crawler; here the lists are: full tool entries up to
//! [`TOOLS_STATUS_BUDGET`], else names and digests up to [`NAMES_STATUS_BUDGET`] (the
//! first ones by name past that; `toolCount` keeps the real count), resources up to
//! [`RESOURCES_STATUS_BUDGET`] and 200 entries. All the crawler writes stays under
//! [`STATUS_BUDGET`].

use super::conditions::{self as c, cond};
use super::crawl::Outcome;
use crate::crawler;
use crate::crawler::untrusted::{self, MAX_MESSAGE};
use crate::crd::server::{
    MCPServerStatus, ResourceStatus, ServerInfo, ToolAnnotations, ToolStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use mcpgov_engine as engine;
use serde_json::{Value, json};

/// Above this many bytes of tool entries, status keeps names and digests only.
pub const TOOLS_STATUS_BUDGET: usize = 128 * 1024;
/// Names and digests of tools in status, at most (the first ones by name).
pub const NAMES_STATUS_BUDGET: usize = 384 * 1024;
/// Resource entries in status, at most (and at most 200 of them).
pub const RESOURCES_STATUS_BUDGET: usize = 64 * 1024;
/// What the crawler writes into one MCPServer's status, at most.
pub const STATUS_BUDGET: usize = 512 * 1024;
const MAX_RESOURCES: usize = 200;

fn tool_status(t: &crawler::Tool) -> ToolStatus {
    ToolStatus {
        name: t.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        annotations: Some(ToolAnnotations {
            title: t.annotations.title.clone(),
            read_only_hint: t.annotations.read_only_hint,
            destructive_hint: t.annotations.destructive_hint,
            idempotent_hint: t.annotations.idempotent_hint,
            open_world_hint: t.annotations.open_world_hint,
        }),
        contract_digest: Some(t.contract_digest.clone()),
    }
}

/// The engine's (full) catalog from a crawl: the graph never sees a truncated list.
pub fn engine_catalog(c: &crawler::Catalog) -> engine::Catalog {
    engine::Catalog {
        tools: c
            .tools
            .iter()
            .map(|t| engine::CatalogTool {
                name: t.name.clone(),
                description: t.description.clone(),
                annotations: engine::Annotations {
                    read_only_hint: t.annotations.read_only_hint,
                    destructive_hint: t.annotations.destructive_hint,
                    idempotent_hint: t.annotations.idempotent_hint,
                    open_world_hint: t.annotations.open_world_hint,
                },
                contract_digest: Some(t.contract_digest.clone()),
            })
            .collect(),
        resources: c
            .resources
            .iter()
            .map(|r| engine::CatalogResource {
                uri: r.uri.clone(),
                name: r.name.clone(),
            })
            .collect(),
    }
}

/// Serialized size of one list entry, with its comma.
fn entry_size<T: serde::Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX / 2, |v| v.len() + 1)
}

/// As many entries as fit in `budget` bytes, in order.
fn within<T: serde::Serialize>(items: impl Iterator<Item = T>, budget: usize) -> (Vec<T>, bool) {
    let mut used = 0;
    let mut out = Vec::new();
    for item in items {
        used += entry_size(&item);
        if used > budget {
            return (out, true);
        }
        out.push(item);
    }
    (out, false)
}

/// Tool entries for status: full while they fit, else names and digests while they fit.
fn tool_entries(c: &crawler::Catalog) -> (Vec<ToolStatus>, bool) {
    let (full, over) = within(c.tools.iter().map(tool_status), TOOLS_STATUS_BUDGET);
    if !over {
        return (full, false);
    }
    drop(full);
    let names = c.tools.iter().map(|t| ToolStatus {
        name: t.name.clone(),
        contract_digest: Some(t.contract_digest.clone()),
        ..Default::default()
    });
    (within(names, NAMES_STATUS_BUDGET).0, true)
}

/// Catalog fields of a successful crawl, bounded.
fn catalog_fields(c: &crawler::Catalog, finished: &jiff::Timestamp) -> Value {
    let (tools, truncated) = tool_entries(c);
    let resources = c
        .resources
        .iter()
        .take(MAX_RESOURCES)
        .map(|r| ResourceStatus {
            uri: r.uri.clone(),
            name: r.name.clone(),
            mime_type: r.mime_type.clone(),
        });
    let (resources, _) = within(resources, RESOURCES_STATUS_BUDGET);
    json!({
        "serverInfo": ServerInfo { name: c.server_name.clone(), version: c.server_version.clone() },
        "protocolVersion": c.protocol_version,
        "catalogDigest": c.catalog_digest,
        "toolCount": c.tools.len(),
        "truncated": truncated,
        "tools": tools,
        "resources": resources,
        "clientCapabilities": String::from_utf8(engine::canonical::to_canonical_json(&c.client_capabilities)).unwrap_or_default(),
        "notImplemented": c.not_implemented,
        "lastSuccessfulCrawlTime": finished.to_string(),
    })
}

/// The previous crawler-owned catalog fields, re-sent so a failed crawl keeps them.
fn kept_fields(current: &MCPServerStatus) -> Value {
    let mut v = json!({
        "serverInfo": current.server_info,
        "protocolVersion": current.protocol_version,
        "catalogDigest": current.catalog_digest,
        "toolCount": current.tool_count,
        "truncated": current.truncated,
        "tools": current.tools,
        "resources": current.resources,
        "clientCapabilities": current.client_capabilities,
        "notImplemented": current.not_implemented,
        "lastSuccessfulCrawlTime": current.last_successful_crawl_time,
    });
    if let Some(m) = v.as_object_mut() {
        m.retain(|_, x| !x.is_null());
    }
    v
}

/// `status.contracts` added when there is one (left out, so removed, under Trust).
fn with_contracts(
    mut fields: Value,
    contracts: Option<crate::crd::server::ContractsStatus>,
) -> Value {
    if let (Some(m), Some(c)) = (fields.as_object_mut(), contracts) {
        m.insert("contracts".into(), json!(c));
    }
    fields
}

/// The status the crawler applies for one outcome, given the current status.
pub fn status_for(outcome: &Outcome, current: &MCPServerStatus, generation: Option<i64>) -> Value {
    let now = Time(outcome.finished);
    let (mut fields, crawled) = match &outcome.result {
        Ok(cat) => (
            with_contracts(
                catalog_fields(cat, &outcome.finished),
                super::contract_status::contracts_status(
                    &outcome.spec.contracts,
                    cat,
                    current.contracts.as_ref(),
                ),
            ),
            cond(
                c::CRAWLED,
                true,
                "CrawlSucceeded",
                format!(
                    "{} tool(s), protocol {}, {} ms",
                    cat.tools.len(),
                    cat.protocol_version,
                    outcome.duration.as_millis()
                ),
            ),
        ),
        Err(f) => {
            let kept = match &current.last_successful_crawl_time {
                Some(t) => format!("; the catalog of {t} is kept (stale)"),
                None => "; no catalog yet: its tools stay unresolved".to_string(),
            };
            // A pinned server keeps its last diff with its last catalog.
            let kept_contracts = match outcome.spec.contracts.mode {
                engine::ContractMode::Pinned => current.contracts.clone(),
                engine::ContractMode::Trust => None,
            };
            (
                with_contracts(kept_fields(current), kept_contracts),
                cond(
                    c::CRAWLED,
                    false,
                    f.reason,
                    format!("{}{kept}", untrusted::line(&f.message, MAX_MESSAGE)),
                ),
            )
        }
    };
    let ours: Vec<_> = current
        .conditions
        .iter()
        .filter(|x| x.type_ == c::CRAWLED)
        .cloned()
        .collect();
    let conditions = c::merge(&ours, vec![crawled], generation, &now);
    if let Some(m) = fields.as_object_mut() {
        m.insert("conditions".into(), json!(conditions));
        m.insert("lastCrawlTime".into(), json!(outcome.finished.to_string()));
        if let Err(f) = &outcome.result {
            m.insert(
                "lastError".into(),
                json!(format!(
                    "{}: {}",
                    f.reason,
                    untrusted::line(&f.message, MAX_MESSAGE)
                )),
            );
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::crawl::{CrawlSpec, Failure};
    use mcpgov_engine::ObjKey;
    use std::time::Duration;

    fn outcome(result: Result<crawler::Catalog, Failure>) -> Outcome {
        Outcome {
            key: ObjKey::new("ns".to_string(), "s".to_string()),
            spec: CrawlSpec {
                url: "http://x/mcp".into(),
                sse: false,
                headers: vec![],
                timeout: Duration::from_secs(1),
                interval: Duration::from_secs(10),
                max_tools: 100_000,
                max_bytes: 1 << 20,
                contracts: Default::default(),
            },
            finished: jiff::Timestamp::now(),
            duration: Duration::from_millis(5),
            result,
        }
    }

    fn tool(name: String, description: Option<String>) -> crawler::Tool {
        crawler::Tool {
            name,
            title: Some("t".repeat(1024)),
            description,
            annotations: crawler::Annotations::default(),
            contract_digest: format!("sha256:{}", "0".repeat(64)),
            parts: Default::default(),
        }
    }

    fn catalog(tools: Vec<crawler::Tool>, resources: usize) -> crawler::Catalog {
        crawler::Catalog {
            protocol_version: "2025-11-25".into(),
            server_name: "s".repeat(256),
            server_version: Some("v".repeat(256)),
            client_capabilities: json!({}),
            tools,
            resources: (0..resources)
                .map(|i| crawler::Resource {
                    uri: format!("file:///{i}/{}", "u".repeat(4000)),
                    name: Some("n".repeat(1024)),
                    mime_type: Some("m".repeat(256)),
                })
                .collect(),
            resource_templates: vec![],
            not_implemented: vec![],
            bytes: 0,
            catalog_digest: format!("sha256:{}", "1".repeat(64)),
            pages: 1,
        }
    }

    fn size(v: &Value) -> usize {
        serde_json::to_vec(v).unwrap().len()
    }

    /// Regression (issue 10, §7): status must stay within what the API server accepts
    /// whatever the server sends. The worst catalog the crawler can keep: the longest
    /// names, titles and descriptions it keeps, the most tools, resources with the
    /// longest URIs; and the longest failure message.
    #[test]
    fn status_stays_within_its_budget_for_the_worst_catalog() {
        let worst: Vec<crawler::Tool> = (0..20_000)
            .map(|i| {
                tool(
                    format!("{i:06}{}", "n".repeat(250)),
                    Some("d".repeat(64 * 1024)),
                )
            })
            .collect();
        let mut o = outcome(Ok(catalog(worst, 1000)));
        // Pinned, with half the tools approved (as other contracts): the diff shares
        // the budget.
        o.spec.contracts = engine::Contracts {
            mode: engine::ContractMode::Pinned,
            approved: (0..10_000)
                .map(|i| {
                    (
                        format!("{i:06}{}", "n".repeat(250)),
                        format!("sha256:f{i:063}"),
                    )
                })
                .collect(),
        };
        let st = status_for(&o, &MCPServerStatus::default(), Some(1));
        assert!(size(&st) <= STATUS_BUDGET, "{} bytes", size(&st));
        assert_eq!(st["contracts"]["pendingCount"], json!(20_000));
        assert_eq!(st["truncated"], json!(true));
        assert_eq!(st["toolCount"], json!(20_000));
        let tools = st["tools"].as_array().unwrap();
        assert!(!tools.is_empty() && tools.len() < 20_000);
        assert!(tools[0].get("description").is_none());
        assert!(tools[0]["contractDigest"].is_string());

        // A failure keeps that catalog, and adds a bounded message.
        let current: MCPServerStatus = serde_json::from_value(st).unwrap();
        let f = Failure {
            reason: "RpcError",
            message: "\u{1b}[31m".repeat(1 << 20),
        };
        let st = status_for(&outcome(Err(f)), &current, Some(1));
        assert!(size(&st) <= STATUS_BUDGET, "{} bytes", size(&st));
        let last = st["lastError"].as_str().unwrap();
        assert!(
            last.len() <= MAX_MESSAGE + 16 && !last.contains('\u{1b}'),
            "{last}"
        );
        let msg = st["conditions"][0]["message"].as_str().unwrap();
        assert!(
            msg.len() <= MAX_MESSAGE + 128 && !msg.contains('\u{1b}'),
            "{msg}"
        );
    }

    #[test]
    fn small_catalogs_are_kept_whole_and_descriptions_push_to_names_only() {
        let few: Vec<crawler::Tool> = (0..10)
            .map(|i| tool(format!("t{i}"), Some("short".into())))
            .collect();
        let st = status_for(
            &outcome(Ok(catalog(few, 2))),
            &MCPServerStatus::default(),
            None,
        );
        assert_eq!(st["truncated"], json!(false));
        assert_eq!(st["tools"].as_array().unwrap().len(), 10);
        assert_eq!(st["tools"][0]["description"], json!("short"));
        assert_eq!(st["resources"].as_array().unwrap().len(), 2);
        // 60 tools with 4 KiB descriptions: over the full-entry budget, all names kept.
        let wordy: Vec<crawler::Tool> = (0..60)
            .map(|i| tool(format!("t{i:02}"), Some("d".repeat(4096))))
            .collect();
        let st = status_for(
            &outcome(Ok(catalog(wordy, 0))),
            &MCPServerStatus::default(),
            None,
        );
        assert_eq!(st["truncated"], json!(true));
        assert_eq!(st["tools"].as_array().unwrap().len(), 60);
    }
}
