//! Prometheus metrics, one `mcpgov_` prefix. Known series are created at start so they
//! read 0 before the first event.

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

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
    pub crawl_duration: Histogram,
    /// Failed crawls by reason (AddressRefused, Timeout, Unauthorized, OverCap, ...).
    pub crawl_failures: IntCounterVec,
    pub crawl_last_success: IntGaugeVec,
    pub catalog_tools: IntGaugeVec,
    /// List-changed notifications that brought a crawl forward.
    pub crawl_list_changed: IntCounter,
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
        let crawl_duration = Histogram::with_opts(
            HistogramOpts::new("mcpgov_crawl_duration_seconds", "Duration of one crawl")
                .buckets(vec![0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0]),
        )
        .expect("valid metric");
        let crawl_failures = IntCounterVec::new(
            Opts::new("mcpgov_crawl_failures_total", "Failed crawls by reason"),
            &["reason"],
        )
        .expect("valid metric");
        let crawl_last_success = IntGaugeVec::new(
            Opts::new(
                "mcpgov_crawl_last_success_timestamp_seconds",
                "Unix time of the last successful crawl per server",
            ),
            &["namespace", "server"],
        )
        .expect("valid metric");
        let catalog_tools = IntGaugeVec::new(
            Opts::new(
                "mcpgov_catalog_tools",
                "Tools in the last good catalog per server",
            ),
            &["namespace", "server"],
        )
        .expect("valid metric");
        let crawl_list_changed = IntCounter::new(
            "mcpgov_crawl_list_changed_total",
            "List-changed notifications from watched servers that brought a crawl forward",
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
            Box::new(crawl_duration.clone()),
            Box::new(crawl_failures.clone()),
            Box::new(crawl_last_success.clone()),
            Box::new(catalog_tools.clone()),
            Box::new(crawl_list_changed.clone()),
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
            crawl_duration,
            crawl_failures,
            crawl_last_success,
            catalog_tools,
            crawl_list_changed,
        }
    }

    pub fn observe_crawl(&self, key: &mcpgov_engine::ObjKey, o: &super::crawl::Outcome) {
        self.crawl_duration.observe(o.duration.as_secs_f64());
        let labels = [key.namespace.as_str(), key.name.as_str()];
        match &o.result {
            Ok(c) => {
                self.crawl_last_success
                    .with_label_values(&labels)
                    .set(o.finished.as_second());
                self.catalog_tools
                    .with_label_values(&labels)
                    .set(c.tools.len() as i64);
            }
            Err(f) => self.crawl_failures.with_label_values(&[f.reason]).inc(),
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
