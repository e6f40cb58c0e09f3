//! The operator: guarded watches feed one index (the engine plus the objects as last
//! seen); once every watch has listed, changed objects are re-evaluated and only status
//! and bundles that differ are written, by one writer.

pub mod bundles;
pub mod conditions;
pub mod contract_status;
pub mod crawl;
pub mod events;
pub mod expiry;
mod http;
mod index;
pub mod jobs;
pub mod kind;
pub mod leader;
pub mod metrics;
pub mod msg;
mod plan;
pub mod queue;
mod reports;
pub mod secrets;
pub mod status;
pub mod watch;
pub mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Operator settings (flags fall back to environment variables in the CLI).
#[derive(Clone, Debug)]
pub struct Config {
    /// Watch only this namespace (default: all).
    pub namespace: Option<String>,
    pub governance_namespace: String,
    pub listen: SocketAddr,
    /// Full re-evaluation period (also expires exceptions on time).
    pub resync: Duration,
    /// Servers crawled at once; 0 disables crawling (catalogs then come from status).
    pub crawl_concurrency: usize,
    pub net: crate::crawler::NetPolicy,
    /// Leader election; `None` runs a single writer without a Lease.
    pub election: Option<leader::Election>,
    /// The admission webhook, served by every replica; `None`: off.
    pub admission: Option<crate::admission::Config>,
    /// The governance questions over MCP, served by every replica; `None`: off.
    pub mcp: Option<crate::serve::live::Config>,
    /// Write findings as reports in this API (`--policy-reports`); `None`: off.
    pub policy_reports: Option<crate::reports::Api>,
}

/// Run until the process is stopped. Errors here are fatal start-up errors.
pub async fn run(config: Config) -> Result<(), String> {
    let client = kube::Client::try_default()
        .await
        .map_err(|e| format!("cannot build a Kubernetes client (KUBECONFIG or in-cluster): {e}"))?;
    let metrics = metrics::Metrics::new();
    let ready = Arc::new(AtomicBool::new(false));
    let listen = config.listen;
    let (http_ready, http_metrics) = (ready.clone(), metrics.clone());
    let server = tokio::spawn(async move { http::serve(listen, http_ready, http_metrics).await });
    // The mirror of the index: read by the webhook and the MCP listener.
    let mut feed = None;
    let mut mirror = None;
    if config.admission.is_some() || config.mcp.is_some() {
        let engine_config = mcpgov_engine::EngineConfig {
            governance_namespace: config.governance_namespace.clone(),
        };
        let (f, m) = crate::admission::mirror::spawn(engine_config, ready.clone());
        feed = Some(f);
        mirror = Some(m);
    }
    let admission = match config.admission.clone() {
        Some(a) => {
            let (c, g, m) = (
                client.clone(),
                config.governance_namespace.clone(),
                mirror.clone(),
            );
            tokio::spawn(async move { crate::admission::run(c, a, g, m).await })
        }
        None => tokio::spawn(std::future::pending()),
    };
    let (leadership, lease_task) = match &config.election {
        Some(e) => {
            let (l, t) = leader::elect(client.clone(), e).await?;
            (l, Some(t))
        }
        None => leader::Leadership::always(),
    };
    metrics
        .process
        .build_info
        .with_label_values(&[env!("CARGO_PKG_VERSION")])
        .set(1);
    metrics.process.leader.set(leadership.is_leader() as i64);
    let (tx, rx) = tokio::sync::mpsc::channel::<msg::Msg>(4096);
    watch::spawn_all(
        &client,
        config.namespace.as_deref(),
        tx.clone(),
        metrics.watch.malformed_objects.clone(),
    );
    let (specs_tx, specs_rx) = tokio::sync::watch::channel(crawl::Specs::new());
    crawl::spawn(
        client.clone(),
        config.net.clone(),
        config.crawl_concurrency,
        specs_rx,
        tx.clone(),
        metrics.crawl.list_changed.clone(),
        leadership.flag.clone(),
    );
    let (mcp_config, mcp_client) = (config.mcp.clone(), client.clone());
    let writer = writer::Writer::new(client, metrics.clone(), leadership.flag.clone());
    let (jobs_tx, jobs_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut index = index::Index::new(config, metrics, ready, specs_tx, leadership);
    // Answers name the index's graph instance: the mirror takes in the same changes in
    // the same order, so its generations are the index's.
    let mcp = match (mcp_config, mirror) {
        (Some(m), Some(mirror)) => {
            let (c, instance) = (mcp_client, index.instance.clone());
            tokio::spawn(
                async move { crate::serve::live::run(c, m, mirror, instance, |_| {}).await },
            )
        }
        _ => tokio::spawn(std::future::pending()),
    };
    index.report_lists = Some(index::ReportLists {
        writer: writer.clone(),
        tx: tx.clone(),
    });
    index.feed = feed;
    writer::spawn(writer, writer::CONCURRENCY, jobs_rx, tx.clone());
    let lease = async {
        match lease_task {
            Some(t) => match t.await {
                Ok(Err(e)) => Err(e),
                Ok(Ok(())) => Err("the lease task stopped".to_string()),
                Err(e) => Err(format!("the lease task panicked: {e}")),
            },
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = index.run(rx, jobs_tx) => r,
        // Without the lease task, nothing guarantees a single writer: exit.
        r = lease => r,
        r = server => match r {
            Ok(Ok(())) => Err("HTTP server stopped".into()),
            Ok(Err(e)) => Err(format!("HTTP server on {listen}: {e}")),
            Err(e) => Err(format!("HTTP server task: {e}")),
        },
        r = admission => match r {
            Ok(Ok(())) => Err("admission server stopped".into()),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(format!("admission server task: {e}")),
        },
        r = mcp => match r {
            Ok(Ok(())) => Err("MCP server stopped".into()),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(format!("MCP server task: {e}")),
        },
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("interrupted; stopping");
            Ok(())
        }
    }
}
