//! Agent: an AI agent whose tool access is governed, and its bundle settings.

use super::common::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "mcpgov.io",
    version = "v1alpha1",
    kind = "Agent",
    plural = "agents",
    singular = "agent",
    namespaced,
    status = "AgentStatus",
    shortname = "mcpagent",
    category = "mcpgov",
    doc = "An AI agent: its selector profile and the policy bundle published for it.",
    printcolumn = r#"{"name": "Profile", "type": "string", "jsonPath": ".spec.profile"}"#,
    printcolumn = r#"{"name": "Eligible", "type": "integer", "jsonPath": ".status.eligible"}"#,
    printcolumn = r#"{"name": "Violations", "type": "integer", "jsonPath": ".status.violations"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub description: Option<String>,
    /// Which tools enter the bundle as eligible: Strict, Review or Explore.
    #[serde(default)]
    pub profile: Profile,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleSettings>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Profile {
    #[default]
    Strict,
    Review,
    Explore,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleSettings {
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// ConfigMap name; default `<agent>-mcpgov-bundle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
        length(max = 253)
    )]
    pub config_map_name: Option<String>,
}

fn enabled() -> bool {
    true
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViolationStatus {
    pub tool: String,
    pub policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub path: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    pub config_map_name: String,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceptions: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmapped: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drifted: Option<i64>,
    /// Violations with their evidence paths (capped; `violations` has the full count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violation_details: Vec<ViolationStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleStatus>,
}
