//! Verdicts for (agent, tool) pairs, with every deny path as evidence, and the agent's
//! granted-tool set. Per-tool reach comes from the engine, which computes it once and
//! keeps it until a change can move it.

use crate::index::{CException, Engine};
use crate::key::ToolId;
use crate::model::*;
use crate::reach::{PolicyPath, ToolReach};
use crate::resolve::Resolution;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VerdictKind {
    AgentNotFound,
    ToolNotFound,
    Ambiguous,
    NotGranted,
    Deny,
    Allow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Classification {
    Violation,
    AuthorizedButGoverned,
    /// A per-call Policy reached through an argument-bound edge, not excused: the
    /// gateway decides each call (never produced for Static Policies).
    GuardedPerCall,
}

/// One Agent -> Tool -> [Resource ->] Policy path with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DenyPath {
    pub policy: String,
    /// The resource the data-flow edge names; null when the Policy governs the tool.
    pub resource: Option<String>,
    pub mode: Option<Mode>,
    /// The Policy binding that matched (resource pattern or tool selector).
    pub governed_by: String,
    pub path: Vec<String>,
    pub classification: Classification,
    pub exception_reason: Option<String>,
    pub exception_grant: Option<String>,
    /// Provenance of the data-flow edge (null for a direct binding).
    pub provenance: Option<Provenance>,
    pub policy_provenance: Provenance,
    /// Set when a pattern comparison on this path ran over its work budget: the path
    /// counts (fail closed) and says which comparison could not be decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
}

/// A CAN_CALL edge: which Grant selector put the tool in reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrantEdge {
    /// Written `namespace/name`.
    #[serde(serialize_with = "crate::wire::display")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub grant: ObjKey,
    pub selector: String,
    pub provenance: Provenance,
}

/// The answer to "may this agent call this tool?".
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccessVerdict {
    pub agent: String,
    pub agent_found: bool,
    pub tool: String,
    /// Null when the agent was not found (the tool was not looked up).
    pub found: Option<bool>,
    pub tool_key: Option<String>,
    pub candidates: Vec<String>,
    pub verdict: VerdictKind,
    pub granted_by: Vec<GrantEdge>,
    pub deny_paths: Vec<DenyPath>,
    /// With DENY: true when every deny path is an authorized exception.
    pub all_authorized: Option<bool>,
    pub drifted: bool,
    pub unmapped: bool,
    /// Under a pinned server: the crawled contract is not the approved one (absent
    /// otherwise, so outputs for trusting servers read as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<ContractState>,
}

/// A selector of one of the agent's Grants and what it resolved to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRef {
    /// Written `namespace/name`.
    #[serde(serialize_with = "crate::wire::display")]
    pub grant: ObjKey,
    pub selector: String,
    pub resolution: Resolution,
}

/// Per agent: its evidence-path node, its live expected exceptions, and the work
/// budget their coverage checks share across all the agent's tools.
pub(crate) struct AgentContext<'e> {
    node: String,
    exceptions: Vec<(&'e ObjKey, &'e CException)>,
    /// Some exception is limited to a resource: only those cost pattern work.
    scoped: bool,
    budget: std::cell::RefCell<(crate::glob::Budget, crate::compare::Paid)>,
}

/// Reads the engine at one instant.
pub struct Evaluator<'e> {
    pub(crate) engine: &'e Engine,
    pub(crate) now: jiff::Timestamp,
}

impl Engine {
    /// An evaluator at `now` (expected exceptions expire against it).
    pub fn evaluator(&self, now: jiff::Timestamp) -> Evaluator<'_> {
        Evaluator { engine: self, now }
    }
}

pub(crate) fn node(kind: &str, id: impl std::fmt::Display) -> String {
    format!("{kind}:{id}")
}

impl<'e> Evaluator<'e> {
    /// The instant this evaluator judges expiries against.
    pub fn now(&self) -> jiff::Timestamp {
        self.now
    }

    pub fn engine(&self) -> &'e Engine {
        self.engine
    }

    pub fn reach(&self, id: &ToolId) -> Arc<ToolReach> {
        self.engine.cached_reach(id)
    }

    /// Every selector of the agent's Grants with its resolution.
    pub fn grant_refs(&self, agent: &ObjKey) -> Vec<GrantRef> {
        self.grant_edges(agent).0
    }

    /// Every selector of one Grant with its resolution.
    pub fn refs_of_grant(&self, grant: &ObjKey) -> Vec<GrantRef> {
        let Some(g) = self.engine.grants.get(grant) else {
            return Vec::new();
        };
        g.selectors
            .iter()
            .map(|sel| GrantRef {
                grant: grant.clone(),
                selector: sel.raw.clone(),
                resolution: self.engine.resolve(sel, &grant.namespace),
            })
            .collect()
    }

    /// The tools the agent can call (CAN_CALL edges), each with the edges that grant it.
    pub fn granted_tools(&self, agent: &ObjKey) -> BTreeMap<ToolId, Vec<GrantEdge>> {
        self.grant_edges(agent).1
    }

    /// The agent's resolved selectors and the CAN_CALL edges they make, in one pass
    /// over its Grants.
    pub(crate) fn grant_edges(
        &self,
        agent: &ObjKey,
    ) -> (Vec<GrantRef>, BTreeMap<ToolId, Vec<GrantEdge>>) {
        let mut refs = Vec::new();
        let mut edges: BTreeMap<ToolId, Vec<GrantEdge>> = BTreeMap::new();
        for gk in self.engine.grant_keys_of(agent) {
            let Some(g) = self.engine.grants.get(gk) else {
                continue;
            };
            let cached = self.engine.resolved.get(gk);
            for (i, sel) in g.selectors.iter().enumerate() {
                let resolution = match cached.and_then(|c| c.selectors.get(i)) {
                    Some(r) => r.clone(),
                    None => self.engine.resolve(sel, &gk.namespace),
                };
                for id in resolution.granted_ids() {
                    edges.entry(id.clone()).or_default().push(GrantEdge {
                        grant: gk.clone(),
                        selector: sel.raw.clone(),
                        provenance: g.input.provenance.clone(),
                    });
                }
                refs.push(GrantRef {
                    grant: gk.clone(),
                    selector: sel.raw.clone(),
                    resolution,
                });
            }
        }
        (refs, edges)
    }

    /// What classifying `agent`'s deny paths needs, looked up once.
    pub(crate) fn agent_context(&self, agent: &ObjKey) -> AgentContext<'e> {
        let exceptions = self.engine.live_exceptions(agent, self.now);
        AgentContext {
            node: node("agent", agent),
            scoped: exceptions.iter().any(|(_, e)| e.resource.is_some()),
            exceptions,
            budget: std::cell::RefCell::new((crate::reach::coverage_budget(), Default::default())),
        }
    }

    /// Deny paths of `reach` for `agent`, classified against the agent's exceptions.
    /// The coverage budget is the agent's, spent over its granted tools in key order
    /// (as `evaluate_agent` does): a tool asked about alone is classified exactly as
    /// in the agent's evaluation.
    pub fn deny_paths(&self, agent: &ObjKey, reach: &ToolReach) -> Vec<DenyPath> {
        let cx = self.agent_context(agent);
        if cx.scoped {
            for id in self.granted_tools(agent).into_keys() {
                if id == reach.id {
                    break;
                }
                self.deny_paths_in(&cx, &self.reach(&id));
            }
        }
        self.deny_paths_in(&cx, reach)
    }

    pub(crate) fn deny_paths_in(&self, cx: &AgentContext<'e>, reach: &ToolReach) -> Vec<DenyPath> {
        reach
            .deny_paths()
            .map(|p| self.classify(cx, &reach.id, p))
            .collect()
    }

    fn classify(&self, cx: &AgentContext<'e>, tool: &ToolId, p: &PolicyPath) -> DenyPath {
        let mut path = Vec::with_capacity(2 + p.tail.len());
        path.push(cx.node.clone());
        path.push("CAN_CALL".to_string());
        path.extend(p.tail.iter().cloned());
        let covering = {
            let (budget, paid) = &mut *cx.budget.borrow_mut();
            self.engine
                .covering_exception(&cx.exceptions, tool, p, self.now, budget, paid)
        };
        let exception = covering.unwrap_or(None);
        let undecided = if p.undecided {
            Some(format!(
                "whether {} overlaps {} was not decided within the work budget",
                p.access.as_ref().map_or("", |a| a.resource.as_str()),
                p.binding
            ))
        } else if covering.is_err() {
            Some("whether an expected exception covers this path was not decided within the work budget".to_string())
        } else {
            None
        };
        DenyPath {
            policy: p.policy_name.clone(),
            resource: p.access.as_ref().map(|a| a.resource.clone()),
            mode: p.access.as_ref().map(|a| a.mode),
            governed_by: p.binding.clone(),
            path,
            classification: if exception.is_some() {
                Classification::AuthorizedButGoverned
            } else if p.per_call {
                Classification::GuardedPerCall
            } else {
                Classification::Violation
            },
            exception_reason: exception.map(|(_, e)| e.input.reason.clone()),
            exception_grant: exception.map(|(g, _)| g.to_string()),
            provenance: p.access.as_ref().map(|a| a.provenance.clone()),
            policy_provenance: p.policy_provenance.clone(),
            undecided,
        }
    }

    /// check-access: the verdict for one (agent, tool) pair.
    pub fn check_access(&self, agent: &ObjKey, tool: &str) -> AccessVerdict {
        let mut v = AccessVerdict {
            agent: agent.to_string(),
            agent_found: false,
            tool: tool.to_string(),
            found: None,
            tool_key: None,
            candidates: Vec::new(),
            verdict: VerdictKind::AgentNotFound,
            granted_by: Vec::new(),
            deny_paths: Vec::new(),
            all_authorized: None,
            drifted: false,
            unmapped: false,
            contract: None,
        };
        if self.engine.agent(agent).is_none() {
            return v;
        }
        v.agent_found = true;
        let id = match self.engine.resolve_tool_arg(tool, &agent.namespace) {
            Resolution::Resolved { tools } if tools.len() == 1 => tools[0].clone(),
            Resolution::Drifted { tool } => tool,
            Resolution::Ambiguous { candidates } => {
                v.found = Some(true);
                v.candidates = candidates.iter().map(ToString::to_string).collect();
                v.verdict = VerdictKind::Ambiguous;
                return v;
            }
            _ => {
                v.found = Some(false);
                v.verdict = VerdictKind::ToolNotFound;
                return v;
            }
        };
        v.found = Some(true);
        v.tool_key = Some(id.to_string());
        let reach = self.reach(&id);
        v.drifted = reach.drifted();
        v.unmapped = reach.unmapped();
        v.contract = reach.contract;
        v.granted_by = self.granted_tools(agent).remove(&id).unwrap_or_default();
        // Deny paths are listed for a tool the agent is not granted too: what calling
        // it would cross if it were granted (Toolgraph's deny rows of NOT_GRANTED).
        v.deny_paths = self.deny_paths(agent, &reach);
        if v.granted_by.is_empty() {
            v.verdict = VerdictKind::NotGranted;
        } else if v.deny_paths.is_empty() {
            v.verdict = VerdictKind::Allow;
        } else {
            v.verdict = VerdictKind::Deny;
            // Guarded paths are decided per call: authorized here, as excused ones are.
            v.all_authorized = Some(
                v.deny_paths
                    .iter()
                    .all(|p| p.classification != Classification::Violation),
            );
        }
        v
    }
}
