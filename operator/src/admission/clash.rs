//! A bundle ConfigMap name that clashes (Deny): the Agent's bundle ConfigMap name (set,
//! or the default `<agent>-mcpgov-bundle`) is another Agent's of the same namespace, or
//! names a ConfigMap mcpgov did not create. The operator would publish neither bundle
//! safely: it never overwrites a ConfigMap it does not own, and two Agents writing one
//! ConfigMap would take turns. The words are shared with `mcpgov check`, which sees the
//! Agents of its input (docs/admission.md, "Deny").

use crate::text;
use mcpgov_engine::ObjKey;
use std::collections::BTreeMap;

const CHOOSE: &str = "choose another spec.bundle.configMapName";

/// The finding's message: `name` is also `other`'s bundle.
pub fn shared_message(name: &str, other: &ObjKey) -> String {
    format!(
        "bundle ConfigMap name {} is also the bundle of Agent {}: {CHOOSE}",
        text::quote(name, 260),
        text::escape(&other.to_string())
    )
}

/// The finding's message: `name` is a ConfigMap mcpgov did not create.
pub fn foreign_message(name: &str) -> String {
    format!(
        "bundle ConfigMap name {} is taken by a ConfigMap mcpgov did not create: {CHOOSE}",
        text::quote(name, 260)
    )
}

/// Another Agent of `agent`'s namespace whose bundle is `name` (the first by name).
pub fn other_agent<'a>(
    names: &'a BTreeMap<ObjKey, String>,
    agent: &ObjKey,
    name: &str,
) -> Option<&'a ObjKey> {
    names
        .range(ObjKey::new(&agent.namespace, "")..)
        .take_while(|(k, _)| k.namespace == agent.namespace)
        .find(|(k, n)| *k != agent && n.as_str() == name)
        .map(|(k, _)| k)
}

/// Every clash among `names` (Agent -> its bundle name), each Agent with the first other
/// one it clashes with: what `mcpgov check` reports.
pub fn among(names: &BTreeMap<ObjKey, String>) -> Vec<(ObjKey, String)> {
    names
        .iter()
        .filter_map(|(agent, name)| {
            other_agent(names, agent, name).map(|o| (agent.clone(), shared_message(name, o)))
        })
        .collect()
}

/// Whether the ConfigMap `name` in `namespace` exists and is not one mcpgov made for
/// an Agent (`controller::bundles::owner`). A ConfigMap mcpgov made for another Agent
/// is left to the Agents' own check (that Agent may be gone, its ConfigMap collected).
pub async fn foreign_config_map(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<bool, kube::Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
    Ok(api
        .get_opt(name)
        .await?
        .is_some_and(|cm| crate::controller::bundles::owner(&cm).is_none()))
}
