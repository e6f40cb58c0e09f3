//! MCPServer: an MCP endpoint to crawl, the data its tools touch, and who may use it.

use super::common::*;
use kube::CustomResource;
use mcpgov_engine as engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "mcpgov.io",
    version = "v1alpha1",
    kind = "MCPServer",
    plural = "mcpservers",
    singular = "mcpserver",
    namespaced,
    status = "MCPServerStatus",
    shortname = "mcps",
    shortname = "mcpserver",
    category = "mcpgov",
    doc = "An MCP server the operator crawls, with the data its tools read and write.",
    printcolumn = r#"{"name": "URL", "type": "string", "jsonPath": ".spec.endpoint.url"}"#,
    printcolumn = r#"{"name": "Tools", "type": "integer", "jsonPath": ".status.toolCount"}"#,
    printcolumn = r#"{"name": "Crawled", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Crawled\")].status"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name": "Transport", "type": "string", "priority": 1, "jsonPath": ".spec.endpoint.transport"}"#,
    printcolumn = r#"{"name": "Last Crawl", "type": "date", "priority": 1, "jsonPath": ".status.lastCrawlTime"}"#,
    printcolumn = r#"{"name": "Crawl Reason", "type": "string", "priority": 1, "jsonPath": ".status.conditions[?(@.type==\"Crawled\")].reason"}"#,
    printcolumn = r#"{"name": "Digest", "type": "string", "priority": 1, "jsonPath": ".status.catalogDigest"}"#
)]
#[serde(rename_all = "camelCase")]
/// Where the server is, how it is crawled, what its tools touch; authored.
pub struct MCPServerSpec {
    /// How to reach the MCP server.
    pub endpoint: Endpoint,
    /// How often and within which caps the operator crawls the server.
    #[serde(default)]
    pub crawl: CrawlSettings,
    /// Authored READS/WRITES of this server's tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 512))]
    pub data_access: Vec<DataAccess>,
    /// Other namespaces whose Grants may name these tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Contract approval: trust each crawled tool contract (the default), or pin each
    /// tool to the contract a person reviewed (docs/semantics.md, "Contract approval").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Contracts>,
}

/// Trust (default): a tool's crawled contract is used as crawled. Pinned: a tool is
/// eligible only while its crawled contract digest is the approved one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ContractMode {
    #[default]
    Trust,
    Pinned,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Which tool contracts were reviewed and approved, and whether only those may be used.
pub struct Contracts {
    /// Trust (default) or Pinned. Under Pinned, a tool with no approved contract is
    /// `ContractUnapproved` and one whose crawled contract differs from its approved one
    /// is `ContractChanged`; both are rejected under every profile.
    #[serde(default)]
    pub mode: ContractMode,
    /// The approved contract of each tool, one entry per tool (`mcpgov approve` writes
    /// them). Entries are kept under Trust too, and count once the mode is Pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 4096),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["tool"])
    )]
    pub approved: Vec<ApprovedContract>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// One approved tool contract.
pub struct ApprovedContract {
    /// The tool's exact name on the server (no globs: an approval is of one contract).
    #[schemars(regex(pattern = r"^[^\s]+$"), length(min = 1, max = 256))]
    pub tool: String,
    /// The approved contract's digest, as the crawler records it in
    /// `status.tools[].contractDigest`: `sha256:` and 64 lowercase hex digits.
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"), length(max = 71))]
    pub digest: String,
}

/// An MCP transport: StreamableHTTP or SSE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Transport {
    #[default]
    StreamableHTTP,
    SSE,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// The MCP endpoint: URL, transport, headers and timeout.
pub struct Endpoint {
    /// http or https URL of the MCP endpoint.
    #[schemars(
        regex(pattern = r"^https?://[^\s/?#]+([/?#][^\s]*)?$"),
        length(max = 2048)
    )]
    pub url: String,
    /// StreamableHTTP (default) or SSE (the legacy HTTP+SSE transport).
    #[serde(default)]
    pub transport: Transport,
    /// Request headers; values only from Secrets in the server's namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub headers: Vec<Header>,
    /// Per-request timeout in seconds.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: i32,
}

fn default_timeout() -> i32 {
    10
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// One request header sent to the server, its value read from a Secret.
pub struct Header {
    /// HTTP header name, e.g. `Authorization`.
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"), length(max = 256))]
    pub name: String,
    /// Where the header's value comes from.
    pub value_from: HeaderSource,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// The source of a header value.
pub struct HeaderSource {
    /// A key of a Secret in the MCPServer's namespace.
    pub secret_key_ref: SecretKeyRef,
}

/// A key of a Secret in the MCPServer's namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyRef {
    /// The Secret's name.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub name: String,
    /// The key within the Secret's data.
    #[schemars(regex(pattern = r"^[-._a-zA-Z0-9]+$"))]
    pub key: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Crawl interval and caps.
pub struct CrawlSettings {
    /// Seconds between crawls after a success; failures back off on their own schedule.
    #[serde(default = "default_interval")]
    #[schemars(range(min = 10, max = 86400))]
    pub interval_seconds: i32,
    /// Over this many tools the crawl fails as a whole. The maximum keeps a crawl's
    /// memory within the operator's budget (docs/crawler.md).
    #[serde(default = "default_max_tools")]
    #[schemars(range(min = 1, max = 20000))]
    pub max_tools: i32,
    /// Over this many bytes of list responses (every page of every list, counted as they
    /// arrive) the crawl fails as a whole. The maximum keeps a crawl's memory within the
    /// operator's budget (docs/crawler.md).
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1024, max = 8388608))]
    pub max_bytes: i64,
}

fn default_interval() -> i32 {
    300
}
fn default_max_tools() -> i32 {
    10000
}
fn default_max_bytes() -> i64 {
    4 * 1024 * 1024
}

impl Default for CrawlSettings {
    fn default() -> Self {
        CrawlSettings {
            interval_seconds: default_interval(),
            max_tools: default_max_tools(),
            max_bytes: default_max_bytes(),
        }
    }
}

/// Whether a tool Reads or Writes a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AccessMode {
    Reads,
    Writes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// A READS or WRITES edge from this server's tools to a resource, with provenance.
pub struct DataAccess {
    /// Tool name on this server; `*` globs allowed.
    #[schemars(regex(pattern = r"^[^\s]+$"), length(min = 1, max = 256))]
    pub tool: String,
    /// Resource URI or URI glob (`*` within a path segment, `**` across segments); at
    /// most 1,024 bytes and 16 wildcards (docs/security.md).
    #[schemars(
        regex(
            pattern = r"^[A-Za-z][A-Za-z0-9+.-]*:[^*\s]*(\*{1,2}[^*\s]+){0,15}(\*{1,2}[^*\s]*)?$"
        ),
        length(min = 1, max = 1024)
    )]
    pub resource: String,
    /// Reads or Writes.
    pub mode: AccessMode,
    /// Where this READS/WRITES claim comes from.
    #[serde(default)]
    pub provenance: Provenance,
    /// The call argument that names the resource, for Policies with `enforcement:
    /// PerCall`: the gateway resolves it to a URI on every call and checks it against
    /// `resource` and the governed patterns (docs/semantics.md, "Per-call enforcement").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<ArgumentBinding>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.name) != has(self.pointer)",
    "message": "an argument binding names exactly one of name or pointer"
}]))]
/// Which argument of a call names the resource, and how its value maps to a URI.
pub struct ArgumentBinding {
    /// A top-level argument name, e.g. `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[^\s]+$"), length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Or an RFC 6901 JSON pointer into the arguments, e.g. `/options/path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(/([^~]|~[01])*)+$"), length(min = 2, max = 512))]
    pub pointer: Option<String>,
    /// URI template with exactly one `{label}` placeholder the value replaces:
    /// `file://{path}` (the value is an absolute path, read literally), `{url}` (the
    /// value is a URI), `https://host/items/{id}` (a segment under a fixed path).
    #[schemars(
        regex(pattern = r"^[^{}\s]*\{[A-Za-z0-9_.-]+\}[^{}\s]*$"),
        length(min = 3, max = 512)
    )]
    pub template: String,
}

/// Which other namespaces may grant this server's tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sharing {
    /// Namespaces that may grant this server's tools; `*` means every namespace.
    #[schemars(
        length(min = 1, max = 256),
        inner(
            regex(pattern = r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"),
            length(max = 63)
        )
    )]
    pub namespaces: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// The tool's annotations as the server declares them: its own claims, never edges.
pub struct ToolAnnotations {
    /// Display title from the annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The server claims the tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The server claims the tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// The server claims repeated calls with the same arguments have no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The server claims the tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// One crawled tool.
pub struct ToolStatus {
    /// The tool's name on the server.
    pub name: String,
    /// The tool's display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool's description as the server sent it (untrusted text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Behaviour hints the server declares (its claims, not verified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// sha256 over the tool's canonical contract (name, description, schemas, annotations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// One crawled resource.
pub struct ResourceStatus {
    /// The resource's URI.
    pub uri: String,
    /// The resource's name as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The resource's MIME type, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// The implementation the server names in its initialize response.
pub struct ServerInfo {
    /// Implementation name.
    pub name: String,
    /// Implementation version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// A `dataAccess` entry that no longer matches the crawled catalog.
pub struct DriftEntry {
    /// The `dataAccess` tool (name or glob) as written.
    pub tool: String,
    /// Why, as a constant.
    pub reason: String,
    /// Details for people.
    pub message: String,
}

/// Written by the operator; `tools` and `resources` are the crawled catalog.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MCPServerStatus {
    /// Ready, Crawled (False while the latest crawl failed), Reconciling and Stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Name and version the server reported when the crawler connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    /// The MCP protocol version negotiated with the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// sha256 over the canonical crawled catalog; changes exactly when the catalog does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_digest: Option<String>,
    /// Tools in the crawled catalog (also when `tools` is truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<i64>,
    /// The tool list did not fit in status: names and digests only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The crawled tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolStatus>,
    /// The crawled resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    /// When the latest crawl finished, successful or not (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_crawl_time: Option<String>,
    /// When the latest successful crawl finished (RFC 3339); the catalog is from then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_crawl_time: Option<String>,
    /// Why the latest crawl failed; absent after a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The client capabilities the crawler declared (canonical JSON), fixed per version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<String>,
    /// List methods the server answered "method not found" to (normal, not a failure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_implemented: Vec<String>,
    /// `dataAccess` entries naming tools the server no longer exposes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<DriftEntry>,
    /// Under `spec.contracts.mode: Pinned`: the tools whose crawled contract is not the
    /// approved one, with what changed; absent under Trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<ContractsStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// Contract approval as of the latest crawl (written by the crawler).
pub struct ContractsStatus {
    /// Tools pending approval: every crawled tool whose contract is not approved.
    pub pending_count: i64,
    /// The first pending tools by name (at most 100), each with a short diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingContract>,
    /// The approved contracts as a crawl last saw them: the digest of each part and a
    /// bounded excerpt, kept so that a later change can be diffed against them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<SeenContract>,
}

/// Why a tool is pending approval. The names are an interface (status, the
/// `mcpgov_contracts_pending` metric's `reason`, `mcpgov approve`): never rename one.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum PendingReason {
    // Another contract was approved.
    ContractChanged,
    // None was; the default, as the stricter reading.
    #[default]
    ContractUnapproved,
}

impl PendingReason {
    pub const ALL: [PendingReason; 2] = [
        PendingReason::ContractChanged,
        PendingReason::ContractUnapproved,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            PendingReason::ContractChanged => "ContractChanged",
            PendingReason::ContractUnapproved => "ContractUnapproved",
        }
    }
}

impl std::fmt::Display for PendingReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<mcpgov_engine::ContractState> for PendingReason {
    fn from(state: mcpgov_engine::ContractState) -> Self {
        match state {
            mcpgov_engine::ContractState::Changed => PendingReason::ContractChanged,
            mcpgov_engine::ContractState::Unapproved => PendingReason::ContractUnapproved,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// A crawled tool whose contract is not the approved one.
pub struct PendingContract {
    /// The tool's name on the server.
    pub tool: String,
    /// `ContractChanged` (another contract was approved) or `ContractUnapproved`
    /// (none was).
    pub reason: PendingReason,
    /// The approved digest, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_digest: Option<String>,
    /// The crawled digest: what `mcpgov approve` approves.
    pub crawled_digest: String,
    /// The parts that differ from the approved contract (title, description,
    /// inputSchema, outputSchema, annotations); empty when the approved contract was
    /// never crawled, so its parts are unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// What changed, for people: one bounded line per changed part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// An approved contract as a crawl saw it.
pub struct SeenContract {
    /// The tool's name on the server.
    pub tool: String,
    /// The contract digest (the approved one).
    pub digest: String,
    /// The digest of each part of the contract.
    pub parts: ContractPartDigests,
    /// The title, as the crawler keeps it (escaped, bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The start of the description (escaped, at most 512 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The annotations, as the server declared them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
/// `sha256:` over the RFC 8785 form of each part of a contract; absent when the part is.
pub struct ContractPartDigests {
    /// Digest of the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Digest of the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Digest of the input schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<String>,
    /// Digest of the output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// Digest of the annotations (the five known ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<String>,
}

// --- status to engine: a catalog read back from status (a follower, `--crawl-concurrency
// 0`, `mcpgov check` on files). One conversion each, beside the status types.

/// The hints only: annotations are the server's claims, never edges.
impl From<&ToolAnnotations> for engine::Annotations {
    fn from(a: &ToolAnnotations) -> engine::Annotations {
        engine::Annotations {
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        }
    }
}

impl From<&ToolStatus> for engine::CatalogTool {
    fn from(t: &ToolStatus) -> engine::CatalogTool {
        engine::CatalogTool {
            name: t.name.clone(),
            description: t.description.clone(),
            annotations: t.annotations.as_ref().map(Into::into).unwrap_or_default(),
            contract_digest: t.contract_digest.clone(),
        }
    }
}

impl From<&ResourceStatus> for engine::CatalogResource {
    fn from(r: &ResourceStatus) -> engine::CatalogResource {
        engine::CatalogResource {
            uri: r.uri.clone(),
            name: r.name.clone(),
        }
    }
}

/// The catalog a status holds (possibly truncated to names and digests).
impl From<&MCPServerStatus> for engine::Catalog {
    fn from(st: &MCPServerStatus) -> engine::Catalog {
        engine::Catalog {
            tools: st.tools.iter().map(Into::into).collect(),
            resources: st.resources.iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod pending_reason_tests {
    use super::PendingReason;
    use mcpgov_engine::ContractState;

    #[test]
    fn pending_reasons_write_their_old_strings_and_read_back() {
        let old = ["ContractChanged", "ContractUnapproved"];
        for (r, old) in PendingReason::ALL.into_iter().zip(old) {
            assert_eq!(r.as_str(), old);
            assert_eq!(r.to_string(), old);
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::json!(old));
            assert_eq!(
                serde_json::from_value::<PendingReason>(serde_json::json!(old)).unwrap(),
                r
            );
        }
        assert!(serde_json::from_str::<PendingReason>("\"Changed\"").is_err());
        assert_eq!(
            PendingReason::from(ContractState::Changed),
            PendingReason::ContractChanged
        );
        assert_eq!(
            PendingReason::from(ContractState::Unapproved),
            PendingReason::ContractUnapproved
        );
    }

    #[test]
    fn the_schema_lists_exactly_the_reasons() {
        let schema = serde_json::to_value(schemars::schema_for!(PendingReason)).unwrap();
        let names: Vec<&str> = schema["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(names, PendingReason::ALL.map(PendingReason::as_str));
    }
}
