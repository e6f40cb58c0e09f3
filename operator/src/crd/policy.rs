//! Policy: what a Deny (or Allow) governs — resource URI globs and tool selectors.

use super::common::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "mcpgov.io",
    version = "v1alpha1",
    kind = "Policy",
    plural = "policies",
    singular = "policy",
    namespaced,
    status = "PolicyStatus",
    shortname = "mcppolicy",
    category = "mcpgov",
    doc = "What a Policy governs: resources and tools. Deny always wins; Allow never denies.",
    printcolumn = r#"{"name": "Effect", "type": "string", "jsonPath": ".spec.effect"}"#,
    printcolumn = r#"{"name": "Violations", "type": "integer", "jsonPath": ".status.violations"}"#,
    printcolumn = r#"{"name": "Orphan", "type": "boolean", "jsonPath": ".status.orphan"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name": "Reached By", "type": "string", "priority": 1, "jsonPath": ".status.reachedBy"}"#,
    printcolumn = r#"{"name": "Description", "type": "string", "priority": 1, "jsonPath": ".spec.description"}"#
)]
#[serde(rename_all = "camelCase")]
/// What the Policy governs and with which effect; authored.
pub struct PolicySpec {
    /// Deny: reaching what it governs is a violation unless a Grant declares an expected
    /// exception. Allow: documents sanctioned reach and never denies. Deny always wins.
    pub effect: Effect,
    /// Free text for people: why this Policy exists, who owns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub description: Option<String>,
    /// The resources and tools this Policy governs; at least one of either.
    pub governs: Governs,
    /// Who may declare expected exceptions to this Policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceptions: Option<ExceptionRules>,
    /// Static (default): reaching a governed resource is a violation. PerCall: a tool
    /// that reaches this Policy only through argument-bound dataAccess stays eligible
    /// (reason GuardedPerCall) and the gateway blocks each call whose argument names a
    /// governed resource (docs/semantics.md, "Per-call enforcement").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Enforcement>,
    /// What the admission webhook does about a Grant, Agent or MCPServer change that
    /// creates a new violation of this Policy: Warn (default) or Enforce (refuse it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<AdmissionMode>,
}

/// How a Deny is enforced: Static or PerCall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Enforcement {
    Static,
    PerCall,
}

/// The admission webhook's answer to a change that creates a new violation of a Policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AdmissionMode {
    /// Admit it with a warning (kubectl apply prints it).
    #[default]
    Warn,
    /// Refuse it, with the evidence path, until an expected exception the Policy allows
    /// is declared (docs/admission.md).
    Enforce,
}

/// A Policy's effect: Deny or Allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Effect {
    Deny,
    Allow,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "(has(self.resources) ? size(self.resources) : 0) + (has(self.tools) ? size(self.tools) : 0) > 0",
    "message": "a Policy must govern at least one resource or tool"
}]))]
/// Resources and tools a Policy governs (GOVERNED_BY edges).
pub struct Governs {
    /// Resource URIs or globs: every tool that reads or writes a matching resource is
    /// governed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub resources: Vec<ResourceBinding>,
    /// Tool keys or globs governed directly, whatever data they touch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub tools: Vec<ToolBinding>,
}

/// One governed resource URI or glob, with where the binding comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceBinding {
    /// Resource URI or URI glob (`*` within a path segment, `**` across segments); at
    /// most 1,024 bytes and 16 wildcards (docs/security.md).
    #[schemars(
        regex(
            pattern = r"^[A-Za-z][A-Za-z0-9+.-]*:[^*\s]*(\*{1,2}[^*\s]+){0,15}(\*{1,2}[^*\s]*)?$"
        ),
        length(min = 1, max = 1024)
    )]
    pub uri: String,
    #[serde(default)]
    pub provenance: Provenance,
}

/// One governed tool key or glob, with where the binding comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolBinding {
    /// Tool key or glob: `server::tool`, `namespace/server::tool`, or a bare tool name.
    #[schemars(
        regex(pattern = r"^(([a-z0-9*][-a-z0-9.*]*/)?[a-z0-9*][-a-z0-9.*]*::)?[^\s:/][^\s]*$"),
        length(max = 512)
    )]
    pub tool: String,
    #[serde(default)]
    pub provenance: Provenance,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Which namespaces' Grants may declare expected exceptions to a Policy.
pub struct ExceptionRules {
    /// Namespaces whose Grants may declare exceptions; `*` for all. Default: the
    /// Policy's own namespace only.
    #[schemars(
        length(max = 256),
        inner(
            regex(pattern = r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"),
            length(max = 63)
        )
    )]
    pub allowed_namespaces: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Written by the operator: who reaches this Policy and how often it is violated.
pub struct PolicyStatus {
    /// Ready, Active (reason Governing or Orphan; False when invalid), Reconciling, Stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Agents that reach this Policy through a granted tool (capped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reached_by: Vec<String>,
    /// Violating (agent, tool) paths into this Policy not covered by an expected exception.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<i64>,
    /// True when no agent reaches anything this Policy governs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan: Option<bool>,
}
