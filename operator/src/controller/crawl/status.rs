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

use super::Outcome;
use crate::controller::conditions::{self as c, cond};
use crate::crawler;
use crate::crawler::untrusted::{self, MAX_MESSAGE};
use crate::crd::server::{MCPServerStatus, ResourceStatus, ServerInfo, ToolStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use mcpgov_engine as engine;
use serde::Serialize;
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
    let (full, over) = within(c.tools.iter().map(ToolStatus::from), TOOLS_STATUS_BUDGET);
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

/// The catalog fields of MCPServer status, the crawler's field manager's: the one list
/// of them, written by a crawl ([`CatalogFields::crawled`]), re-sent unchanged after a
/// failed one and by `mcpgov catalog apply` (`From<&MCPServerStatus>`). Absent fields
/// are left out of the patch rather than applied as null.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    pub tools: Vec<ToolStatus>,
    pub resources: Vec<ResourceStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<String>,
    pub not_implemented: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_successful_crawl_time: Option<String>,
}

impl CatalogFields {
    /// The fields of a successful crawl, bounded.
    pub fn crawled(c: &crawler::Catalog, finished: &jiff::Timestamp) -> CatalogFields {
        let (tools, truncated) = tool_entries(c);
        let resources = c
            .resources
            .iter()
            .take(MAX_RESOURCES)
            .map(ResourceStatus::from);
        let (resources, _) = within(resources, RESOURCES_STATUS_BUDGET);
        CatalogFields {
            server_info: Some(ServerInfo {
                name: c.server_name.clone(),
                version: c.server_version.clone(),
            }),
            protocol_version: Some(c.protocol_version.clone()),
            catalog_digest: Some(c.catalog_digest.clone()),
            tool_count: Some(c.tools.len() as i64),
            truncated: Some(truncated),
            tools,
            resources,
            client_capabilities: Some(
                String::from_utf8(engine::canonical::to_canonical_json(&c.client_capabilities))
                    .unwrap_or_default(),
            ),
            not_implemented: c.not_implemented.clone(),
            last_successful_crawl_time: Some(finished.to_string()),
        }
    }

    /// As a status patch (a JSON object).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }
}

/// The catalog a status holds, as it is: what a failed crawl re-sends so the last good
/// catalog stays (stale, with its age).
impl From<&MCPServerStatus> for CatalogFields {
    fn from(current: &MCPServerStatus) -> CatalogFields {
        CatalogFields {
            server_info: current.server_info.clone(),
            protocol_version: current.protocol_version.clone(),
            catalog_digest: current.catalog_digest.clone(),
            tool_count: current.tool_count,
            truncated: current.truncated,
            tools: current.tools.clone(),
            resources: current.resources.clone(),
            client_capabilities: current.client_capabilities.clone(),
            not_implemented: current.not_implemented.clone(),
            last_successful_crawl_time: current.last_successful_crawl_time.clone(),
        }
    }
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
                CatalogFields::crawled(cat, &outcome.finished).to_value(),
                crate::controller::contract_status::contracts_status(
                    &outcome.spec.contracts,
                    cat,
                    current.contracts.as_ref(),
                ),
            ),
            cond(
                c::CRAWLED,
                true,
                c::ConditionReason::CrawlSucceeded,
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
                with_contracts(CatalogFields::from(current).to_value(), kept_contracts),
                cond(
                    c::CRAWLED,
                    false,
                    c::Reason::Crawl(f.reason),
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

    /// The one field list: a failed crawl re-sends the catalog a good one wrote,
    /// field for field (absent ones left out, not nulled), and `mcpgov catalog apply`
    /// reads the same list back from a status.
    #[test]
    fn a_failed_crawl_resends_exactly_the_catalog_fields_a_good_one_wrote() {
        let cat = catalog(vec![tool("a".into(), Some("d".into()))], 2);
        let o = outcome(Ok(cat.clone()));
        let good = status_for(&o, &MCPServerStatus::default(), None);
        let written = CatalogFields::crawled(&cat, &o.finished).to_value();
        let current: MCPServerStatus = serde_json::from_value(good).unwrap();
        let kept = CatalogFields::from(&current).to_value();
        assert_eq!(kept, written);
        let failed = Failure {
            reason: "RpcError",
            message: "x".into(),
        };
        let st = status_for(&outcome(Err(failed)), &current, None);
        for (k, v) in kept.as_object().unwrap() {
            assert_eq!(&st[k], v, "{k}");
        }
        // Nothing known: only the lists, empty (never a null field).
        let none = CatalogFields::from(&MCPServerStatus::default()).to_value();
        assert_eq!(
            none,
            json!({"tools": [], "resources": [], "notImplemented": []})
        );
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
