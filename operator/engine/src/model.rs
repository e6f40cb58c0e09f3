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

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::MCPServer, Kind::Policy, Kind::Agent, Kind::Grant];

    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::MCPServer => "MCPServer",
            Kind::Policy => "Policy",
            Kind::Agent => "Agent",
            Kind::Grant => "Grant",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Kind {
    type Err = crate::wire::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| crate::wire::UnknownName {
                what: "Kind",
                name: s.to_string(),
            })
    }
}

/// One object of ours by kind, namespace and name: what a finding or a drift row is
/// about. Written `Kind namespace/name` (the text it replaced, so messages and JSON are
/// unchanged) and ordered as that text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    pub kind: Kind,
    pub key: ObjKey,
}

impl ObjectRef {
    pub fn new(kind: Kind, key: &ObjKey) -> Self {
        ObjectRef {
            kind,
            key: key.clone(),
        }
    }

    /// `Kind namespace/name` read back; the namespace ends at the first `/`. None for an
    /// unknown kind or an empty namespace or name.
    pub fn parse(s: &str) -> Option<Self> {
        let (kind, key) = s.split_once(' ')?;
        let (namespace, name) = key.split_once('/')?;
        (!namespace.is_empty() && !name.is_empty()).then_some(())?;
        Some(ObjectRef {
            kind: kind.parse().ok()?,
            key: ObjKey::new(namespace, name),
        })
    }

    /// The bytes of the text, without building it.
    fn text(&self) -> impl Iterator<Item = u8> + '_ {
        let k = &self.key;
        (self.kind.as_str().bytes())
            .chain(*b" ")
            .chain(k.namespace.bytes())
            .chain(*b"/")
            .chain(k.name.bytes())
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

impl Ord for ObjectRef {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // As the text; the parts break the tie of a name with a `/` in it (`a/b c` and
        // `a b/c` read the same), so the order agrees with equality.
        self.text()
            .cmp(other.text())
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl PartialOrd for ObjectRef {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for ObjectRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ObjectRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ObjectRef::parse(&s).ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&s),
                &"Kind namespace/name of MCPServer, Policy, Agent or Grant",
            )
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

    pub fn reference(&self) -> ObjectRef {
        ObjectRef::new(self.kind(), self.key())
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

#[cfg(test)]
mod object_ref_tests {
    use super::*;

    fn r(kind: Kind, ns: &str, name: &str) -> ObjectRef {
        ObjectRef::new(kind, &ObjKey::new(ns, name))
    }

    #[test]
    fn writes_kind_namespace_name_and_reads_it_back() {
        for kind in Kind::ALL {
            let o = r(kind, "team-a", "bot");
            let text = format!("{kind} team-a/bot");
            assert_eq!(o.to_string(), text);
            assert_eq!(serde_json::to_value(&o).unwrap(), serde_json::json!(text));
            assert_eq!(ObjectRef::parse(&text), Some(o.clone()));
            assert_eq!(serde_json::from_value::<ObjectRef>(text.into()).unwrap(), o);
            assert_eq!(kind.as_str().parse::<Kind>().unwrap(), kind);
        }
        // The namespace ends at the first slash, as the text was always read.
        assert_eq!(
            ObjectRef::parse("Agent a/b/c"),
            Some(r(Kind::Agent, "a", "b/c"))
        );
    }

    #[test]
    fn text_that_names_no_object_of_ours_is_refused() {
        for bad in [
            "",
            "Agent",
            "Agent a",
            "Agent /x",
            "Agent a/",
            "Pod a/x",
            "agent a/x",
            "Agent\u{1b}[31m a/x",
        ] {
            assert_eq!(ObjectRef::parse(bad), None, "{bad:?}");
            assert!(serde_json::from_value::<ObjectRef>(bad.into()).is_err());
        }
    }

    #[test]
    fn orders_as_its_text_did() {
        // Kind order is not text order, and `-` sorts before `/`: both must sort as text.
        let refs = [
            r(Kind::Policy, "a", "p"),
            r(Kind::Agent, "a", "x"),
            r(Kind::Agent, "a-x", "b"),
            r(Kind::MCPServer, "a", "s"),
            r(Kind::Grant, "a", "g"),
            r(Kind::Agent, "a", "b/c"),
            r(Kind::Agent, "a/b", "c"),
        ];
        let mut by_ref = refs.to_vec();
        by_ref.sort();
        let mut by_text: Vec<String> = refs.iter().map(ToString::to_string).collect();
        by_text.sort();
        let texts: Vec<String> = by_ref.iter().map(ToString::to_string).collect();
        assert_eq!(texts, by_text);
        // Same text, different objects: ordered, not equal.
        assert_ne!(refs[5], refs[6]);
        assert_ne!(refs[5].cmp(&refs[6]), std::cmp::Ordering::Equal);
    }
}
