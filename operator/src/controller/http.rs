//! `/healthz` (liveness only), `/readyz` (every watch listed, CRDs present) and `/metrics`.

use super::metrics::Metrics;
use axum::{Router, http::StatusCode, routing::get};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub async fn serve(
    addr: SocketAddr,
    ready: Arc<AtomicBool>,
    metrics: Metrics,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.clone();
                async move {
                    if ready.load(Ordering::Relaxed) {
                        (StatusCode::OK, "ready")
                    } else {
                        (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "waiting for CRDs and initial lists",
                        )
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let m = metrics.clone();
                async move { m.render() }
            }),
        );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /healthz, /readyz, /metrics");
    axum::serve(listener, app).await
}
