//! Talking to an upstream server: its credentials (files mounted from Secrets into the
//! gateway container only) and the gateway's own short session that fetches a server's
//! tool list when a call comes before any list did.

use crate::bundle::safe_segment;
use crate::contracts::{LiveTool, MAX_TOOLS_PER_SERVER, live_tool};
use crate::sse::Splitter;
use futures::StreamExt;
use mcpgov_core::bundle::BundleServer;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// What the gateway offers upstream in its own sessions.
const PROTOCOL: &str = "2025-06-18";
const MAX_PAGES: usize = 100;
/// A header value file is small; anything bigger is not a token.
const MAX_SECRET_BYTES: u64 = 16 * 1024;

/// The headers a server's endpoint names, read from `<dir>/<secret>/<key>`.
pub fn credentials(dir: &Path, server: &BundleServer) -> Result<HeaderMap, String> {
    let mut h = HeaderMap::new();
    for hdr in &server.endpoint.headers {
        let r = &hdr.secret_key_ref;
        if !safe_segment(&r.name) || !safe_segment(&r.key) {
            return Err(format!("header {}: unusable Secret reference", hdr.name));
        }
        let path = dir.join(&r.name).join(&r.key);
        let mut buf = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_SECRET_BYTES + 1).read_to_end(&mut buf))
            .map_err(|_| {
                format!(
                    "header {} needs Secret {} key {}, not mounted in the gateway",
                    hdr.name, r.name, r.key
                )
            })?;
        if buf.len() as u64 > MAX_SECRET_BYTES {
            return Err(format!("header {}: Secret value too large", hdr.name));
        }
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        let name = HeaderName::from_bytes(hdr.name.as_bytes())
            .map_err(|_| format!("header name {:?} invalid", hdr.name))?;
        let mut value = HeaderValue::from_bytes(&buf).map_err(|_| {
            format!(
                "header {}: Secret value is not a valid header value",
                hdr.name
            )
        })?;
        value.set_sensitive(true);
        h.insert(name, value);
    }
    Ok(h)
}

/// Read the JSON-RPC response with `id` from a POST's answer: a JSON body, or an event
/// stream carrying it (other events on it are ignored). Bounded by `max` bytes.
pub async fn read_response(
    resp: reqwest::Response,
    id: &Value,
    max: usize,
) -> Result<Value, String> {
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("upstream answered HTTP {status}"));
    }
    let sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = resp.bytes_stream();
    if !sse {
        let mut buf = Vec::new();
        while let Some(c) = body.next().await {
            let c = c.map_err(|e| e.to_string())?;
            if buf.len() + c.len() > max {
                return Err(format!("upstream answer over {max} bytes"));
            }
            buf.extend_from_slice(&c);
        }
        return serde_json::from_slice(&buf)
            .map_err(|e| format!("upstream answer is not JSON: {e}"));
    }
    let mut split = Splitter::new(max);
    let mut events = Vec::new();
    while let Some(c) = body.next().await {
        let c = c.map_err(|e| e.to_string())?;
        split
            .push(&c, &mut events)
            .map_err(|_| format!("upstream event over {max} bytes"))?;
        for ev in events.drain(..) {
            let Some(data) = crate::sse::fields(&ev).data else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some()) {
                return Ok(v);
            }
        }
    }
    Err("upstream stream ended without the answer".into())
}

/// The gateway's own look at a server's tools: initialize, list every page, close.
pub async fn list_tools(
    client: &reqwest::Client,
    url: &str,
    creds: &HeaderMap,
    max: usize,
    timeout: Duration,
) -> Result<HashMap<String, LiveTool>, String> {
    tokio::time::timeout(timeout, list_tools_inner(client, url, creds, max))
        .await
        .map_err(|_| format!("listing tools took over {timeout:?}"))?
}

async fn list_tools_inner(
    client: &reqwest::Client,
    url: &str,
    creds: &HeaderMap,
    max: usize,
) -> Result<HashMap<String, LiveTool>, String> {
    let post = |body: Value, session: Option<&str>, proto: Option<&str>| {
        let mut r = client
            .post(url)
            .headers(creds.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = session {
            r = r.header(SESSION_HEADER, s);
        }
        if let Some(p) = proto {
            r = r.header(PROTOCOL_HEADER, p);
        }
        r.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "mcpgov-gateway", "version": env!("CARGO_PKG_VERSION")}}});
    let resp = post(init, None, None)
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let session = resp
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let answer = read_response(resp, &json!(0), max).await?;
    let proto = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .ok_or("initialize failed")?
        .to_string();
    let s = session.as_deref();
    let _ = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        s,
        Some(&proto),
    )
    .await;
    let mut tools = HashMap::new();
    let mut cursor: Option<String> = None;
    let result = async {
        for page in 1..=MAX_PAGES {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let id = json!(page);
            let req =
                json!({"jsonrpc": "2.0", "id": page, "method": "tools/list", "params": params});
            let resp = post(req, s, Some(&proto))
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            let answer = read_response(resp, &id, max).await?;
            let list = answer.get("result").ok_or("tools/list answered an error")?;
            for t in list
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some((name, lt)) = live_tool(t) {
                    tools.insert(name, lt);
                }
                if tools.len() > MAX_TOOLS_PER_SERVER {
                    return Err(format!("server lists over {MAX_TOOLS_PER_SERVER} tools"));
                }
            }
            match list.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => {
                    cursor = Some(c.to_string())
                }
                _ => return Ok(()),
            }
        }
        Err(format!("tools/list has over {MAX_PAGES} pages"))
    }
    .await;
    if let Some(s) = s {
        let _ = client
            .delete(url)
            .headers(creds.clone())
            .header(SESSION_HEADER, s)
            .send()
            .await;
    }
    result.map(|()| tools)
}
