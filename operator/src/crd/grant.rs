//! Grant: which tools an Agent may call, and the deny-zone reach it declares on purpose.

use super::common::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "mcpgov.io",
    version = "v1alpha1",
    kind = "Grant",
    plural = "grants",
    singular = "grant",
    namespaced,
    status = "GrantStatus",
    shortname = "mcpgrant",
    category = "mcpgov",
    doc = "Tools an Agent of the same namespace may call, with its expected exceptions.",
    printcolumn = r#"{"name": "Agent", "type": "string", "jsonPath": ".spec.agent"}"#,
    printcolumn = r#"{"name": "Tools", "type": "integer", "jsonPath": ".status.resolvedTools"}"#,
    printcolumn = r#"{"name": "Resolved", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Resolved\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name": "Exceptions For", "type": "string", "priority": 1, "jsonPath": ".spec.expectedExceptions[*].policy"}"#,
    printcolumn = r#"{"name": "Unresolved", "type": "string", "priority": 1, "jsonPath": ".status.unresolved[*].reference"}"#
)]
#[serde(rename_all = "camelCase")]
/// The agent, the tools it may call and the Deny reach it declares on purpose; authored.
pub struct GrantSpec {
    /// An Agent in the Grant's own namespace.
    #[schemars(
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
        length(max = 253)
    )]
    pub agent: String,
    /// Tool keys or globs: `server::tool`, `namespace/server::tool`, or a bare name.
    #[schemars(
        length(min = 1, max = 1000),
        inner(
            regex(pattern = r"^(([a-z0-9*][-a-z0-9.*]*/)?[a-z0-9*][-a-z0-9.*]*::)?[^\s:/][^\s]*$"),
            length(max = 512)
        )
    )]
    pub tools: Vec<String>,
    /// Reach into Deny Policies that is intended: matching paths count as exceptions
    /// (authorizedButGoverned), not violations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub expected_exceptions: Vec<ExpectedException>,
    /// Where the grant comes from (the CAN_CALL edges' provenance).
    #[serde(default)]
    pub provenance: Provenance,
}

/// An expected exception: reach into one Policy, optionally limited to a tool and a
/// resource, that the Grant's author intends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpectedException {
    /// Policy name (this namespace) or `namespace/name`.
    #[schemars(
        regex(pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
        length(max = 317)
    )]
    pub policy: String,
    /// Tool key or glob the exception is limited to; default every granted tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(pattern = r"^(([a-z0-9*][-a-z0-9.*]*/)?[a-z0-9*][-a-z0-9.*]*::)?[^\s:/][^\s]*$"),
        length(max = 512)
    )]
    pub tool: Option<String>,
    /// Resource URI or URI glob the exception is limited to; at most 1,024 bytes and 16
    /// wildcards (docs/security.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(
            pattern = r"^[A-Za-z][A-Za-z0-9+.-]*:[^*\s]*(\*{1,2}[^*\s]+){0,15}(\*{1,2}[^*\s]*)?$"
        ),
        length(min = 1, max = 1024)
    )]
    pub resource: Option<String>,
    /// Why the reach is intended; shown with every row it excuses.
    #[schemars(length(min = 1, max = 1024))]
    pub reason: String,
    /// Who answers for the exception (a person, team or ticket queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub owner: Option<String>,
    /// From this instant on the exception no longer counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub expires: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// A reference in the Grant that does not resolve cleanly.
pub struct UnresolvedRef {
    /// The reference as written (tool key or glob, Policy or agent name).
    pub reference: String,
    /// Why, as a constant (e.g. NotFound, Ambiguous, Drifted).
    pub reason: String,
    /// Details for people.
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// An expected exception that has an expiry, as the operator last evaluated it.
pub struct ExceptionExpiry {
    /// Position in `spec.expectedExceptions` (the `index` label of
    /// `mcpgov_exception_expiry_timestamp_seconds`).
    pub index: i64,
    /// The Policy the exception names, as written.
    pub policy: String,
    /// The instant it stops counting (RFC 3339, UTC).
    pub expires: String,
    /// True from `expires` on: the exception excuses nothing any more.
    pub expired: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Written by the operator: how the Grant's references resolved.
pub struct GrantStatus {
    /// Ready, Resolved (False while any reference is unresolved), Reconciling and Stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Distinct tools the Grant's keys and globs resolve to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_tools: Option<i64>,
    /// References that resolve to nothing, to several tools, to drifted tools, or that
    /// break tenancy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<UnresolvedRef>,
    /// Expected exceptions with an `expires`, soonest first (expired ones included, at
    /// most 20; the metric `mcpgov_exception_expiry_timestamp_seconds` has every one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub exception_expiries: Vec<ExceptionExpiry>,
}
