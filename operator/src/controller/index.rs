//! The index: objects as last seen, the engine built from them, which objects need
//! their status or bundle recomputed, and what the writer was asked to write. It is
//! synchronous: `handle` (watch events, crawls, the writer's reports) and `plan`
//! (plan.rs) change it; `run` is the task that feeds it and hands plans to the writer.
//! Nothing is written before every watch has finished its first list.

use super::Config;
use super::jobs::{Job, ObjectId, Op, Report};
use super::kind::{self, Watched};
use super::metrics::MetricOp;
use super::metrics::Metrics;
use super::msg::{Msg, Object};
use super::status::BundleOutcome;
use crate::crd::{Agent, Grant, MCPServer, Policy};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::core::object::HasStatus;
use mcpgov_engine::{Engine, EngineConfig, Impact, Kind, ObjKey};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What needs recomputing.
#[derive(Default, Debug, Clone)]
pub(super) struct Dirty {
    pub all: bool,
    pub agents: BTreeSet<ObjKey>,
    pub grants: BTreeSet<ObjKey>,
    pub servers: BTreeSet<ObjKey>,
    pub policies: bool,
}

impl Dirty {
    /// Whether anything waits to be recomputed.
    pub fn pending(&self) -> bool {
        self.all
            || self.policies
            || !self.agents.is_empty()
            || !self.grants.is_empty()
            || !self.servers.is_empty()
    }

    fn absorb(&mut self, impact: Impact) {
        self.agents.extend(impact.agents);
        self.policies |= impact.policies;
    }
}

/// Per-agent facts Policy status is aggregated from.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub(super) struct AgentSummary {
    /// Granted tools (CAN_CALL edges).
    pub tools: usize,
    pub reached: BTreeSet<ObjKey>,
    pub violations: BTreeMap<ObjKey, usize>,
}

/// The writer (for its list call) and the channel a list's answer comes back on.
pub(super) struct ReportLists {
    pub writer: super::writer::Writer,
    pub tx: tokio::sync::mpsc::Sender<Msg>,
}

pub(super) struct Index {
    pub config: Config,
    pub metrics: Metrics,
    ready: Arc<AtomicBool>,
    pub engine: Engine,
    /// Random per process: bundles record which graph instance compiled them.
    pub instance: String,
    pub servers: BTreeMap<ObjKey, MCPServer>,
    pub agents: BTreeMap<ObjKey, Agent>,
    pub policies: BTreeMap<ObjKey, Policy>,
    pub grants: BTreeMap<ObjKey, Grant>,
    pub configmaps: BTreeMap<ObjKey, ConfigMap>,
    listed: BTreeSet<Watched>,
    relisting: BTreeMap<Watched, BTreeSet<ObjKey>>,
    pub dirty: Dirty,
    pub summaries: BTreeMap<ObjKey, AgentSummary>,
    /// Objects whose write failed transiently: when to retry and how often it failed.
    pub retries: BTreeMap<(Watched, ObjKey), (Instant, u32)>,
    /// Full catalogs from this process's crawls (status may hold a truncated one).
    pub catalogs: BTreeMap<ObjKey, mcpgov_engine::Catalog>,
    /// Crawl outcomes whose status is still to be written.
    pub pending_crawls: Vec<super::crawl::Outcome>,
    specs: tokio::sync::watch::Sender<super::crawl::Specs>,
    leadership: super::leader::Leadership,
    /// Until then (set when the watches first list), the first full pass waits for
    /// servers that never crawled to get their first crawl: published before it,
    /// every tool they expose is drifted, and rewritten a few seconds later.
    first_crawl_grace: Option<Instant>,
    /// Servers with a crawl outcome (success or failure) in this process.
    crawled: BTreeSet<ObjKey>,
    /// Recent evaluation time per namespace (halved every pass): cheap namespaces are
    /// served first, so one tenant's expensive objects cannot hold up another's.
    pub ns_cost: BTreeMap<String, Duration>,
    /// Expected exceptions expiring up to this instant have been re-evaluated.
    expiry_seen: jiff::Timestamp,
    /// The `mcpgov_exception_expiry_timestamp_seconds` series exported per Grant, so
    /// those of a removed exception or Grant are removed too.
    pub expiry_series: BTreeMap<ObjKey, BTreeSet<super::expiry::Series>>,
    /// Status (our field manager's) planned and not yet reported back by the writer:
    /// what later plans compare with, so a change is not planned twice.
    pub sent: BTreeMap<ObjectId, serde_json::Value>,
    /// Bundle ConfigMaps planned and not yet reported back (held form).
    pub sent_cm: BTreeMap<ObjKey, ConfigMap>,
    /// Bundle ConfigMaps whose deletion is planned.
    pub deleting: BTreeSet<ObjKey>,
    /// The resourceVersion our last write of an object produced: a watch event older
    /// than it does not overwrite the status (or ConfigMap) we wrote.
    written_rv: BTreeMap<ObjectId, u64>,
    /// A bundle the writer could not publish (taken name, API error), shown in the
    /// Agent's status by its next evaluation.
    pub bundle_issues: BTreeMap<ObjKey, BundleOutcome>,
    /// Every change made to `engine`, for the admission webhook's mirror.
    pub feed: Option<crate::admission::mirror::Feed>,
    /// PolicyReports (`--policy-reports`): `None` when off.
    pub reports: Option<super::reports::Reports>,
    /// What lists the reports back (off this task): absent in unit tests.
    pub report_lists: Option<ReportLists>,
    /// An MCPServer changed since the crawl specs were last published.
    specs_stale: bool,
    /// Since when a plan has evaluated something the graph metrics do not show yet.
    graph_stale: Option<Instant>,
    /// When the graph metrics were last read, and when a message last arrived: they
    /// walk the whole estate, so they are read in a quiet moment (`graph_due`).
    graph_read: Option<Instant>,
    last_msg: Instant,
}

/// The whole-estate graph metrics (sizes, drift) are read once no message came for
/// `GRAPH_QUIET`, at most once per `GRAPH_EVERY`, and at the latest `GRAPH_LATEST`
/// after the change they show: so a watch event never waits behind them unless
/// changes never stop.
const GRAPH_QUIET: Duration = Duration::from_secs(1);
const GRAPH_EVERY: Duration = Duration::from_secs(5);
const GRAPH_LATEST: Duration = Duration::from_secs(60);

/// The longest the first full pass waits for first crawls.
const FIRST_CRAWL_GRACE: Duration = Duration::from_secs(15);

impl Index {
    pub fn new(
        config: Config,
        metrics: Metrics,
        ready: Arc<AtomicBool>,
        specs: tokio::sync::watch::Sender<super::crawl::Specs>,
        leadership: super::leader::Leadership,
    ) -> Self {
        let engine = Engine::new(EngineConfig {
            governance_namespace: config.governance_namespace.clone(),
        });
        let reports = config.policy_reports.map(super::reports::Reports::new);
        Index {
            reports,
            report_lists: None,
            config,
            metrics,
            ready,
            engine,
            instance: format!("{:016x}", rand::random::<u64>()),
            servers: BTreeMap::new(),
            agents: BTreeMap::new(),
            policies: BTreeMap::new(),
            grants: BTreeMap::new(),
            configmaps: BTreeMap::new(),
            listed: BTreeSet::new(),
            relisting: BTreeMap::new(),
            dirty: Dirty::default(),
            summaries: BTreeMap::new(),
            retries: BTreeMap::new(),
            catalogs: BTreeMap::new(),
            pending_crawls: Vec::new(),
            specs,
            leadership,
            first_crawl_grace: None,
            crawled: BTreeSet::new(),
            ns_cost: BTreeMap::new(),
            expiry_seen: jiff::Timestamp::now(),
            expiry_series: BTreeMap::new(),
            sent: BTreeMap::new(),
            sent_cm: BTreeMap::new(),
            deleting: BTreeSet::new(),
            written_rv: BTreeMap::new(),
            bundle_issues: BTreeMap::new(),
            feed: None,
            specs_stale: true,
            graph_stale: None,
            graph_read: None,
            last_msg: Instant::now(),
        }
    }

    /// Whether the first full pass is still waiting for first crawls (see
    /// `first_crawl_grace`); once it is not, it never waits again.
    fn awaiting_first_crawls(&mut self) -> bool {
        let Some(until) = self.first_crawl_grace else {
            return false;
        };
        let waiting = Instant::now() < until
            && self.servers.iter().any(|(k, s)| {
                !self.crawled.contains(k)
                    && s.status
                        .as_ref()
                        .is_none_or(|st| st.last_successful_crawl_time.is_none())
            });
        if !waiting {
            self.first_crawl_grace = None;
        }
        waiting
    }

    pub fn is_ready(&self) -> bool {
        self.listed.len() == kind::ALL.len()
    }

    pub async fn run(
        mut self,
        mut rx: mpsc::Receiver<Msg>,
        jobs: mpsc::UnboundedSender<Vec<Job>>,
    ) -> Result<(), String> {
        let mut resync = tokio::time::interval(self.config.resync);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next_retry = self.retries.values().map(|(t, _)| *t).min();
            let retry_sleep = async {
                match next_retry {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            // The next expected exception to expire: its agents are re-evaluated at that
            // second, not at the next resync (an expired exception must stop excusing).
            let expiry = self.engine.next_expiry(self.expiry_seen);
            let expiry_due = async {
                match expiry {
                    Some(t) => {
                        let wait = t.duration_since(jiff::Timestamp::now());
                        let wait = Duration::try_from(wait).unwrap_or_default();
                        tokio::time::sleep(wait + Duration::from_millis(5)).await
                    }
                    None => std::future::pending().await,
                }
            };
            let graph_at = self.graph_due();
            let graph_due = async {
                match graph_at {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            let grace = self.first_crawl_grace;
            let grace_ends = async {
                match grace {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            let backlog = self.dirty.pending()
                && self.ready.load(Ordering::Relaxed)
                && self.leadership.is_leader()
                && self.first_crawl_grace.is_none();
            if backlog {
                // A pass left work for the next slice: take what arrived meanwhile (so
                // another namespace's change joins the next slice), then go on at once.
                while let Ok(msg) = rx.try_recv() {
                    self.handle(msg);
                }
                tokio::task::yield_now().await;
            } else {
                tokio::select! {
                    msg = rx.recv() => {
                        let Some(msg) = msg else { return Err("all watches stopped".into()) };
                        self.last_msg = Instant::now();
                        self.handle(msg);
                        while let Ok(msg) = rx.try_recv() {
                            self.handle(msg);
                        }
                    }
                    _ = resync.tick() => {
                        self.dirty.all = true;
                        self.metrics.evaluation.evaluations.with_label_values(&["resync"]).inc();
                    }
                    _ = retry_sleep => self.due_retries(),
                _ = expiry_due => {
                    let now = jiff::Timestamp::now();
                    let agents = self.engine.expiring(self.expiry_seen, now);
                    tracing::info!(agents = agents.len(), "expected exceptions expired; re-evaluating");
                    self.dirty.agents.extend(agents);
                    self.expiry_seen = now;
                }
                    _ = grace_ends => {}
                    _ = graph_due => {
                        self.graph_stale = None;
                        self.graph_read = Some(Instant::now());
                        let t = Instant::now();
                        let graph = self.observe_graph(jiff::Timestamp::now());
                        self.apply_metrics(graph);
                        tracing::debug!(elapsed_ms = t.elapsed().as_millis() as u64, "graph metrics read");
                    }
                    changed = self.leadership.changes.changed() => {
                        if changed.is_err() {
                            return Err("leadership channel closed".into());
                        }
                        let leader = *self.leadership.changes.borrow_and_update();
                        self.metrics.process.leader.set(leader as i64);
                        if leader {
                            // A new leader recomputes everything; only differences are written.
                            self.dirty.all = true;
                        }
                    }
                }
            }
            let woke = Instant::now();
            self.publish_specs();
            let ready = self.is_ready();
            if ready && !self.ready.swap(true, Ordering::Relaxed) {
                tracing::info!(instance = %self.instance, "every watch has listed; publishing");
                self.metrics.process.ready.set(1);
                self.dirty.all = true;
                if self.config.crawl_concurrency > 0 {
                    self.first_crawl_grace = Some(Instant::now() + FIRST_CRAWL_GRACE);
                }
            }
            if ready && self.leadership.is_leader() && !self.awaiting_first_crawls() {
                let now = jiff::Timestamp::now();
                // Reports see the same dirty set and instant as the plan.
                let reports = match &self.reports {
                    Some(r) if self.dirty.pending() || r.owed() => self.plan_reports(now),
                    _ => Vec::new(),
                };
                let mut plan = self.plan(now);
                plan.jobs.extend(reports);
                let n = plan.jobs.len();
                if n > 0 && jobs.send(plan.jobs).is_err() {
                    return Err("the writer stopped".into());
                }
                let sent = woke.elapsed();
                self.apply_metrics(plan.metrics);
                if plan.evaluated && self.graph_stale.is_none() {
                    self.graph_stale = Some(Instant::now());
                }
                if n > 0 {
                    tracing::debug!(
                        jobs = n,
                        sent_ms = sent.as_millis() as u64,
                        after_ms = woke.elapsed().as_millis() as u64,
                        "jobs sent"
                    );
                }
            }
        }
    }

    /// When to read the graph metrics next (see `GRAPH_QUIET`); `None`: they are current.
    fn graph_due(&self) -> Option<Instant> {
        let stale = self.graph_stale?;
        let mut at = self.last_msg + GRAPH_QUIET;
        if let Some(read) = self.graph_read {
            at = at.max(read + GRAPH_EVERY);
        }
        Some(at.min(stale + GRAPH_LATEST))
    }

    /// Tell the crawl scheduler which servers exist (it crawls changed ones at once).
    fn publish_specs(&mut self) {
        if !std::mem::take(&mut self.specs_stale) {
            return;
        }
        let specs: super::crawl::Specs = self
            .servers
            .iter()
            .map(|(k, s)| (k.clone(), super::crawl::CrawlSpec::of(s)))
            .collect();
        self.specs.send_if_modified(|old| {
            if *old == specs {
                false
            } else {
                *old = specs;
                true
            }
        });
    }

    /// The engine's form of a server: the in-memory catalog of our own crawl wins over
    /// status (which may be truncated).
    /// Apply to the engine, and tell the mirror (when there is one).
    fn engine_apply(&mut self, object: mcpgov_engine::Object) -> mcpgov_engine::Impact {
        if let Some(f) = &self.feed {
            f.apply(&object);
        }
        self.engine.apply(object)
    }

    fn server_object(&self, key: &ObjKey, s: &MCPServer) -> mcpgov_engine::Object {
        let mut e = s.to_engine("");
        if let Some(c) = self.catalogs.get(key) {
            e.catalog = Some(c.clone());
        }
        mcpgov_engine::Object::Server(e)
    }

    pub(super) fn due_retries(&mut self) {
        let now = Instant::now();
        let due: Vec<(Watched, ObjKey)> = self
            .retries
            .iter()
            .filter(|(_, (t, _))| *t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for (kind, key) in due {
            self.mark(kind, key);
        }
    }

    /// Remember a transient failure; the object is retried with exponential backoff
    /// (1 s doubling to 5 min, with jitter).
    pub fn retry_later(&mut self, kind: Watched, key: ObjKey) {
        let entry = self
            .retries
            .entry((kind, key))
            .or_insert((Instant::now(), 0));
        entry.1 += 1;
        let base = Duration::from_secs(1u64 << entry.1.min(8)).min(Duration::from_secs(300));
        let jitter = Duration::from_millis(rand::random::<u64>() % 1000);
        entry.0 = Instant::now() + base + jitter;
    }

    fn mark(&mut self, kind: Watched, key: ObjKey) {
        match kind {
            Watched::Agent => {
                self.dirty.agents.insert(key);
            }
            Watched::Grant => {
                self.dirty.grants.insert(key);
            }
            Watched::MCPServer => {
                self.dirty.servers.insert(key);
            }
            Watched::Policy => self.dirty.policies = true,
            Watched::ConfigMap => {}
            Watched::Report => {
                if let Some(r) = &mut self.reports {
                    r.retry_due(key.namespace);
                }
            }
        }
    }

    pub(super) fn handle(&mut self, msg: Msg) {
        if let Msg::Apply(Object::MCPServer(_))
        | Msg::Malformed(Watched::MCPServer, _)
        | Msg::Delete(Watched::MCPServer, _)
        | Msg::ListDone(Watched::MCPServer) = &msg
        {
            self.specs_stale = true;
        }
        match msg {
            Msg::Apply(obj) => {
                if let Some(seen) = self.relisting.get_mut(&obj.kind()) {
                    seen.insert(obj.key());
                }
                self.apply(obj);
            }
            Msg::Malformed(kind, key) => {
                // Still there: a relist keeps the last good version.
                if let Some(seen) = self.relisting.get_mut(&kind) {
                    seen.insert(key);
                }
            }
            Msg::Delete(kind, key) => self.delete(kind, &key),
            Msg::ListStart(kind) => {
                self.relisting.insert(kind, BTreeSet::new());
            }
            Msg::ListDone(kind) => {
                let seen = self.relisting.remove(&kind).unwrap_or_default();
                for key in self.keys(kind) {
                    if !seen.contains(&key) {
                        self.delete(kind, &key);
                    }
                }
                self.listed.insert(kind);
            }
            Msg::Written(report) => self.written(*report),
            Msg::ReportsListed(listed) => {
                if let Some(r) = &mut self.reports {
                    r.listed(*listed, &self.metrics.reports);
                }
            }
            Msg::Crawled(outcome) => {
                self.metrics.crawl.observe(&outcome.key, &outcome);
                self.crawled.insert(outcome.key.clone());
                if let Ok(cat) = &outcome.result {
                    let key = outcome.key.clone();
                    self.catalogs
                        .insert(key.clone(), mcpgov_engine::Catalog::from(cat));
                    if let Some(s) = self.servers.get(&key) {
                        let impact = self.engine_apply(self.server_object(&key, s));
                        self.dirty.absorb(impact);
                        self.dirty.servers.insert(key);
                    }
                }
                self.pending_crawls.push(*outcome);
            }
            Msg::Failed(kind, _) => {
                if !self.listed.contains(&kind) {
                    tracing::debug!(kind = kind.name(), "still waiting for the first list");
                }
            }
        }
    }

    /// Export `series` for the Grant `key`, removing the ones it exported before and no
    /// longer has.
    pub fn set_expiry_series(
        &mut self,
        key: &ObjKey,
        series: &BTreeMap<super::expiry::Series, f64>,
    ) {
        let before = self.expiry_series.remove(key).unwrap_or_default();
        let now = self.metrics.evaluation.export_expiries(&before, series);
        if !now.is_empty() {
            self.expiry_series.insert(key.clone(), now);
        }
    }

    fn keys(&self, kind: Watched) -> Vec<ObjKey> {
        match kind {
            Watched::MCPServer => self.servers.keys().cloned().collect(),
            Watched::Agent => self.agents.keys().cloned().collect(),
            Watched::Policy => self.policies.keys().cloned().collect(),
            Watched::Grant => self.grants.keys().cloned().collect(),
            Watched::ConfigMap => self.configmaps.keys().cloned().collect(),
            Watched::Report => Vec::new(),
        }
    }

    fn apply(&mut self, obj: Object) {
        let (kind, key) = (obj.kind(), obj.key());
        match obj {
            Object::MCPServer(s) => {
                let k = key.clone();
                self.store(
                    kind,
                    key,
                    *s,
                    |ix| &mut ix.servers,
                    move |ix, s| ix.server_object(&k, s),
                )
            }
            Object::Agent(a) => {
                self.store(
                    kind,
                    key.clone(),
                    *a,
                    |ix| &mut ix.agents,
                    |_, a| mcpgov_engine::Object::Agent(a.to_engine("")),
                );
                if let (Some(f), Some(a)) = (&self.feed, self.agents.get(&key)) {
                    f.bundle_name(&key, &super::bundles::config_map_name(a));
                }
            }
            Object::Policy(p) => {
                self.store(
                    kind,
                    key.clone(),
                    *p,
                    |ix| &mut ix.policies,
                    |_, p| mcpgov_engine::Object::Policy(p.to_engine("")),
                );
                if let (Some(f), Some(p)) = (&self.feed, self.policies.get(&key)) {
                    let mode = p.spec.admission.unwrap_or_default();
                    f.enforce(&key, mode == crate::crd::policy::AdmissionMode::Enforce);
                }
            }
            Object::Grant(g) => self.store(
                kind,
                key,
                *g,
                |ix| &mut ix.grants,
                |_, g| mcpgov_engine::Object::Grant(g.to_engine("")),
            ),
            // Held by the watch task already (no bundle bytes).
            Object::ConfigMap(cm) => {
                if !self.older_than_written(kind, &key, &cm.metadata) {
                    if let Some(f) = &self.feed
                        && let Some((agent, p)) = crate::serve::live::published_of(&cm)
                    {
                        f.bundle(agent, Some(p));
                    }
                    self.configmaps.insert(key, *cm);
                }
            }
        }
    }

    /// Keep `typed` as the object `key` of `kind` (in the map `map` picks), apply its
    /// engine form (`engine_form`) and mark it when it moved or changed. A new
    /// generation always gets its status rewritten (observedGeneration), even when
    /// nothing the engine sees changed.
    fn store<K>(
        &mut self,
        kind: Watched,
        key: ObjKey,
        mut typed: K,
        map: fn(&mut Index) -> &mut BTreeMap<ObjKey, K>,
        engine_form: impl FnOnce(&Index, &K) -> mcpgov_engine::Object,
    ) where
        K: Resource + HasStatus,
        K::Status: Clone,
    {
        if self.older_than_written(kind, &key, typed.meta()) {
            // An event from before our own status write: keep the status we wrote.
            *typed.status_mut() = map(self).get(&key).and_then(|o| o.status().cloned());
        }
        let generation = typed.meta().generation;
        let moved = map(self)
            .get(&key)
            .is_none_or(|old| old.meta().generation != generation);
        let object = engine_form(self, &typed);
        let impact = self.engine_apply(object);
        let changed = impact.changed;
        tracing::debug!(kind = kind.name(), object = %key, changed, moved, "applied");
        self.dirty.absorb(impact);
        map(self).insert(key.clone(), typed);
        if moved || changed {
            self.mark(kind, key);
        }
    }

    fn delete(&mut self, kind: Watched, key: &ObjKey) {
        let engine_kind = match kind {
            Watched::MCPServer => {
                self.catalogs.remove(key);
                self.metrics.crawl.forget(key);
                self.servers.remove(key).map(|_| Kind::MCPServer)
            }
            Watched::Agent => self.agents.remove(key).map(|_| Kind::Agent),
            Watched::Policy => {
                let _ = self
                    .metrics
                    .evaluation
                    .policy_violations
                    .remove_label_values(&[key.namespace.as_str(), key.name.as_str()]);
                self.policies.remove(key).map(|_| Kind::Policy)
            }
            Watched::Grant => {
                self.set_expiry_series(key, &BTreeMap::new());
                self.grants.remove(key).map(|_| Kind::Grant)
            }
            Watched::ConfigMap => {
                // Someone removed a bundle: its agent republishes it.
                if let Some(cm) = self.configmaps.remove(key)
                    && let Some((agent, _)) = super::bundles::owner(&cm)
                {
                    if let Some(f) = &self.feed {
                        f.bundle(ObjKey::new(&key.namespace, agent), None);
                    }
                    self.dirty.agents.insert(ObjKey::new(&key.namespace, agent));
                }
                None
            }
            Watched::Report => None,
        };
        if let Some(k) = engine_kind {
            if let Some(f) = &self.feed {
                f.delete(k, key);
            }
            let impact = self.engine.delete(k, key);
            self.dirty.absorb(impact);
        }
        self.retries.remove(&(kind, key.clone()));
        let id = ObjectId::new(kind, key.clone());
        self.written_rv.remove(&id);
        self.sent.remove(&id);
        if kind == Watched::ConfigMap {
            self.sent_cm.remove(key);
            self.deleting.remove(key);
        }
    }

    /// Whether a watched object is older than the one our last write of it produced
    /// (resourceVersions of one object grow with each write; one that does not parse
    /// as a number is taken as newer, so the watch wins).
    fn older_than_written(
        &mut self,
        kind: Watched,
        key: &ObjKey,
        meta: &kube::api::ObjectMeta,
    ) -> bool {
        let id = ObjectId::new(kind, key.clone());
        let Some(written) = self.written_rv.get(&id).copied() else {
            return false;
        };
        let seen = meta
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok());
        match seen {
            Some(v) if v < written => true,
            _ => {
                self.written_rv.remove(&id);
                false
            }
        }
    }

    /// Metric values from a plan.
    pub fn apply_metrics(&mut self, ops: Vec<MetricOp>) {
        for op in ops {
            match op {
                MetricOp::Expiries(key, series) => self.set_expiry_series(&key, &series),
                op => self.metrics.apply(&op),
            }
        }
    }

    /// The writer's report on one job: record what was written (so the watch's older
    /// events do not undo it), and schedule what failed for another try.
    pub fn written(&mut self, report: Report) {
        let agent = (report.job.kind == Watched::Agent).then(|| report.job.key.clone());
        if report.job.kind == Watched::Report {
            for done in report.steps {
                let Some(r) = &mut self.reports else { return };
                let out = r.written(done);
                let key = ObjKey::new(out.namespace, crate::names::REPORT_NAME);
                if out.retry {
                    self.retry_later(Watched::Report, key);
                } else {
                    self.retries.remove(&(Watched::Report, key));
                }
            }
            return;
        }
        for done in report.steps {
            let rv = done
                .result
                .as_ref()
                .ok()
                .and_then(|w| w.resource_version.as_deref()?.parse::<u64>().ok());
            if let Some(rv) = rv {
                self.written_rv.insert(done.object.clone(), rv);
            }
            match (done.op, done.result) {
                (
                    Op::Status {
                        manager, status, ..
                    },
                    result,
                ) => {
                    if manager == crate::names::FIELD_MANAGER
                        && self.sent.get(&done.object) == Some(&status)
                    {
                        self.sent.remove(&done.object);
                    }
                    match result {
                        Ok(_) => {
                            if manager == crate::names::FIELD_MANAGER {
                                self.adopt_status(&done.object, status);
                            }
                            self.retries
                                .remove(&(done.object.kind, done.object.key.clone()));
                        }
                        Err(e) => self.write_failed(done.object.kind, &done.object.key, e),
                    }
                }
                (Op::CreateConfigMap(cm) | Op::ApplyConfigMap(cm), result) => {
                    let key = done.object.key.clone();
                    let revision = super::bundles::revision(&cm);
                    if self
                        .sent_cm
                        .get(&key)
                        .is_some_and(|s| super::bundles::revision(s) == revision)
                    {
                        self.sent_cm.remove(&key);
                    }
                    match result {
                        Ok(w) => {
                            let mut cm = *cm;
                            cm.metadata.uid = w.uid.or(cm.metadata.uid);
                            cm.metadata.resource_version = w.resource_version;
                            if let Some(a) = &agent {
                                self.metrics
                                    .evaluation
                                    .bundle_last_publish
                                    .with_label_values(&[a.namespace.as_str(), a.name.as_str()])
                                    .set(jiff::Timestamp::now().as_second());
                            }
                            self.configmaps.insert(key, cm);
                        }
                        Err(e) => {
                            let Some(a) = agent.clone() else { continue };
                            let name = key.name.clone();
                            let issue = match &e {
                                super::writer::Error::Taken => BundleOutcome::Conflict(format!(
                                    "ConfigMap {name} exists and was not created by mcpgov for \
                                     this Agent; choose another spec.bundle.configMapName"
                                )),
                                e => BundleOutcome::Failed(e.to_string()),
                            };
                            if e != super::writer::Error::NotLeader {
                                self.bundle_issues.insert(a.clone(), issue);
                                self.dirty.agents.insert(a.clone());
                            }
                            if e != super::writer::Error::Taken {
                                self.write_failed(Watched::Agent, &a, e);
                            }
                        }
                    }
                }
                // Answered in `Reports::written` above.
                (Op::ApplyReport { .. } | Op::DeleteReport { .. }, _) => {}
                (Op::DeleteConfigMap { .. }, result) => {
                    self.deleting.remove(&done.object.key);
                    match result {
                        Ok(_) => {
                            self.configmaps.remove(&done.object.key);
                            // A same-named Agent may have waited for the name.
                            if let Some(a) = &agent {
                                self.dirty.agents.insert(a.clone());
                            }
                        }
                        Err(e) => {
                            if let Some(a) = &agent {
                                self.write_failed(Watched::Agent, &a.clone(), e);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Our status as written, into the object as the index holds it (the watch's echo
    /// may come later).
    fn adopt_status(&mut self, id: &ObjectId, status: serde_json::Value) {
        fn adopt<S: serde::de::DeserializeOwned>(slot: &mut Option<S>, v: serde_json::Value) {
            if let Ok(s) = serde_json::from_value(v) {
                *slot = Some(s);
            }
        }
        match id.kind {
            Watched::Agent => {
                if let Some(o) = self.agents.get_mut(&id.key) {
                    adopt(&mut o.status, status)
                }
            }
            Watched::Grant => {
                if let Some(o) = self.grants.get_mut(&id.key) {
                    adopt(&mut o.status, status)
                }
            }
            Watched::Policy => {
                if let Some(o) = self.policies.get_mut(&id.key) {
                    adopt(&mut o.status, status)
                }
            }
            Watched::MCPServer => {
                // Ours is part of the status: drift, our conditions, observedGeneration.
                let Some(o) = self.servers.get_mut(&id.key) else {
                    return;
                };
                let Ok(ours) =
                    serde_json::from_value::<crate::crd::server::MCPServerStatus>(status)
                else {
                    return;
                };
                let st = o.status.get_or_insert_with(Default::default);
                st.conditions
                    .retain(|c| !ours.conditions.iter().any(|o| o.type_ == c.type_));
                st.conditions.extend(ours.conditions);
                st.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
                st.drift = ours.drift;
                st.observed_generation = ours.observed_generation;
            }
            Watched::ConfigMap | Watched::Report => {}
        }
    }

    fn write_failed(&mut self, kind: Watched, key: &ObjKey, e: super::writer::Error) {
        use super::writer::Error;
        match e {
            Error::NotAttempted => return,
            // Not a failure of the write: this replica must not write.
            Error::NotLeader => {}
            _ => self
                .metrics
                .writes
                .reconcile_errors
                .with_label_values(&[e.label()])
                .inc(),
        }
        tracing::warn!(kind = kind.name(), object = %key, error = %e, transient = e.is_transient(), "write failed");
        if e.is_transient() {
            self.retry_later(kind, key.clone());
        }
    }
}
