//! The bundle as a reader sees it: owned types for the document the engine writes (see
//! `docs/bundle-format.md`).

use serde::{Deserialize, Serialize};

pub const BUNDLE_KIND: &str = "mcpgov.io/policy-bundle";
pub const BUNDLE_SCHEMA_VERSION: u32 = 1;
/// A ConfigMap holds at most 1 MiB.
pub const MAX_BUNDLE_BYTES: usize = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleDocument {
    pub agent: AgentRef,
    pub catalog_digest: String,
    pub default_decision: String,
    pub governance_digest: String,
    pub kind: String,
    pub profile: String,
    pub schema_version: u32,
    pub tools: Vec<BundleTool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    pub name: String,
    pub namespace: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleTool {
    pub contract_digest: Option<String>,
    /// `eligible` or `rejected`.
    pub decision: String,
    /// Kept as written: the gateway reports them, it does not interpret them.
    pub deny_paths: Vec<serde_json::Value>,
    /// `namespace/server::tool`.
    pub key: String,
    pub name: String,
    pub reasons: Vec<String>,
    pub risk_score: f64,
    /// `namespace/server`.
    pub server: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum BundleError {
    TooLarge(usize),
    Malformed(String),
    WrongKind(String),
    UnsupportedVersion(u32),
}

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleError::TooLarge(n) => write!(f, "bundle is {n} bytes, over {MAX_BUNDLE_BYTES}"),
            BundleError::Malformed(e) => write!(f, "bundle is not a valid document: {e}"),
            BundleError::WrongKind(k) => write!(f, "kind is {k:?}, not {BUNDLE_KIND:?}"),
            BundleError::UnsupportedVersion(v) => {
                write!(f, "schemaVersion {v} is not {BUNDLE_SCHEMA_VERSION}")
            }
        }
    }
}

impl std::error::Error for BundleError {}

/// Read and check a bundle's bytes (size, kind, version).
pub fn parse(bytes: &[u8]) -> Result<BundleDocument, BundleError> {
    if bytes.len() > MAX_BUNDLE_BYTES {
        return Err(BundleError::TooLarge(bytes.len()));
    }
    let doc: BundleDocument =
        serde_json::from_slice(bytes).map_err(|e| BundleError::Malformed(e.to_string()))?;
    if doc.kind != BUNDLE_KIND {
        return Err(BundleError::WrongKind(doc.kind));
    }
    if doc.schema_version != BUNDLE_SCHEMA_VERSION {
        return Err(BundleError::UnsupportedVersion(doc.schema_version));
    }
    Ok(doc)
}
