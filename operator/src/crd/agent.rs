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
    printcolumn = r#"{"name": "Compliant", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Compliant\")].status"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name": "Exceptions", "type": "integer", "priority": 1, "jsonPath": ".status.exceptions"}"#,
    printcolumn = r#"{"name": "Bundle", "type": "string", "priority": 1, "jsonPath": ".status.bundle.configMapName"}"#,
    printcolumn = r#"{"name": "Revision", "type": "integer", "priority": 1, "jsonPath": ".status.bundle.revision"}"#,
    printcolumn = r#"{"name": "SHA256", "type": "string", "priority": 1, "jsonPath": ".status.bundle.sha256"}"#
)]
#[serde(rename_all = "camelCase")]
/// The agent's selector profile and bundle settings; authored.
pub struct AgentSpec {
    /// Free text for people: what the agent does, who runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub description: Option<String>,
    /// Which tools enter the bundle as eligible: Strict (default; only clean, fully
    /// mapped ALLOWs), Review (also declared exceptions and unmapped tools) or Explore
    /// (rejects only not-found, ambiguous, not-granted and drifted tools).
    #[serde(default)]
    pub profile: Profile,
    /// The policy bundle ConfigMap published for this agent; on by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleSettings>,
}

/// A selector profile: Strict, Review or Explore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Profile {
    #[default]
    Strict,
    Review,
    Explore,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Whether and where the agent's bundle is published.
pub struct BundleSettings {
    /// Publish the bundle ConfigMap (default true); false deletes the one mcpgov wrote.
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
/// One violation: a granted tool that reaches a Deny Policy with no expected exception.
pub struct ViolationStatus {
    /// The violating tool's key (`namespace/server::tool`).
    pub tool: String,
    /// The Deny Policy reached (`namespace/name`).
    pub policy: String,
    /// The governed resource on the path, when the Policy governs a resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The evidence: graph nodes from the agent to the Policy, in order.
    pub path: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// The bundle as published.
pub struct BundleStatus {
    /// The ConfigMap in the agent's namespace that holds the bundle.
    pub config_map_name: String,
    /// sha256 of the exact bundle bytes, for a gateway to check what it loaded.
    pub sha256: String,
    /// Counts up each time the bundle bytes change (also the ConfigMap's
    /// `mcpgov.io/revision` annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Written by the operator: the agent's verdicts, violations and published bundle.
pub struct AgentStatus {
    /// Ready, Compliant (False while violations exist), BundlePublished, Reconciling and
    /// Stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Granted tools the profile lets into the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible: Option<i64>,
    /// Granted tools the profile keeps out of the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<i64>,
    /// Deny-policy violations: reach into a Deny Policy with no expected exception.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<i64>,
    /// Deny-policy reach covered by an expected exception (authorizedButGoverned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceptions: Option<i64>,
    /// Granted tools with no READS/WRITES authored on their MCPServer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmapped: Option<i64>,
    /// Granted tools that no server exposes now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drifted: Option<i64>,
    /// Violations with their evidence paths (capped; `violations` has the full count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violation_details: Vec<ViolationStatus>,
    /// The bundle ConfigMap as last published; absent when disabled or not yet written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleStatus>,
}
