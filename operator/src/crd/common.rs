//! Types shared by the four custom resources: provenance and the condition shape.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

pub const GROUP: &str = "mcpgov.io";
pub const VERSION: &str = "v1alpha1";
pub const API_VERSION: &str = "mcpgov.io/v1alpha1";

/// A Kubernetes object name (DNS-1123 subdomain); used for server and agent names.
pub const NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
/// A tool key: `server::tool`, `namespace/server::tool` or a bare tool name; `*` globs.
pub const TOOL_KEY_PATTERN: &str =
    r"^(([a-z0-9*][-a-z0-9.*]*/)?[a-z0-9*][-a-z0-9.*]*::)?[^\s:/][^\s]*$";
/// A URI or URI glob: scheme first, no whitespace, no run of three stars.
pub const URI_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$";
/// A Policy reference: `name` or `namespace/name`.
pub const OBJECT_REF_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";

/// Where an edge was learnt: Crawled (observed on the server), OperatorAsserted (authored
/// by a person) or Inferred (derived, e.g. from a name or an annotation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ProvenanceSource {
    Crawled,
    #[default]
    OperatorAsserted,
    Inferred,
}

/// How far the edge can be trusted: High, Medium or Low.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Confidence {
    #[default]
    High,
    Medium,
    Low,
}

/// Where an edge comes from. An edge without evidence is "unbacked".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// Crawled (observed), OperatorAsserted (authored) or Inferred.
    #[serde(default)]
    pub source: ProvenanceSource,
    /// How far the edge can be trusted: High (default), Medium or Low.
    #[serde(default)]
    pub confidence: Confidence,
    /// Free-text pointer a reviewer can check: URL, ticket, commit, `path/file.rs::Symbol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub evidence: Option<String>,
}

impl From<&Provenance> for mcpgov_engine::Provenance {
    fn from(p: &Provenance) -> Self {
        mcpgov_engine::Provenance {
            source: match p.source {
                ProvenanceSource::Crawled => mcpgov_engine::Source::Crawled,
                ProvenanceSource::OperatorAsserted => mcpgov_engine::Source::OperatorAsserted,
                ProvenanceSource::Inferred => mcpgov_engine::Source::Inferred,
            },
            confidence: match p.confidence {
                Confidence::High => mcpgov_engine::Confidence::High,
                Confidence::Medium => mcpgov_engine::Confidence::Medium,
                Confidence::Low => mcpgov_engine::Confidence::Low,
            },
            evidence: p.evidence.clone(),
        }
    }
}

/// `.status.conditions[type=Ready].status`, for printer columns.
pub const READY_COLUMN: &str = r#".status.conditions[?(@.type=="Ready")].status"#;
