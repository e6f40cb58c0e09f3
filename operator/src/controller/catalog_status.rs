//! The crawler's part of MCPServer status (field manager `mcpgov-crawler`): the catalog,
//! kept bounded, and the `Crawled` condition. On failure the last good catalog is
//! re-applied unchanged, so it stays (stale, with its age) rather than vanishing.

use super::conditions::{self as c, cond};
use super::crawl::Outcome;
use crate::crawler;
use crate::crd::server::{
    MCPServerStatus, ResourceStatus, ServerInfo, ToolAnnotations, ToolStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use mcpgov_engine as engine;
use serde_json::{Value, json};

/// Above this many bytes of tool entries, status keeps names and digests only.
pub const TOOLS_STATUS_BUDGET: usize = 128 * 1024;

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

/// Catalog fields of a successful crawl, bounded.
fn catalog_fields(c: &crawler::Catalog, finished: &jiff::Timestamp) -> Value {
    let mut tools: Vec<ToolStatus> = c.tools.iter().map(tool_status).collect();
    let full = serde_json::to_vec(&tools)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    let truncated = full > TOOLS_STATUS_BUDGET;
    if truncated {
        for t in &mut tools {
            *t = ToolStatus {
                name: std::mem::take(&mut t.name),
                contract_digest: t.contract_digest.take(),
                ..Default::default()
            };
        }
    }
    let resources: Vec<ResourceStatus> = c
        .resources
        .iter()
        .take(200)
        .map(|r| ResourceStatus {
            uri: r.uri.clone(),
            name: r.name.clone(),
            mime_type: r.mime_type.clone(),
        })
        .collect();
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

/// The status the crawler applies for one outcome, given the current status.
pub fn status_for(outcome: &Outcome, current: &MCPServerStatus, generation: Option<i64>) -> Value {
    let now = Time(outcome.finished);
    let (mut fields, crawled) = match &outcome.result {
        Ok(cat) => (
            catalog_fields(cat, &outcome.finished),
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
            (
                kept_fields(current),
                cond(c::CRAWLED, false, f.reason, format!("{}{kept}", f.message)),
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
                json!(format!("{}: {}", f.reason, f.message)),
            );
        }
    }
    fields
}
