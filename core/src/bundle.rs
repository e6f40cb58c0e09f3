//! The bundle as a reader sees it: owned types for the document the engine writes (see
//! `docs/bundle-format.md` and `docs/bundle.schema.json`). Unknown fields are refused:
//! a field this reader does not know may carry a rule it would not enforce.

use serde::{Deserialize, Serialize};

pub const BUNDLE_KIND: &str = "mcpgov.io/policy-bundle";
pub const BUNDLE_SCHEMA_VERSION: u32 = 2;
/// A ConfigMap holds at most 1 MiB.
pub const MAX_BUNDLE_BYTES: usize = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct BundleDocument {
    pub agent: AgentRef,
    pub catalog_digest: String,
    pub default_decision: String,
    pub governance_digest: String,
    pub kind: String,
    pub profile: String,
    pub schema_version: u32,
    /// The upstream of every server a listed tool belongs to, sorted by key.
    pub servers: Vec<BundleServer>,
    pub tools: Vec<BundleTool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleServer {
    pub endpoint: BundleEndpoint,
    /// `namespace/server`.
    pub key: String,
}

/// Where the gateway forwards a server's calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleEndpoint {
    /// Header names and the Secret keys holding their values (never the values); the
    /// gateway reads each from `<credentials-dir>/<secret name>/<key>`.
    pub headers: Vec<BundleHeader>,
    pub transport: Transport,
    pub url: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    StreamableHTTP,
    SSE,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct BundleHeader {
    pub name: String,
    pub secret_key_ref: SecretKeyRef,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyRef {
    pub key: String,
    /// The Secret's name.
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRef {
    pub name: String,
    pub namespace: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct BundleTool {
    pub contract_digest: Option<String>,
    /// `eligible` or `rejected`.
    pub decision: String,
    /// Kept as written: the gateway reports them, it does not interpret them.
    pub deny_paths: Vec<serde_json::Value>,
    /// `YYYY-MM-DDTHH:MM:SSZ`: from this instant the tool is rejected (an expected
    /// exception it depends on expires), whether or not a new bundle has arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_until: Option<String>,
    /// Per-call enforcement (a per-call Policy reaches the tool through argument-bound
    /// dataAccess): the gateway decides each call from its arguments. A reader that does
    /// not know this field refuses the bundle (unknown fields are refused): it would
    /// otherwise let every call of the tool through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<BundleGuard>,
    /// `namespace/server::tool`.
    pub key: String,
    pub name: String,
    pub reasons: Vec<String>,
    pub risk_score: f64,
    /// `namespace/server`.
    pub server: String,
}

/// What a gateway checks on each call of a guarded tool (`docs/bundle-format.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleGuard {
    /// The argument bindings, each with the patterns the server declared for it.
    pub arguments: Vec<GuardArgument>,
    /// Patterns per-call Deny Policies govern for this agent and tool.
    pub governed: Vec<GuardGoverned>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardArgument {
    /// Canonical URI globs the server's dataAccess declares through this binding.
    pub declared: Vec<String>,
    /// RFC 6901 pointer into the call's `arguments`.
    pub pointer: String,
    /// URI template with one `{label}` placeholder.
    pub template: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardGoverned {
    /// The agent's live expected exceptions to this Policy for this tool.
    pub except: Vec<GuardExcept>,
    /// Canonical URI glob the Policy governs.
    pub pattern: String,
    /// `namespace/name` of the Policy.
    pub policy: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardExcept {
    /// `YYYY-MM-DDTHH:MM:SSZ`: from this instant the exception excuses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// `namespace/name` of the Grant declaring the exception.
    pub grant: String,
    /// The exception's resource; absent: it excuses every URI of the Policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum BundleError {
    TooLarge(usize),
    Malformed(String),
    WrongKind(String),
    UnsupportedVersion(u32),
    /// A field's value is not what the schema allows (field, value).
    Invalid(String, String),
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
            BundleError::Invalid(field, v) => write!(f, "{field} is invalid: {v:?}"),
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
    // One entry per key: two rules (or two upstreams) for one tool would be ambiguous.
    let mut seen = std::collections::BTreeSet::new();
    for k in doc
        .tools
        .iter()
        .map(|t| &t.key)
        .chain(doc.servers.iter().map(|s| &s.key))
    {
        if !seen.insert(k.as_str()) {
            return Err(BundleError::Invalid("a repeated key".into(), k.clone()));
        }
    }
    // An expiry that cannot be read must not read as "never expires".
    for t in &doc.tools {
        if let Some(u) = &t.eligible_until
            && unix_seconds(u).is_none()
        {
            return Err(BundleError::Invalid(
                format!("{}: eligibleUntil", t.key),
                u.clone(),
            ));
        }
    }
    // A guard that cannot be compiled must not read as "no guard".
    for t in &doc.tools {
        if let Some(g) = &t.guard
            && let Err(e) = crate::percall::CompiledGuard::compile(g)
        {
            return Err(BundleError::Invalid(format!("{}: guard", t.key), e));
        }
    }
    Ok(doc)
}

impl BundleTool {
    /// `eligibleUntil` as seconds since the Unix epoch (checked by [`parse`]).
    pub fn eligible_until_unix(&self) -> Option<i64> {
        self.eligible_until.as_deref().and_then(unix_seconds)
    }
}

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SSZ` (the only form a bundle
/// uses), or `None` for anything else, an impossible date included.
pub fn unix_seconds(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || [b[4], b[7], b[10], b[13], b[16], b[19]] != *b"--T::Z" {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    if hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date, from March-based years.
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_read_as_epoch_seconds() {
        for (s, want) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2000-03-01T00:00:00Z", 951_868_800),
            ("2024-02-29T12:34:56Z", 1_709_210_096),
            ("2026-12-01T15:00:00Z", 1_796_137_200),
            ("1969-12-31T23:59:59Z", -1),
            ("9999-12-31T23:59:59Z", 253_402_300_799),
        ] {
            assert_eq!(unix_seconds(s), Some(want), "{s}");
        }
        for bad in [
            "2026-12-01T15:00:00",
            "2026-12-01T15:00:00.5Z",
            "2026-12-01T15:00:00+00:00",
            "2026-13-01T15:00:00Z",
            "2025-02-29T15:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01t15:00:00Z",
            "+026-12-01T15:00:00Z",
            "",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }
}
