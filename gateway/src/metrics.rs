//! `mcpgov_gateway_*` series.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

pub struct Metrics {
    pub registry: Registry,
    pub decisions: IntCounterVec,
    pub added_latency: Histogram,
    pub bundle_loaded: IntGauge,
    pub bundle_valid: IntGauge,
    pub bundle_reloads: IntCounterVec,
    pub bundle_info: IntGaugeVec,
    pub contract_mismatches: IntCounterVec,
    pub audit_records: IntCounter,
    pub audit_write_errors: IntCounter,
    pub audit_sequence: IntGauge,
    pub open_streams: IntGauge,
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let decisions = IntCounterVec::new(
            Opts::new(
                "mcpgov_gateway_decisions_total",
                "Decisions by method, result (allow/deny), reason and whether enforced.",
            ),
            &["method", "result", "reason", "enforced"],
        )
        .unwrap();
        let added_latency = Histogram::with_opts(
            HistogramOpts::new(
                "mcpgov_gateway_added_latency_seconds",
                "Time the gateway spends on a request before forwarding or answering it (decision, checks, audit).",
            )
            .buckets(vec![
                0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                0.05, 0.25, 1.0,
            ]),
        )
        .unwrap();
        let bundle_loaded = IntGauge::new(
            "mcpgov_gateway_bundle_loaded",
            "1 once a valid bundle is in force.",
        )
        .unwrap();
        let bundle_valid = IntGauge::new("mcpgov_gateway_bundle_valid", "1 when the bundle on disk is the valid one in force; 0 when the last read was invalid.").unwrap();
        let bundle_reloads = IntCounterVec::new(
            Opts::new(
                "mcpgov_gateway_bundle_reloads_total",
                "Bundle reads that changed something, by result (swapped, invalid).",
            ),
            &["result"],
        )
        .unwrap();
        let bundle_info = IntGaugeVec::new(
            Opts::new(
                "mcpgov_gateway_bundle_info",
                "The bundle in force (value 1).",
            ),
            &["sha256", "agent"],
        )
        .unwrap();
        let contract_mismatches = IntCounterVec::new(
            Opts::new(
                "mcpgov_gateway_contract_mismatches_total",
                "Tools hidden or calls denied because the live contract differs from the bundle's.",
            ),
            &["server"],
        )
        .unwrap();
        let audit_records = IntCounter::new(
            "mcpgov_gateway_audit_records_total",
            "Decision records written (the audit sequence).",
        )
        .unwrap();
        let audit_write_errors = IntCounter::new(
            "mcpgov_gateway_audit_write_errors_total",
            "Decision records that could not be written.",
        )
        .unwrap();
        let audit_sequence = IntGauge::new(
            "mcpgov_gateway_audit_sequence",
            "Sequence number of the last record in the audit chain (export it as an anchor for `audit verify --anchor`).",
        )
        .unwrap();
        let open_streams = IntGauge::new(
            "mcpgov_gateway_open_streams",
            "Standalone GET streams open through the gateway.",
        )
        .unwrap();
        for c in [
            Box::new(decisions.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(added_latency.clone()),
            Box::new(bundle_loaded.clone()),
            Box::new(bundle_valid.clone()),
            Box::new(bundle_reloads.clone()),
            Box::new(bundle_info.clone()),
            Box::new(contract_mismatches.clone()),
            Box::new(audit_records.clone()),
            Box::new(audit_write_errors.clone()),
            Box::new(audit_sequence.clone()),
            Box::new(open_streams.clone()),
        ] {
            registry.register(c).unwrap();
        }
        Metrics {
            registry,
            decisions,
            added_latency,
            bundle_loaded,
            bundle_valid,
            bundle_reloads,
            bundle_info,
            contract_mismatches,
            audit_records,
            audit_write_errors,
            audit_sequence,
            open_streams,
        }
    }

    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding");
        String::from_utf8(buf).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
