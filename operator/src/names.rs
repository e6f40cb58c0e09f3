//! Every name the operator writes into the cluster besides its CRDs: field managers,
//! labels, annotations and ConfigMap keys. Users select on these and GitOps tools diff
//! on them, so each is spelled once, here.

/// Server-side apply field manager of status, bundle ConfigMaps and events.
pub const FIELD_MANAGER: &str = "mcpgov";
/// Field manager of `status.catalog` (the crawler's, and `mcpgov catalog apply`'s).
pub const CATALOG_FIELD_MANAGER: &str = "mcpgov-crawler";
/// Field manager of `spec.contracts` entries written by `mcpgov approve --apply`.
pub const APPROVE_FIELD_MANAGER: &str = "mcpgov-approve";

/// Label on every ConfigMap the operator owns, with the value [`MANAGER`].
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGER: &str = "mcpgov";

/// Bundle ConfigMaps: the key of the bundle document, the Agent's name as a label,
/// and what was published (sha256, revision, the graph state that compiled it).
pub const DATA_KEY: &str = "bundle.json";
pub const AGENT_LABEL: &str = "mcpgov.io/agent";
pub const SHA_ANNOTATION: &str = "mcpgov.io/bundle-sha256";
pub const REVISION_ANNOTATION: &str = "mcpgov.io/revision";
pub const INSTANCE_ANNOTATION: &str = "mcpgov.io/graph-instance";
pub const GENERATION_ANNOTATION: &str = "mcpgov.io/graph-generation";

/// Credentials Secrets: the opt-in label and the annotations that scope their use
/// (docs/security.md).
pub const CREDENTIALS_LABEL: &str = "mcpgov.io/credentials";
pub const ALLOWED_HOSTS: &str = "mcpgov.io/allowed-hosts";
pub const ALLOWED_SERVERS: &str = "mcpgov.io/allowed-servers";

/// PolicyReports (and OpenReports Reports): one per namespace, under this name, with
/// the source every result names; annotations count what the size bounds cut.
pub const REPORT_NAME: &str = "mcpgov";
pub const REPORT_SOURCE: &str = "mcpgov";
pub const RESULTS_OMITTED_ANNOTATION: &str = "mcpgov.io/results-omitted";
pub const VALUES_TRUNCATED_ANNOTATION: &str = "mcpgov.io/values-truncated";
