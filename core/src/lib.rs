//! The small library the engine, the operator and the gateway share, so the three can
//! never disagree on a digest or on what a bundle says.

pub mod bundle;
pub mod canonical;
pub mod contract;
pub mod streaming;
