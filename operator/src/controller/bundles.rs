//! The bundle ConfigMap of an Agent: stable name, owner reference, labels, and the
//! annotations that identify what it was compiled from.

use super::watch::{MANAGED_BY, MANAGER};
use crate::crd::Agent;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use mcpgov_engine::Bundle;
use std::collections::BTreeMap;

pub const DATA_KEY: &str = "bundle.json";
pub const AGENT_LABEL: &str = "mcpgov.io/agent";
pub const SHA_ANNOTATION: &str = "mcpgov.io/bundle-sha256";
pub const REVISION_ANNOTATION: &str = "mcpgov.io/revision";
pub const INSTANCE_ANNOTATION: &str = "mcpgov.io/graph-instance";
pub const GENERATION_ANNOTATION: &str = "mcpgov.io/graph-generation";

/// `spec.bundle.configMapName`, or `<agent>-mcpgov-bundle`.
pub fn config_map_name(agent: &Agent) -> String {
    agent
        .spec
        .bundle
        .as_ref()
        .and_then(|b| b.config_map_name.clone())
        .unwrap_or_else(|| format!("{}-mcpgov-bundle", agent.name_any()))
}

pub fn enabled(agent: &Agent) -> bool {
    agent.spec.bundle.as_ref().is_none_or(|b| b.enabled)
}

/// Key of the bundle's sha256 in a ConfigMap as the index holds it (never written).
const HELD_DIGEST: &str = "mcpgov.io/held-sha256";

/// What the index keeps of a bundle ConfigMap: its metadata and, in place of the
/// bundle bytes, their sha256 — otherwise every agent's bundle would sit in memory
/// for as long as the operator runs (39 MB on the 500-agent estate).
pub fn held(mut cm: ConfigMap) -> ConfigMap {
    let bytes = cm.data.as_ref().and_then(|d| d.get(DATA_KEY));
    let digest = bytes.map(|b| mcpgov_engine::canonical::sha256_hex(b.as_bytes()));
    cm.data = digest.map(|d| BTreeMap::from([(HELD_DIGEST.to_string(), d)]));
    cm.binary_data = None;
    cm
}

/// The sha256 of the bundle a held ConfigMap carries.
pub fn held_digest(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get(HELD_DIGEST).map(String::as_str)
}

pub fn revision(cm: &ConfigMap) -> i64 {
    cm.annotations()
        .get(REVISION_ANNOTATION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

pub fn desired(
    agent: &Agent,
    bundle: &Bundle,
    revision: i64,
    instance: &str,
    generation: u64,
) -> ConfigMap {
    let labels = BTreeMap::from([
        (MANAGED_BY.to_string(), MANAGER.to_string()),
        (AGENT_LABEL.to_string(), agent.name_any()),
    ]);
    let annotations = BTreeMap::from([
        (SHA_ANNOTATION.to_string(), bundle.sha256.clone()),
        (REVISION_ANNOTATION.to_string(), revision.to_string()),
        (INSTANCE_ANNOTATION.to_string(), instance.to_string()),
        (GENERATION_ANNOTATION.to_string(), generation.to_string()),
    ]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(agent)),
            namespace: agent.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: agent.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            DATA_KEY.to_string(),
            String::from_utf8(bundle.bytes.clone()).expect("bundles are UTF-8 JSON"),
        )])),
        ..Default::default()
    }
}
