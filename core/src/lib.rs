//! The small library the engine, the operator and the gateway share, so the three can
//! never disagree on a digest, on what a bundle says, or on what a tool key, a URI or a
//! glob means (the gateway's per-call checks match arguments with the engine's rules).

pub mod bundle;
pub mod canonical;
pub mod contract;
pub mod glob;
pub mod key;
pub mod loopback;
pub mod percall;
pub mod streaming;
pub mod uri;
