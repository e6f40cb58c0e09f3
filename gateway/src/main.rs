//! mcpgov-gateway: runs beside an agent, reads the agent's bundle from a ConfigMap volume
//! and enforces it on every MCP request to the upstream servers.

use clap::Parser;
use mcpgov_gateway::audit::{ArgKey, AuditLog, AuditOptions, Output, verify_main};
use mcpgov_gateway::bundle::{BundleStore, Expect};
use mcpgov_gateway::contracts::Contracts;
use mcpgov_gateway::decision::ChainSink;
use mcpgov_gateway::proxy::{App, Config, Mode, listen, mcp_router, ops_router};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tracing::info;

#[derive(Parser, Debug)]
#[command(
    name = "mcpgov-gateway",
    version,
    about = "Enforces an agent's mcpgov bundle on its MCP requests",
    after_help = "Audit logs: `mcpgov-gateway audit verify [--anchor SEQ[:HASH]] [--from-genesis] [--strict] FILE...` checks that they form one unbroken chain and names the first bad line (exit 1)."
)]
struct Run {
    /// Directory of the bundle ConfigMap volume (key `bundle.json`; never a subPath mount).
    #[arg(long, env = "MCPGOV_BUNDLE_DIR")]
    bundle_dir: PathBuf,
    /// The Agent this gateway serves: a bundle compiled for another is refused.
    #[arg(long, env = "MCPGOV_AGENT_NAME")]
    agent_name: String,
    #[arg(long, env = "MCPGOV_AGENT_NAMESPACE")]
    agent_namespace: String,
    /// Where the agent's MCP client connects: routes `/mcp/<namespace>/<server>`.
    #[arg(long, env = "MCPGOV_LISTEN", default_value = "127.0.0.1:8480")]
    listen: SocketAddr,
    /// `/healthz`, `/readyz`, `/metrics` (the kubelet probes the pod IP, hence all
    /// interfaces by default; nothing MCP is served here).
    #[arg(long, env = "MCPGOV_OPS_LISTEN", default_value = "0.0.0.0:8481")]
    ops_listen: SocketAddr,
    #[arg(long, env = "MCPGOV_MODE", value_enum, default_value = "enforce")]
    mode: Mode,
    /// Upstream header values: `<dir>/<secret name>/<key>` (Secret volumes, gateway only).
    #[arg(
        long,
        env = "MCPGOV_CREDENTIALS_DIR",
        default_value = "/var/run/mcpgov/credentials"
    )]
    credentials_dir: PathBuf,
    /// Forward and answer even when a decision cannot be recorded (default: deny).
    #[arg(long, env = "MCPGOV_AUDIT_FAIL_OPEN")]
    audit_fail_open: bool,
    /// The audit log: a file (rotated, the chain continued across restarts) or `-` for
    /// standard output.
    #[arg(long, env = "MCPGOV_AUDIT_FILE", default_value = "-")]
    audit_file: String,
    /// HMAC key for the arguments' digest (32 to 4096 bytes, e.g. a mounted Secret).
    /// Without it a random key per process: digests still hide the values but cannot be
    /// compared across restarts.
    #[arg(long, env = "MCPGOV_AUDIT_KEY_FILE")]
    audit_key_file: Option<PathBuf>,
    /// Rotate the audit file before it passes this many bytes (0: never).
    #[arg(long, default_value_t = 100 * 1024 * 1024)]
    audit_max_bytes: u64,
    /// Rotated audit files kept (`FILE.1` newest).
    #[arg(long, default_value_t = 5)]
    audit_max_files: u32,
    /// Polling interval behind inotify, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    poll_ms: u64,
    /// How long a server's live tool contracts are trusted without a new listing, seconds.
    #[arg(long, default_value_t = 60)]
    contract_ttl_secs: u64,
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    max_body_bytes: usize,
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    max_message_bytes: usize,
    /// Time allowed for the gateway's own tools/list of a server, seconds.
    #[arg(long, default_value_t = 15)]
    list_timeout_secs: u64,
}

fn main() -> ExitCode {
    // `audit verify` is dispatched before clap: the serving flags it would otherwise
    // require have no meaning there, and verify parses its own flags.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("audit") {
        if args.get(1).map(String::as_str) == Some("verify") {
            return verify_main(args[2..].iter().cloned());
        }
        eprintln!("usage: mcpgov-gateway audit verify [FLAGS] FILE... (see --help)");
        return ExitCode::from(2);
    }
    match serve(Run::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpgov-gateway: {e}");
            ExitCode::FAILURE
        }
    }
}

fn audit_log(cli: &Run) -> Result<AuditLog, Box<dyn std::error::Error>> {
    let key = match &cli.audit_key_file {
        Some(path) => ArgKey::from_file(path)?,
        None => {
            let mut bytes = [0u8; 32];
            std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
            ArgKey::from_bytes(&bytes)?
        }
    };
    let mut opts = AuditOptions::new(Output::parse(&cli.audit_file));
    opts.max_bytes = cli.audit_max_bytes;
    opts.max_files = cli.audit_max_files;
    Ok(AuditLog::open(opts, key)?)
}

#[tokio::main]
async fn serve(cli: Run) -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr: stdout may carry the decision records.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let log = audit_log(&cli)?;
    let head = log.head().cloned();
    if let Some(h) = &head {
        info!(file = %cli.audit_file, head = %h, "audit chain continues");
    }
    let expect = Expect {
        agent_name: cli.agent_name.clone(),
        agent_namespace: cli.agent_namespace.clone(),
    };
    let cfg = Config {
        agent: format!("{}/{}", cli.agent_namespace, cli.agent_name),
        mode: cli.mode,
        audit_fail_open: cli.audit_fail_open,
        credentials_dir: cli.credentials_dir,
        max_body: cli.max_body_bytes,
        max_message: cli.max_message_bytes,
        list_timeout: Duration::from_secs(cli.list_timeout_secs),
        loopback_only: cli.listen.ip().is_loopback(),
    };
    let app = Arc::new(App::new(
        cfg,
        BundleStore::new(cli.bundle_dir, expect),
        Contracts::new(Duration::from_secs(cli.contract_ttl_secs)),
        Arc::new(ChainSink::new(log)),
    ));
    if let Some(h) = head {
        app.metrics.audit_sequence.set(h.seq as i64);
    }
    tokio::spawn(mcpgov_gateway::reload::run(
        app.clone(),
        Duration::from_millis(cli.poll_ms),
    ));
    let mcp = listen(cli.listen).await?;
    let ops = tokio::net::TcpListener::bind(cli.ops_listen).await?;
    info!(mcp = %axum::serve::Listener::local_addr(&mcp)?, ops = %ops.local_addr()?, mode = ?cli.mode, "listening");
    let ops_router = ops_router(app.clone());
    let ops_task = tokio::spawn(async move { axum::serve(ops, ops_router).await });
    let mcp_app = mcp_router(app);
    tokio::select! {
        r = axum::serve(mcp, mcp_app) => r?,
        r = ops_task => r??,
        // Not graceful: open GET streams would hold the process forever.
        _ = shutdown() => {}
    }
    Ok(())
}

async fn shutdown() {
    let term = async {
        #[cfg(unix)]
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
            return;
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    info!("shutting down");
}
