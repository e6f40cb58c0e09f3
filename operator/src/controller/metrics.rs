//! Prometheus metrics, one `mcpgov_` prefix. Known series are created at start so they
//! read 0 before the first event.

use prometheus::{IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    /// Status writes by kind and result (written, skipped, conflict, error, timeout).
    pub status_writes: IntCounterVec,
    /// ConfigMap writes by result (written, skipped, deleted, error, timeout).
    pub configmap_writes: IntCounterVec,
    /// Objects a watch could not decode, by kind.
    pub malformed_objects: IntCounterVec,
    /// Agents re-evaluated, by trigger (change, resync).
    pub evaluations: IntCounterVec,
    pub ready: IntGauge,
}

pub const KINDS: [&str; 4] = ["MCPServer", "Agent", "Policy", "Grant"];

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let status_writes = IntCounterVec::new(
            Opts::new(
                "mcpgov_status_writes_total",
                "Status writes by kind and result",
            ),
            &["kind", "result"],
        )
        .expect("valid metric");
        let configmap_writes = IntCounterVec::new(
            Opts::new(
                "mcpgov_configmap_writes_total",
                "Bundle ConfigMap writes by result",
            ),
            &["result"],
        )
        .expect("valid metric");
        let malformed_objects = IntCounterVec::new(
            Opts::new(
                "mcpgov_malformed_objects_total",
                "Watched objects skipped as malformed",
            ),
            &["kind"],
        )
        .expect("valid metric");
        let evaluations = IntCounterVec::new(
            Opts::new(
                "mcpgov_agent_evaluations_total",
                "Agents re-evaluated, by trigger",
            ),
            &["trigger"],
        )
        .expect("valid metric");
        let ready = IntGauge::new(
            "mcpgov_ready",
            "1 when every watch has listed and CRDs exist",
        )
        .expect("valid metric");
        for k in KINDS {
            for r in ["written", "skipped", "error", "timeout"] {
                status_writes.with_label_values(&[k, r]);
            }
            malformed_objects.with_label_values(&[k]);
        }
        for r in ["written", "skipped", "deleted", "error", "timeout"] {
            configmap_writes.with_label_values(&[r]);
        }
        for t in ["change", "resync"] {
            evaluations.with_label_values(&[t]);
        }
        for c in [
            Box::new(status_writes.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(configmap_writes.clone()),
            Box::new(malformed_objects.clone()),
            Box::new(evaluations.clone()),
            Box::new(ready.clone()),
        ] {
            registry.register(c).expect("unique metric");
        }
        Metrics {
            registry,
            status_writes,
            configmap_writes,
            malformed_objects,
            evaluations,
            ready,
        }
    }

    pub fn render(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
