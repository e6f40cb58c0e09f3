//! `mcpgov serve -f MANIFESTS`: the governance questions as an MCP server, over stdio
//! (the default) or streamable HTTP on a loopback port.

use super::{Failure, InputArgs};
use crate::serve::{Estate, Governance, MAX_REQUEST_BYTES, listen};
use clap::Args;
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::sync::Arc;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Speak MCP on standard input and output (the default).
    #[arg(long, conflicts_with = "listen")]
    stdio: bool,
    /// Serve streamable HTTP at http://ADDR/mcp instead; loopback only
    /// (127.0.0.1:PORT or [::1]:PORT; port 0 picks a free one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

pub fn run(a: ServeArgs) -> Result<(), Failure> {
    if a.input.is_live() {
        return Err(Failure::Input(
            "serve answers from -f manifests; the operator serves its live index".into(),
        ));
    }
    let fixed_now = a.input.now.is_some();
    let loaded = a.input.load()?;
    super::operator::init_logging();
    let estate = Arc::new(Estate::new(
        loaded.engine,
        loaded.namespace,
        fixed_now.then_some(loaded.now),
    ));
    eprintln!(
        "mcpgov serve: graph {} generation {}",
        estate.graph.instance, estate.graph.generation
    );
    let gov = Governance::new(estate);
    let runtime = super::operator::runtime()?;
    runtime.block_on(async move {
        match a.listen {
            Some(addr) => listen(
                gov,
                addr,
                |bound| eprintln!("mcpgov serve: listening on http://{bound}/mcp"),
                shutdown_signal(),
            )
            .await
            .map_err(|e| Failure::Input(e.to_string())),
            None => {
                let (stdin, stdout) = rmcp::transport::stdio();
                let transport =
                    rmcp::transport::async_rw::AsyncRwTransport::new_server(stdin, stdout)
                        .with_max_line_length(MAX_REQUEST_BYTES);
                let running = gov
                    .serve(transport)
                    .await
                    .map_err(|e| Failure::Input(format!("MCP handshake on stdio: {e}")))?;
                tokio::select! {
                    r = running.waiting() => r.map(|_| ()).map_err(|e| Failure::Input(format!("stdio: {e}"))),
                    () = shutdown_signal() => Ok(()),
                }
            }
        }
    })
}

/// Ctrl-C, or SIGTERM where there is one.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async {
                match term.as_mut() {
                    Some(t) => { t.recv().await; }
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
