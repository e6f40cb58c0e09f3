//! Desired status of each kind, computed from the engine's answers. Pure: no API calls.
//! Lists are capped and sorted so status stays small and stable whatever the estate.

use super::conditions::{self as c, ConditionReason as CR, Desired, cond, kstatus};
use crate::crd::agent::{AgentStatus, BundleStatus, ViolationStatus};
use crate::crd::grant::{GrantStatus, UnresolvedRef};
use crate::crd::policy::PolicyStatus;
use crate::crd::server::{DriftEntry, MCPServerStatus};
use mcpgov_engine::resolve::Resolution;
use mcpgov_engine::{
    AgentEvaluation, Evaluator, Finding, FindingKind, FindingReason, Kind, ObjKey, Reason,
};
use std::collections::BTreeSet;

/// At most this many entries in any list written to status.
pub const LIST_CAP: usize = 20;

fn count(n: usize) -> Option<i64> {
    Some(n as i64)
}

/// What the writer learned when it published (or could not publish) a bundle.
#[derive(Clone, Debug, PartialEq)]
pub enum BundleOutcome {
    Disabled,
    Published(BundleStatus),
    TooLarge(String),
    Failed(String),
    /// The name belongs to someone else (the message names the owner).
    Conflict(String),
}

/// Agent status, without conditions merged (the writer merges them with the current).
pub fn agent(eval: &AgentEvaluation, bundle: &BundleOutcome) -> (AgentStatus, Vec<Desired>) {
    let violations: Vec<_> = eval.violations().collect();
    let mut details: Vec<ViolationStatus> = violations
        .iter()
        .map(|(t, p)| ViolationStatus {
            tool: t.id.to_string(),
            policy: p.policy.clone(),
            resource: p.resource.clone(),
            path: p.path.clone(),
        })
        .collect();
    details
        .sort_by(|a, b| (&a.tool, &a.policy, &a.resource).cmp(&(&b.tool, &b.policy, &b.resource)));
    details.truncate(LIST_CAP);
    let exceptions = eval
        .tools
        .iter()
        .flat_map(|t| t.deny_paths.iter())
        .filter(|p| p.classification == mcpgov_engine::Classification::AuthorizedButGoverned)
        .count();
    let status = AgentStatus {
        conditions: Vec::new(),
        observed_generation: None,
        eligible: count(eval.eligible()),
        rejected: count(eval.tools.len() - eval.eligible()),
        violations: count(violations.len()),
        exceptions: count(exceptions),
        unmapped: count(eval.count(Reason::Unmapped)),
        drifted: count(eval.count(Reason::Drifted)),
        violation_details: details,
        bundle: match bundle {
            BundleOutcome::Published(b) => Some(b.clone()),
            _ => None,
        },
    };
    let compliant = if violations.is_empty() {
        cond(
            c::COMPLIANT,
            true,
            CR::NoViolations,
            "no deny-policy violations",
        )
    } else {
        cond(
            c::COMPLIANT,
            false,
            CR::ViolationsFound,
            format!(
                "{} deny-policy violation(s); see status.violationDetails",
                violations.len()
            ),
        )
    };
    let published = match bundle {
        BundleOutcome::Disabled => cond(
            c::BUNDLE_PUBLISHED,
            false,
            CR::Disabled,
            "spec.bundle.enabled is false",
        ),
        BundleOutcome::Published(b) => cond(
            c::BUNDLE_PUBLISHED,
            true,
            CR::Published,
            format!("ConfigMap {} holds bundle {}", b.config_map_name, b.sha256),
        ),
        BundleOutcome::TooLarge(m) => {
            cond(c::BUNDLE_PUBLISHED, false, CR::BundleTooLarge, m.clone())
        }
        BundleOutcome::Failed(m) => cond(c::BUNDLE_PUBLISHED, false, CR::PublishFailed, m.clone()),
        BundleOutcome::Conflict(m) => {
            cond(c::BUNDLE_PUBLISHED, false, CR::ConfigMapConflict, m.clone())
        }
    };
    let mut conds = vec![
        cond(c::READY, true, CR::Reconciled, "governance evaluated"),
        compliant,
        published,
    ];
    conds.extend(kstatus(None));
    (status, conds)
}

/// Grant status: resolved tool count, every reference that did not resolve cleanly, and
/// the expected exceptions that expire (judged at the evaluator's instant).
pub fn grant(
    ev: &Evaluator,
    key: &ObjKey,
    expiries: &[super::expiry::Expiry],
) -> (GrantStatus, Vec<Desired>) {
    let refs = ev.refs_of_grant(key);
    let mut tools = BTreeSet::new();
    // Each with its reason typed: the first gives the condition's.
    let mut unresolved: Vec<(FindingReason, UnresolvedRef)> = Vec::new();
    for r in &refs {
        let Some(reason) = r.resolution.finding_reason() else {
            if let Resolution::Resolved { tools: t } = &r.resolution {
                tools.extend(t.iter().cloned());
            }
            continue;
        };
        let other = &r.resolution;
        unresolved.push((
            reason,
            UnresolvedRef {
                reference: r.selector.clone(),
                reason: reason.to_string(),
                message: match other {
                    Resolution::Drifted { tool } => {
                        format!("{tool} is not exposed by any server now")
                    }
                    Resolution::Ambiguous { candidates } => format!(
                        "exposed by {} servers; qualify it as server::tool",
                        candidates.len()
                    ),
                    Resolution::CrossNamespaceDenied { server } => {
                        format!(
                            "MCPServer {server} does not share its tools with namespace {}",
                            key.namespace
                        )
                    }
                    _ => "matches no tool this namespace can see".to_string(),
                },
            },
        ));
    }
    let invalid: Vec<Finding> = ev.engine().compile_findings_of(Kind::Grant, key);
    let findings = ev.grant_findings(key);
    for f in &findings {
        unresolved.push((
            f.reason,
            UnresolvedRef {
                reference: f.policy.clone().or(f.agent.clone()).unwrap_or_default(),
                reason: f.reason.to_string(),
                message: f.message.clone(),
            },
        ));
    }
    let resolved = if let Some((reason, first)) = unresolved.first() {
        cond(
            c::RESOLVED,
            false,
            *reason,
            format!(
                "{} reference(s) unresolved; first: {} ({})",
                unresolved.len(),
                first.reference,
                first.message
            ),
        )
    } else {
        cond(
            c::RESOLVED,
            true,
            CR::AllResolved,
            format!("{} tool(s)", tools.len()),
        )
    };
    let mut unresolved: Vec<UnresolvedRef> = unresolved.into_iter().map(|(_, u)| u).collect();
    unresolved.sort_by(|a, b| (&a.reason, &a.reference).cmp(&(&b.reason, &b.reference)));
    unresolved.truncate(LIST_CAP);
    let stalled = invalid.first().map(|f| f.message.clone());
    let mut conds = vec![
        cond(
            c::READY,
            true,
            CR::Reconciled,
            "references resolved against the index",
        ),
        resolved,
    ];
    conds.extend(kstatus(stalled.as_deref()));
    (
        GrantStatus {
            conditions: Vec::new(),
            observed_generation: None,
            resolved_tools: count(tools.len()),
            unresolved,
            exception_expiries: super::expiry::status(expiries, ev.now()),
        },
        conds,
    )
}

/// Policy status from the per-agent summaries the controller keeps.
pub fn policy(
    ev: &Evaluator,
    key: &ObjKey,
    reached_by: &BTreeSet<ObjKey>,
    violations: usize,
) -> (PolicyStatus, Vec<Desired>) {
    let problems: Vec<Finding> = ev
        .engine()
        .compile_findings_of(Kind::Policy, key)
        .into_iter()
        .chain(ev.policy_findings(key))
        .collect();
    let invalid = problems.iter().find(|f| f.kind == FindingKind::Invalid);
    let active = match problems.first() {
        Some(f) => cond(c::ACTIVE, invalid.is_none(), f.reason, f.message.clone()),
        None if reached_by.is_empty() => {
            cond(c::ACTIVE, true, CR::Orphan, "no agent reaches this Policy")
        }
        None => cond(
            c::ACTIVE,
            true,
            CR::Governing,
            format!("reached by {} agent(s)", reached_by.len()),
        ),
    };
    let mut conds = vec![
        cond(c::READY, true, CR::Reconciled, "bindings compiled"),
        active,
    ];
    conds.extend(kstatus(invalid.map(|f| f.message.as_str())));
    (
        PolicyStatus {
            conditions: Vec::new(),
            observed_generation: None,
            reached_by: reached_by
                .iter()
                .take(LIST_CAP)
                .map(ToString::to_string)
                .collect(),
            violations: count(violations),
            orphan: Some(reached_by.is_empty()),
        },
        conds,
    )
}

/// The governance part of MCPServer status (the crawler owns the catalog fields).
pub fn server(ev: &Evaluator, key: &ObjKey, crawled: bool) -> (MCPServerStatus, Vec<Desired>) {
    let mut drift: Vec<DriftEntry> = ev
        .server_findings(key)
        .into_iter()
        .map(|f| DriftEntry {
            tool: f.tool.unwrap_or_default(),
            reason: f.reason.to_string(),
            message: f.message,
        })
        .collect();
    drift.sort_by(|a, b| a.tool.cmp(&b.tool));
    drift.truncate(LIST_CAP);
    let invalid: Vec<Finding> = ev.engine().compile_findings_of(Kind::MCPServer, key);
    let ready = if crawled {
        cond(c::READY, true, CR::Reconciled, "catalog indexed")
    } else {
        cond(
            c::READY,
            false,
            CR::NotCrawled,
            "no catalog yet: its tools are unresolved, never allowed",
        )
    };
    let mut conds = vec![ready];
    conds.extend(kstatus(invalid.first().map(|f| f.message.as_str())));
    (
        MCPServerStatus {
            drift,
            ..Default::default()
        },
        conds,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::Grant;
    use crate::crd::grant::ExpectedException;
    use mcpgov_engine::{Engine, EngineConfig, Object};

    #[test]
    fn grant_status_shows_expiries_as_of_the_evaluation_instant() {
        let mut g = Grant::new(
            "notes",
            crate::crd::GrantSpec {
                agent: "a".into(),
                tools: vec!["s::t".into()],
                expected_exceptions: vec![ExpectedException {
                    policy: "p".into(),
                    tool: None,
                    resource: None,
                    reason: "until the review".into(),
                    owner: None,
                    expires: Some("2027-01-01T00:00:00Z".into()),
                }],
                provenance: Default::default(),
            },
        );
        g.metadata.namespace = Some("team".into());
        let mut engine = Engine::new(EngineConfig {
            governance_namespace: "gov".into(),
        });
        engine.apply(Object::Grant(g.to_engine("")));
        let key = ObjKey::new("team", "notes");
        let expiries = super::super::expiry::of_grant(&g.spec);
        let at = |t: &str| {
            let ev = engine.evaluator(t.parse().unwrap());
            let (st, _) = grant(&ev, &key, &expiries);
            st.exception_expiries
                .iter()
                .map(|e| (e.index, e.policy.clone(), e.expires.clone(), e.expired))
                .collect::<Vec<_>>()
        };
        let entry = |expired| {
            vec![(
                0,
                "p".to_string(),
                "2027-01-01T00:00:00Z".to_string(),
                expired,
            )]
        };
        assert_eq!(at("2026-12-31T23:59:59Z"), entry(false));
        assert_eq!(at("2027-01-01T00:00:00Z"), entry(true));
    }
}
