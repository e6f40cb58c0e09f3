//! `mcpgov catalog apply` (also `mcpgov::catalog`): write MCPServer status catalogs from
//! a file (tests, demos, air-gapped clusters). The crawler is the normal path; both
//! write the same fields ([`super::status::CatalogFields`]) under their own field
//! manager, so the governance status written by the operator is left alone.

use crate::crd::MCPServer;
use crate::manifest::{Load, ReadLimits, Resource, load_paths};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use std::path::PathBuf;

pub use crate::names::CATALOG_FIELD_MANAGER;

/// Apply the status catalog of every MCPServer in `files` (read within the default
/// limits); returns how many.
pub async fn apply(files: &[PathBuf], default_ns: &str) -> Result<usize, String> {
    let loaded = load_paths(files, ReadLimits::default()).map_err(|e| e.to_string())?;
    apply_loaded(loaded, default_ns).await
}

/// Apply the status catalog of every MCPServer `loaded`; returns how many.
pub async fn apply_loaded(loaded: Load, default_ns: &str) -> Result<usize, String> {
    let loaded = loaded.objects;
    let client = Client::try_default()
        .await
        .map_err(|e| format!("cannot build a Kubernetes client: {e}"))?;
    let mut n = 0;
    for l in loaded {
        let Resource::MCPServer(s) = l.resource else {
            continue;
        };
        let Some(status) = s.status.as_ref().filter(|_| s.has_catalog()) else {
            continue;
        };
        let ns = s.namespace().unwrap_or_else(|| default_ns.to_string());
        let api: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
        // The crawler's own field list; a file without a count or a crawl time gets
        // the tools' count and now.
        let mut catalog = super::status::CatalogFields::from(status);
        catalog.tool_count = catalog.tool_count.or(Some(status.tools.len() as i64));
        catalog.last_successful_crawl_time = catalog
            .last_successful_crawl_time
            .or_else(|| Some(jiff::Timestamp::now().to_string()));
        let body = json!({
            "apiVersion": crate::crd::common::API_VERSION,
            "kind": "MCPServer",
            "status": catalog,
        });
        let pp = PatchParams::apply(CATALOG_FIELD_MANAGER).force();
        api.patch_status(&s.name_any(), &pp, &Patch::Apply(&body))
            .await
            .map_err(|e| {
                format!(
                    "{}: MCPServer {ns}/{}: {e}",
                    crate::text::path(&l.file),
                    s.name_any()
                )
            })?;
        n += 1;
    }
    Ok(n)
}
