//! mcpgov: a Kubernetes operator that governs which AI agents may call which MCP tools.
//!
//! The pure engine lives in the `mcpgov-engine` crate; this crate holds the custom
//! resource types, manifest loading and validation, and the command line.

pub mod admission;
pub mod cli;
pub mod controller;
pub mod crawler;
pub mod crd;
pub mod manifest;
pub mod names;
pub mod questions;
pub mod reports;
pub mod serve;
pub mod text;
pub mod validate;

/// `mcpgov catalog apply` as a library call (tests write catalogs with it).
pub use controller::crawl::apply as catalog;
