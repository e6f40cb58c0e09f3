//! MCPServer: an MCP endpoint to crawl, the data its tools touch, and who may use it.

use super::common::*;
use kube::CustomResource;
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
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MCPServerSpec {
    pub endpoint: Endpoint,
    #[serde(default)]
    pub crawl: CrawlSettings,
    /// Authored READS/WRITES of this server's tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 512))]
    pub data_access: Vec<DataAccess>,
    /// Other namespaces whose Grants may name these tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Transport {
    #[default]
    StreamableHTTP,
    SSE,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// http or https URL of the MCP endpoint.
    #[schemars(
        regex(pattern = r"^https?://[^\s/?#]+([/?#][^\s]*)?$"),
        length(max = 2048)
    )]
    pub url: String,
    #[serde(default)]
    pub transport: Transport,
    /// Request headers; values only from Secrets in the server's namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub headers: Vec<Header>,
    /// Per-request timeout.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: i32,
}

fn default_timeout() -> i32 {
    10
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"), length(max = 256))]
    pub name: String,
    pub value_from: HeaderSource,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderSource {
    pub secret_key_ref: SecretKeyRef,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyRef {
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub name: String,
    #[schemars(regex(pattern = r"^[-._a-zA-Z0-9]+$"))]
    pub key: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrawlSettings {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AccessMode {
    Reads,
    Writes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
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
    pub mode: AccessMode,
    #[serde(default)]
    pub provenance: Provenance,
}

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
pub struct ToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolStatus {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// sha256 over the tool's canonical contract (name, description, schemas, annotations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_digest: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftEntry {
    pub tool: String,
    pub reason: String,
    pub message: String,
}

/// Written by the operator; `tools` and `resources` are the crawled catalog.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MCPServerStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<i64>,
    /// The tool list did not fit in status: names and digests only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_crawl_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_crawl_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The client capabilities the crawler declared (canonical JSON), fixed per version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<String>,
    /// List methods the server answered "method not found" to (normal, not a failure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_implemented: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<DriftEntry>,
}
