//! Plain input model of the engine: what the four resources say, already read out of
//! Kubernetes objects (or manifests) by the caller. No parsing happens here; the engine
//! compiles these into its index and reports what it cannot use as findings.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Namespace and name of one object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjKey {
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Where an edge comes from.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Source {
    Crawled,
    #[default]
    OperatorAsserted,
    Inferred,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Confidence {
    #[default]
    High,
    Medium,
    Low,
}

/// Provenance carried by every edge. An edge without evidence is "unbacked".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    pub source: Source,
    pub confidence: Confidence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl Provenance {
    /// True when the edge cites nothing a reviewer could check.
    pub fn is_unbacked(&self) -> bool {
        self.evidence.as_deref().is_none_or(|e| e.trim().is_empty())
    }

    /// Provenance of facts the crawler observed (protocol-level: high).
    pub fn crawled() -> Self {
        Provenance {
            source: Source::Crawled,
            confidence: Confidence::High,
            evidence: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Mode {
    Reads,
    Writes,
}

impl Mode {
    /// Edge label as Toolgraph names it.
    pub fn edge(self) -> &'static str {
        match self {
            Mode::Reads => "READS",
            Mode::Writes => "WRITES",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataAccess {
    /// Tool name on this server; `*` globs allowed.
    pub tool: String,
    /// Resource URI or URI glob.
    pub resource: String,
    pub mode: Mode,
    #[serde(default)]
    pub provenance: Provenance,
    /// The call argument that names the resource, for per-call enforcement. Absent on
    /// static entries (and then out of every digest, which stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<ArgumentRef>,
}

/// Which argument of a call names the resource and how it maps to a URI (grammar in
/// docs/semantics.md, checked by `mcpgov_core::percall::ArgumentBinding::parse`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentRef {
    /// RFC 6901 pointer into the call's `arguments` (`/path`).
    pub pointer: String,
    /// URI template with one `{label}` placeholder (`file://{path}`).
    pub template: String,
}

/// Self-claims a server makes about a tool. Never turned into edges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub annotations: Annotations,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogResource {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What a crawl observed. `None` on a server means it never crawled: it has no tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub tools: Vec<CatalogTool>,
    #[serde(default)]
    pub resources: Vec<CatalogResource>,
}

/// Which other namespaces may grant this server's tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sharing {
    #[default]
    None,
    All,
    Namespaces(Vec<String>),
}

impl Sharing {
    /// `namespaces` as written in the spec; `*` anywhere means all.
    pub fn from_list(namespaces: &[String]) -> Self {
        if namespaces.is_empty() {
            Sharing::None
        } else if namespaces.iter().any(|n| n == "*") {
            Sharing::All
        } else {
            let mut v = namespaces.to_vec();
            v.sort();
            v.dedup();
            Sharing::Namespaces(v)
        }
    }

    pub fn allows(&self, namespace: &str) -> bool {
        match self {
            Sharing::None => false,
            Sharing::All => true,
            Sharing::Namespaces(v) => v.binary_search_by(|n| n.as_str().cmp(namespace)).is_ok(),
        }
    }
}

/// An MCP transport, named as the MCPServer spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Transport {
    #[default]
    StreamableHTTP,
    SSE,
}

/// A request header whose value a Secret key in the server's namespace holds. Only the
/// reference travels (into bundles); the value never reaches the engine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderRef {
    pub name: String,
    pub secret_name: String,
    pub secret_key: String,
}

/// Where a server is reached: what a gateway needs to forward an agent's calls. It
/// decides nothing, so it enters no governance digest; it is written into bundles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub url: String,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default)]
    pub headers: Vec<HeaderRef>,
}

/// Whether a server's crawled contracts are trusted as they come, or only the
/// approved ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ContractMode {
    #[default]
    Trust,
    Pinned,
}

/// A server's contract approval: under `Pinned`, a tool is eligible only while its
/// crawled contract digest is the one approved for it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contracts {
    #[serde(default)]
    pub mode: ContractMode,
    /// Tool name -> approved contract digest.
    #[serde(default)]
    pub approved: std::collections::BTreeMap<String, String>,
}

impl Contracts {
    /// Trust mode with nothing approved: what a server without `contracts` means, and
    /// left out of digests and output so that such servers read as before.
    pub fn is_default(&self) -> bool {
        *self == Contracts::default()
    }

    /// Under `Pinned`, how the crawled contract of `tool` (its digest, when the crawl
    /// could compute one) stands against the approval; `None` when it may be used.
    pub fn check(&self, tool: &str, crawled: Option<&str>) -> Option<ContractState> {
        if self.mode != ContractMode::Pinned {
            return None;
        }
        match self.approved.get(tool) {
            None => Some(ContractState::Unapproved),
            Some(d) if Some(d.as_str()) == crawled => None,
            Some(_) => Some(ContractState::Changed),
        }
    }

    /// The digest a gateway must see live for `tool`: the approved one under `Pinned`
    /// (so a change is blocked before any re-crawl), else the crawled one.
    pub fn expected<'a>(&'a self, tool: &str, crawled: Option<&'a str>) -> Option<&'a str> {
        match self.mode {
            ContractMode::Trust => crawled,
            ContractMode::Pinned => self.approved.get(tool).map(String::as_str).or(crawled),
        }
    }
}

/// Why a pinned tool's crawled contract may not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ContractState {
    /// A contract was approved for the tool, and the crawled one is another.
    Changed,
    /// No contract was ever approved for the tool.
    Unapproved,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Server {
    pub key: ObjKey,
    #[serde(default)]
    pub endpoint: Endpoint,
    #[serde(default)]
    pub data_access: Vec<DataAccess>,
    #[serde(default)]
    pub sharing: Sharing,
    #[serde(default)]
    pub catalog: Option<Catalog>,
    #[serde(default, skip_serializing_if = "Contracts::is_default")]
    pub contracts: Contracts,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Effect {
    #[default]
    Deny,
    Allow,
}

/// How a Deny Policy is enforced on resources reached through argument-bound dataAccess.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Enforcement {
    /// Reaching a governed resource statically is a violation (the default).
    #[default]
    Static,
    /// A tool that reaches the Policy only through argument-bound dataAccess stays
    /// eligible (`GuardedPerCall`); the gateway decides each call by its arguments.
    PerCall,
}

impl Enforcement {
    pub fn is_static(&self) -> bool {
        *self == Enforcement::Static
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBinding {
    pub uri: String,
    #[serde(default)]
    pub provenance: Provenance,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolBinding {
    pub tool: String,
    #[serde(default)]
    pub provenance: Provenance,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub key: ObjKey,
    pub effect: Effect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub resources: Vec<ResourceBinding>,
    #[serde(default)]
    pub tools: Vec<ToolBinding>,
    /// Namespaces whose Grants may declare exceptions; `None` = the Policy's own only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception_namespaces: Option<Vec<String>>,
    /// Static unless the Policy asks for per-call enforcement; a Static Policy's digest
    /// does not change with this field's introduction.
    #[serde(default, skip_serializing_if = "Enforcement::is_static")]
    pub enforcement: Enforcement,
}

impl Policy {
    /// Whether a Grant in `namespace` may excuse itself from this Policy.
    pub fn allows_exceptions_from(&self, namespace: &str) -> bool {
        match &self.exception_namespaces {
            None => self.key.namespace == namespace,
            Some(v) => v.iter().any(|n| n == "*" || n == namespace),
        }
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Profile {
    #[default]
    Strict,
    Review,
    Explore,
}

impl Profile {
    pub fn parse(s: &str) -> Option<Profile> {
        match s.to_ascii_lowercase().as_str() {
            "strict" => Some(Profile::Strict),
            "review" => Some(Profile::Review),
            "explore" => Some(Profile::Explore),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub key: ObjKey,
    #[serde(default)]
    pub profile: Profile,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedException {
    /// Policy name (Grant's namespace) or `namespace/name`.
    pub policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// RFC 3339; at or after this instant the exception no longer counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub key: ObjKey,
    /// Agent name in the Grant's own namespace.
    pub agent: String,
    pub tools: Vec<String>,
    #[serde(default)]
    pub expected_exceptions: Vec<ExpectedException>,
    #[serde(default)]
    pub provenance: Provenance,
}

/// One object of any of the four kinds, as the index receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    Server(Server),
    Policy(Policy),
    Agent(Agent),
    Grant(Grant),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    MCPServer,
    Policy,
    Agent,
    Grant,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::MCPServer => "MCPServer",
            Kind::Policy => "Policy",
            Kind::Agent => "Agent",
            Kind::Grant => "Grant",
        })
    }
}

impl Object {
    pub fn kind(&self) -> Kind {
        match self {
            Object::Server(_) => Kind::MCPServer,
            Object::Policy(_) => Kind::Policy,
            Object::Agent(_) => Kind::Agent,
            Object::Grant(_) => Kind::Grant,
        }
    }

    pub fn key(&self) -> &ObjKey {
        match self {
            Object::Server(s) => &s.key,
            Object::Policy(p) => &p.key,
            Object::Agent(a) => &a.key,
            Object::Grant(g) => &g.key,
        }
    }
}
