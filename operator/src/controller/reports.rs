//! PolicyReports written by the operator (`--policy-reports`): on each pass the reports
//! of the namespaces the pass touched are built by `reports::build` (what `mcpgov check
//! -o policyreport` prints) from the engine's findings, compared with what the API holds,
//! and only differences are written: a changed report is applied, a namespace left
//! without findings loses its report. A missing CRD is said once (the metric
//! `mcpgov_policy_reports_available` and one log line) and looked for again on every
//! full pass (resync), so installing it later needs no restart.
//!
//! Desired reports → diff against what is held → writes: `scope` and `plan` are pure,
//! `Index::sync_reports` is the one call from the reconcile pass.

use super::index::{Dirty, Index};
use crate::reports::{self, Api, Report};
use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use mcpgov_engine::{Evaluator, Finding, Kind, ObjKey};
use std::collections::{BTreeMap, BTreeSet};

/// A report of ours the API holds, as last written or listed.
#[derive(Clone, Debug, PartialEq)]
struct Held {
    uid: Option<String>,
    report: Report,
}

/// The operator's report state (present only with reports on).
pub struct Reports {
    api: Api,
    resource: ApiResource,
    /// Per namespace, our report as the API holds it.
    held: BTreeMap<String, Held>,
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
}

impl Reports {
    pub fn new(api: Api) -> Self {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(api.group(), api.version(), api.kind()),
            api.plural(),
        );
        Reports {
            api,
            resource,
            held: BTreeMap::new(),
            sources: BTreeMap::new(),
            retry: BTreeSet::new(),
            available: None,
            relist: true,
        }
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
enum Op {
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
) -> Vec<Op> {
    let namespaces: BTreeSet<&String> = desired
        .keys()
        .chain(held.keys())
        .filter(|ns| scope.contains(ns))
        .collect();
    let mut ops = Vec::new();
    for ns in namespaces {
        match (desired.get(ns), held.get(ns)) {
            (Some(d), Some(h)) if h.report == *d => {}
            (Some(d), _) => ops.push(Op::Apply(Box::new(d.clone()))),
            (None, Some(h)) => ops.push(Op::Delete {
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

impl Index {
    /// Bring the reports of the namespaces `dirty` touches up to date with `ev`. Called
    /// once per pass by the leader; a failure is logged and retried on the next pass,
    /// never returned.
    pub(super) async fn sync_reports(&mut self, ev: &Evaluator<'_>, dirty: &Dirty) {
        let Some(mut state) = self.reports.take() else {
            return;
        };
        let Some(writer) = self.report_writer.take() else {
            self.reports = Some(state);
            return;
        };
        self.sync_reports_with(&mut state, &writer, ev, dirty).await;
        self.report_writer = Some(writer);
        self.reports = Some(state);
    }

    async fn sync_reports_with(
        &mut self,
        st: &mut Reports,
        report_writer: &super::writer::Writer,
        ev: &Evaluator<'_>,
        dirty: &Dirty,
    ) {
        let policies: BTreeSet<String> =
            self.policies.keys().map(|k| k.namespace.clone()).collect();
        let mut scope = scope(
            dirty,
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
        if needs_list(&scope, st.relist, st.available) {
            match report_writer
                .list_reports(&st.resource, self.config.namespace.as_deref())
                .await
            {
                Ok(items) => {
                    if st.available != Some(true) {
                        tracing::info!(
                            api = st.api.api_version(),
                            kind = st.api.kind(),
                            "writing mcpgov's findings as reports"
                        );
                    }
                    st.available = Some(true);
                    st.held = items.iter().filter_map(held_of).collect();
                    st.relist = false;
                    // What the API held may be anything: compare everything.
                    scope = Scope::All;
                }
                Err(super::writer::Error::Api {
                    code: Some(404), ..
                }) => {
                    if st.available != Some(false) {
                        tracing::warn!(
                            api = st.api.api_version(),
                            resource = st.api.plural(),
                            "the reports API is not served (its CRD is missing): no reports are written; it is looked for again on every resync"
                        );
                    }
                    st.available = Some(false);
                    st.relist = true;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not list reports; trying again on the next pass");
                    st.relist = true;
                }
            }
            self.metrics
                .reports
                .reports_available
                .set(i64::from(st.available == Some(true)));
        }
        if st.relist || st.available != Some(true) || scope.is_empty() {
            return;
        }
        let objects = self
            .agents
            .keys()
            .map(|k| (Kind::Agent, k))
            .chain(self.grants.keys().map(|k| (Kind::Grant, k)))
            .chain(self.policies.keys().map(|k| (Kind::Policy, k)))
            .chain(self.servers.keys().map(|k| (Kind::MCPServer, k)));
        let (findings, sources) = findings_in(ev, objects, &scope);
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
        let ops = plan(&scope, &desired, &st.held);
        let unchanged = desired
            .len()
            .saturating_sub(ops.iter().filter(|o| matches!(o, Op::Apply(_))).count());
        for _ in 0..unchanged {
            report_writer.skipped_report();
        }
        st.retry.clear();
        for op in ops {
            match op {
                Op::Apply(report) => {
                    let ns = report.metadata.namespace.clone();
                    match report_writer.apply_report(&st.resource, &report).await {
                        Ok(uid) => {
                            st.held.insert(
                                ns,
                                Held {
                                    uid,
                                    report: *report,
                                },
                            );
                        }
                        Err(e) => {
                            tracing::warn!(namespace = %ns, error = %e, "could not write the report");
                            if matches!(
                                &e,
                                super::writer::Error::Api {
                                    code: Some(404),
                                    ..
                                }
                            ) {
                                // The CRD may have gone: look again before writing more.
                                st.relist = true;
                            }
                            st.held.remove(&ns);
                            st.retry.insert(ns);
                        }
                    }
                }
                Op::Delete { namespace, uid } => {
                    match report_writer
                        .delete_report(&st.resource, &namespace, uid.as_deref())
                        .await
                    {
                        Ok(()) => {
                            st.held.remove(&namespace);
                        }
                        Err(e) => {
                            tracing::warn!(namespace = %namespace, error = %e, "could not delete the report");
                            st.retry.insert(namespace);
                        }
                    }
                }
            }
        }
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
            vec![Op::Apply(Box::new(written))]
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
                Op::Apply(Box::new(report("b", 2))),
                Op::Delete {
                    namespace: "c".into(),
                    uid: Some("uid-c".into())
                },
                Op::Apply(Box::new(report("d", 1))),
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
            vec![Op::Delete {
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
