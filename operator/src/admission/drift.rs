//! Drift warnings: Grants whose tools a change would take away. Two cases:
//!
//! - an MCPServer change (sharing narrowed, contracts pinned or an approval changed)
//!   that leaves Grants naming tools they no longer get, compared before and after
//!   over the agents the change can move (the catalog is the crawler's, so a spec
//!   change cannot take a tool out of it; a crawl that does is not an admission);
//! - a Grant that names, at birth, tools that do not exist (a crawled server that does
//!   not expose the tool, a name no server matches).
//!
//! Tenancy: a Grant is named only when it is in the request's namespace; the others are
//! counted (docs/admission.md, "Drift").

use super::consequences::MAX_WARNINGS;
use super::mirror::State;
use crate::text;
use mcpgov_engine::resolve::Resolution;
use mcpgov_engine::{ContractState, ObjKey, Reason, Selector};
use std::collections::{BTreeMap, BTreeSet};

/// One reference of a Grant that leads to no usable tool: (grant `ns/name`, why).
pub type Broken = (String, String);

/// Reasons shown per Grant in a drift warning.
const REASONS_PER_GRANT: usize = 3;

/// Why a reference is broken, in words; `None` when it resolves to usable tools.
fn why(selector: &str, r: &Resolution) -> Option<String> {
    let sel = text::quote(selector, 200);
    Some(match r {
        Resolution::Resolved { .. } => return None,
        Resolution::Drifted { tool } => format!("{tool} is not served"),
        Resolution::NotFound => format!("{sel} matches no tool its namespace can see"),
        Resolution::Ambiguous { candidates } => {
            format!(
                "{sel} is exposed by {} servers (ambiguous)",
                candidates.len()
            )
        }
        Resolution::CrossNamespaceDenied { server } => {
            format!("MCPServer {server} does not share its tools with its namespace")
        }
    })
}

fn contract_why(tool: &str, c: ContractState) -> String {
    match c {
        ContractState::Changed => format!("{tool} serves a contract other than the approved one"),
        ContractState::Unapproved => format!("{tool} has no approved contract"),
    }
}

/// A tool of a server that exists and has not been crawled: not known to be missing,
/// so neither broken nor usable (a server deleted before its first crawl then takes it
/// away).
fn uncrawled(s: &State, r: &Resolution) -> bool {
    let Resolution::Drifted { tool } = r else {
        return false;
    };
    s.engine
        .server(&ObjKey::new(&tool.namespace, &tool.server))
        .is_some_and(|s| s.catalog.is_none())
}

/// Every broken reference of the Grants of `agents`, as the mirror stands.
pub fn broken(s: &State, agents: &BTreeSet<ObjKey>, now: jiff::Timestamp) -> BTreeSet<Broken> {
    let ev = s.engine.evaluator(now);
    let mut out = BTreeSet::new();
    for a in agents {
        let Some(eval) = ev.evaluate_agent(a, None) else {
            continue;
        };
        for r in &eval.refs {
            if uncrawled(s, &r.resolution) {
                continue;
            }
            if let Some(w) = why(&r.selector, &r.resolution) {
                out.insert((r.grant.to_string(), w));
            }
        }
        for t in &eval.tools {
            let contract = if t.reasons.contains(&Reason::ContractChanged) {
                Some(ContractState::Changed)
            } else if t.reasons.contains(&Reason::ContractUnapproved) {
                Some(ContractState::Unapproved)
            } else {
                None
            };
            if let Some(c) = contract {
                for edge in &t.granted_by {
                    out.insert((edge.grant.to_string(), contract_why(&t.id.to_string(), c)));
                }
            }
        }
    }
    out
}

/// The warning for an MCPServer change: the Grants broken after and not before.
pub fn server_warning(
    described: &str,
    before: &BTreeSet<Broken>,
    after: &BTreeSet<Broken>,
    namespace: &str,
) -> Option<String> {
    let mut by_grant: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (grant, w) in after.difference(before) {
        by_grant.entry(grant).or_default().push(w);
    }
    if by_grant.is_empty() {
        return None;
    }
    let prefix = format!("{namespace}/");
    let (own, other): (Vec<_>, Vec<_>) = by_grant
        .iter()
        .partition(|(g, _)| g.starts_with(prefix.as_str()));
    let mut named: Vec<String> = own
        .iter()
        .take(MAX_WARNINGS)
        .map(|(g, ws)| {
            let mut shown: Vec<&str> = ws.iter().take(REASONS_PER_GRANT).copied().collect();
            let more = ws.len().saturating_sub(REASONS_PER_GRANT);
            let tail = if more > 0 {
                format!("; … and {more} more")
            } else {
                String::new()
            };
            shown.sort();
            format!("{g} ({}{tail})", shown.join("; "))
        })
        .collect();
    if own.len() > MAX_WARNINGS {
        named.push(format!("… and {} more", own.len() - MAX_WARNINGS));
    }
    let mut m = format!(
        "mcpgov: {described}: its tools are granted by {} Grant(s) that would drift",
        by_grant.len()
    );
    if !named.is_empty() {
        m.push_str(": ");
        m.push_str(&named.join(", "));
    }
    if !other.is_empty() {
        m.push_str(&format!(
            "{}{} in other namespaces, not named here",
            if named.is_empty() { " (" } else { "; and " },
            other.len()
        ));
        if named.is_empty() {
            m.push(')');
        }
    }
    Some(text::escape(&m).into_owned())
}

/// Drift at birth: what the Grant `key` (already laid over the mirror) names that no
/// tool answers to. A literal tool of a server not crawled yet is not drift: nothing
/// is known of its tools. A selector of the Grant's own words is all it repeats, so
/// this is said to its author whatever the namespace.
pub fn at_birth(s: &State, key: &ObjKey) -> Vec<String> {
    let Some(g) = s.engine.grant(key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for raw in &g.tools {
        // A selector that does not parse was denied before this point.
        let Ok(sel) = Selector::parse(raw) else {
            continue;
        };
        let r = s.engine.resolve(&sel, &key.namespace);
        let w = match &r {
            Resolution::Drifted { tool } => {
                let server = ObjKey::new(&tool.namespace, &tool.server);
                if s.engine
                    .server(&server)
                    .is_some_and(|s| s.catalog.is_none())
                {
                    continue;
                }
                why(raw, &r)
            }
            // Only a pinned server's approvals, looked up directly: a tool's whole reach
            // would cost a glob's every match its paths.
            Resolution::Resolved { tools } => tools.iter().find_map(|t| {
                let server = s.engine.server(&ObjKey::new(&t.namespace, &t.server))?;
                let crawled = server
                    .catalog
                    .as_ref()?
                    .tools
                    .iter()
                    .find(|c| c.name == t.name)?
                    .contract_digest
                    .as_deref();
                let c = server.contracts.check(&t.name, crawled)?;
                Some(contract_why(&t.to_string(), c))
            }),
            _ => why(raw, &r),
        };
        if let Some(w) = w {
            out.push(format!(
                "mcpgov: Grant {key} names {}: {w}",
                text::quote(raw, 200)
            ));
        }
        if out.len() == MAX_WARNINGS {
            break;
        }
    }
    out.into_iter()
        .map(|m| text::escape(&m).into_owned())
        .collect()
}
