//! Questions about one agent: check-access, explain, eligible-tools, unsafe-tools and
//! its bundle's identity.

use super::{
    Answer, MAX_CANDIDATES, ProfileArg, Published, Refusal, Snapshot, Visibility, answered,
    bounded, readable_agent, resolve_agent,
};
use mcpgov_engine::queries::UnsafeRow;
use mcpgov_engine::select::{Eligibility, decide, reasons_of, rejects};
use mcpgov_engine::{AccessVerdict, Decision, ObjKey, Profile, Reason};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckAccessInput {
    /// `namespace/name`, or a name when only one namespace has such an agent.
    pub agent: String,
    /// A tool key (`server::tool`, `namespace/server::tool`) or a bare tool name.
    pub tool: String,
}

/// check-access: the verdict. An agent that is absent, or that the caller may not
/// read, is AGENT_NOT_FOUND (an answer, not a refusal, as the CLI has always said).
pub fn check_access(
    s: &Snapshot,
    vis: &Visibility,
    input: CheckAccessInput,
) -> Result<Answer<AccessVerdict>, Refusal> {
    bounded("tool", &input.tool)?;
    let key = resolve_agent(s.engine(), &input.agent, s.namespace, vis)?;
    let verdict = if vis.can_read(&key.namespace) {
        s.eval.check_access(&key, &input.tool)
    } else {
        // The engine's own answer for an agent that does not exist (no object is
        // named "/"), so the two can never be told apart, whatever fields it gains.
        let mut absent = s.eval.check_access(&ObjKey::new("", "/"), &input.tool);
        absent.agent = key.to_string();
        absent
    };
    Ok(answered(s, verdict))
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsafeToolsInput {
    /// `namespace/name`, or a name when only one namespace has such an agent.
    pub agent: String,
    /// Also list the paths a declared exception excuses.
    #[serde(default)]
    pub all: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnsafeTools {
    pub agent: String,
    /// Always true: an unknown agent is refused.
    pub agent_found: bool,
    pub rows: Vec<UnsafeRow>,
}

pub fn unsafe_tools(
    s: &Snapshot,
    vis: &Visibility,
    input: UnsafeToolsInput,
) -> Result<Answer<UnsafeTools>, Refusal> {
    let key = readable_agent(s, vis, &input.agent)?;
    let rows = s
        .eval
        .unsafe_tools(&key, input.all)
        .ok_or_else(|| super::agent_not_found(&key))?;
    Ok(answered(
        s,
        UnsafeTools {
            agent: key.to_string(),
            agent_found: true,
            rows,
        },
    ))
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EligibleToolsInput {
    /// `namespace/name`, or a name when only one namespace has such an agent.
    pub agent: String,
    /// Candidate tool keys; default: every tool the agent is granted.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Default: the Agent's own profile.
    #[serde(default)]
    pub profile: Option<ProfileArg>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EligibleTools {
    pub agent: String,
    pub profile: Profile,
    pub tools: Vec<Eligibility>,
}

pub fn eligible_tools(
    s: &Snapshot,
    vis: &Visibility,
    input: EligibleToolsInput,
) -> Result<Answer<EligibleTools>, Refusal> {
    if input.tools.len() > MAX_CANDIDATES {
        return Err(Refusal::Invalid(format!(
            "tools names {} candidates, over the limit of {MAX_CANDIDATES}",
            input.tools.len()
        )));
    }
    for t in &input.tools {
        bounded("tools[]", t)?;
    }
    let key = readable_agent(s, vis, &input.agent)?;
    let profile = match input.profile {
        Some(p) => p.profile(),
        None => s
            .engine()
            .agent(&key)
            .map(|a| a.profile)
            .unwrap_or_default(),
    };
    let candidates = if input.tools.is_empty() {
        s.eval
            .granted_tools(&key)
            .into_keys()
            .map(|id| id.to_string())
            .collect()
    } else {
        input.tools
    };
    let tools = candidates
        .iter()
        .map(|t| s.eval.eligibility(&key, t, profile))
        .collect();
    Ok(answered(
        s,
        EligibleTools {
            agent: key.to_string(),
            profile,
            tools,
        },
    ))
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainInput {
    /// `namespace/name`, or a name when only one namespace has such an agent.
    pub agent: String,
    /// A tool key (`server::tool`, `namespace/server::tool`) or a bare tool name.
    pub tool: String,
    /// Default: the Agent's own profile.
    #[serde(default)]
    pub profile: Option<ProfileArg>,
}

/// Why a tool is eligible or rejected for an agent, with the evidence.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub agent: String,
    pub tool: String,
    pub profile: Profile,
    pub decision: Decision,
    /// Every reason that applies, whatever the profile.
    pub reasons: Vec<Reason>,
    /// The reasons this profile rejects on.
    pub rejected_by: Vec<Reason>,
    /// The verdict in words, one line per fact and path (as `mcpgov why` prints it).
    pub text: String,
    /// The verdict with its Grant edges and every deny path (`check_access`).
    pub access: AccessVerdict,
}

pub fn explain(
    s: &Snapshot,
    vis: &Visibility,
    input: ExplainInput,
) -> Result<Answer<Explanation>, Refusal> {
    bounded("tool", &input.tool)?;
    let key = readable_agent(s, vis, &input.agent)?;
    let profile = match input.profile {
        Some(p) => p.profile(),
        None => s
            .engine()
            .agent(&key)
            .map(|a| a.profile)
            .unwrap_or_default(),
    };
    let access = s.eval.check_access(&key, &input.tool);
    let reasons = reasons_of(&access);
    let rejected_by: Vec<Reason> = reasons
        .iter()
        .copied()
        .filter(|r| rejects(profile, *r))
        .collect();
    Ok(answered(
        s,
        Explanation {
            agent: key.to_string(),
            tool: input.tool,
            profile,
            decision: decide(profile, &reasons),
            reasons,
            rejected_by,
            text: super::explain_text(&access),
            access,
        },
    ))
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleIdentityInput {
    /// `namespace/name`, or a name when only one namespace has such an agent.
    pub agent: String,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleIdentity {
    pub agent: String,
    /// `sha256:<hex>` of the bundle bytes compiled from this state.
    pub sha256: String,
    pub governance_digest: String,
    pub catalog_digest: String,
    pub bytes: usize,
    /// The ConfigMap the operator published, with its revision; null offline.
    pub published: Option<Published>,
    /// Whether the published bundle is the one this state compiles (null offline).
    pub up_to_date: Option<bool>,
}

pub fn bundle_identity(
    s: &Snapshot,
    vis: &Visibility,
    input: BundleIdentityInput,
) -> Result<Answer<BundleIdentity>, Refusal> {
    let key = readable_agent(s, vis, &input.agent)?;
    let b = s
        .eval
        .bundle(&key)
        .map_err(|e| Refusal::Failed(format!("error: {e}")))?;
    let published = s.published.and_then(|p| p.published(&key));
    Ok(answered(
        s,
        BundleIdentity {
            agent: key.to_string(),
            up_to_date: published.as_ref().map(|p| p.sha256 == b.sha256),
            sha256: b.sha256,
            governance_digest: b.governance_digest,
            catalog_digest: b.catalog_digest,
            bytes: b.bytes.len(),
            published,
        },
    ))
}
