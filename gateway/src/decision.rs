//! What the gateway decided about one request, and the sink every decision goes through
//! before the request is answered or forwarded: the hash-chained audit log.

use crate::audit::{AuditLog, Head};
pub use crate::audit::{Decision, DecisionRecord};
use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Writes the record; returns its sequence number in the chain.
    fn record(&self, rec: &DecisionRecord) -> Result<u64, AuditError>;
    /// Where the chain stands after the last record written (`None` before the first).
    fn head(&self) -> Option<Head> {
        None
    }
}

/// The audit log behind a mutex: records are ordered, so appends are serial anyway.
pub struct ChainSink {
    log: Mutex<AuditLog>,
    /// The head's sequence number, readable without the lock (for `/metrics`).
    seq: AtomicU64,
}

impl ChainSink {
    pub fn new(log: AuditLog) -> Self {
        let seq = log.head().map(|h| h.seq).unwrap_or(0);
        ChainSink {
            log: Mutex::new(log),
            seq: AtomicU64::new(seq),
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }
}

impl AuditSink for ChainSink {
    fn record(&self, rec: &DecisionRecord) -> Result<u64, AuditError> {
        let mut log = self
            .log
            .lock()
            .map_err(|_| AuditError("audit writer poisoned".into()))?;
        let head = log.append(rec).map_err(|e| AuditError(e.to_string()))?;
        self.seq.store(head.seq, Ordering::Relaxed);
        Ok(head.seq)
    }

    fn head(&self) -> Option<Head> {
        self.log.lock().ok()?.head().cloned()
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
    use crate::audit::{ArgKey, AuditOptions, Output, verify};

    fn record(args: Value) -> DecisionRecord {
        DecisionRecord {
            time: jiff::Timestamp::from_second(1_796_000_000).unwrap(),
            agent: "ns/a".into(),
            bundle_sha: None,
            method: "tools/call".into(),
            server: "ns/s".into(),
            tool: Some("t".into()),
            decision: Decision::Deny,
            enforced: true,
            reasons: vec!["NoBundle".into()],
            bundle_contract_digest: None,
            live_contract_digest: None,
            arg_names: argument_names(Some(&args)),
            arguments: Some(args),
            session_id: None,
            resources: Vec::new(),
        }
    }

    #[test]
    fn the_sink_chains_records_and_never_writes_argument_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = AuditLog::open(
            AuditOptions::new(Output::File(path.clone())),
            ArgKey::from_bytes(&[7; 32]).unwrap(),
        )
        .unwrap();
        let sink = ChainSink::new(log);
        for _ in 0..3 {
            sink.record(&record(serde_json::json!({"b": 1, "a": "secret-value"})))
                .unwrap();
        }
        assert_eq!(sink.seq(), 2);
        assert_eq!(sink.head().unwrap().seq, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret-value"), "{text}");
        assert!(text.contains(r#""argNames":["a","b"]"#), "{text}");
        assert!(text.contains(r#""decision":"deny""#), "{text}");
        assert!(text.contains(r#""server":"ns/s""#), "{text}");
        assert_eq!(verify(&[&path]).unwrap().records, 3);
    }
}
