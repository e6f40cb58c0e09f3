//! mcpgov-gateway: an MCP proxy that enforces one agent's policy bundle.

pub mod audit;
pub mod bundle;
pub mod contracts;
pub mod decision;
pub mod legacy;
pub mod metrics;
pub mod policy;
pub mod proxy;
pub mod reload;
pub mod sse;
pub mod upstream;
