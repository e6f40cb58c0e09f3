//! The gateway's audit log: one JSON line per decision, hash-chained so that editing,
//! deleting, reordering or truncating lines is detectable (`docs/gateway-audit.md`).
//!
//! - [`AuditLog`] appends records, continues the chain across restarts and rotation,
//!   and returns an error when a record could not be written (the gateway fails closed).
//! - [`verify`] / [`verify_main`] check a log and name the first bad line.
//! - [`ArgKey`] keys the digest of a call's arguments, which are never written in clear.

mod chain;
mod key;
mod record;
mod verify;

pub use chain::{AuditError, AuditLog, AuditOptions, Head, Output, SyncPolicy};
pub use key::{ArgKey, KeyError};
pub use record::{Decision, DecisionRecord, FORMAT_VERSION, GENESIS, MAX_LINE_BYTES};
pub use verify::{
    Anchor, Break, RecordedBreak, Summary, VerifyOptions, describe, verify, verify_main,
    verify_with,
};
