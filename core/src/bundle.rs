//! The bundle as a reader sees it: owned types for the document the engine writes (see
//! `docs/bundle-format.md`).

use serde::{Deserialize, Serialize};

pub const BUNDLE_KIND: &str = "mcpgov.io/policy-bundle";
pub const BUNDLE_SCHEMA_VERSION: u32 = 1;
/// The versions a reader accepts: v2 adds `servers` and `eligibleUntil` (both optional
/// here so v1 documents still parse).
pub const READABLE_SCHEMA_VERSIONS: std::ops::RangeInclusive<u32> = 1..=2;
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
    /// v2: where each server of a listed tool lives (absent in v1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<BundleServer>,
    pub tools: Vec<BundleTool>,
}

/// v2: one upstream server: `key` is `namespace/server`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleServer {
    pub endpoint: BundleEndpoint,
    pub key: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleEndpoint {
    /// Header names and the Secret keys holding their values; never the values.
    #[serde(default)]
    pub headers: Vec<BundleHeader>,
    /// `StreamableHTTP` or `SSE`.
    pub transport: String,
    pub url: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleHeader {
    pub name: String,
    pub secret_key_ref: SecretKeyRef,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretKeyRef {
    pub key: String,
    pub name: String,
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
    /// v2: RFC 3339 UTC instant from which an eligible tool counts as rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_until: Option<String>,
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
                let (lo, hi) = (
                    READABLE_SCHEMA_VERSIONS.start(),
                    READABLE_SCHEMA_VERSIONS.end(),
                );
                write!(f, "schemaVersion {v} is not one of {lo}..={hi}")
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
    if !READABLE_SCHEMA_VERSIONS.contains(&doc.schema_version) {
        return Err(BundleError::UnsupportedVersion(doc.schema_version));
    }
    Ok(doc)
}
