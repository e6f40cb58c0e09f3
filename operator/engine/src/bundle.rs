//! The bundle compiler: one canonical JSON document per agent that a gateway enforces.
//! Its bytes are a pure function of the governance and catalog inputs that decided it
//! (and of the evaluation instant only through expiring exceptions): nothing about the
//! process, the clock or the graph instance goes inside.

use crate::canonical::{digest_of, sha256_hex, to_canonical_json};
use crate::model::*;
use crate::select::{AgentEvaluation, Decision, Reason};
use crate::verdict::{DenyPath, Evaluator};
use serde::Serialize;
use std::fmt;

pub const BUNDLE_KIND: &str = "mcpgov.io/policy-bundle";
pub const BUNDLE_SCHEMA_VERSION: u32 = 1;
/// A ConfigMap holds at most 1 MiB.
pub const MAX_BUNDLE_BYTES: usize = 1024 * 1024;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleDoc<'a> {
    kind: &'static str,
    schema_version: u32,
    agent: &'a ObjKey,
    profile: Profile,
    default_decision: &'static str,
    tools: Vec<BundleTool<'a>>,
    governance_digest: String,
    catalog_digest: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleTool<'a> {
    key: String,
    server: String,
    name: &'a str,
    decision: Decision,
    reasons: &'a [Reason],
    risk_score: f64,
    contract_digest: Option<&'a str>,
    deny_paths: &'a [DenyPath],
}

/// A compiled bundle: the exact bytes and their digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub agent: ObjKey,
    pub bytes: Vec<u8>,
    /// `sha256:<hex>` of `bytes`.
    pub sha256: String,
    pub governance_digest: String,
    pub catalog_digest: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleError {
    AgentNotFound(ObjKey),
    TooLarge { agent: ObjKey, bytes: usize },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::AgentNotFound(a) => write!(f, "agent {a} not found"),
            BundleError::TooLarge { agent, bytes } => write!(
                f,
                "bundle for agent {agent} is {bytes} bytes, over the {MAX_BUNDLE_BYTES}-byte \
                 ConfigMap limit: narrow the agent's Grants"
            ),
        }
    }
}

impl std::error::Error for BundleError {}

/// What decided a bundle, by reference: each Policy and server enters through the
/// digest computed when it was applied.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GovernanceInputs<'a> {
    governance_namespace: &'a str,
    agent: &'a Agent,
    grants: Vec<&'a Grant>,
    policies: Vec<(&'a ObjKey, &'a str)>,
    servers: Vec<(&'a ObjKey, &'a str)>,
}

impl Evaluator<'_> {
    /// Compile the bundle of `agent` under its own profile.
    pub fn bundle(&self, agent: &ObjKey) -> Result<Bundle, BundleError> {
        let eval = self
            .evaluate_agent(agent, None)
            .ok_or_else(|| BundleError::AgentNotFound(agent.clone()))?;
        self.bundle_of(&eval)
    }

    /// Compile a bundle from an evaluation already made (the operator reuses the one
    /// it computed status from).
    pub fn bundle_of(&self, eval: &AgentEvaluation) -> Result<Bundle, BundleError> {
        let engine = self.engine();
        let agent = engine
            .agent(&eval.agent)
            .ok_or_else(|| BundleError::AgentNotFound(eval.agent.clone()))?;
        // The inputs that can decide this agent: servers its namespace sees, Policies
        // that govern those servers' namespaces, and its Grants.
        let home = &eval.agent.namespace;
        // Servers a Grant selector of the agent can name (their catalogs decide what
        // the selectors resolve to) and the Policies its granted tools reach.
        let selectors: Vec<_> = engine
            .grant_keys_of(&eval.agent)
            .filter_map(|k| engine.grants.get(k))
            .flat_map(|g| g.selectors.iter())
            .collect();
        let servers: Vec<_> = engine
            .servers
            .values()
            .filter(|s| {
                s.visible_from(home)
                    && selectors
                        .iter()
                        .any(|sel| engine.selector_could_match(sel, home, &s.input.key))
            })
            .collect();
        let policies: Vec<(&ObjKey, &str)> = eval
            .reached_policies
            .iter()
            .filter_map(|k| engine.policies.get(k))
            .map(|p| (&p.input.key, p.digest.as_str()))
            .collect();
        let governance = GovernanceInputs {
            governance_namespace: &engine.config().governance_namespace,
            agent,
            grants: engine.grants_of(&eval.agent).collect(),
            policies,
            servers: servers
                .iter()
                .map(|s| (&s.input.key, s.governance_digest.as_str()))
                .collect(),
        };
        let catalogs: Vec<(&ObjKey, &str)> = servers
            .iter()
            .map(|s| (&s.input.key, s.catalog_digest.as_str()))
            .collect();
        let doc = BundleDoc {
            kind: BUNDLE_KIND,
            schema_version: BUNDLE_SCHEMA_VERSION,
            agent: &eval.agent,
            profile: eval.profile,
            default_decision: "deny",
            tools: eval
                .tools
                .iter()
                .map(|t| BundleTool {
                    key: t.id.to_string(),
                    server: t.id.server_key(),
                    name: &t.id.name,
                    decision: t.decision,
                    reasons: &t.reasons,
                    risk_score: t.risk_score,
                    contract_digest: t.contract_digest.as_deref(),
                    deny_paths: &t.deny_paths,
                })
                .collect(),
            governance_digest: digest_of(&governance),
            catalog_digest: digest_of(&catalogs),
        };
        let bytes = to_canonical_json(&doc);
        if bytes.len() > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge {
                agent: eval.agent.clone(),
                bytes: bytes.len(),
            });
        }
        Ok(Bundle {
            agent: eval.agent.clone(),
            sha256: sha256_hex(&bytes),
            governance_digest: doc.governance_digest,
            catalog_digest: doc.catalog_digest,
            bytes,
        })
    }
}
