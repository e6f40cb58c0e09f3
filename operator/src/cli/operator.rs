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
}

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Write MCPServer status catalogs from a file of MCPServer objects with status.
    Apply {
        #[arg(long, required = true, num_args = 1..)]
        catalog: Vec<PathBuf>,
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the async runtime: {e}")))
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

pub fn run(a: OperatorArgs) -> Result<(), Failure> {
    init_logging();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        namespace = a.namespace.as_deref().unwrap_or("<all>"),
        governance_namespace = %a.governance_namespace,
        "starting mcpgov operator"
    );
    let config = crate::controller::Config {
        namespace: a.namespace,
        governance_namespace: a.governance_namespace,
        listen: a.listen,
        resync: Duration::from_secs(a.resync_seconds.max(1)),
    };
    runtime()?
        .block_on(crate::controller::run(config))
        .map_err(|e| Failure::Gate(format!("error: {e}")))
}

pub fn catalog(c: CatalogCommand) -> Result<(), Failure> {
    let CatalogCommand::Apply { catalog, namespace } = c;
    let n = runtime()?
        .block_on(crate::catalog::apply(&catalog, &namespace))
        .map_err(Failure::Input)?;
    eprintln!("applied the catalog of {n} MCPServer(s)");
    Ok(())
}
