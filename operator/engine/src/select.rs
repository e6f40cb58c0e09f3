//! The deterministic selector surface: profiles, reject reasons, Toolgraph's fixed
//! risk-score table, and the per-agent evaluation that bundles and status are built from.

use crate::key::ToolId;
use crate::model::*;
use crate::reach::ToolReach;
use crate::verdict::{
    AccessVerdict, Classification, DenyPath, Evaluator, GrantEdge, GrantRef, VerdictKind,
};
use serde::Serialize;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Reason {
    NotFound,
    Ambiguous,
    NotGranted,
    DenyViolation,
    DenyException,
    Drifted,
    Unmapped,
    /// Pinned server: the crawled contract is not the approved one.
    ContractChanged,
    /// Pinned server: no contract was ever approved for the tool.
    ContractUnapproved,
    /// Reaches a per-call Policy through argument-bound dataAccess only: eligible, each
    /// call decided by the gateway from its arguments.
    GuardedPerCall,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Eligible,
    Rejected,
}

/// What each profile rejects (Toolgraph's table).
pub fn rejects(profile: Profile, reason: Reason) -> bool {
    use Reason::*;
    match reason {
        NotFound | Ambiguous | NotGranted | Drifted | ContractChanged | ContractUnapproved => true,
        DenyViolation => profile != Profile::Explore,
        DenyException | Unmapped => profile == Profile::Strict,
        GuardedPerCall => false,
    }
}

pub fn decide(profile: Profile, reasons: &[Reason]) -> Decision {
    if reasons.iter().any(|r| rejects(profile, *r)) {
        Decision::Rejected
    } else {
        Decision::Eligible
    }
}

/// Reasons that apply to a verdict, whatever the profile.
pub fn reasons_of(v: &AccessVerdict) -> Vec<Reason> {
    let mut out = Vec::new();
    match v.verdict {
        VerdictKind::AgentNotFound | VerdictKind::ToolNotFound => out.push(Reason::NotFound),
        VerdictKind::Ambiguous => out.push(Reason::Ambiguous),
        VerdictKind::NotGranted => out.push(Reason::NotGranted),
        VerdictKind::Deny | VerdictKind::Allow => {}
    }
    if v.found != Some(true) || v.verdict == VerdictKind::Ambiguous {
        return out;
    }
    let violation = v
        .deny_paths
        .iter()
        .any(|p| p.classification == Classification::Violation);
    // Also for a tool that is not granted: its deny paths say what granting it would
    // cross (Toolgraph's reasons after NOT_GRANTED).
    if violation {
        out.push(Reason::DenyViolation);
    } else if v
        .deny_paths
        .iter()
        .any(|p| p.classification == Classification::AuthorizedButGoverned)
    {
        out.push(Reason::DenyException);
    }
    if v.deny_paths
        .iter()
        .any(|p| p.classification == Classification::GuardedPerCall)
    {
        out.push(Reason::GuardedPerCall);
    }
    if v.drifted {
        out.push(Reason::Drifted);
    }
    if v.unmapped {
        out.push(Reason::Unmapped);
    }
    match v.contract {
        Some(ContractState::Changed) => out.push(Reason::ContractChanged),
        Some(ContractState::Unapproved) => out.push(Reason::ContractUnapproved),
        None => {}
    }
    out
}

/// Whether the tool's evidence chain has an edge that cites no evidence, as Toolgraph
/// counts it: any of the tool's READS/WRITES edges, or any GOVERNED_BY binding (Deny or
/// Allow) that reaches the tool, directly or on a resource it touches. The Grant is
/// not part of it: a grant declares intent, it claims nothing about the world
/// (unbacked-edges leaves CAN_CALL out unless asked, for the same reason).
fn has_unbacked_edge(reach: Option<&ToolReach>) -> bool {
    reach.is_some_and(|r| {
        r.access.iter().any(|a| a.provenance.is_unbacked())
            || r.paths.iter().any(|p| p.policy_provenance.is_unbacked())
    })
}

/// Toolgraph's fixed table, first match wins; `None` when the candidate did not
/// resolve to exactly one tool (not found, ambiguous): there are no facts to score,
/// and 0.0 would read as "safe".
pub fn risk_score(v: &AccessVerdict, reach: Option<&ToolReach>) -> Option<f64> {
    resolved(v).then(|| score(v, reach))
}

/// Whether the verdict is about one known tool (anything but not-found or ambiguous).
fn resolved(v: &AccessVerdict) -> bool {
    v.found == Some(true)
        && !matches!(
            v.verdict,
            VerdictKind::AgentNotFound | VerdictKind::ToolNotFound | VerdictKind::Ambiguous
        )
}

/// The fixed table for a resolved tool (granted or not).
fn score(v: &AccessVerdict, reach: Option<&ToolReach>) -> f64 {
    let reasons = reasons_of(v);
    if reasons.contains(&Reason::DenyViolation) {
        1.0
    } else if v.contract.is_some() {
        // What the tool does now is not what was reviewed: below a known violation,
        // above a tool that merely vanished (only pinned servers ever score it).
        0.9
    } else if v.drifted {
        0.8
    } else if v.unmapped {
        0.6
    } else if has_unbacked_edge(reach) {
        0.4
    } else if reasons.contains(&Reason::GuardedPerCall) {
        // Below unbacked (a claim nobody can check), above an excused path: the
        // resource is safe only where the gateway sits in the call path.
        0.3
    } else if reasons.contains(&Reason::DenyException) {
        0.2
    } else {
        0.0
    }
}

/// rank-features: the facts about one candidate, in input order.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    #[serde(flatten)]
    pub verdict: AccessVerdict,
    pub granted: bool,
    pub reasons: Vec<Reason>,
    /// Null when the candidate did not resolve to one tool (no facts).
    pub unbacked: Option<bool>,
    pub annotations: Option<Annotations>,
    /// Null when the candidate did not resolve to one tool (no facts to score).
    pub risk_score: Option<f64>,
}

/// eligible-tools: one candidate's decision under a profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Eligibility {
    pub tool: String,
    pub tool_key: Option<String>,
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    pub rejected_by: Vec<Reason>,
    pub deny_paths: Vec<DenyPath>,
}

/// One granted tool of an agent, decided under the agent's profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDecision {
    pub id: ToolId,
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    pub risk_score: f64,
    pub contract_digest: Option<String>,
    pub deny_paths: Vec<DenyPath>,
    pub granted_by: Vec<GrantEdge>,
}

/// Everything decided for one agent: the input of its bundle and its status.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvaluation {
    pub agent: ObjKey,
    pub profile: Profile,
    pub tools: Vec<ToolDecision>,
    pub refs: Vec<GrantRef>,
    /// Every Policy (Deny or Allow) a granted tool reaches.
    pub reached_policies: BTreeSet<ObjKey>,
}

impl AgentEvaluation {
    pub fn count(&self, reason: Reason) -> usize {
        self.tools
            .iter()
            .filter(|t| t.reasons.contains(&reason))
            .count()
    }

    pub fn eligible(&self) -> usize {
        self.tools
            .iter()
            .filter(|t| t.decision == Decision::Eligible)
            .count()
    }

    /// Deny paths classified as violations, over all tools.
    pub fn violations(&self) -> impl Iterator<Item = (&ToolDecision, &DenyPath)> {
        self.tools.iter().flat_map(|t| {
            t.deny_paths
                .iter()
                .filter(|p| p.classification == Classification::Violation)
                .map(move |p| (t, p))
        })
    }
}

impl Evaluator<'_> {
    pub fn features(&self, agent: &ObjKey, tool: &str) -> Features {
        let verdict = self.check_access(agent, tool);
        let reach = verdict.tool_key.as_ref().and_then(|_| {
            self.engine
                .resolve_tool_arg(tool, &agent.namespace)
                .granted()
                .first()
                .map(|id| self.reach(id))
        });
        let reach = reach.as_deref();
        Features {
            granted: !verdict.granted_by.is_empty(),
            reasons: reasons_of(&verdict),
            unbacked: resolved(&verdict).then(|| has_unbacked_edge(reach)),
            annotations: reach.and_then(|r| r.catalog.as_ref().map(|c| c.annotations.clone())),
            risk_score: risk_score(&verdict, reach),
            verdict,
        }
    }

    pub fn eligibility(&self, agent: &ObjKey, tool: &str, profile: Profile) -> Eligibility {
        let v = self.check_access(agent, tool);
        let reasons = reasons_of(&v);
        Eligibility {
            tool: tool.to_string(),
            tool_key: v.tool_key.clone(),
            decision: decide(profile, &reasons),
            rejected_by: reasons
                .iter()
                .copied()
                .filter(|r| rejects(profile, *r))
                .collect(),
            reasons,
            deny_paths: v.deny_paths,
        }
    }

    /// Decide every granted tool of `agent` under `profile` (the agent's own when None).
    pub fn evaluate_agent(
        &self,
        agent: &ObjKey,
        profile: Option<Profile>,
    ) -> Option<AgentEvaluation> {
        let a = self.engine.agent(agent)?;
        let profile = profile.unwrap_or(a.profile);
        let mut reached_policies = BTreeSet::new();
        let (refs, granted) = self.grant_edges(agent);
        let cx = self.agent_context(agent);
        let tools = granted
            .into_iter()
            .map(|(id, granted_by)| {
                let reach = self.reach(&id);
                for p in &reach.paths {
                    if !reached_policies.contains(&p.policy) {
                        reached_policies.insert(p.policy.clone());
                    }
                }
                let deny_paths = self.deny_paths_in(&cx, &reach);
                let verdict = AccessVerdict {
                    agent: agent.to_string(),
                    agent_found: true,
                    tool: id.to_string(),
                    found: Some(true),
                    tool_key: Some(id.to_string()),
                    candidates: Vec::new(),
                    verdict: if deny_paths.is_empty() {
                        VerdictKind::Allow
                    } else {
                        VerdictKind::Deny
                    },
                    granted_by,
                    all_authorized: None,
                    deny_paths,
                    drifted: reach.drifted(),
                    unmapped: reach.unmapped(),
                    contract: reach.contract,
                };
                let reasons = reasons_of(&verdict);
                ToolDecision {
                    decision: decide(profile, &reasons),
                    risk_score: score(&verdict, Some(&reach)),
                    // The approved digest under pinning: the gateway then blocks a
                    // change before the operator has re-crawled.
                    contract_digest: reach.expected_digest.clone(),
                    reasons,
                    id,
                    deny_paths: verdict.deny_paths,
                    granted_by: verdict.granted_by,
                }
            })
            .collect();
        Some(AgentEvaluation {
            agent: agent.clone(),
            profile,
            tools,
            refs,
            reached_policies,
        })
    }
}
