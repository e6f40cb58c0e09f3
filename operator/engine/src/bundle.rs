//! The bundle compiler: one canonical JSON document per agent that a gateway enforces.
//! Its bytes are a pure function of the governance and catalog inputs that decided it
//! (and of the evaluation instant only through expiring exceptions): nothing about the
//! process, the clock or the graph instance goes inside.

use crate::canonical::{digest_of, sha256_hex};
use crate::model::*;
use crate::select::{AgentEvaluation, Decision, Reason};
use crate::verdict::{Classification, DenyPath, Evaluator};
use serde::Serialize;
use std::fmt;

pub use mcpgov_core::bundle::{BUNDLE_KIND, BUNDLE_SCHEMA_VERSION, MAX_BUNDLE_BYTES};

// The bundle is written straight from these structs, without a `serde_json::Value` in
// between: every field is declared in sorted order of its JSON name, so the output is
// already canonical (a test re-canonicalises real bundles to check it, and the golden
// bundles pin the bytes).

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleDoc<'a> {
    agent: BundleAgent<'a>,
    catalog_digest: String,
    default_decision: &'static str,
    governance_digest: String,
    kind: &'static str,
    profile: Profile,
    schema_version: u32,
    tools: Vec<BundleTool<'a>>,
}

#[derive(Serialize)]
struct BundleAgent<'a> {
    name: &'a str,
    namespace: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleTool<'a> {
    contract_digest: Option<&'a str>,
    decision: Decision,
    deny_paths: Vec<BundlePath<'a>>,
    key: &'a str,
    name: &'a str,
    reasons: &'a [Reason],
    risk_score: f64,
    server: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundlePath<'a> {
    classification: Classification,
    exception_grant: Option<&'a str>,
    exception_reason: Option<&'a str>,
    governed_by: &'a str,
    mode: Option<Mode>,
    path: &'a [String],
    policy: &'a str,
    policy_provenance: BundleProvenance<'a>,
    provenance: Option<BundleProvenance<'a>>,
    resource: Option<&'a str>,
}

#[derive(Serialize)]
struct BundleProvenance<'a> {
    confidence: Confidence,
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence: Option<&'a str>,
    source: Source,
}

impl<'a> From<&'a Provenance> for BundleProvenance<'a> {
    fn from(p: &'a Provenance) -> Self {
        BundleProvenance {
            confidence: p.confidence,
            evidence: p.evidence.as_deref(),
            source: p.source,
        }
    }
}

impl<'a> From<&'a DenyPath> for BundlePath<'a> {
    fn from(p: &'a DenyPath) -> Self {
        BundlePath {
            classification: p.classification,
            exception_grant: p.exception_grant.as_deref(),
            exception_reason: p.exception_reason.as_deref(),
            governed_by: &p.governed_by,
            mode: p.mode,
            path: &p.path,
            policy: &p.policy,
            policy_provenance: (&p.policy_provenance).into(),
            provenance: p.provenance.as_ref().map(Into::into),
            resource: p.resource.as_deref(),
        }
    }
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

/// What decided a bundle, by reference: each Grant, Policy and server enters through
/// the digest computed when it was applied.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GovernanceInputs<'a> {
    governance_namespace: &'a str,
    agent: &'a Agent,
    grants: Vec<(&'a ObjKey, &'a str)>,
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
            grants: engine
                .grant_keys_of(&eval.agent)
                .filter_map(|k| engine.grants.get(k))
                .map(|g| (&g.input.key, g.digest.as_str()))
                .collect(),
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
            agent: BundleAgent {
                name: &eval.agent.name,
                namespace: &eval.agent.namespace,
            },
            catalog_digest: digest_of(&catalogs),
            default_decision: "deny",
            governance_digest: digest_of(&governance),
            kind: BUNDLE_KIND,
            profile: eval.profile,
            schema_version: BUNDLE_SCHEMA_VERSION,
            tools: eval
                .tools
                .iter()
                .map(|t| BundleTool {
                    contract_digest: t.contract_digest.as_deref(),
                    decision: t.decision,
                    deny_paths: t.deny_paths.iter().map(Into::into).collect(),
                    key: t.id.as_str(),
                    name: &t.id.name,
                    reasons: &t.reasons,
                    risk_score: t.risk_score,
                    server: t.id.server_key(),
                })
                .collect(),
        };
        // Sized from the tool count (about 500 bytes a tool) to skip the regrowth.
        let mut bytes = Vec::with_capacity(1024 + doc.tools.len() * 512);
        serde_json::to_writer(&mut bytes, &doc).expect("bundles always serialise");
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
