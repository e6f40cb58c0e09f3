//! `mcpgov operator` and `mcpgov catalog apply`: the commands that talk to a cluster.

use super::Failure;
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct OperatorArgs {
    /// Watch only this namespace (default: every namespace).
    #[arg(long, env = "MCPGOV_WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// Policies in this namespace govern every namespace.
    #[arg(
        long,
        default_value = "mcpgov-system",
        env = "MCPGOV_GOVERNANCE_NAMESPACE"
    )]
    governance_namespace: String,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0:8080", env = "MCPGOV_LISTEN")]
    listen: SocketAddr,
    /// Seconds between full re-evaluations (writes happen only on differences).
    #[arg(long, default_value_t = 300, env = "MCPGOV_RESYNC_SECONDS")]
    resync_seconds: u64,
    /// Servers crawled at once; 0 disables crawling (catalogs then come from status).
    #[arg(long, default_value_t = 8, env = "MCPGOV_CRAWL_CONCURRENCY")]
    crawl_concurrency: usize,
    #[command(flatten)]
    net: NetArgs,
    /// Compete for a Lease: only the holder writes and crawls (run 2+ replicas).
    #[arg(long, env = "MCPGOV_LEADER_ELECTION")]
    leader_election: bool,
    #[arg(long, default_value = "mcpgov-leader", env = "MCPGOV_LEASE_NAME")]
    lease_name: String,
    /// Namespace of the Lease (default: POD_NAMESPACE, else "default").
    #[arg(long, env = "MCPGOV_LEASE_NAMESPACE")]
    lease_namespace: Option<String>,
    /// Seconds a lease lasts without renewal: the takeover time after a crash.
    #[arg(long, default_value_t = 15, env = "MCPGOV_LEASE_DURATION_SECONDS")]
    lease_duration_seconds: u64,
    /// Write each namespace's findings as a report: `policyreport` (wgpolicyk8s.io
    /// PolicyReport, what Kyverno and Policy Reporter read), `openreports`
    /// (openreports.io Report), or `off`. The CRD comes from elsewhere.
    #[arg(long, value_enum, default_value = "off", env = "MCPGOV_POLICY_REPORTS")]
    policy_reports: PolicyReports,
    #[command(flatten)]
    admission: AdmissionArgs,
    #[command(flatten)]
    mcp: McpArgs,
}

/// The governance questions over MCP (docs/mcp-server.md); off unless a listen
/// address is given. Every replica serves them from its live index.
#[derive(Args, Clone, Debug)]
pub struct McpArgs {
    /// Serve streamable HTTP MCP at http://ADDR/mcp (e.g. 0.0.0.0:8090).
    #[arg(long, env = "MCPGOV_MCP_LISTEN")]
    mcp_listen: Option<SocketAddr>,
    /// Audiences a caller's bearer token must be for (TokenReview); an empty value
    /// accepts the API server's own audience.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mcpgov",
        env = "MCPGOV_MCP_TOKEN_AUDIENCES"
    )]
    mcp_token_audiences: Vec<String>,
    /// Answer without tokens, reading everything: development only, and refused unless
    /// --mcp-listen is a loopback address.
    #[arg(long, env = "MCPGOV_MCP_ALLOW_UNAUTHENTICATED")]
    mcp_allow_unauthenticated: bool,
}

impl McpArgs {
    fn config(&self) -> Result<Option<crate::serve::live::Config>, Failure> {
        let Some(listen) = self.mcp_listen else {
            if self.mcp_allow_unauthenticated {
                return Err(Failure::Input(
                    "--mcp-allow-unauthenticated needs --mcp-listen".into(),
                ));
            }
            return Ok(None);
        };
        let config = crate::serve::live::Config {
            listen,
            allow_unauthenticated: self.mcp_allow_unauthenticated,
            audiences: self
                .mcp_token_audiences
                .iter()
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect(),
        };
        config.check().map_err(Failure::Input)?;
        Ok(Some(config))
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PolicyReports {
    Off,
    Policyreport,
    Openreports,
}

impl PolicyReports {
    fn api(self) -> Option<crate::reports::Api> {
        match self {
            PolicyReports::Off => None,
            PolicyReports::Policyreport => Some(crate::reports::Api::PolicyReport),
            PolicyReports::Openreports => Some(crate::reports::Api::OpenReports),
        }
    }
}

/// The validating admission webhook (docs/admission.md); off unless a listen address
/// is given. Every replica serves it.
#[derive(Args, Clone, Debug)]
pub struct AdmissionArgs {
    /// Serve the admission webhook over TLS here (e.g. 0.0.0.0:9443).
    #[arg(long, env = "MCPGOV_ADMISSION_LISTEN")]
    admission_listen: Option<SocketAddr>,
    /// The Secret holding the self-managed CA and serving certificate (made when missing).
    #[arg(
        long,
        default_value = "mcpgov-admission-tls",
        env = "MCPGOV_ADMISSION_SECRET"
    )]
    admission_secret: String,
    /// Namespace of that Secret (default: POD_NAMESPACE, else "default").
    #[arg(long, env = "MCPGOV_ADMISSION_NAMESPACE")]
    admission_namespace: Option<String>,
    /// Names the serving certificate is for: the Service's DNS names, or the IP address
    /// of a `url:` webhook (comma-separated).
    #[arg(long, value_delimiter = ',', env = "MCPGOV_ADMISSION_HOSTS")]
    admission_hosts: Vec<String>,
    /// The ValidatingWebhookConfiguration whose caBundle each replica keeps equal to the
    /// CA; unset: the caBundle is left to someone else.
    #[arg(long, env = "MCPGOV_ADMISSION_WEBHOOK_CONFIG")]
    admission_webhook_config: Option<String>,
}

impl AdmissionArgs {
    fn config(&self) -> Result<Option<crate::admission::Config>, Failure> {
        let Some(listen) = self.admission_listen else {
            return Ok(None);
        };
        let hosts: Vec<String> = self
            .admission_hosts
            .iter()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
        if hosts.is_empty() {
            return Err(Failure::Input(
                "--admission-listen needs --admission-hosts: the names the API server dials".into(),
            ));
        }
        Ok(Some(crate::admission::Config {
            listen,
            cert: crate::admission::cert::CertConfig {
                namespace: self
                    .admission_namespace
                    .clone()
                    .or_else(|| std::env::var("POD_NAMESPACE").ok())
                    .unwrap_or_else(|| "default".into()),
                secret: self.admission_secret.clone(),
                hosts,
                webhook_config: self.admission_webhook_config.clone(),
            },
        }))
    }
}

/// Where the crawler may connect (checked after DNS resolution, on every connect).
#[derive(Args, Clone, Debug)]
pub struct NetArgs {
    /// Allow MCP servers on loopback addresses (local demos and tests only).
    #[arg(long, env = "MCPGOV_ALLOW_LOOPBACK")]
    allow_loopback: bool,
    /// Refuse private ranges too (10/8, 172.16/12, 192.168/16, fc00::/7).
    #[arg(long, env = "MCPGOV_DENY_PRIVATE")]
    deny_private: bool,
}

impl NetArgs {
    pub fn policy(&self) -> crate::crawler::NetPolicy {
        crate::crawler::NetPolicy {
            allow_loopback: self.allow_loopback,
            allow_private: !self.deny_private,
        }
    }
}

#[derive(Args)]
pub struct CrawlArgs {
    /// Manifest files or directories holding MCPServers.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1.., value_delimiter = ',')]
    paths: Vec<PathBuf>,
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    read: super::ReadArgs,
}

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Write MCPServer status catalogs from a file of MCPServer objects with status.
    Apply {
        #[arg(long, required = true, num_args = 1..)]
        catalog: Vec<PathBuf>,
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
        #[command(flatten)]
        read: super::ReadArgs,
    },
}

/// glibc's malloc gives threads arenas of their own (up to 8 per core), and memory
/// freed in one is not reused by another: the operator's peak RSS on the large estate
/// was 175 MiB for a 90 MiB heap peak (heaptrack), 155 MiB with two arenas and 144 MiB
/// with one, at the same speed (`docs/performance.md`; small allocations go through
/// glibc's per-thread caches, which take no lock). Set before any thread starts; an
/// explicit `MALLOC_ARENA_MAX` wins. The limit set, if any.
fn limit_malloc_arenas() -> Option<i32> {
    const ARENAS: i32 = 1;
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return None;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; called before the runtime
        // (or anything else here) starts a thread.
        if unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENAS) } == 1 {
            return Some(ARENAS);
        }
    }
    None
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the async runtime: {e}")))
}

/// The log filter when `RUST_LOG` is unset.
const DEFAULT_LOG: &str = "info";
/// rmcp (the MCP client library) logs at every level about crawls the crawler already
/// reports in its own `crawl failed` line (reason, sanitised message): two long info
/// lines per session, an ERROR from `rmcp::transport::worker` on every failed handshake,
/// warnings from `rmcp::service` and `rmcp::transport::streamable_http_client` that
/// quote the server's (untrusted) messages. Off unless `RUST_LOG` names rmcp.
const RMCP_LOG: &str = "rmcp=off";

/// The filter directives for `RUST_LOG` (unset or empty: the default): rmcp is silenced
/// unless the directives mention it, e.g. `RUST_LOG=info,rmcp=debug`.
fn log_directives(env: Option<&str>) -> String {
    let base = env
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .unwrap_or(DEFAULT_LOG);
    if base.split(',').any(|d| d.trim_start().starts_with("rmcp")) {
        base.to_string()
    } else {
        format!("{base},{RMCP_LOG}")
    }
}

pub(super) fn init_logging() {
    let env = std::env::var("RUST_LOG").ok();
    let filter = tracing_subscriber::EnvFilter::try_new(log_directives(env.as_deref()))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_directives(None)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

pub fn run(a: OperatorArgs) -> Result<(), Failure> {
    let arenas = limit_malloc_arenas();
    init_logging();
    if let Some(n) = arenas {
        tracing::debug!(
            arenas = n,
            "malloc arenas limited (MALLOC_ARENA_MAX overrides)"
        );
    }
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        namespace = a.namespace.as_deref().unwrap_or("<all>"),
        governance_namespace = %a.governance_namespace,
        policy_reports = ?a.policy_reports,
        "starting mcpgov operator"
    );
    let admission = a.admission.config()?;
    let mcp = a.mcp.config()?;
    let config = crate::controller::Config {
        admission,
        mcp,
        namespace: a.namespace,
        governance_namespace: a.governance_namespace,
        listen: a.listen,
        resync: Duration::from_secs(a.resync_seconds.max(1)),
        crawl_concurrency: a.crawl_concurrency,
        net: a.net.policy(),
        policy_reports: a.policy_reports.api(),
        election: a
            .leader_election
            .then(|| crate::controller::leader::Election {
                lease_name: a.lease_name.clone(),
                lease_namespace: a
                    .lease_namespace
                    .clone()
                    .or_else(|| std::env::var("POD_NAMESPACE").ok())
                    .unwrap_or_else(|| "default".into()),
                identity: std::env::var("POD_NAME")
                    .or_else(|_| std::env::var("HOSTNAME"))
                    .map(|h| format!("{h}-{:04x}", rand::random::<u16>()))
                    .unwrap_or_else(|_| format!("mcpgov-{:08x}", rand::random::<u32>())),
                duration_seconds: a.lease_duration_seconds,
            }),
    };
    runtime()?
        .block_on(crate::controller::run(config))
        .map_err(|e| Failure::Gate(format!("error: {e}")))
}

pub fn catalog(c: CatalogCommand) -> Result<(), Failure> {
    let CatalogCommand::Apply {
        catalog,
        namespace,
        read,
    } = c;
    let loaded = read.load(&catalog)?;
    let n = runtime()?
        .block_on(crate::controller::crawl::apply::apply_loaded(
            loaded, &namespace,
        ))
        .map_err(Failure::Input)?;
    eprintln!("applied the catalog of {n} MCPServer(s)");
    Ok(())
}

/// `mcpgov crawl`: crawl the MCPServers of the manifests and print them with status, the
/// `--catalog` format of `mcpgov check`. Header Secrets cannot be read offline: servers
/// that need them are reported and skipped.
pub fn crawl(a: CrawlArgs) -> Result<(), Failure> {
    use crate::controller::crawl::{CrawlSpec, Failure as CrawlFailure, Outcome};
    use crate::manifest::Resource;
    let loaded = a.read.load(&a.paths)?.objects;
    let net = a.net.policy();
    let rt = runtime()?;
    let mut items = Vec::new();
    let mut failed = 0;
    for l in loaded {
        let Resource::MCPServer(mut s) = l.resource else {
            continue;
        };
        if s.metadata.namespace.is_none() {
            s.metadata.namespace = Some(a.namespace.clone());
        }
        let spec = CrawlSpec::of(&s);
        let key = mcpgov_engine::ObjKey::new(
            s.metadata.namespace.clone().unwrap_or_default(),
            s.metadata.name.clone().unwrap_or_default(),
        );
        if !spec.headers.is_empty() {
            eprintln!("{key}: skipped: its headers come from Secrets, read in-cluster only");
            failed += 1;
            continue;
        }
        let started = std::time::Instant::now();
        let result = rt
            .block_on(crate::crawler::crawl(&spec.target(Vec::new()), &net))
            .map_err(|e| CrawlFailure {
                reason: e.reason(),
                message: e.to_string(),
            });
        match &result {
            Err(f) => {
                // The message may quote the server's answer.
                eprintln!("{key}: {}: {}", f.reason, crate::text::escape(&f.message));
                failed += 1;
            }
            Ok(c) => eprintln!(
                "{key}: {} tool(s) in {} ms",
                c.tools.len(),
                started.elapsed().as_millis()
            ),
        }
        let outcome = Outcome {
            key,
            spec,
            finished: jiff::Timestamp::now(),
            duration: started.elapsed(),
            result,
        };
        let current = s.status.clone().unwrap_or_default();
        let status =
            crate::controller::crawl::status::status_for(&outcome, &current, s.metadata.generation);
        s.status = serde_json::from_value(status).ok();
        s.metadata.managed_fields = None;
        items.push(serde_json::to_value(&*s).expect("serialises"));
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    let yaml = serde_saphyr::to_string(&list).map_err(|e| Failure::Input(e.to_string()))?;
    super::print_out(yaml.as_bytes());
    if failed > 0 {
        return Err(Failure::Gate(format!(
            "{failed} server(s) could not be crawled"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::log_directives;

    #[test]
    fn rmcp_is_off_unless_rust_log_names_it() {
        assert_eq!(log_directives(None), "info,rmcp=off");
        assert_eq!(log_directives(Some("  ")), "info,rmcp=off");
        // The chart sets RUST_LOG from logLevel: rmcp stays off there too.
        assert_eq!(log_directives(Some("debug")), "debug,rmcp=off");
        assert_eq!(
            log_directives(Some("info,mcpgov::crawler=debug")),
            "info,mcpgov::crawler=debug,rmcp=off"
        );
        assert_eq!(log_directives(Some("info,rmcp=debug")), "info,rmcp=debug");
        assert_eq!(
            log_directives(Some("warn, rmcp::transport=info")),
            "warn, rmcp::transport=info"
        );
        for d in [None, Some("debug"), Some("info,rmcp=warn")] {
            let f = log_directives(d);
            assert!(tracing_subscriber::EnvFilter::try_new(&f).is_ok(), "{f}");
        }
    }
}
