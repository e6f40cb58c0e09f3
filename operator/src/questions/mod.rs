//! The governance questions, defined once: each has a typed input and output (with
//! JSON Schemas) and one function over an engine snapshot. `mcpgov query` calls the
//! functions and prints their answers; `mcpgov serve` lists [`QUESTIONS`] as MCP tools.
//!
//! Every answer is computed from a [`Snapshot`] (an evaluator over one engine state,
//! named by its instance and generation, which the answer repeats) and limited by a
//! [`Visibility`]: what the caller may read. Offline, the caller reads everything; the
//! operator will pass the namespaces a caller's token may read (docs/mcp-server.md).

mod agent;
mod estate;
mod explain;
#[cfg(test)]
mod tests;

pub use agent::*;
pub use estate::*;
pub use explain::{explain_text, verdict_name};

use mcpgov_engine::{Engine, Evaluator, ObjKey};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Longest string argument a question accepts (names, tool keys, URIs).
pub const MAX_ARG_BYTES: usize = 4096;
/// Most candidate tools one eligible-tools question may name.
pub const MAX_CANDIDATES: usize = 512;

/// Which engine state answered: the graph's instance and its generation. The operator
/// draws a random instance per process; offline it is a digest of the inputs, so equal
/// manifests give equal identities.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GraphId {
    pub instance: String,
    /// Bumped by every change the graph took in.
    pub generation: u64,
}

impl GraphId {
    /// The identity of an engine the CLI or `serve -f` built from files (`offline-`)
    /// or from one read of the cluster (`live-`), and 16 hex digits of its content digest.
    pub fn of_inputs(engine: &Engine, live: bool) -> GraphId {
        let digest = engine.content_digest();
        let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
        GraphId {
            instance: format!(
                "{}-{}",
                if live { "live" } else { "offline" },
                &hex[..16.min(hex.len())]
            ),
            generation: engine.generation(),
        }
    }
}

/// What the operator published for an agent (its bundle ConfigMap), when it knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    pub config_map: String,
    pub sha256: String,
    pub revision: i64,
    pub instance: String,
    pub generation: u64,
}

/// Where the operator looks up published bundles; offline there is none.
pub trait PublishedBundles: Send + Sync {
    fn published(&self, agent: &ObjKey) -> Option<Published>;
}

/// One engine state to answer from.
pub struct Snapshot<'a> {
    pub eval: &'a Evaluator<'a>,
    pub graph: GraphId,
    /// The namespace of names given without one (`-n`, default `default`).
    pub namespace: &'a str,
    pub published: Option<&'a dyn PublishedBundles>,
}

impl Snapshot<'_> {
    pub fn engine(&self) -> &Engine {
        self.eval.engine()
    }
}

/// The namespaces a caller may read. An answer never names an object of another
/// namespace, and an agent the caller may not read is answered as absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// Offline, or a caller who may read every namespace.
    All,
    Namespaces(BTreeSet<String>),
}

impl Visibility {
    pub fn can_read(&self, namespace: &str) -> bool {
        match self {
            Visibility::All => true,
            Visibility::Namespaces(set) => set.contains(namespace),
        }
    }

    /// Whether every namespace named in a `ns/name` (or `ns/server::tool`) string is
    /// readable; strings without one (URIs, globs) name no namespace.
    pub fn can_read_ref(&self, reference: &str) -> bool {
        match self {
            Visibility::All => true,
            Visibility::Namespaces(_) => match namespace_of(reference) {
                Some(ns) => self.can_read(ns),
                None => true,
            },
        }
    }
}

/// The namespace of `ns/name`, `ns/server::tool`, `Kind ns/name` or `agent:ns/name`.
fn namespace_of(reference: &str) -> Option<&str> {
    if reference.contains("://") {
        return None;
    }
    let r = reference.rsplit(' ').next().unwrap_or(reference);
    let r = r
        .split_once(':')
        .filter(|(k, _)| !k.is_empty() && !k.contains('/'))
        .map_or(r, |(_, rest)| rest);
    r.split_once('/').map(|(ns, _)| ns)
}

/// Why a question was not answered. The CLI exits 2 on `Invalid`, 1 otherwise; MCP
/// answers each as a tool error carrying the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The arguments are wrong (unknown field, too long, bad profile).
    Invalid(String),
    /// The agent does not exist, or the caller may not read it.
    NotFound(String),
    /// The question needs more than the caller may read.
    Forbidden(String),
    /// The state cannot give an answer (a bundle over its size limit).
    Failed(String),
}

impl Refusal {
    pub fn message(&self) -> &str {
        match self {
            Refusal::Invalid(m)
            | Refusal::NotFound(m)
            | Refusal::Forbidden(m)
            | Refusal::Failed(m) => m,
        }
    }
}

pub(crate) fn agent_not_found(key: &ObjKey) -> Refusal {
    Refusal::NotFound(format!("AGENT_NOT_FOUND: no Agent {key}"))
}

/// Refuse a string argument longer than [`MAX_ARG_BYTES`].
pub(crate) fn bounded(field: &str, value: &str) -> Result<(), Refusal> {
    if value.len() > MAX_ARG_BYTES {
        return Err(Refusal::Invalid(format!(
            "{field} is {} bytes, over the limit of {MAX_ARG_BYTES}",
            value.len()
        )));
    }
    Ok(())
}

/// `namespace/name`, or a bare name when exactly one readable namespace has such an
/// agent (else the home namespace). Never reveals an unreadable namespace.
pub fn resolve_agent(
    engine: &Engine,
    raw: &str,
    home: &str,
    vis: &Visibility,
) -> Result<ObjKey, Refusal> {
    bounded("agent", raw)?;
    if let Some((ns, name)) = raw.split_once('/') {
        return Ok(ObjKey::new(ns, name));
    }
    let matches: Vec<&ObjKey> = engine
        .agents()
        .map(|a| &a.key)
        .filter(|k| k.name == raw && vis.can_read(&k.namespace))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Ok(ObjKey::new(home, raw)),
        many => Err(Refusal::Invalid(format!(
            "agent {raw:?} exists in several namespaces ({}); name it as namespace/name",
            many.iter()
                .map(|k| k.namespace.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The agent, when it exists and the caller may read it.
pub(crate) fn readable_agent(s: &Snapshot, vis: &Visibility, raw: &str) -> Result<ObjKey, Refusal> {
    let key = resolve_agent(s.engine(), raw, s.namespace, vis)?;
    if !vis.can_read(&key.namespace) || s.engine().agent(&key).is_none() {
        return Err(agent_not_found(&key));
    }
    Ok(key)
}

/// An answer with the identity of the state that gave it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Answer<T> {
    #[serde(flatten)]
    pub answer: T,
    pub graph: GraphId,
}

pub(crate) fn answered<T>(s: &Snapshot, answer: T) -> Answer<T> {
    Answer {
        answer,
        graph: s.graph.clone(),
    }
}

/// A JSON object schema for `T` as it is read (inputs) or written (outputs).
fn schema<T: JsonSchema>(serialize: bool) -> Map<String, Value> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    if serialize {
        settings = settings.for_serialize();
    }
    let schema = settings.into_generator().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut o)) => {
            // The type's name and doc are noise to a client; the tool has its own.
            o.remove("title");
            o.remove("description");
            o
        }
        _ => unreachable!("a root schema is an object"),
    }
}

/// Read the arguments of a question: an object with exactly its fields.
fn parse<I: DeserializeOwned>(name: &str, args: Value) -> Result<I, Refusal> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        a => a,
    };
    serde_json::from_value(args).map_err(|e| Refusal::Invalid(format!("{name}: {e}")))
}

/// One question as a tool: its name, words and schemas, and its function on JSON.
pub struct Question {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: fn() -> Map<String, Value>,
    pub output_schema: fn() -> Map<String, Value>,
    pub answer: fn(&Snapshot, &Visibility, Value) -> Result<Value, Refusal>,
}

macro_rules! question {
    ($name:literal, $title:literal, $desc:literal, $input:ty, $output:ty, $f:path) => {
        Question {
            name: $name,
            title: $title,
            description: $desc,
            input_schema: || schema::<$input>(false),
            output_schema: || schema::<Answer<$output>>(true),
            answer: |s, vis, args| {
                let input: $input = parse($name, args)?;
                let out = $f(s, vis, input)?;
                Ok(serde_json::to_value(out).expect("answers serialise"))
            },
        }
    };
}

/// Every question, as `mcpgov serve` lists them. Read-only, idempotent, closed-world.
pub static QUESTIONS: &[Question] = &[
    question!(
        "check_access",
        "May this agent call this tool?",
        "The verdict for one agent and one tool (ALLOW, DENY, NOT_GRANTED, TOOL_NOT_FOUND, \
         AMBIGUOUS, AGENT_NOT_FOUND), the Grants that give it and every path to a Deny Policy.",
        CheckAccessInput,
        mcpgov_engine::AccessVerdict,
        check_access
    ),
    question!(
        "explain",
        "Why is this tool rejected for this agent?",
        "The decision under a profile (the agent's own by default), the reasons that reject \
         it, and the evidence: each Grant edge and each Agent -> Tool -> Resource -> Policy \
         path with its provenance, also as readable text.",
        ExplainInput,
        Explanation,
        explain
    ),
    question!(
        "eligible_tools",
        "Which tools may this agent use under a profile?",
        "Hard filter of candidate tools (default: every tool the agent is granted) under \
         strict, review or explore, with the reasons each is rejected.",
        EligibleToolsInput,
        EligibleTools,
        eligible_tools
    ),
    question!(
        "unsafe_tools",
        "Which tools of this agent reach a Deny policy?",
        "Every deny path the agent's granted tools reach: violations, and with all=true the \
         declared exceptions too.",
        UnsafeToolsInput,
        UnsafeTools,
        unsafe_tools
    ),
    question!(
        "blast_radius",
        "What does this resource or Policy touch?",
        "The tools and agents that reach a resource URI or URI glob, or that a Policy \
         (name or namespace/name) governs, with how.",
        BlastRadiusInput,
        mcpgov_engine::queries::BlastRadius,
        blast_radius
    ),
    question!(
        "drift",
        "Which governance names tools no server exposes?",
        "Grants, Policies and MCPServer dataAccess entries naming a tool that no server \
         exposes now, with why.",
        NoInput,
        Drift,
        drift
    ),
    question!(
        "audit_report",
        "Does the estate pass its audit?",
        "Whole-estate summary: pass, warn or fail, counts of every finding kind, and the \
         violations. Needs read access to every namespace.",
        NoInput,
        mcpgov_engine::check::AuditReport,
        audit_report
    ),
    question!(
        "bundle_identity",
        "Which policy bundle does this agent get?",
        "The bundle compiled for the agent from this state (sha256, digests of its inputs, \
         size) and, from the operator, the ConfigMap published with its revision.",
        BundleIdentityInput,
        BundleIdentity,
        bundle_identity
    ),
];

/// The question of that name.
pub fn find(name: &str) -> Option<&'static Question> {
    QUESTIONS.iter().find(|q| q.name == name)
}

/// A question without arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// Read a profile name as the CLI and the tools spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProfileArg {
    Strict,
    Review,
    Explore,
}

impl ProfileArg {
    pub fn parse(raw: &str) -> Result<ProfileArg, Refusal> {
        match mcpgov_engine::Profile::parse(raw) {
            Some(mcpgov_engine::Profile::Strict) => Ok(ProfileArg::Strict),
            Some(mcpgov_engine::Profile::Review) => Ok(ProfileArg::Review),
            Some(mcpgov_engine::Profile::Explore) => Ok(ProfileArg::Explore),
            None => Err(Refusal::Invalid(format!(
                "unknown profile {} (strict, review or explore)",
                crate::text::quote(raw, 40)
            ))),
        }
    }

    pub fn profile(self) -> mcpgov_engine::Profile {
        match self {
            ProfileArg::Strict => mcpgov_engine::Profile::Strict,
            ProfileArg::Review => mcpgov_engine::Profile::Review,
            ProfileArg::Explore => mcpgov_engine::Profile::Explore,
        }
    }
}
