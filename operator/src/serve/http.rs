//! The streamable HTTP listener of `mcpgov serve`: loopback only (the answers carry
//! no authentication offline), DNS rebinding refused, request bodies bounded.

use super::Governance;
use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;

/// Largest request a client may send (over HTTP, and one line over stdio): questions
/// are a few names; 1 MiB leaves room for long candidate lists and nothing more.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// Serve on `addr` (which must be loopback) until `shutdown` resolves. `ready` gets
/// the bound address (the port when 0 was asked).
pub async fn listen(
    gov: Governance,
    addr: SocketAddr,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "--listen {addr}: serve answers without authentication, so it listens on \
                 loopback only (127.0.0.1 or [::1])"
            ),
        ));
    }
    let config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(MAX_REQUEST_BYTES)
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"]);
    let cancel = config.cancellation_token.clone();
    let service: StreamableHttpService<Governance, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(gov.clone()), Default::default(), config);
    let app = Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(rebinding_guard));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    ready(listener.local_addr()?);
    // Nagle off, as the operator's listener (`live::nodelay`).
    axum::serve(super::live::nodelay(listener), app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await
}

/// DNS rebinding: a web page whose name resolves to 127.0.0.1 reaches a loopback
/// listener with its own name in `Host` and `Origin`. Refused before anything is read.
async fn rebinding_guard(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Some(why) = foreign_host_or_origin(req.headers()) {
        tracing::warn!(header = %why, "refused a request naming a foreign host (DNS rebinding protection)");
        return (
            StatusCode::FORBIDDEN,
            format!("forbidden: {why} is not a loopback name\n"),
        )
            .into_response();
    }
    next.run(req).await
}

/// The offending header, shown escaped and cut, when `Host` or `Origin` names
/// anything but a loopback name (`mcpgov_core::loopback`).
pub fn foreign_host_or_origin(headers: &HeaderMap) -> Option<String> {
    let (name, v) = mcpgov_core::loopback::foreign_header(
        headers.get(header::HOST).map(HeaderValue::as_bytes),
        headers
            .get_all(header::ORIGIN)
            .iter()
            .map(HeaderValue::as_bytes),
    )?;
    Some(format!(
        "{name} {}",
        crate::text::quote(&String::from_utf8_lossy(v), 100)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn loopback_names_pass_and_everything_else_is_refused() {
        for ok in [
            vec![("host", "127.0.0.1:8080")],
            vec![("host", "localhost")],
            vec![("host", "LOCALHOST:1")],
            vec![("host", "[::1]:9")],
            vec![
                ("host", "127.0.0.1:8080"),
                ("origin", "http://localhost:3000"),
            ],
            vec![("origin", "https://[::1]")],
            vec![],
        ] {
            assert_eq!(foreign_host_or_origin(&headers(&ok)), None, "{ok:?}");
        }
        for bad in [
            vec![("host", "evil.example:8080")],
            vec![("host", "127.0.0.1.evil.example")],
            vec![("host", "localhost.evil.example:80")],
            vec![("host", "localhost:80@evil")],
            vec![("host", "[::1]evil")],
            vec![("host", "127.0.0.1"), ("origin", "http://evil.example")],
            vec![("host", "127.0.0.1"), ("origin", "null")],
            vec![("host", "127.0.0.1"), ("origin", "file://")],
            // A second Origin cannot hide behind a good first one.
            vec![
                ("host", "127.0.0.1"),
                ("origin", "http://localhost"),
                ("origin", "http://evil.example"),
            ],
        ] {
            assert!(foreign_host_or_origin(&headers(&bad)).is_some(), "{bad:?}");
        }
    }
}
