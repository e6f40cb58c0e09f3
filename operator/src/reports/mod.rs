//! PolicyReports: the engine's findings as one report per namespace, in the PolicyReport
//! API (`wgpolicyk8s.io/v1alpha2`, what Kyverno's Policy Reporter reads) or OpenReports
//! (`openreports.io/v1alpha1`). Pure: findings in, report objects out, no client and no
//! clock (the caller passes the evaluation instant, or none). The same findings give the
//! same reports in any order, so a writer can skip a report that has not changed.
//!
//! Bounded: a report keeps at most `max_results` results and `max_bytes` of them, most
//! severe first, and every string at most `max_chars` characters; what was cut is
//! counted in annotations, never an error. The summary counts every result, kept or
//! not, so `kubectl get policyreport` shows the true numbers. docs/policy-reports.md
//! has the mapping.

mod api;
mod rules;
#[cfg(test)]
mod tests;

pub use api::*;
pub use rules::{Outcome, Rule, Severity, category, rule_for};

use crate::crd::common::API_VERSION;
use crate::names;
use mcpgov_engine::{Finding, ObjectRef};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The `policy` of results no mcpgov Policy owns (a Grant's tool reference, an
/// MCPServer's dataAccess, invalid input): mcpgov's own checks. Policies are
/// `namespace/name`, so it never collides with one.
pub const BUILTIN_POLICY: &str = "mcpgov";

/// Size bounds of one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Results kept per report.
    pub max_results: usize,
    /// Bytes of results (as JSON) kept per report: well under etcd's 1.5 MiB per object.
    pub max_bytes: usize,
    /// Characters per string (message, property value, name).
    pub max_chars: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_results: 1000,
            max_bytes: 1024 * 1024,
            max_chars: 1024,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub api: Api,
    /// Every result's `timestamp`: the evaluation instant, or none (a writer that
    /// compares reports passes none, or the same instant, to compare like with like).
    pub timestamp: Option<jiff::Timestamp>,
    pub bounds: Bounds,
}

impl Options {
    pub fn new(api: Api) -> Self {
        Options {
            api,
            timestamp: None,
            bounds: Bounds::default(),
        }
    }
}

/// The reports, sorted by namespace, and how many findings named no namespaced object
/// of ours (none from the engine; counted rather than guessed at).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reports {
    pub reports: Vec<Report>,
    pub unplaced: usize,
}

/// The reports for `findings`: one per namespace that has any, none for the others.
pub fn build(findings: &[Finding], options: &Options) -> Reports {
    let mut by_namespace: BTreeMap<&str, Vec<Placed>> = BTreeMap::new();
    let mut unplaced = 0;
    for f in findings {
        match ObjRef::of(&f.object) {
            Some(object) => by_namespace
                .entry(object.namespace)
                .or_default()
                .push(Placed {
                    finding: f,
                    object,
                    rule: rule_for(f.kind, f.reason),
                }),
            None => unplaced += 1,
        }
    }
    let reports = by_namespace
        .into_iter()
        .map(|(namespace, placed)| report(namespace, placed, options))
        .collect();
    Reports { reports, unplaced }
}

/// The namespace a finding's report is in: its object's (the Agent, Grant, Policy or
/// MCPServer it is about).
pub fn namespace_of(f: &Finding) -> Option<&str> {
    ObjRef::of(&f.object).map(|o| o.namespace)
}

/// A finding with what the report needs to know about it before it is written out.
struct Placed<'a> {
    finding: &'a Finding,
    object: ObjRef<'a>,
    rule: Rule,
}

impl Placed<'_> {
    fn policy(&self) -> &str {
        self.finding.policy.as_deref().unwrap_or(BUILTIN_POLICY)
    }

    /// Most severe first, then by what a reader scans for; the finding breaks ties, so
    /// the order is total and the output independent of the input's order.
    fn order(&self, other: &Self) -> Ordering {
        (
            self.rule.outcome,
            self.rule.severity,
            self.policy(),
            self.rule.name,
        )
            .cmp(&(
                other.rule.outcome,
                other.rule.severity,
                other.policy(),
                other.rule.name,
            ))
            .then_with(|| self.finding.cmp(other.finding))
    }
}

/// An object a result names, borrowed: the finding's own, or its agent or Grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ObjRef<'a> {
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
}

impl<'a> ObjRef<'a> {
    /// The finding's object; none with an empty namespace or name (no report to put
    /// it in, and not a name the API server would take).
    fn of(o: &'a ObjectRef) -> Option<Self> {
        (!o.key.namespace.is_empty() && !o.key.name.is_empty()).then_some(ObjRef {
            kind: o.kind.as_str(),
            namespace: &o.key.namespace,
            name: &o.key.name,
        })
    }

    /// `namespace/name` of a known kind.
    fn key(kind: &'a str, key: &'a str) -> Option<Self> {
        let (namespace, name) = key.split_once('/')?;
        (!namespace.is_empty() && !name.is_empty()).then_some(ObjRef {
            kind,
            namespace,
            name,
        })
    }
}

/// Cuts strings to a length, counting the cuts.
struct Cutter {
    max_chars: usize,
    cut: usize,
}

impl Cutter {
    /// `s` whole, or its first `max_chars - 1` characters and an ellipsis. Looks at no
    /// more than `max_chars + 1` characters of `s`, however long it is.
    fn text(&mut self, s: &str) -> String {
        match s.char_indices().nth(self.max_chars) {
            None => s.to_string(),
            Some(_) => {
                self.cut += 1;
                let keep = self.max_chars.saturating_sub(1);
                let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
                let mut out = s[..end].to_string();
                if self.max_chars > 0 {
                    out.push('…');
                }
                out
            }
        }
    }

    fn reference(&mut self, o: ObjRef) -> ObjectReference {
        ObjectReference {
            api_version: API_VERSION.to_string(),
            kind: o.kind.to_string(),
            namespace: Some(self.text(o.namespace)),
            name: self.text(o.name),
        }
    }
}

fn report(namespace: &str, mut placed: Vec<Placed>, options: &Options) -> Report {
    placed.sort_by(|a, b| a.order(b));
    let bounds = options.bounds;
    let mut summary = ReportSummary::default();
    for p in &placed {
        summary.add(p.rule.outcome);
    }
    let mut cutter = Cutter {
        max_chars: bounds.max_chars,
        cut: 0,
    };
    let (mut results, mut bytes) = (Vec::new(), 0usize);
    for p in placed.iter().take(bounds.max_results) {
        let cut_before = cutter.cut;
        let r = result(p, options, &mut cutter);
        let size = serde_json::to_vec(&r).map_or(usize::MAX, |v| v.len());
        if bytes.saturating_add(size) > bounds.max_bytes {
            // The rest is omitted: its cuts are not in the report.
            cutter.cut = cut_before;
            break;
        }
        bytes += size;
        results.push(r);
    }
    let omitted = placed.len() - results.len();
    let mut annotations = BTreeMap::new();
    if omitted > 0 {
        annotations.insert(
            names::RESULTS_OMITTED_ANNOTATION.to_string(),
            omitted.to_string(),
        );
    }
    let namespace = cutter.text(namespace);
    if cutter.cut > 0 {
        annotations.insert(
            names::VALUES_TRUNCATED_ANNOTATION.to_string(),
            cutter.cut.to_string(),
        );
    }
    let api = options.api;
    let open = api == Api::OpenReports;
    Report {
        api_version: api.api_version().to_string(),
        kind: api.kind().to_string(),
        metadata: Metadata {
            name: names::REPORT_NAME.to_string(),
            namespace: namespace.clone(),
            labels: BTreeMap::from([(names::MANAGED_BY.to_string(), names::MANAGER.to_string())]),
            annotations,
        },
        source: open.then(|| names::REPORT_SOURCE.to_string()),
        scope: ObjectReference {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            namespace: None,
            name: namespace,
        },
        configuration: open.then_some(Configuration {
            limits: Limits {
                max_results: bounds.max_results,
            },
        }),
        summary,
        results,
    }
}

fn result(p: &Placed, options: &Options, cut: &mut Cutter) -> ReportResult {
    let f = p.finding;
    let mut resources = vec![cut.reference(p.object)];
    let mut also = |kind: &'static str, key: &Option<String>, cut: &mut Cutter| {
        if let Some(o) = key.as_deref().and_then(|k| ObjRef::key(kind, k))
            && o != p.object
        {
            resources.push(cut.reference(o));
        }
    };
    also("Agent", &f.agent, cut);
    also("Grant", &f.exception_grant, cut);
    let mut properties = BTreeMap::new();
    properties.insert("reason".to_string(), cut.text(f.reason.as_str()));
    for (key, value) in [
        ("agent", &f.agent),
        ("tool", &f.tool),
        ("resource", &f.resource),
        ("exceptionReason", &f.exception_reason),
        ("exceptionGrant", &f.exception_grant),
    ] {
        if let Some(v) = value {
            properties.insert(key.to_string(), cut.text(v));
        }
    }
    if !f.path.is_empty() {
        // As a JSON array: a tool name with spaces cannot forge a path step.
        let path = serde_json::to_string(&f.path).expect("strings serialise");
        properties.insert("path".to_string(), cut.text(&path));
    }
    ReportResult {
        source: names::REPORT_SOURCE.to_string(),
        policy: cut.text(p.policy()),
        rule: p.rule.name.to_string(),
        category: category(f.kind).to_string(),
        severity: p.rule.severity,
        timestamp: options.timestamp.map(Timestamp::from),
        result: p.rule.outcome,
        resources,
        message: cut.text(&f.message),
        properties,
    }
}
