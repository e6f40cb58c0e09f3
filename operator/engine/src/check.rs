//! `check`: every finding over the whole index, and the audit report that summarises
//! them. What the CLI prints before a merge and what status conditions are made of.

use crate::findings::{Finding, FindingKind, FindingReason as R, Summary};
use crate::glob::has_glob;
use crate::index::Engine;
use crate::key::ToolId;
use crate::model::*;
use crate::resolve::Resolution;
use crate::verdict::{Classification, Evaluator};
use serde::Serialize;

fn obj(kind: Kind, key: &ObjKey) -> ObjectRef {
    ObjectRef::new(kind, key)
}

impl Evaluator<'_> {
    /// Findings about one agent: its violations and exceptions, and its Grants'
    /// unresolved, drifted or tenancy-breaking references.
    pub fn agent_findings(&self, agent: &ObjKey) -> Vec<Finding> {
        let mut out = Vec::new();
        let Some(eval) = self.evaluate_agent(agent, None) else {
            return out;
        };
        for t in &eval.tools {
            for p in &t.deny_paths {
                let (kind, reason) = match p.classification {
                    // Fail closed, and say why: the gate must not pass on a guess.
                    Classification::Violation if p.undecided.is_some() => {
                        (FindingKind::Violation, R::PatternBudgetExceeded)
                    }
                    Classification::Violation => (FindingKind::Violation, R::DenyViolation),
                    Classification::AuthorizedButGoverned => {
                        (FindingKind::Exception, R::AuthorizedButGoverned)
                    }
                    // Reach the gateway decides call by call: a note, not a violation.
                    Classification::GuardedPerCall => (FindingKind::Exception, R::GuardedPerCall),
                };
                let message = match (&p.exception_reason, &p.undecided) {
                    (Some(r), _) => format!("{} reaches {} (exception: {r})", t.id, p.policy),
                    (None, Some(why)) => format!(
                        "{} is taken to reach {} through {}: {why}",
                        t.id, p.policy, p.governed_by
                    ),
                    (None, None) => {
                        format!("{} reaches {} through {}", t.id, p.policy, p.governed_by)
                    }
                };
                let mut f = Finding::new(kind, reason, obj(Kind::Agent, agent), message)
                    .agent(agent)
                    .tool(&t.id)
                    .policy(&p.policy);
                f.resource = p.resource.clone();
                f.path = p.path.clone();
                f.exception_reason = p.exception_reason.clone();
                f.exception_grant = p.exception_grant.clone();
                out.push(f);
            }
        }
        for r in &eval.refs {
            let (kind, reason, message) = match &r.resolution {
                Resolution::Resolved { .. } => continue,
                Resolution::Drifted { tool } => (
                    FindingKind::Drift,
                    R::Drifted,
                    format!("{:?} names {tool}, which no server exposes now", r.selector),
                ),
                Resolution::NotFound => (
                    FindingKind::Unresolved,
                    R::NotFound,
                    format!("{:?} matches no tool this namespace can see", r.selector),
                ),
                Resolution::Ambiguous { candidates } => (
                    FindingKind::Unresolved,
                    R::Ambiguous,
                    format!(
                        "{:?} is exposed by several servers ({}); qualify it as server::tool",
                        r.selector,
                        candidates
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
                Resolution::CrossNamespaceDenied { server } => (
                    FindingKind::Unresolved,
                    R::CrossNamespaceDenied,
                    format!(
                        "{:?}: MCPServer {server} does not share its tools with namespace {}",
                        r.selector, agent.namespace
                    ),
                ),
            };
            let mut f =
                Finding::new(kind, reason, obj(Kind::Grant, &r.grant), message).agent(agent);
            if let Resolution::Drifted { tool } = &r.resolution {
                f = f.tool(tool);
            } else {
                f = f.tool(&r.selector);
            }
            out.push(f);
        }
        out
    }

    /// Findings about Grants themselves: missing agents and expected exceptions that
    /// name no Policy, are not permitted, have expired, or cover nothing.
    pub fn grant_findings(&self, grant: &ObjKey) -> Vec<Finding> {
        let e = self.engine;
        let Some(g) = e.grants.get(grant) else {
            return Vec::new();
        };
        let object = obj(Kind::Grant, grant);
        let agent = ObjKey::new(&grant.namespace, &g.input.agent);
        let mut out = Vec::new();
        if e.agent(&agent).is_none() {
            out.push(
                Finding::new(
                    FindingKind::Unresolved,
                    R::AgentNotFound,
                    object.clone(),
                    format!("Agent {agent} does not exist"),
                )
                .agent(&agent),
            );
        }
        // Resolving the agent's tools costs all its Grants: only when an exception needs it.
        let mut granted: Option<Vec<ToolId>> = None;
        // One coverage budget for all of this Grant's exceptions, in authored order.
        let (mut budget, mut paid) = (crate::reach::coverage_budget(), Default::default());
        for ex in &g.exceptions {
            let unresolved = |reason: R, message: String| {
                Finding::new(FindingKind::Unresolved, reason, object.clone(), message)
                    .agent(&agent)
                    .policy(&ex.policy)
                    .exception(grant, &ex.input.reason)
            };
            let Some(policy) = e.policies.get(&ex.policy) else {
                out.push(unresolved(
                    R::PolicyNotFound,
                    format!(
                        "expected exception names Policy {}, which does not exist",
                        ex.policy
                    ),
                ));
                continue;
            };
            if !policy.input.allows_exceptions_from(&grant.namespace) {
                out.push(unresolved(
                    R::ExceptionNotAllowed,
                    format!(
                        "Policy {} does not accept exceptions from namespace {}; the reach stays a violation",
                        ex.policy, grant.namespace
                    ),
                ));
                continue;
            }
            if ex.expires.is_some_and(|t| t <= self.now) {
                out.push(unresolved(
                    R::ExceptionExpired,
                    format!(
                        "expected exception to {} expired at {}",
                        ex.policy,
                        ex.input.expires.as_deref().unwrap_or_default()
                    ),
                ));
                continue;
            }
            // Toolgraph's invariant: an exception must classify at least one row.
            let granted =
                granted.get_or_insert_with(|| self.granted_tools(&agent).into_keys().collect());
            // Each path is checked against its own Policy: an exception to a Policy the
            // agent never reaches is unused even when other Policies deny it.
            let mut undecided = false;
            let covers_any = granted.iter().any(|id| {
                self.reach(id).deny_paths().any(|p| {
                    // Spent: a resource-scoped exception can decide nothing more.
                    if ex.resource.is_some() && budget.left() == 0 {
                        undecided = true;
                        return false;
                    }
                    e.exception_covers(
                        ex,
                        &p.policy,
                        id,
                        &grant.namespace,
                        p,
                        self.now,
                        &mut budget,
                        &mut paid,
                    )
                    .unwrap_or_else(|_| {
                        undecided = true;
                        false
                    })
                })
            });
            if undecided && !covers_any {
                out.push(
                    Finding::new(
                        FindingKind::Unresolved,
                        R::PatternBudgetExceeded,
                        object.clone(),
                        format!(
                            "whether the expected exception to {} covers a path of agent {agent} \
                             was not decided within the work budget; the paths stay violations",
                            ex.policy
                        ),
                    )
                    .agent(&agent)
                    .policy(&ex.policy)
                    .exception(grant, &ex.input.reason),
                );
            } else if !covers_any {
                out.push(unresolved(
                    R::ExceptionUnused,
                    format!(
                        "expected exception to {} covers no path of agent {agent}",
                        ex.policy
                    ),
                ));
            }
        }
        out
    }

    /// Findings about a Policy: tool bindings that break tenancy, name a tool no server
    /// exposes, or are bare names several servers expose.
    pub fn policy_findings(&self, policy: &ObjKey) -> Vec<Finding> {
        let e = self.engine;
        let Some(p) = e.policies.get(policy) else {
            return Vec::new();
        };
        let object = obj(Kind::Policy, policy);
        let mut out = Vec::new();
        for (sel, _) in &p.tools {
            let home = &policy.namespace;
            if sel.names_other_namespace(home) && home != &e.config.governance_namespace {
                out.push(
                    Finding::new(
                        FindingKind::Unresolved,
                        R::CrossNamespaceDenied,
                        object.clone(),
                        format!(
                            "{:?}: a Policy governs only its own namespace's servers \
                             (Policies in {} govern all)",
                            sel.raw, e.config.governance_namespace
                        ),
                    )
                    .policy(policy)
                    .tool(&sel.raw),
                );
            } else if let Some(id) = sel.literal_id(home) {
                if !self.reach(&id).exposed {
                    out.push(
                        Finding::new(
                            FindingKind::Drift,
                            R::Drifted,
                            object.clone(),
                            format!("governs {id}, which no server exposes now"),
                        )
                        .policy(policy)
                        .tool(&id),
                    );
                }
            } else if sel.is_bare() && !has_glob(&sel.tool) {
                let servers: std::collections::BTreeSet<&ObjKey> = e
                    .servers
                    .values()
                    .filter(|s| e.policy_scope_covers(home, &s.input.key.namespace))
                    .filter(|s| s.exposes(&sel.tool))
                    .map(|s| &s.input.key)
                    .collect();
                if servers.len() > 1 {
                    out.push(
                        Finding::new(
                            FindingKind::Unresolved,
                            R::Ambiguous,
                            object.clone(),
                            format!(
                                "bare tool name {:?} is exposed by {} servers; it governs all of them",
                                sel.tool,
                                servers.len()
                            ),
                        )
                        .policy(policy)
                        .tool(&sel.raw),
                    );
                }
            }
        }
        out
    }

    /// Findings about an MCPServer: dataAccess naming tools it does not expose.
    pub fn server_findings(&self, server: &ObjKey) -> Vec<Finding> {
        let Some(s) = self.engine.servers.get(server) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for a in s.access.iter().filter(|a| !has_glob(&a.tool)) {
            if !s.exposes(&a.tool) {
                let why = if s.tools.is_none() {
                    "the server has not been crawled yet"
                } else {
                    "the server does not expose it"
                };
                out.push(
                    Finding::new(
                        FindingKind::Drift,
                        R::Drifted,
                        obj(Kind::MCPServer, server),
                        format!("dataAccess names tool {:?}, but {why}", a.tool),
                    )
                    .tool(ToolId::new(
                        &server.namespace,
                        &server.name,
                        &a.tool,
                    )),
                );
            }
        }
        out
    }

    /// Every finding over the index, sorted.
    pub fn check(&self) -> Vec<Finding> {
        let e: &Engine = self.engine;
        let mut out = e.compile_findings();
        for a in e.agents.keys() {
            out.extend(self.agent_findings(a));
        }
        for g in e.grants.keys() {
            out.extend(self.grant_findings(g));
        }
        for p in e.policies.keys() {
            out.extend(self.policy_findings(p));
        }
        for s in e.servers.keys() {
            out.extend(self.server_findings(s));
        }
        out.sort();
        out
    }

    /// audit-report: whole-graph summary with a pass/fail status.
    pub fn audit_report(&self) -> AuditReport {
        let findings = self.check();
        let summary = Summary::of(&findings);
        let counts = AuditCounts {
            servers: self.engine.servers.len(),
            tools: self.engine.known_tools().len(),
            agents: self.engine.agents.len(),
            policies: self.engine.policies.len(),
            grants: self.engine.grants.len(),
            violations: summary.violations,
            exceptions: summary.exceptions,
            // Drifted tools, as Toolgraph counts them: a tool two objects name is one
            // (`check`'s summary counts the Drift findings, one per object).
            drift: self
                .drift()
                .iter()
                .map(|d| d.tool.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            unresolved: summary.unresolved,
            invalid: summary.invalid,
            unmapped_tools: self.unmapped_tools().len(),
            orphan_policies: self.orphan_policies().len(),
            unbacked_edges: self.unbacked_edges(false).len(),
            destructive_unsafeguarded: self.destructive_unsafeguarded().len(),
            annotation_contradictions: self.annotation_contradictions().len(),
        };
        // Toolgraph's rule: violations and drifted tools fail, any other finding
        // warns. mcpgov also fails on input it could not use (Toolgraph refuses such a
        // manifest before there is anything to audit).
        let c = &counts;
        let mut failures = Vec::new();
        for (n, what) in [
            (c.violations, "deny-policy violation(s)"),
            (c.drift, "drifted tool(s)"),
            (c.invalid, "invalid input(s)"),
        ] {
            if n > 0 {
                failures.push(format!("{n} {what}"));
            }
        }
        let mut warnings = Vec::new();
        for (n, what) in [
            (c.exceptions, "authorized-but-governed path(s)"),
            (c.unresolved, "unresolved reference(s)"),
            (c.unmapped_tools, "unmapped tool(s)"),
            (c.unbacked_edges, "unbacked edge(s)"),
            (c.orphan_policies, "orphan policy(ies)"),
            (
                c.destructive_unsafeguarded,
                "destructive tool(s) with no policy path",
            ),
            (c.annotation_contradictions, "annotation contradiction(s)"),
        ] {
            if n > 0 {
                warnings.push(format!("{n} {what}"));
            }
        }
        AuditReport {
            status: match (failures.is_empty(), warnings.is_empty()) {
                (false, _) => "fail",
                (true, false) => "warn",
                (true, true) => "pass",
            },
            failures,
            warnings,
            counts,
            violations: findings
                .into_iter()
                .filter(|f| f.kind == FindingKind::Violation)
                .collect(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditCounts {
    pub servers: usize,
    pub tools: usize,
    pub agents: usize,
    pub policies: usize,
    pub grants: usize,
    pub violations: usize,
    pub exceptions: usize,
    pub drift: usize,
    pub unresolved: usize,
    pub invalid: usize,
    pub unmapped_tools: usize,
    pub orphan_policies: usize,
    pub unbacked_edges: usize,
    pub destructive_unsafeguarded: usize,
    pub annotation_contradictions: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    /// `fail` (a violation, a drifted tool or invalid input), `warn` (any other
    /// finding counted below), or `pass`.
    pub status: &'static str,
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
    pub counts: AuditCounts,
    pub violations: Vec<Finding>,
}
