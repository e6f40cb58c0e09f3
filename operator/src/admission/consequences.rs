//! Warn and Enforce: what a change would do across objects, computed on the mirror
//! (a scratch copy of the live index): the object is laid over it as the API server
//! would store it, the agents the engine says it can move are evaluated after and
//! before, and the mirror is put back before it is unlocked.
//!
//! Tenancy: a warning names agents of the request's namespace only, and the Policies
//! that govern them (which their own status already names); consequences elsewhere
//! are counted, not named.

use super::drift;
use super::mirror::State;
use crate::text;
use mcpgov_engine::{Finding, FindingKind, Kind, ObjKey, Object};
use std::collections::BTreeSet;

/// Agents evaluated per review at most (twice each); over it the review says so and
/// computes nothing (fail open, never slow).
pub const MAX_AGENTS: usize = 200;
/// Warnings per review; the rest are counted in a last one.
pub const MAX_WARNINGS: usize = 10;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Consequences {
    pub warnings: Vec<String>,
    /// New violations of Policies with `admission: Enforce`, one message each.
    pub refusals: Vec<String>,
}

/// One violation, as compared before and after.
type Row = (String, String, String, Option<String>);

fn row(f: &Finding) -> Row {
    (
        f.agent.clone().unwrap_or_default(),
        f.tool.clone().unwrap_or_default(),
        f.policy.clone().unwrap_or_default(),
        f.resource.clone(),
    )
}

/// The object as the engine held it, to put back.
fn current(s: &State, kind: Kind, key: &ObjKey) -> Option<Object> {
    let e = &s.engine;
    match kind {
        Kind::MCPServer => e.server(key).cloned().map(Object::Server),
        Kind::Agent => e.agent(key).cloned().map(Object::Agent),
        Kind::Policy => e.policy(key).cloned().map(Object::Policy),
        Kind::Grant => e.grant(key).cloned().map(Object::Grant),
    }
}

fn violations(s: &State, agents: &BTreeSet<ObjKey>, now: jiff::Timestamp) -> Vec<Finding> {
    let ev = s.engine.evaluator(now);
    agents
        .iter()
        .flat_map(|a| ev.agent_findings(a))
        .filter(|f| f.kind == FindingKind::Violation)
        .collect()
}

/// What laying `new` over the mirror would change, seen from `namespace`.
pub fn compute(
    s: &mut State,
    mut new: Object,
    namespace: &str,
    now: jiff::Timestamp,
) -> Consequences {
    let (kind, key) = (new.kind(), new.key().clone());
    let old = current(s, kind, &key);
    // The catalog is the crawler's, not the author's: a request carries none (CREATE)
    // or the stored status, which may be truncated; the index's own wins when it has one.
    if let (Object::Server(n), Some(Object::Server(o))) = (&mut new, &old)
        && (n.catalog.is_none() || o.catalog.is_some())
    {
        n.catalog = o.catalog.clone();
    }
    let described = format!("{kind} {key}");
    let impact = s.engine.apply(new);
    let mut out = Consequences::default();
    if kind == Kind::Grant {
        out.warnings.extend(drift::at_birth(s, &key));
    }
    // Drift is weighed for servers only: they are what takes tools away from Grants.
    let weigh_drift = kind == Kind::MCPServer;
    if impact.changed && impact.agents.len() <= MAX_AGENTS {
        let after = violations(s, &impact.agents, now);
        let broken_after = weigh_drift.then(|| drift::broken(s, &impact.agents, now));
        restore(s, kind, &key, old);
        let before: BTreeSet<Row> = violations(s, &impact.agents, now).iter().map(row).collect();
        if let Some(after) = broken_after {
            let before = drift::broken(s, &impact.agents, now);
            out.warnings.extend(drift::server_warning(
                &described, &before, &after, namespace,
            ));
        }
        let fresh: Vec<&Finding> = after.iter().filter(|f| !before.contains(&row(f))).collect();
        // A Policy is judged by its authors, not refused by itself (docs/admission.md).
        report(
            &mut out,
            s,
            &described,
            &fresh,
            namespace,
            kind != Kind::Policy,
        );
    } else {
        restore(s, kind, &key, old);
        if impact.changed {
            out.warnings.push(format!(
                "mcpgov: {described} can move {} agents, more than the {MAX_AGENTS} a review \
                 evaluates: consequences not computed (see `mcpgov what-if`)",
                impact.agents.len()
            ));
        }
    }
    if kind == Kind::Policy && impact.changed {
        let (own, other) = split(&impact.agents, namespace);
        if own + other > 0 {
            out.warnings.push(format!(
                "mcpgov: this Policy change can move {} agent(s){}",
                own + other,
                if other > 0 {
                    format!(" ({other} in other namespaces)")
                } else {
                    String::new()
                }
            ));
        }
    }
    out
}

/// What deleting the MCPServer `key` would take from Grants, seen from `namespace`:
/// a drift warning at most (a DELETE is never refused).
pub fn compute_delete(
    s: &mut State,
    key: &ObjKey,
    namespace: &str,
    now: jiff::Timestamp,
) -> Consequences {
    let mut out = Consequences::default();
    let Some(old) = current(s, Kind::MCPServer, key) else {
        return out;
    };
    let described = format!("{} {key}", Kind::MCPServer);
    let impact = s.engine.delete(Kind::MCPServer, key);
    if impact.agents.len() > MAX_AGENTS {
        restore(s, Kind::MCPServer, key, Some(old));
        out.warnings.push(format!(
            "mcpgov: deleting {described} can move {} agents, more than the {MAX_AGENTS} a \
             review evaluates: the Grants it leaves drifting were not computed",
            impact.agents.len()
        ));
        return out;
    }
    let after = drift::broken(s, &impact.agents, now);
    restore(s, Kind::MCPServer, key, Some(old));
    let before = drift::broken(s, &impact.agents, now);
    out.warnings.extend(drift::server_warning(
        &format!("deleting {described}"),
        &before,
        &after,
        namespace,
    ));
    out
}

fn restore(s: &mut State, kind: Kind, key: &ObjKey, old: Option<Object>) {
    match old {
        Some(o) => s.engine.apply(o),
        None => s.engine.delete(kind, key),
    };
}

fn split(agents: &BTreeSet<ObjKey>, namespace: &str) -> (usize, usize) {
    let own = agents.iter().filter(|a| a.namespace == namespace).count();
    (own, agents.len() - own)
}

fn report(
    out: &mut Consequences,
    s: &State,
    described: &str,
    fresh: &[&Finding],
    namespace: &str,
    may_refuse: bool,
) {
    let mut hidden = 0;
    let mut shown = 0;
    for f in fresh {
        let agent = f.agent.as_deref().unwrap_or_default();
        let policy = f.policy.as_deref().unwrap_or_default();
        if !agent.starts_with(&format!("{namespace}/")) {
            hidden += 1;
            continue;
        }
        let tool = f.tool.as_deref().unwrap_or_default();
        let through = match &f.resource {
            Some(r) => format!("{tool} → {r}"),
            None => tool.to_string(),
        };
        let enforced = may_refuse && s.enforced.iter().any(|p| p.to_string() == policy);
        if enforced {
            let path = if f.path.is_empty() {
                through.clone()
            } else {
                f.path.join(" → ")
            };
            out.refusals.push(
                text::escape(&format!(
                    "{described} makes {agent} violate {policy} (admission: Enforce) through \
                 {path}; declare an expected exception the Policy allows, or change the grant"
                ))
                .into_owned(),
            );
        } else if shown < MAX_WARNINGS {
            shown += 1;
            out.warnings.push(
                text::escape(&format!(
                    "mcpgov: {described} makes {agent} violate {policy} through {through}"
                ))
                .into_owned(),
            );
        } else {
            hidden += 1;
        }
    }
    if hidden > 0 {
        out.warnings.push(format!(
            "mcpgov: {described} creates {hidden} more violation(s) not listed here"
        ));
    }
}
