//! PolicyReports written by the operator (`--policy-reports`): on each pass the reports
//! of the namespaces the pass touched are built by `reports::build` (what `mcpgov check
//! -o policyreport` prints) from the engine's findings, compared with what the API holds,
//! and only differences become jobs for the writer (`Op::ApplyReport`, `Op::DeleteReport`
//! on the namespace's `Watched::Report`): a changed report is applied, a namespace left
//! without findings loses its report. Nothing here awaits: the reports are read back by
//! a list task on full passes, whose answer arrives as `Msg::ReportsListed`, and each
//! write's outcome comes back in the writer's report. A missing CRD is said once (the
//! metric `mcpgov_policy_reports_available` and one log line) and looked for again on
//! every full pass (resync), so installing it later needs no restart.
//!
//! Desired reports → diff against what is held → jobs: `scope` and `plan` are pure,
//! `Index::plan_reports` is the one call from the index's loop.

use super::index::{Dirty, Index};
use super::jobs::{Done, Job, ObjectId, Op, Step};
use super::kind::Watched;
use super::writer::Error;
use crate::reports::{self, Api, Report};
use kube::api::DynamicObject;
use mcpgov_engine::{Evaluator, Finding, Kind, ObjKey};
use std::collections::{BTreeMap, BTreeSet};

/// A report of ours the API holds, as last written or listed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Held {
    uid: Option<String>,
    report: Report,
}

/// What a list of our reports found: per namespace, the report held.
#[derive(Debug)]
pub struct Listed(pub(super) Result<BTreeMap<String, Held>, Error>);

/// The operator's report state (present only with reports on).
pub struct Reports {
    api: Api,
    /// Per namespace, our report as the API holds it.
    held: BTreeMap<String, Held>,
    /// Per namespace, the last write handed to the writer and not reported back yet:
    /// the report applied, or `None` for a deletion. Plans compare with it first, so a
    /// write in flight is not planned again.
    planned: BTreeMap<String, Option<Report>>,
    /// Per namespace, the objects whose findings its report holds: one that is gone
    /// (deleted since) makes the namespace's report be rebuilt.
    sources: BTreeMap<String, BTreeSet<(Kind, ObjKey)>>,
    /// Namespaces whose write failed: rebuilt on the next pass.
    retry: BTreeSet<String>,
    /// Whether the API is served; `None` before the first look.
    available: Option<bool>,
    /// `held` is to be read again from the API before the next write (start, a new
    /// leader's first pass, a write that found no such resource).
    relist: bool,
    /// A list is in flight.
    listing: bool,
    /// A list came back: the next pass compares every namespace with it.
    rescan: bool,
    /// A failed write waits for its retry: the next pass is owed to the reports alone.
    due: bool,
}

impl Reports {
    pub fn new(api: Api) -> Self {
        Reports {
            api,
            held: BTreeMap::new(),
            planned: BTreeMap::new(),
            sources: BTreeMap::new(),
            retry: BTreeSet::new(),
            available: None,
            relist: true,
            listing: false,
            rescan: false,
            due: false,
        }
    }

    /// Whether the reports want a pass though nothing else is dirty.
    pub fn owed(&self) -> bool {
        self.rescan || self.due
    }

    /// A failed write's retry is due: the namespace is rebuilt on the next pass.
    pub(super) fn retry_due(&mut self, namespace: String) {
        self.retry.insert(namespace);
        self.due = true;
    }

    /// What the API holds in the namespaces of `scope`, with the writes in flight as if
    /// done. Only those are copied: a change pass touches a few namespaces, and each
    /// report may be up to about 1 MiB.
    fn current(&self, scope: &Scope) -> BTreeMap<String, Held> {
        let mut current: BTreeMap<String, Held> = self
            .held
            .iter()
            .filter(|(ns, _)| scope.contains(ns))
            .map(|(ns, h)| (ns.clone(), h.clone()))
            .collect();
        for (ns, planned) in self.planned.iter().filter(|(ns, _)| scope.contains(ns)) {
            match planned {
                Some(report) => {
                    let uid = self.held.get(ns).and_then(|h| h.uid.clone());
                    current.insert(
                        ns.clone(),
                        Held {
                            uid,
                            report: report.clone(),
                        },
                    );
                }
                None => {
                    current.remove(ns);
                }
            }
        }
        current
    }

    /// A write failed: the namespace is rebuilt on a later pass (`retry_later` for a
    /// transient failure, otherwise with the next change or resync).
    fn failed(&mut self, ns: &str, e: &Error) {
        if matches!(
            e,
            Error::Api {
                code: Some(404),
                ..
            }
        ) {
            // The CRD may have gone: look again before writing more.
            self.relist = true;
        }
        self.held.remove(ns);
        self.retry.insert(ns.to_string());
    }
}

/// Which reports a pass rebuilds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    All,
    Namespaces(BTreeSet<String>),
}

impl Scope {
    fn contains(&self, ns: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Namespaces(set) => set.contains(ns),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Scope::Namespaces(s) if s.is_empty())
    }
}

/// The namespaces whose reports a pass over `dirty` may change: those of the objects
/// it re-evaluates, every namespace a Policy or a report is in when Policies changed
/// (a Policy's change moves findings anywhere), those whose report holds findings of an
/// object that is gone, and those whose last write failed.
fn scope(
    dirty: &Dirty,
    policies: &BTreeSet<String>,
    sources: &BTreeMap<String, BTreeSet<(Kind, ObjKey)>>,
    exists: impl Fn(Kind, &ObjKey) -> bool,
    retry: &BTreeSet<String>,
) -> Scope {
    if dirty.all {
        return Scope::All;
    }
    let mut set: BTreeSet<String> = dirty
        .agents
        .iter()
        .chain(&dirty.grants)
        .chain(&dirty.servers)
        .map(|k| k.namespace.clone())
        .collect();
    if dirty.policies {
        set.extend(policies.iter().cloned());
        set.extend(sources.keys().cloned());
    }
    for (ns, objects) in sources {
        if objects.iter().any(|(kind, key)| !exists(*kind, key)) {
            set.insert(ns.clone());
        }
    }
    set.extend(retry.iter().cloned());
    Scope::Namespaces(set)
}

/// Whether a pass reads the reports back from the API first: on every full pass (which
/// also looks for a CRD that was missing), and when what is held is unknown, unless the
/// CRD is known to be missing: then not before the next full pass, so a missing CRD
/// costs no request per change.
fn needs_list(scope: &Scope, relist: bool, available: Option<bool>) -> bool {
    *scope == Scope::All || (relist && available != Some(false))
}

/// One write.
#[derive(Clone, Debug, PartialEq)]
enum PlannedOp {
    Apply(Box<Report>),
    Delete {
        namespace: String,
        uid: Option<String>,
    },
}

/// The writes that make the API hold `desired` for every namespace in `scope`: a report
/// equal to the one held is not written.
fn plan(
    scope: &Scope,
    desired: &BTreeMap<String, Report>,
    held: &BTreeMap<String, Held>,
) -> Vec<PlannedOp> {
    let namespaces: BTreeSet<&String> = desired
        .keys()
        .chain(held.keys())
        .filter(|ns| scope.contains(ns))
        .collect();
    let mut ops = Vec::new();
    for ns in namespaces {
        match (desired.get(ns), held.get(ns)) {
            (Some(d), Some(h)) if h.report == *d => {}
            (Some(d), _) => ops.push(PlannedOp::Apply(Box::new(d.clone()))),
            (None, Some(h)) => ops.push(PlannedOp::Delete {
                namespace: ns.clone(),
                uid: h.uid.clone(),
            }),
            (None, None) => {}
        }
    }
    ops
}

/// The findings of every object in `objects` that land in a namespace of `scope`
/// (`check`'s findings, restricted), sorted as `check` sorts them, and the objects they
/// came from per namespace.
#[allow(clippy::type_complexity)]
fn findings_in<'a>(
    ev: &Evaluator<'_>,
    objects: impl Iterator<Item = (Kind, &'a ObjKey)>,
    scope: &Scope,
) -> (Vec<Finding>, BTreeMap<String, BTreeSet<(Kind, ObjKey)>>) {
    let mut out = Vec::new();
    let mut sources: BTreeMap<String, BTreeSet<(Kind, ObjKey)>> = BTreeMap::new();
    for (kind, key) in objects {
        if !scope.contains(&key.namespace) {
            continue;
        }
        let mut found = ev.engine().compile_findings_of(kind, key);
        found.extend(match kind {
            Kind::Agent => ev.agent_findings(key),
            Kind::Grant => ev.grant_findings(key),
            Kind::Policy => ev.policy_findings(key),
            Kind::MCPServer => ev.server_findings(key),
        });
        for f in found {
            let Some(ns) = reports::namespace_of(&f) else {
                continue;
            };
            if scope.contains(ns) {
                sources
                    .entry(ns.to_string())
                    .or_default()
                    .insert((kind, key.clone()));
                out.push(f);
            }
        }
    }
    out.sort();
    (out, sources)
}

/// A listed report read back; `None` for one that is not ours or not in our shape
/// (rewritten: the next apply makes it ours again).
fn held_of(obj: &DynamicObject) -> Option<(String, Held)> {
    let ns = obj.metadata.namespace.clone()?;
    let report: Report = serde_json::to_value(obj)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())?;
    Some((
        ns,
        Held {
            uid: obj.metadata.uid.clone(),
            report,
        },
    ))
}

/// What the writer's report on a report job says to the index: the namespace, whether
/// a transient failure wants a retry.
pub(super) struct Outcome {
    pub namespace: String,
    pub retry: bool,
}

impl Reports {
    /// The answer of the list `Index::plan_reports` started.
    pub(super) fn listed(&mut self, listed: Listed, metrics: &super::metrics::ReportMetrics) {
        self.listing = false;
        match listed.0 {
            Ok(held) => {
                if self.available != Some(true) {
                    tracing::info!(
                        api = self.api.api_version(),
                        kind = self.api.kind(),
                        "writing mcpgov's findings as reports"
                    );
                }
                self.available = Some(true);
                self.held = held;
                self.relist = false;
                // What the API held may be anything: compare everything.
                self.rescan = true;
            }
            Err(Error::Api {
                code: Some(404), ..
            }) => {
                if self.available != Some(false) {
                    tracing::warn!(
                        api = self.api.api_version(),
                        resource = self.api.plural(),
                        "the reports API is not served (its CRD is missing): no reports are written; it is looked for again on every resync"
                    );
                }
                self.available = Some(false);
                self.relist = true;
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list reports; trying again on the next pass");
                self.relist = true;
            }
        }
        metrics
            .reports_available
            .set(i64::from(self.available == Some(true)));
    }

    /// The writer's answer on one step of a report job.
    pub(super) fn written(&mut self, done: Done) -> Outcome {
        let namespace = done.object.key.namespace.clone();
        let (planned, result) = match done.op {
            Op::ApplyReport { report, .. } => (Some(*report), done.result),
            Op::DeleteReport { .. } => (None, done.result),
            _ => {
                return Outcome {
                    namespace,
                    retry: false,
                };
            }
        };
        if self.planned.get(&namespace) == Some(&planned) {
            self.planned.remove(&namespace);
        }
        let retry = match result {
            Ok(w) => {
                match planned {
                    Some(report) => {
                        self.held
                            .insert(namespace.clone(), Held { uid: w.uid, report });
                    }
                    None => {
                        self.held.remove(&namespace);
                    }
                }
                false
            }
            Err(Error::NotAttempted) => false,
            Err(e) => {
                tracing::warn!(namespace = %namespace, error = %e, "could not write the report");
                self.failed(&namespace, &e);
                e.is_transient()
            }
        };
        Outcome { namespace, retry }
    }
}

/// List our reports (`Writer::list_reports`) and read them back, off the index task.
pub(super) async fn list(
    writer: super::writer::Writer,
    api: Api,
    namespace: Option<String>,
) -> Listed {
    Listed(
        writer
            .list_reports(api, namespace.as_deref())
            .await
            .map(|items| items.iter().filter_map(held_of).collect()),
    )
}

impl Index {
    /// The report jobs for the namespaces `self.dirty` touches, evaluated at `now`
    /// (called before `plan`, which takes the dirty set). On a full pass, or while what
    /// the API holds is unknown, it starts a list instead; the pass after its answer
    /// compares every namespace.
    pub(super) fn plan_reports(&mut self, now: jiff::Timestamp) -> Vec<Job> {
        let Some(mut st) = self.reports.take() else {
            return Vec::new();
        };
        let jobs = self.plan_reports_with(&mut st, now);
        self.reports = Some(st);
        jobs
    }

    fn plan_reports_with(&self, st: &mut Reports, now: jiff::Timestamp) -> Vec<Job> {
        let policies: BTreeSet<String> =
            self.policies.keys().map(|k| k.namespace.clone()).collect();
        let mut scope = scope(
            &self.dirty,
            &policies,
            &st.sources,
            |kind, key| match kind {
                Kind::Agent => self.agents.contains_key(key),
                Kind::Grant => self.grants.contains_key(key),
                Kind::Policy => self.policies.contains_key(key),
                Kind::MCPServer => self.servers.contains_key(key),
            },
            &st.retry,
        );
        st.due = false;
        if std::mem::take(&mut st.rescan) {
            scope = Scope::All;
        } else if needs_list(&scope, st.relist, st.available) {
            // Until it answers nothing is written: a pass in between is covered by the
            // full comparison after it.
            if !st.listing
                && let Some(lists) = &self.report_lists
            {
                st.listing = true;
                let writer = lists.writer.clone();
                let tx = lists.tx.clone();
                let namespace = self.config.namespace.clone();
                let api = st.api;
                tokio::spawn(async move {
                    let listed = list(writer, api, namespace).await;
                    let _ = tx
                        .send(super::msg::Msg::ReportsListed(Box::new(listed)))
                        .await;
                });
            }
            return Vec::new();
        }
        if st.listing || st.relist || st.available != Some(true) || scope.is_empty() {
            return Vec::new();
        }
        let ev = self.engine.evaluator(now);
        let objects = self
            .agents
            .keys()
            .map(|k| (Kind::Agent, k))
            .chain(self.grants.keys().map(|k| (Kind::Grant, k)))
            .chain(self.policies.keys().map(|k| (Kind::Policy, k)))
            .chain(self.servers.keys().map(|k| (Kind::MCPServer, k)));
        let (findings, sources) = findings_in(&ev, objects, &scope);
        let built = reports::build(&findings, &reports::Options::new(st.api));
        let desired: BTreeMap<String, Report> = built
            .reports
            .into_iter()
            .map(|r| (r.metadata.namespace.clone(), r))
            .collect();
        match &scope {
            Scope::All => st.sources = sources,
            Scope::Namespaces(set) => {
                for ns in set {
                    match sources.get(ns) {
                        Some(s) => st.sources.insert(ns.clone(), s.clone()),
                        None => st.sources.remove(ns),
                    };
                }
            }
        }
        let ops = plan(&scope, &desired, &st.current(&scope));
        let unchanged = desired.len().saturating_sub(
            ops.iter()
                .filter(|o| matches!(o, PlannedOp::Apply(_)))
                .count(),
        );
        self.metrics
            .reports
            .report_writes
            .with_label_values(&["skipped"])
            .inc_by(unchanged as u64);
        st.retry.clear();
        ops.into_iter()
            .map(|op| {
                let (namespace, planned, op) = match op {
                    PlannedOp::Apply(report) => (
                        report.metadata.namespace.clone(),
                        Some((*report).clone()),
                        Op::ApplyReport {
                            api: st.api,
                            report,
                        },
                    ),
                    PlannedOp::Delete { namespace, uid } => {
                        (namespace, None, Op::DeleteReport { api: st.api, uid })
                    }
                };
                st.planned.insert(namespace.clone(), planned);
                let mut job = Job::new(ObjectId::new(
                    Watched::Report,
                    ObjKey::new(namespace, crate::names::REPORT_NAME),
                ));
                job.steps.push(Step::new(op));
                job
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &str, name: &str) -> ObjKey {
        ObjKey::new(ns, name)
    }

    fn report(ns: &str, fail: usize) -> Report {
        Report {
            api_version: Api::PolicyReport.api_version().into(),
            kind: Api::PolicyReport.kind().into(),
            metadata: reports::Metadata {
                name: "mcpgov".into(),
                namespace: ns.into(),
                ..Default::default()
            },
            source: None,
            scope: reports::ObjectReference {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                namespace: None,
                name: ns.into(),
            },
            configuration: None,
            summary: reports::ReportSummary {
                fail,
                ..Default::default()
            },
            results: Vec::new(),
        }
    }

    fn held(ns: &str, fail: usize) -> (String, Held) {
        (
            ns.into(),
            Held {
                uid: Some(format!("uid-{ns}")),
                report: report(ns, fail),
            },
        )
    }

    /// The operator writes what `mcpgov check -o policyreport` prints: the findings of a
    /// scope are `check`'s that land in it, whichever namespaces it holds.
    #[test]
    fn findings_in_a_scope_are_checks_restricted_to_it() {
        for example in ["quickstart", "multi-tenant", "cross-server", "gateway"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples")
                .join(example);
            let args = crate::cli::input::InputArgs {
                paths: vec![dir],
                catalog: Vec::new(),
                namespace: Some("default".into()),
                governance_namespace: "mcpgov-system".into(),
                now: Some("2026-11-29T00:00:00Z".into()),
                read: crate::cli::input::ReadArgs {
                    max_file_size: 32 << 20,
                },
                live: Default::default(),
            };
            let input = args.load().unwrap_or_else(|_| panic!("{example} loads"));
            let e = &input.engine;
            let ev = e.evaluator(input.now);
            let all = ev.check();
            assert!(!all.is_empty(), "{example} has findings");
            let keys: Vec<(Kind, ObjKey)> = e
                .agents()
                .map(|a| (Kind::Agent, a.key.clone()))
                .chain(e.grants().map(|g| (Kind::Grant, g.key.clone())))
                .chain(e.policies().map(|p| (Kind::Policy, p.key.clone())))
                .chain(e.servers().map(|s| (Kind::MCPServer, s.key.clone())))
                .collect();
            let objects = || keys.iter().map(|(k, key)| (*k, key));
            let (got, sources) = findings_in(&ev, objects(), &Scope::All);
            assert_eq!(got, all, "{example}");
            assert!(!sources.is_empty());
            let namespaces: BTreeSet<&str> = all.iter().filter_map(reports::namespace_of).collect();
            for ns in namespaces {
                let scope = Scope::Namespaces([ns.to_string()].into());
                let (got, sources) = findings_in(&ev, objects(), &scope);
                let want: Vec<Finding> = all
                    .iter()
                    .filter(|f| reports::namespace_of(f) == Some(ns))
                    .cloned()
                    .collect();
                assert_eq!(got, want, "{example}: {ns}");
                assert_eq!(sources.keys().collect::<Vec<_>>(), vec![ns]);
            }
        }
    }

    /// A report read back with the API server's own fields compares equal to the one
    /// written (else every resync would rewrite it); one edited out of shape is not ours
    /// any more and is rewritten.
    #[test]
    fn a_listed_report_reads_back_equal_and_a_tampered_one_is_rewritten() {
        let mut written = report("team-a", 2);
        written
            .metadata
            .labels
            .insert("app.kubernetes.io/managed-by".into(), "mcpgov".into());
        let mut served = serde_json::to_value(&written).unwrap();
        let meta = served["metadata"].as_object_mut().unwrap();
        meta.insert("uid".into(), "u-1".into());
        meta.insert("resourceVersion".into(), "42".into());
        meta.insert("generation".into(), 1.into());
        meta.insert("creationTimestamp".into(), "2026-12-01T00:00:00Z".into());
        meta.insert(
            "managedFields".into(),
            serde_json::json!([{"manager": "mcpgov", "operation": "Apply"}]),
        );
        let obj: DynamicObject = serde_json::from_value(served.clone()).unwrap();
        let (ns, held) = held_of(&obj).expect("ours");
        assert_eq!(ns, "team-a");
        assert_eq!(held.uid.as_deref(), Some("u-1"));
        assert_eq!(held.report, written);
        let desired = BTreeMap::from([(ns.clone(), written.clone())]);
        assert!(plan(&Scope::All, &desired, &BTreeMap::from([(ns, held)])).is_empty());

        served["results"] = "not a list".into();
        let tampered: DynamicObject = serde_json::from_value(served).unwrap();
        assert_eq!(held_of(&tampered), None);
        // Not held: the desired report is applied over it.
        assert_eq!(
            plan(&Scope::All, &desired, &BTreeMap::new()),
            vec![PlannedOp::Apply(Box::new(written))]
        );
    }

    #[test]
    fn a_missing_crd_is_looked_for_on_full_passes_only() {
        let change = Scope::Namespaces(["a".to_string()].into());
        // Missing: a change pass asks nothing; a resync asks again.
        assert!(!needs_list(&change, true, Some(false)));
        assert!(needs_list(&Scope::All, true, Some(false)));
        // Not known yet, or a write found no resource: ask before writing.
        assert!(needs_list(&change, true, None));
        assert!(needs_list(&change, true, Some(true)));
        // Known and held: a change pass compares with what it wrote.
        assert!(!needs_list(&change, false, Some(true)));
        assert!(needs_list(&Scope::All, false, Some(true)));
    }

    #[test]
    fn plan_writes_only_differences() {
        let held: BTreeMap<_, _> = [held("a", 1), held("b", 1), held("c", 1)].into();
        let desired: BTreeMap<_, _> = [
            ("a".to_string(), report("a", 1)), // unchanged
            ("b".to_string(), report("b", 2)), // changed
            ("d".to_string(), report("d", 1)), // new
        ]
        .into();
        let ops = plan(&Scope::All, &desired, &held);
        assert_eq!(
            ops,
            vec![
                PlannedOp::Apply(Box::new(report("b", 2))),
                PlannedOp::Delete {
                    namespace: "c".into(),
                    uid: Some("uid-c".into())
                },
                PlannedOp::Apply(Box::new(report("d", 1))),
            ]
        );
        // Nothing changed: nothing is written.
        let same: BTreeMap<_, _> = held
            .iter()
            .map(|(k, h)| (k.clone(), h.report.clone()))
            .collect();
        assert!(plan(&Scope::All, &same, &held).is_empty());
    }

    #[test]
    fn plan_leaves_namespaces_outside_the_scope_alone() {
        let held: BTreeMap<_, _> = [held("a", 1), held("b", 1)].into();
        let desired = BTreeMap::new();
        let scope = Scope::Namespaces(["b".to_string()].into());
        assert_eq!(
            plan(&scope, &desired, &held),
            vec![PlannedOp::Delete {
                namespace: "b".into(),
                uid: Some("uid-b".into())
            }]
        );
    }

    #[test]
    fn scope_covers_changed_objects_gone_sources_and_failed_writes() {
        let mut dirty = Dirty::default();
        dirty.agents.insert(key("a", "bot"));
        dirty.grants.insert(key("b", "g"));
        let sources: BTreeMap<_, _> = [
            (
                "c".to_string(),
                [(Kind::MCPServer, key("c", "gone"))].into(),
            ),
            ("d".to_string(), [(Kind::Agent, key("d", "here"))].into()),
        ]
        .into();
        let exists = |_: Kind, k: &ObjKey| k.name != "gone";
        let retry = ["e".to_string()].into();
        let policies = ["gov".to_string()].into();
        let s = scope(&dirty, &policies, &sources, exists, &retry);
        let want: BTreeSet<String> = ["a", "b", "c", "e"].map(String::from).into();
        assert_eq!(s, Scope::Namespaces(want));
        // A Policy change may move findings anywhere a Policy or a report is.
        dirty.policies = true;
        let s = scope(&dirty, &policies, &sources, exists, &retry);
        let want: BTreeSet<String> = ["a", "b", "c", "d", "e", "gov"].map(String::from).into();
        assert_eq!(s, Scope::Namespaces(want));
        dirty.all = true;
        assert_eq!(
            scope(&dirty, &policies, &sources, exists, &retry),
            Scope::All
        );
        assert!(Scope::Namespaces(BTreeSet::new()).is_empty());
    }
}
