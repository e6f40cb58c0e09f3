//! The benchmark's upstream: a small streamable-HTTP MCP server with `TOOLS` tools, as
//! cheap as a server can be so that what the benchmark sees is the gateway. It answers
//! POSTs with one server-sent event, as the TypeScript SDK and rmcp do by default, hands
//! out session ids, keeps standalone GET streams open, and echoes calls.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

pub const TOOLS: usize = 100;
const SESSION: &str = "mcp-session-id";

/// Tool `i` as the server lists it: a description and an input schema with a bounded
/// string, a bounded integer and no other properties (what the gateway validates).
pub fn tool(i: usize) -> Value {
    json!({
        "name": tool_name(i),
        "description": format!("Benchmark tool {i}: echoes its text argument back."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 1000},
                "n": {"type": "integer", "minimum": 0, "maximum": 1000}
            },
            "required": ["text"],
            "additionalProperties": false
        }
    })
}

pub fn tool_name(i: usize) -> String {
    format!("tool_{i:03}")
}

pub fn tools() -> Vec<Value> {
    (0..TOOLS).map(tool).collect()
}

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

fn sse(v: &Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/event-stream")],
        format!("event: message\ndata: {v}\n\n"),
    )
        .into_response()
}

async fn post(headers: HeaderMap, body: Bytes) -> Response {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "parse error").into_response();
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = msg.get("id").cloned() else {
        // A notification or a response: accepted, nothing to say.
        return StatusCode::ACCEPTED.into_response();
    };
    if method == "initialize" {
        let sid = format!(
            "{:016x}{:08x}",
            NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            std::process::id()
        );
        let proto = msg
            .pointer("/params/protocolVersion")
            .cloned()
            .unwrap_or(json!("2025-06-18"));
        let mut r = sse(&json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": proto,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "gateway-bench-upstream", "version": "1"}}}));
        r.headers_mut()
            .insert(SESSION, sid.parse().expect("hex is a header value"));
        return r;
    }
    // Like the SDKs: a request outside a session is refused, so a gateway that dropped
    // the session header would show up as errors.
    if headers.get(SESSION).is_none() {
        return (StatusCode::BAD_REQUEST, "no session").into_response();
    }
    let result = match method {
        "tools/list" => json!({"tools": tools_cached()}),
        "tools/call" => {
            let text = msg
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            json!({"content": [{"type": "text", "text": text}], "isError": false})
        }
        "ping" => json!({}),
        _ => {
            return sse(
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
            );
        }
    };
    sse(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn tools_cached() -> &'static Value {
    static T: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    T.get_or_init(|| Value::Array(tools()))
}

/// The standalone stream: open until the client goes away; this server never notifies.
async fn stream() -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(futures::stream::pending::<
            Result<Bytes, std::io::Error>,
        >()))
        .expect("a response")
}

pub async fn serve(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = Router::new().route(
        "/mcp",
        get(stream).post(post).delete(|| async { StatusCode::OK }),
    );
    // As server SDKs do (Node's HTTP server sets it by default).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
