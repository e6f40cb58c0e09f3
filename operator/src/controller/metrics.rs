//! Prometheus metrics, one `mcpgov_` prefix. Known series are created at start so they
//! read 0 before the first event. One struct per component that updates them (the
//! writer, the crawler, the watches, the plan, the process), each registering its own
//! families; `Metrics` holds them all and the registry `/metrics` renders.

use super::expiry::Series;
use prometheus::core::Collector;
use prometheus::{
    GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::collections::{BTreeMap, BTreeSet};

/// A labelled gauge a plan sets or removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gauge {
    AgentTools,
    AgentViolations,
    AgentExceptions,
    BundlePublished,
    BundleBytes,
    BundleLastPublish,
    PolicyViolations,
    GraphNodes,
    GraphEdges,
    Drift,
}

/// A counter a plan adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    StatusWrites,
    ConfigMapWrites,
    ReconcileErrors,
    Evaluations,
    /// Unlabelled.
    EvaluationSlices,
}

/// One metric value from a plan: computing it needs no registry, so plans are
/// compared in unit tests like the writes they hold.
#[derive(Clone, Debug, PartialEq)]
pub enum MetricOp {
    Set(Gauge, Vec<String>, i64),
    Remove(Gauge, Vec<String>),
    Count(Counter, Vec<String>, u64),
    EvaluationSeconds(f64),
    /// One Grant's exception expiry series (the index remembers which it exported).
    Expiries(mcpgov_engine::ObjKey, BTreeMap<Series, f64>),
}

pub const KINDS: [&str; 4] = ["MCPServer", "Agent", "Policy", "Grant"];

/// Creates metrics and registers them, remembering each family's name.
struct Reg<'a> {
    registry: &'a Registry,
    families: &'a mut BTreeMap<String, Vec<String>>,
}

impl Reg<'_> {
    fn add<C: Collector + Clone + 'static>(&mut self, c: C) -> C {
        self.register(Box::new(c.clone()));
        c
    }

    fn register(&mut self, c: Box<dyn Collector>) {
        for d in c.desc() {
            self.families
                .insert(d.fq_name.clone(), d.variable_labels.clone());
        }
        self.registry.register(c).expect("unique metric");
    }

    fn counter(&mut self, name: &str, help: &str) -> IntCounter {
        self.add(IntCounter::new(name, help).expect("valid metric"))
    }

    fn counters(&mut self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        self.add(IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric"))
    }

    fn gauge(&mut self, name: &str, help: &str) -> IntGauge {
        self.add(IntGauge::new(name, help).expect("valid metric"))
    }

    fn gauges(&mut self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        self.add(IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric"))
    }

    fn histogram(&mut self, name: &str, help: &str, buckets: &[f64]) -> Histogram {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        self.add(Histogram::with_opts(opts).expect("valid metric"))
    }
}

/// The writer's: what it wrote and what failed.
#[derive(Clone)]
pub struct WriteMetrics {
    /// Status writes by kind and result (written, skipped, conflict, api, timeout, ...).
    pub status_writes: IntCounterVec,
    /// ConfigMap writes by result (written, skipped, deleted, conflict, api, timeout, ...).
    pub configmap_writes: IntCounterVec,
    /// Failed writes and publications by error (the writer's labels, bundle_too_large).
    pub reconcile_errors: IntCounterVec,
}

impl WriteMetrics {
    fn new(r: &mut Reg) -> Self {
        let m = WriteMetrics {
            status_writes: r.counters(
                "mcpgov_status_writes_total",
                "Status writes by kind and result",
                &["kind", "result"],
            ),
            configmap_writes: r.counters(
                "mcpgov_configmap_writes_total",
                "Bundle ConfigMap writes by result",
                &["result"],
            ),
            reconcile_errors: r.counters(
                "mcpgov_reconcile_errors_total",
                "Failed writes and publications, by error",
                &["error"],
            ),
        };
        for e in ["conflict", "api", "timeout", "bundle_too_large"] {
            m.reconcile_errors.with_label_values(&[e]);
        }
        for k in KINDS {
            for r in ["written", "skipped", "api", "timeout"] {
                m.status_writes.with_label_values(&[k, r]);
            }
        }
        for r in ["written", "skipped", "deleted", "api", "timeout"] {
            m.configmap_writes.with_label_values(&[r]);
        }
        m
    }
}

/// PolicyReports / OpenReports (`--policy-reports`).
#[derive(Clone)]
pub struct ReportMetrics {
    /// Report writes by result (written, skipped, deleted, api, timeout, ...).
    pub report_writes: IntCounterVec,
    /// 1 when the reports API `--policy-reports` selects is served; 0 when its CRD is
    /// missing, before the first look, and with reports off.
    pub reports_available: IntGauge,
}

impl ReportMetrics {
    fn new(r: &mut Reg) -> Self {
        let m = ReportMetrics {
            report_writes: r.counters(
                "mcpgov_policy_report_writes_total",
                "PolicyReport / OpenReports writes by result",
                &["result"],
            ),
            reports_available: r.gauge(
                "mcpgov_policy_reports_available",
                "1 when the reports API selected by --policy-reports is served, else 0",
            ),
        };
        for r in ["written", "skipped", "deleted", "api", "timeout"] {
            m.report_writes.with_label_values(&[r]);
        }
        m
    }
}

/// The watches'.
#[derive(Clone)]
pub struct WatchMetrics {
    /// Objects a watch could not decode, by kind.
    pub malformed_objects: IntCounterVec,
}

impl WatchMetrics {
    fn new(r: &mut Reg) -> Self {
        let m = WatchMetrics {
            malformed_objects: r.counters(
                "mcpgov_malformed_objects_total",
                "Watched objects skipped as malformed",
                &["kind"],
            ),
        };
        for k in KINDS {
            m.malformed_objects.with_label_values(&[k]);
        }
        m
    }
}

/// The crawler's, per server where labelled by one.
#[derive(Clone)]
pub struct CrawlMetrics {
    pub duration: Histogram,
    /// Failed crawls by reason (AddressRefused, Timeout, Unauthorized, OverCap, ...).
    pub failures: IntCounterVec,
    pub last_success: IntGaugeVec,
    pub catalog_tools: IntGaugeVec,
    /// List-changed notifications that brought a crawl forward.
    pub list_changed: IntCounter,
    pub failing: IntGaugeVec,
    /// Tools of a pinned server whose crawled contract is not the approved one, by
    /// reason (ContractChanged, ContractUnapproved), as of its latest good crawl.
    pub contracts_pending: IntGaugeVec,
}

impl CrawlMetrics {
    fn new(r: &mut Reg) -> Self {
        let server = &["namespace", "server"];
        CrawlMetrics {
            duration: r.histogram(
                "mcpgov_crawl_duration_seconds",
                "Duration of one crawl",
                &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0],
            ),
            failures: r.counters(
                "mcpgov_crawl_failures_total",
                "Failed crawls by reason",
                &["reason"],
            ),
            last_success: r.gauges(
                "mcpgov_crawl_last_success_timestamp_seconds",
                "Unix time of the last successful crawl per server",
                server,
            ),
            catalog_tools: r.gauges(
                "mcpgov_catalog_tools",
                "Tools in the last good catalog per server",
                server,
            ),
            list_changed: r.counter(
                "mcpgov_crawl_list_changed_total",
                "List-changed notifications from watched servers that brought a crawl forward",
            ),
            failing: r.gauges(
                "mcpgov_crawl_failing",
                "1 while the last crawl of a server failed (its catalog is stale)",
                server,
            ),
            contracts_pending: r.gauges(
                "mcpgov_contracts_pending",
                "Tools of a Pinned MCPServer whose crawled contract is not the approved one, by reason",
                &["namespace", "server", "reason"],
            ),
        }
    }

    pub fn observe(&self, key: &mcpgov_engine::ObjKey, o: &super::crawl::Outcome) {
        self.duration.observe(o.duration.as_secs_f64());
        let labels = [key.namespace.as_str(), key.name.as_str()];
        match &o.result {
            Ok(c) => {
                self.last_success
                    .with_label_values(&labels)
                    .set(o.finished.as_second());
                self.catalog_tools
                    .with_label_values(&labels)
                    .set(c.tools.len() as i64);
                self.observe_contracts(key, &o.spec.contracts, c);
            }
            Err(f) => self.failures.with_label_values(&[f.reason]).inc(),
        }
        self.failing
            .with_label_values(&labels)
            .set(o.result.is_err() as i64);
    }

    /// Pending contracts of one server after a good crawl: both series under Pinned
    /// (0 included, so an alert sees it recover), none under Trust.
    fn observe_contracts(
        &self,
        key: &mcpgov_engine::ObjKey,
        pins: &mcpgov_engine::Contracts,
        c: &crate::crawler::Catalog,
    ) {
        use mcpgov_engine::{ContractMode, ContractState};
        for state in [ContractState::Changed, ContractState::Unapproved] {
            let labels = [
                key.namespace.as_str(),
                key.name.as_str(),
                super::contract_status::reason(state),
            ];
            if pins.mode == ContractMode::Trust {
                let _ = self.contracts_pending.remove_label_values(&labels);
                continue;
            }
            let n = c
                .tools
                .iter()
                .filter(|t| pins.check(&t.name, Some(&t.contract_digest)) == Some(state))
                .count();
            self.contracts_pending
                .with_label_values(&labels)
                .set(n as i64);
        }
    }

    /// Forget a deleted server's series.
    pub fn forget(&self, key: &mcpgov_engine::ObjKey) {
        let labels = [key.namespace.as_str(), key.name.as_str()];
        for m in [&self.failing, &self.last_success, &self.catalog_tools] {
            let _ = m.remove_label_values(&labels);
        }
        self.forget_contracts(key);
    }

    /// Forget a server's contract series.
    pub fn forget_contracts(&self, key: &mcpgov_engine::ObjKey) {
        for reason in ["ContractChanged", "ContractUnapproved"] {
            let _ = self.contracts_pending.remove_label_values(&[
                key.namespace.as_str(),
                key.name.as_str(),
                reason,
            ]);
        }
    }
}

/// The plan's: evaluations, per-agent and per-policy figures, the graph, expiries.
#[derive(Clone)]
pub struct EvaluationMetrics {
    /// Agents re-evaluated, by trigger (change, resync).
    pub evaluations: IntCounterVec,
    pub duration: Histogram,
    /// Passes that used up their time slice and left work for the next one.
    pub slices: IntCounter,
    pub agent_tools: IntGaugeVec,
    pub agent_violations: IntGaugeVec,
    pub agent_exceptions: IntGaugeVec,
    pub policy_violations: IntGaugeVec,
    pub bundle_published: IntGaugeVec,
    pub bundle_bytes: IntGaugeVec,
    pub bundle_last_publish: IntGaugeVec,
    pub drift: IntGaugeVec,
    pub graph_nodes: IntGaugeVec,
    pub graph_edges: IntGaugeVec,
    /// Unix time an expected exception expires, per exception with an `expires` (labels:
    /// `expiry::LABELS`; series bounded as `expiry` explains).
    pub exception_expiry: GaugeVec,
}

impl EvaluationMetrics {
    fn new(r: &mut Reg) -> Self {
        let agent = &["namespace", "agent"];
        let m = EvaluationMetrics {
            evaluations: r.counters(
                "mcpgov_agent_evaluations_total",
                "Agents re-evaluated, by trigger",
                &["trigger"],
            ),
            duration: r.histogram(
                "mcpgov_evaluation_duration_seconds",
                "Duration of one reconcile pass (evaluation and writes)",
                &[0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0],
            ),
            slices: r.counter(
                "mcpgov_evaluation_slices_exhausted_total",
                "Reconcile passes that used up their time slice and yielded to pending changes",
            ),
            agent_tools: r.gauges(
                "mcpgov_agent_tools",
                "Granted tools of an agent by bundle decision (eligible, rejected)",
                &["namespace", "agent", "decision"],
            ),
            agent_violations: r.gauges(
                "mcpgov_agent_violations",
                "Deny-policy violations an agent can reach",
                agent,
            ),
            agent_exceptions: r.gauges(
                "mcpgov_agent_exceptions",
                "Deny paths of an agent covered by an expected exception",
                agent,
            ),
            policy_violations: r.gauges(
                "mcpgov_policy_violations",
                "Violations of a Policy over all agents",
                &["namespace", "policy"],
            ),
            bundle_published: r.gauges(
                "mcpgov_bundle_published",
                "1 when the agent's ConfigMap holds its current bundle",
                agent,
            ),
            bundle_bytes: r.gauges(
                "mcpgov_bundle_bytes",
                "Size of the agent's bundle",
                agent,
            ),
            bundle_last_publish: r.gauges(
                "mcpgov_bundle_last_publish_timestamp_seconds",
                "Unix time the agent's bundle ConfigMap was last written",
                agent,
            ),
            drift: r.gauges(
                "mcpgov_drift",
                "Governance naming tools no server exposes, by kind (Grant, Policy, DataAccess)",
                &["kind"],
            ),
            graph_nodes: r.gauges("mcpgov_graph_nodes", "Graph nodes by kind", &["kind"]),
            graph_edges: r.gauges("mcpgov_graph_edges", "Graph edges by kind", &["kind"]),
            exception_expiry: r.add(
                GaugeVec::new(
                    Opts::new(
                        "mcpgov_exception_expiry_timestamp_seconds",
                        "Unix time an expected exception of a Grant expires (index: its position in spec.expectedExceptions)",
                    ),
                    &super::expiry::LABELS,
                )
                .expect("valid metric"),
            ),
        };
        for k in ["Grant", "Policy", "DataAccess"] {
            m.drift.with_label_values(&[k]);
        }
        for k in ["MCPServer", "Tool", "Resource", "Policy", "Agent"] {
            m.graph_nodes.with_label_values(&[k]);
        }
        for k in [
            "EXPOSES",
            "PROVIDES",
            "READS",
            "WRITES",
            "GOVERNED_BY",
            "CAN_CALL",
        ] {
            m.graph_edges.with_label_values(&[k]);
        }
        for t in ["change", "resync"] {
            m.evaluations.with_label_values(&[t]);
        }
        m
    }

    /// Export one Grant's exception expiry series, removing those of `before` it no
    /// longer has; returns the series exported now.
    pub fn export_expiries(
        &self,
        before: &BTreeSet<Series>,
        series: &BTreeMap<Series, f64>,
    ) -> BTreeSet<Series> {
        let m = &self.exception_expiry;
        for s in super::expiry::stale(before, series) {
            let _ = m.remove_label_values(&s.each_ref().map(String::as_str));
        }
        for (s, v) in series {
            m.with_label_values(&s.each_ref().map(String::as_str))
                .set(*v);
        }
        series.keys().cloned().collect()
    }

    fn gauge(&self, g: Gauge) -> &IntGaugeVec {
        match g {
            Gauge::AgentTools => &self.agent_tools,
            Gauge::AgentViolations => &self.agent_violations,
            Gauge::AgentExceptions => &self.agent_exceptions,
            Gauge::BundlePublished => &self.bundle_published,
            Gauge::BundleBytes => &self.bundle_bytes,
            Gauge::BundleLastPublish => &self.bundle_last_publish,
            Gauge::PolicyViolations => &self.policy_violations,
            Gauge::GraphNodes => &self.graph_nodes,
            Gauge::GraphEdges => &self.graph_edges,
            Gauge::Drift => &self.drift,
        }
    }
}

/// The process's: readiness, leadership, version.
#[derive(Clone)]
pub struct ProcessMetrics {
    pub ready: IntGauge,
    pub leader: IntGauge,
    pub build_info: IntGaugeVec,
}

impl ProcessMetrics {
    fn new(r: &mut Reg) -> Self {
        let m = ProcessMetrics {
            ready: r.gauge(
                "mcpgov_ready",
                "1 when every watch has listed and CRDs exist",
            ),
            leader: r.gauge("mcpgov_leader", "1 on the replica that holds the lease"),
            build_info: r.gauges(
                "mcpgov_build_info",
                "Always 1, labelled with the version",
                &["version"],
            ),
        };
        // CPU, RSS, open fds, start time: `process_*`, as every Go operator exports them.
        #[cfg(target_os = "linux")]
        r.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ));
        m
    }
}

#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    /// Every registered family with its label names, read from the descriptors (a
    /// vector with no series yet is absent from a scrape but still exported).
    pub families: BTreeMap<String, Vec<String>>,
    pub writes: WriteMetrics,
    pub reports: ReportMetrics,
    pub watch: WatchMetrics,
    pub crawl: CrawlMetrics,
    pub evaluation: EvaluationMetrics,
    pub process: ProcessMetrics,
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let mut families = BTreeMap::new();
        let mut r = Reg {
            registry: &registry,
            families: &mut families,
        };
        let writes = WriteMetrics::new(&mut r);
        let reports = ReportMetrics::new(&mut r);
        let watch = WatchMetrics::new(&mut r);
        let crawl = CrawlMetrics::new(&mut r);
        let evaluation = EvaluationMetrics::new(&mut r);
        let process = ProcessMetrics::new(&mut r);
        Metrics {
            registry,
            families,
            writes,
            reports,
            watch,
            crawl,
            evaluation,
            process,
        }
    }

    /// Apply one metric value a plan computed (`MetricOp::Expiries` is the index's).
    pub fn apply(&self, op: &MetricOp) {
        fn strs(l: &[String]) -> Vec<&str> {
            l.iter().map(String::as_str).collect()
        }
        let ev = &self.evaluation;
        match op {
            MetricOp::Set(g, labels, v) => ev.gauge(*g).with_label_values(&strs(labels)).set(*v),
            MetricOp::Remove(g, labels) => {
                let _ = ev.gauge(*g).remove_label_values(&strs(labels));
            }
            MetricOp::Count(c, labels, n) => {
                let labels = strs(labels);
                match c {
                    Counter::StatusWrites => &self.writes.status_writes,
                    Counter::ConfigMapWrites => &self.writes.configmap_writes,
                    Counter::ReconcileErrors => &self.writes.reconcile_errors,
                    Counter::Evaluations => &ev.evaluations,
                    Counter::EvaluationSlices => {
                        ev.slices.inc_by(*n);
                        return;
                    }
                }
                .with_label_values(&labels)
                .inc_by(*n)
            }
            MetricOp::EvaluationSeconds(s) => ev.duration.observe(*s),
            MetricOp::Expiries(..) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family the operator exports, as a scrape names it (histograms also as
    /// `_bucket`, `_sum` and `_count`).
    fn exported(m: &Metrics) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = m.families.keys().cloned().collect();
        for n in out.clone() {
            for suffix in ["_bucket", "_sum", "_count"] {
                out.insert(format!("{n}{suffix}"));
            }
        }
        out
    }

    /// Metric names a PromQL expression uses: identifiers that start like ours or the
    /// process collector's.
    fn names_in(expr: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        for c in expr.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                word.push(c);
            } else {
                if word.starts_with("mcpgov_") || word.starts_with("process_") {
                    out.push(std::mem::take(&mut word));
                }
                word.clear();
            }
        }
        out
    }

    #[test]
    fn process_metrics_are_exported() {
        let names = exported(&Metrics::new());
        for n in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
        ] {
            assert!(names.contains(n), "{n} missing from /metrics");
        }
    }

    /// The chart's Grafana dashboard queries only what the operator exports: a renamed
    /// metric breaks this test, not a panel nobody looks at.
    #[test]
    fn every_dashboard_query_names_an_exported_metric() {
        let exported = exported(&Metrics::new());
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../charts/mcpgov/files/dashboard.json"
        );
        let dash: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Panel queries and the variables' label_values() queries.
        let mut exprs: Vec<&str> = dash["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["targets"].as_array().into_iter().flatten())
            .filter_map(|t| t["expr"].as_str())
            .collect();
        exprs.extend(
            dash["templating"]["list"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v["type"] == "query")
                .filter_map(|v| v["query"].as_str()),
        );
        let panels = dash["panels"].as_array().unwrap();
        assert!(panels.len() >= 8, "the dashboard lost its panels");
        assert!(exprs.len() >= panels.len() - 4, "panels without queries");
        for e in exprs {
            let used = names_in(e);
            assert!(!used.is_empty(), "query names no metric: {e}");
            for n in used {
                assert!(
                    exported.contains(&n),
                    "dashboard query uses {n}, which the operator does not export: {e}"
                );
            }
        }
        // The check itself notices a name that is not exported.
        assert!(!exported.contains("mcpgov_no_such_metric"));
        assert_eq!(
            names_in("sum(rate(mcpgov_x_total[5m])) / process_open_fds"),
            ["mcpgov_x_total", "process_open_fds"]
        );
    }

    /// Names and labels are what alerts, the dashboard and docs/alerts.md query: the
    /// families exported, each with its label names, exactly.
    #[test]
    fn metric_names_and_labels_are_unchanged() {
        let got: Vec<String> = Metrics::new()
            .families
            .into_iter()
            .filter(|(n, _)| n.starts_with("mcpgov_"))
            .map(|(n, labels)| match labels.is_empty() {
                true => n,
                false => format!("{n}{{{}}}", labels.join(",")),
            })
            .collect();
        assert_eq!(
            got,
            [
                "mcpgov_agent_evaluations_total{trigger}",
                "mcpgov_agent_exceptions{namespace,agent}",
                "mcpgov_agent_tools{namespace,agent,decision}",
                "mcpgov_agent_violations{namespace,agent}",
                "mcpgov_build_info{version}",
                "mcpgov_bundle_bytes{namespace,agent}",
                "mcpgov_bundle_last_publish_timestamp_seconds{namespace,agent}",
                "mcpgov_bundle_published{namespace,agent}",
                "mcpgov_catalog_tools{namespace,server}",
                "mcpgov_configmap_writes_total{result}",
                "mcpgov_contracts_pending{namespace,server,reason}",
                "mcpgov_crawl_duration_seconds",
                "mcpgov_crawl_failing{namespace,server}",
                "mcpgov_crawl_failures_total{reason}",
                "mcpgov_crawl_last_success_timestamp_seconds{namespace,server}",
                "mcpgov_crawl_list_changed_total",
                "mcpgov_drift{kind}",
                "mcpgov_evaluation_duration_seconds",
                "mcpgov_evaluation_slices_exhausted_total",
                "mcpgov_exception_expiry_timestamp_seconds{namespace,grant,index,policy,owner}",
                "mcpgov_graph_edges{kind}",
                "mcpgov_graph_nodes{kind}",
                "mcpgov_leader",
                "mcpgov_malformed_objects_total{kind}",
                "mcpgov_policy_report_writes_total{result}",
                "mcpgov_policy_reports_available",
                "mcpgov_policy_violations{namespace,policy}",
                "mcpgov_ready",
                "mcpgov_reconcile_errors_total{error}",
                "mcpgov_status_writes_total{kind,result}",
            ]
        );
    }

    fn expiry_lines(m: &Metrics) -> Vec<String> {
        m.render()
            .lines()
            .filter(|l| l.starts_with("mcpgov_exception_expiry_timestamp_seconds{"))
            .map(str::to_string)
            .collect()
    }

    fn series(index: &str, policy: &str, v: f64) -> (Series, f64) {
        let s = ["ns", "g", index, policy, "ops"].map(String::from);
        (s, v)
    }

    #[test]
    fn expiry_series_follow_the_grant_and_leave_none_stale() {
        let m = Metrics::new();
        let two = BTreeMap::from([series("0", "p", 1798761600.0), series("1", "q", 1.5)]);
        let held = m.evaluation.export_expiries(&BTreeSet::new(), &two);
        assert_eq!(
            expiry_lines(&m),
            [
                r#"mcpgov_exception_expiry_timestamp_seconds{grant="g",index="0",namespace="ns",owner="ops",policy="p"} 1798761600"#,
                r#"mcpgov_exception_expiry_timestamp_seconds{grant="g",index="1",namespace="ns",owner="ops",policy="q"} 1.5"#,
            ]
        );
        // The first exception removed: q moves to index 0, nothing of the old set stays.
        let one = BTreeMap::from([series("0", "q", 1.5)]);
        let held = m.evaluation.export_expiries(&held, &one);
        assert_eq!(
            expiry_lines(&m),
            [
                r#"mcpgov_exception_expiry_timestamp_seconds{grant="g",index="0",namespace="ns",owner="ops",policy="q"} 1.5"#
            ]
        );
        // The Grant gone.
        assert!(
            m.evaluation
                .export_expiries(&held, &BTreeMap::new())
                .is_empty()
        );
        assert!(expiry_lines(&m).is_empty());
    }

    /// Pinned servers export both reasons (0 included, so an alert sees recovery);
    /// turning back to Trust, or deleting the server, leaves no series behind.
    #[test]
    fn contract_series_follow_the_mode_and_the_server() {
        use crate::controller::crawl::{CrawlSpec, Outcome};
        use mcpgov_engine::{ContractMode, Contracts, ObjKey};
        let raw = |d: &str| {
            let v = serde_json::json!({"name": "lookup", "description": d, "inputSchema": {}});
            let s = serde_json::to_string(&v).unwrap();
            let r: Box<serde_json::value::RawValue> = serde_json::from_str(&s).unwrap();
            crate::crawler::page_tool_for_tests(&r)
        };
        let approved = raw("a");
        let catalog = crate::crawler::Catalog {
            protocol_version: "2025-11-25".into(),
            server_name: "s".into(),
            server_version: None,
            client_capabilities: serde_json::json!({}),
            tools: vec![raw("b"), {
                let mut t = raw("c");
                t.name = "new".into();
                t
            }],
            resources: vec![],
            resource_templates: vec![],
            not_implemented: vec![],
            bytes: 0,
            catalog_digest: String::new(),
            pages: 1,
        };
        let key = ObjKey::new("team", "notes");
        let outcome = |mode| Outcome {
            key: key.clone(),
            spec: CrawlSpec {
                url: "http://x/mcp".into(),
                sse: false,
                headers: vec![],
                timeout: std::time::Duration::from_secs(1),
                interval: std::time::Duration::from_secs(10),
                max_tools: 10,
                max_bytes: 1 << 20,
                contracts: Contracts {
                    mode,
                    approved: [("lookup".to_string(), approved.contract_digest.clone())]
                        .into_iter()
                        .collect(),
                },
            },
            finished: jiff::Timestamp::now(),
            duration: std::time::Duration::from_millis(1),
            result: Ok(catalog.clone()),
        };
        let lines = |m: &Metrics| -> Vec<String> {
            m.render()
                .lines()
                .filter(|l| l.starts_with("mcpgov_contracts_pending{"))
                .map(str::to_string)
                .collect()
        };
        let m = Metrics::new();
        m.crawl.observe(&key, &outcome(ContractMode::Pinned));
        assert_eq!(
            lines(&m),
            [
                r#"mcpgov_contracts_pending{namespace="team",reason="ContractChanged",server="notes"} 1"#,
                r#"mcpgov_contracts_pending{namespace="team",reason="ContractUnapproved",server="notes"} 1"#,
            ]
        );
        m.crawl.observe(&key, &outcome(ContractMode::Trust));
        assert!(lines(&m).is_empty(), "{:?}", lines(&m));
        m.crawl.observe(&key, &outcome(ContractMode::Pinned));
        m.crawl.forget(&key);
        assert!(lines(&m).is_empty(), "{:?}", lines(&m));
    }
}
