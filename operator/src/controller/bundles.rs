//! The bundle ConfigMap of an Agent: stable name, owner reference, labels, and the
//! annotations that identify what it was compiled from.

use crate::crd::Agent;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use mcpgov_engine::Bundle;
use std::collections::BTreeMap;

pub use crate::names::{
    AGENT_LABEL, DATA_KEY, GENERATION_ANNOTATION, INSTANCE_ANNOTATION, REVISION_ANNOTATION,
    SHA_ANNOTATION,
};
use crate::names::{MANAGED_BY, MANAGER};

/// `spec.bundle.configMapName`, or `<agent>-mcpgov-bundle`.
pub fn config_map_name(agent: &Agent) -> String {
    agent
        .spec
        .bundle
        .as_ref()
        .and_then(|b| b.config_map_name.clone())
        .unwrap_or_else(|| format!("{}-mcpgov-bundle", agent.name_any()))
}

/// The Agent (name, uid) a ConfigMap was created for: its controller owner reference,
/// on a ConfigMap that carries our managed-by label. Nothing else counts as ours.
pub fn owner(cm: &ConfigMap) -> Option<(&str, &str)> {
    if cm.labels().get(MANAGED_BY).map(String::as_str) != Some(MANAGER) {
        return None;
    }
    cm.owner_references()
        .iter()
        .find(|o| {
            o.controller == Some(true)
                && o.kind == "Agent"
                && o.api_version == crate::crd::common::API_VERSION
        })
        .map(|o| (o.name.as_str(), o.uid.as_str()))
}

/// Whether `cm` is the bundle ConfigMap mcpgov created for this very Agent (same name
/// and uid: a deleted and re-created Agent of the same name does not inherit it).
pub fn owned_by(cm: &ConfigMap, agent: &Agent) -> bool {
    owner(cm).is_some_and(|(name, uid)| {
        name == agent.name_any() && agent.metadata.uid.as_deref() == Some(uid)
    })
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
    let data = cm.data.take().unwrap_or_default();
    // Already held (by the watch task) when it went through `held` before.
    let digest = match data.get(DATA_KEY) {
        Some(bytes) => Some(mcpgov_engine::canonical::sha256_hex(bytes.as_bytes())),
        None => data.get(HELD_DIGEST).cloned(),
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn agent(name: &str, uid: &str) -> Agent {
        let mut a = Agent::new(name, serde_json::from_str("{}").unwrap());
        a.metadata.namespace = Some("t".into());
        a.metadata.uid = Some(uid.into());
        a
    }

    #[test]
    fn only_a_configmap_created_for_this_agent_is_ours() {
        let a = agent("a", "uid-a");
        let bundle = Bundle {
            agent: mcpgov_engine::ObjKey::new("t", "a"),
            bytes: b"{}".to_vec(),
            sha256: "x".into(),
            governance_digest: String::new(),
            catalog_digest: String::new(),
        };
        let ours = desired(&a, &bundle, 1, "i", 1);
        assert!(owned_by(&ours, &a));
        assert_eq!(owner(&ours), Some(("a", "uid-a")));
        // Same name, new uid: a re-created Agent does not inherit it.
        assert!(!owned_by(&ours, &agent("a", "uid-2")));
        // Another Agent's.
        assert!(!owned_by(&ours, &agent("b", "uid-a")));
        // No managed-by label: someone else's object, whatever its owner references.
        let mut foreign = ours.clone();
        foreign.metadata.labels = None;
        assert_eq!(owner(&foreign), None);
        // Our label but no controller reference to an Agent.
        let mut forged = ours.clone();
        forged.metadata.owner_references = Some(vec![OwnerReference {
            controller: Some(false),
            ..ours.metadata.owner_references.clone().unwrap()[0].clone()
        }]);
        assert_eq!(owner(&forged), None);
    }

    #[test]
    fn held_keeps_the_digest_of_the_bundle_however_it_arrives() {
        let bytes = r#"{"kind":"MCPGovBundle"}"#;
        let want = mcpgov_engine::canonical::sha256_hex(bytes.as_bytes());
        let cm = ConfigMap {
            data: Some(BTreeMap::from([(DATA_KEY.to_string(), bytes.to_string())])),
            ..Default::default()
        };
        // Straight from our own write.
        assert_eq!(held_digest(&held(cm.clone())), Some(want.as_str()));
        // Held by the watch task, then held again (idempotent).
        let once = held(cm.clone());
        assert!(
            !serde_json::to_string(&once)
                .unwrap()
                .contains("MCPGovBundle")
        );
        assert_eq!(held_digest(&held(once)), Some(want.as_str()));
        // Someone else's data under our label holds no digest: it gets rewritten.
        let foreign = ConfigMap {
            data: Some(BTreeMap::from([("other".to_string(), "x".to_string())])),
            ..Default::default()
        };
        assert_eq!(held_digest(&held(foreign)), None);
    }
}
