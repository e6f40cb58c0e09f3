//! mcpgov-engine: the pure governance engine of mcpgov.
//!
//! It holds the reachability graph (Agent -> Tool -> Resource -> Policy) as an index
//! of plain objects, answers every governance question with its evidence path, and
//! compiles per-agent policy bundles. No Kubernetes, no async runtime, no I/O, no
//! clock: callers pass the instant (`now`) that expected exceptions expire against.
//!
//! Typical use: `Engine::from_snapshot`, then `apply` / `delete` one object at a time
//! (each returns the agents it can affect), then an `Evaluator` to answer questions.

pub mod bundle;
pub use mcpgov_core::canonical;
pub mod check;
mod compare;
pub mod estate;
pub mod findings;
mod identity;
pub use mcpgov_core::glob;
mod impact;
pub mod index;
pub use mcpgov_core::key;
pub mod limits;
pub mod model;
pub mod queries;
pub mod reach;
pub mod resolve;
pub mod select;
pub use mcpgov_core::uri;
pub mod verdict;
pub mod wire;

pub use bundle::{Bundle, BundleError};
pub use findings::{Finding, FindingKind, FindingReason, Summary};
pub use index::{Engine, EngineConfig, Impact};
pub use key::{Selector, ToolId};
pub use model::*;
pub use select::{AgentEvaluation, Decision, Reason};
pub use verdict::{AccessVerdict, Classification, DenyPath, Evaluator, VerdictKind};
