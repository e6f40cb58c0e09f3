//! What the gateway decided about one request, and the sink every decision goes through
//! before the request is answered (the audit log implements [`AuditSink`]).

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
        }
    }
}

/// One decision, as the gateway hands it to the audit sink. `arguments` holds the raw
/// call arguments so that the sink can compute its keyed digest; it is never serialised
/// by this struct (the values must not reach a log in clear).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    /// RFC 3339, UTC.
    pub time: String,
    /// `namespace/name` of the agent the bundle was compiled for (from the flags).
    pub agent: String,
    /// `sha256:<hex>` of the bundle in force; `None` when no bundle was ever loaded.
    pub bundle_sha: Option<String>,
    /// JSON-RPC method (`tools/call`, `tools/list`, `initialize`, ...).
    pub method: String,
    /// `namespace/server` of the route.
    pub server: String,
    pub tool: Option<String>,
    pub decision: Verdict,
    /// false in warn mode (a deny there was forwarded anyway) and for pass-through.
    pub enforced: bool,
    /// Why: the gateway's reason first, then the bundle's own reasons if any.
    pub reasons: Vec<String>,
    pub bundle_contract_digest: Option<String>,
    pub live_contract_digest: Option<String>,
    /// Top-level argument names of a `tools/call`, sorted.
    pub argument_names: Vec<String>,
    #[serde(skip)]
    pub arguments: Option<Value>,
    /// The MCP session (`Mcp-Session-Id`) the request belongs to, if any.
    pub session_id: Option<String>,
}

#[derive(Debug)]
pub struct AuditError(pub String);

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "audit record not written: {}", self.0)
    }
}

impl std::error::Error for AuditError {}

/// Where decisions go. Called before the request is answered or forwarded: an error makes
/// the gateway deny (fail closed) unless `--audit-fail-open`.
pub trait AuditSink: Send + Sync {
    fn record(&self, rec: &DecisionRecord) -> Result<(), AuditError>;
}

/// Placeholder sink: one JSON line per decision on stdout (no chain, no argument digest).
pub struct StdoutSink {
    out: Mutex<std::io::Stdout>,
}

impl StdoutSink {
    pub fn new() -> Self {
        StdoutSink {
            out: Mutex::new(std::io::stdout()),
        }
    }
}

impl Default for StdoutSink {
    fn default() -> Self {
        Self::new()
    }
}

impl AuditSink for StdoutSink {
    fn record(&self, rec: &DecisionRecord) -> Result<(), AuditError> {
        let mut line = serde_json::to_vec(rec).map_err(|e| AuditError(e.to_string()))?;
        line.push(b'\n');
        let out = self.out.lock().map_err(|_| AuditError("poisoned".into()))?;
        let mut out = out.lock();
        out.write_all(&line)
            .and_then(|_| out.flush())
            .map_err(|e| AuditError(e.to_string()))
    }
}

/// Top-level names of a call's `arguments` object, sorted (never the values).
pub fn argument_names(arguments: Option<&Value>) -> Vec<String> {
    let mut names: Vec<String> = arguments
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_values_never_serialise() {
        let rec = DecisionRecord {
            time: "2026-12-01T00:00:00Z".into(),
            agent: "ns/a".into(),
            bundle_sha: None,
            method: "tools/call".into(),
            server: "ns/s".into(),
            tool: Some("t".into()),
            decision: Verdict::Deny,
            enforced: true,
            reasons: vec!["NoBundle".into()],
            bundle_contract_digest: None,
            live_contract_digest: None,
            argument_names: argument_names(Some(&serde_json::json!({"b": 1, "a": "secret-value"}))),
            arguments: Some(serde_json::json!({"b": 1, "a": "secret-value"})),
            session_id: None,
        };
        let line = serde_json::to_string(&rec).unwrap();
        assert!(!line.contains("secret-value"), "{line}");
        assert!(line.contains(r#""argumentNames":["a","b"]"#), "{line}");
        assert!(line.contains(r#""decision":"deny""#), "{line}");
    }
}
