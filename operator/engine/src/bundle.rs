//! The bundle compiler: one canonical JSON document per agent that a gateway enforces.
//! Its bytes are a pure function of the governance and catalog inputs that decided it
//! (and of the evaluation instant only through expiring exceptions): nothing about the
//! process, the clock or the graph instance goes inside.

use crate::canonical::{digest_of, sha256_hex, write_presorted};
use crate::model::*;
use crate::select::{AgentEvaluation, Decision, Reason};
use crate::verdict::{Classification, DenyPath, Evaluator};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use mcpgov_core::bundle::{BUNDLE_KIND, BUNDLE_SCHEMA_VERSION, MAX_BUNDLE_BYTES};
use mcpgov_core::bundle::{BundleGuard, GuardArgument, GuardExcept, GuardGoverned};

// The bundle is written straight from these structs, without a `serde_json::Value` in
// between: every field is declared in sorted order of its JSON name (all ASCII, where
// UTF-16 order is byte order) and RFC 8785 scalars are written by `write_presorted`, so
// the output is already canonical (a test re-canonicalises real bundles to check it, and
// the golden bundles pin the bytes).

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
    servers: Vec<BundleServer<'a>>,
    tools: Vec<BundleTool<'a>>,
}

#[derive(Serialize)]
struct BundleServer<'a> {
    endpoint: BundleEndpoint<'a>,
    key: String,
}

#[derive(Serialize)]
struct BundleEndpoint<'a> {
    headers: Vec<BundleHeader<'a>>,
    transport: Transport,
    url: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleHeader<'a> {
    name: &'a str,
    secret_key_ref: BundleSecretKeyRef<'a>,
}

#[derive(Serialize)]
struct BundleSecretKeyRef<'a> {
    key: &'a str,
    name: &'a str,
}

impl<'a> From<&'a Endpoint> for BundleEndpoint<'a> {
    fn from(e: &'a Endpoint) -> Self {
        BundleEndpoint {
            headers: e
                .headers
                .iter()
                .map(|h| BundleHeader {
                    name: &h.name,
                    secret_key_ref: BundleSecretKeyRef {
                        key: &h.secret_key,
                        name: &h.secret_name,
                    },
                })
                .collect(),
            transport: e.transport,
            url: &e.url,
        }
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
    eligible_until: Option<String>,
    /// Declared in sorted field order like everything here (core's reader type).
    #[serde(skip_serializing_if = "Option::is_none")]
    guard: Option<BundleGuard>,
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
        let until = self.eligible_until(eval);
        let exceptions = engine.live_exceptions(&eval.agent, self.now);
        // The upstream of every listed tool, once, in key order.
        let upstreams: BTreeMap<&str, &Endpoint> = eval
            .tools
            .iter()
            .filter_map(|t| {
                let key = ObjKey::new(&t.id.namespace, &t.id.server);
                let s = engine.servers.get(&key)?;
                Some((t.id.server_key(), &s.input.endpoint))
            })
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
            servers: upstreams
                .into_iter()
                .map(|(key, e)| BundleServer {
                    endpoint: e.into(),
                    key: key.to_string(),
                })
                .collect(),
            tools: eval
                .tools
                .iter()
                .zip(until)
                .map(|(t, until)| BundleTool {
                    contract_digest: t.contract_digest.as_deref(),
                    decision: t.decision,
                    deny_paths: t.deny_paths.iter().map(Into::into).collect(),
                    eligible_until: until.map(rfc3339_seconds),
                    guard: self.guard_of(&t.id, &exceptions),
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
        write_presorted(&mut bytes, &doc).expect("bundles always serialise");
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

impl Evaluator<'_> {
    /// For each tool of `eval` (same order): the instant from which it is no longer
    /// eligible, when an expected exception it depends on expires before anything else
    /// changes. Exact rather than guessed: when some eligible tool has an excused deny
    /// path, the agent is evaluated again at each later expiry instant of its exceptions,
    /// earliest first (the engine's only clock input is exception expiry), and a tool
    /// that is no longer eligible there gets that instant. No excused path, no extra
    /// evaluation; at most one per exception of the agent's Grants (bounded by the CRD).
    fn eligible_until(&self, eval: &AgentEvaluation) -> Vec<Option<jiff::Timestamp>> {
        let mut until = vec![None; eval.tools.len()];
        let excused = |t: &crate::select::ToolDecision| {
            t.decision == Decision::Eligible
                && t.deny_paths
                    .iter()
                    .any(|p| p.classification == Classification::AuthorizedButGoverned)
        };
        if !eval.tools.iter().any(excused) {
            return until;
        }
        // Any of the agent's exceptions may take over a path when another expires, so
        // every expiry of the agent's is a candidate instant, not only the covering ones.
        let engine = self.engine();
        let instants: BTreeSet<jiff::Timestamp> = engine
            .grant_keys_of(&eval.agent)
            .filter_map(|k| engine.grants.get(k))
            .flat_map(|g| g.exceptions.iter().filter_map(|e| e.expires))
            .filter(|t| *t > self.now)
            .collect();
        let mut open: Vec<usize> = (0..eval.tools.len())
            .filter(|&i| excused(&eval.tools[i]))
            .collect();
        for at in instants {
            if open.is_empty() {
                break;
            }
            let Some(later) = engine
                .evaluator(at)
                .evaluate_agent(&eval.agent, Some(eval.profile))
            else {
                break;
            };
            let eligible_then: BTreeSet<&crate::key::ToolId> = later
                .tools
                .iter()
                .filter(|t| t.decision == Decision::Eligible)
                .map(|t| &t.id)
                .collect();
            open.retain(|&i| {
                if eligible_then.contains(&eval.tools[i].id) {
                    return true;
                }
                until[i] = Some(at);
                false
            });
        }
        until
    }
}

impl Evaluator<'_> {
    /// The guard of one tool for this agent: present when the tool reaches a per-call
    /// Policy through argument-bound dataAccess (whether or not an exception excuses the
    /// path now: the gateway applies exceptions per call and expires them itself).
    /// Its arguments are every binding of the tool with the patterns declared through
    /// it; its governed patterns those of the per-call paths, each with the agent's live
    /// exceptions that may excuse it.
    fn guard_of(
        &self,
        id: &crate::key::ToolId,
        exceptions: &[(&ObjKey, &crate::index::CException)],
    ) -> Option<BundleGuard> {
        let reach = self.reach(id);
        let guarded: Vec<_> = reach
            .deny_paths()
            .filter(|p| p.per_call && p.access.is_some())
            .collect();
        if guarded.is_empty() {
            return None;
        }
        let mut arguments: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for a in &reach.access {
            for b in &a.arguments {
                arguments
                    .entry((b.pointer.as_str(), b.template.as_str()))
                    .or_default()
                    .insert(a.resource.as_str());
            }
        }
        let engine = self.engine();
        let mut governed: BTreeMap<(&str, &str), Excepts> = BTreeMap::new();
        for p in guarded {
            let except = governed
                .entry((p.policy_name.as_str(), p.binding.as_str()))
                .or_default();
            let Some(policy) = engine.policies.get(&p.policy) else {
                continue;
            };
            for &(gk, e) in exceptions {
                if e.policy != p.policy
                    || !policy.input.allows_exceptions_from(&gk.namespace)
                    || e.tool
                        .as_ref()
                        .is_some_and(|sel| !sel.matches(id, &gk.namespace))
                    || e.expires.is_some_and(|t| t <= self.now)
                {
                    continue;
                }
                except.insert((
                    gk.to_string(),
                    e.resource.as_ref().map(|r| r.as_str().to_string()),
                    e.expires.map(rfc3339_seconds),
                ));
            }
        }
        Some(BundleGuard {
            arguments: arguments
                .into_iter()
                .map(|((pointer, template), declared)| GuardArgument {
                    declared: declared.into_iter().map(str::to_string).collect(),
                    pointer: pointer.to_string(),
                    template: template.to_string(),
                })
                .collect(),
            governed: governed
                .into_iter()
                .map(|((policy, pattern), except)| GuardGoverned {
                    except: except
                        .into_iter()
                        .map(|(grant, pattern, expires)| GuardExcept {
                            expires,
                            grant,
                            pattern,
                        })
                        .collect(),
                    pattern: pattern.to_string(),
                    policy: policy.to_string(),
                })
                .collect(),
        })
    }
}

/// A governed pattern's exceptions: (Grant, resource, expiry), sorted.
type Excepts = BTreeSet<(String, Option<String>, Option<String>)>;

/// RFC 3339 in UTC with whole seconds: a sub-second expiry is written at the second
/// before it, so a gateway stops the tool no later than the engine would.
fn rfc3339_seconds(t: jiff::Timestamp) -> String {
    let whole = jiff::Timestamp::from_second(t.as_second()).unwrap_or(t);
    whole.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
