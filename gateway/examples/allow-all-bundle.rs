//! Write a bundle (v2, RFC 8785 bytes on stdout) that makes every tool a streamable-HTTP
//! server lists eligible, each pinned to the contract digest the server serves right now.
//! For the conformance comparison (e2e/conformance/run-server.sh): the gateway checks live
//! digests, so they are computed from the server's own `tools/list`, never written by hand.
//!
//!   allow-all-bundle URL SERVER_KEY AGENT_NAMESPACE AGENT_NAME [SSE_URL] > bundle.json
//!
//! With SSE_URL the bundle's endpoint is that server over the legacy HTTP+SSE transport
//! (the same server software, listed through URL: the gateway checks the live digests
//! over SSE and hides any tool whose contract differs).
//!
//! Servers such as server-everything list some tools only to clients that declare a
//! capability (sampling, elicitation, roots), so the server is listed twice: once
//! declaring nothing, once declaring every client capability. A tool listed with two
//! different contracts cannot be pinned and is an error.

use mcpgov_core::bundle::{
    AgentRef, BUNDLE_KIND, BUNDLE_SCHEMA_VERSION, BundleDocument, BundleEndpoint, BundleServer,
    BundleTool, Transport,
};
use mcpgov_core::canonical::to_canonical_json;
use mcpgov_gateway::contracts::{MAX_TOOLS_PER_SERVER, live_tool};
use mcpgov_gateway::upstream::{PROTOCOL_HEADER, SESSION_HEADER, read_response};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

/// One answer from the server, at most.
const MAX_ANSWER_BYTES: usize = 16 << 20;
const MAX_PAGES: u64 = 100;
const ZERO: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Every tool listed to a client declaring `capabilities`: name → contract digest.
async fn list(
    http: &reqwest::Client,
    url: &str,
    capabilities: Value,
) -> Result<BTreeMap<String, String>, String> {
    let post = |body: Value, session: Option<String>, proto: Option<String>| {
        let mut r = http
            .post(url)
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
        "protocolVersion": "2025-06-18", "capabilities": capabilities,
        "clientInfo": {"name": "mcpgov-allow-all-bundle", "version": "0"}}});
    let resp = post(init, None, None)
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let session = resp
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let answer = read_response(resp, &json!(0), MAX_ANSWER_BYTES).await?;
    let proto = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("initialize failed: {answer:.300}"))?
        .to_string();
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
        Some(proto.clone()),
    )
    .await
    .map_err(|e| format!("initialized: {e}"))?;

    let mut tools = BTreeMap::new();
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let req = json!({"jsonrpc": "2.0", "id": page, "method": "tools/list", "params": params});
        let resp = post(req, session.clone(), Some(proto.clone()))
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let answer = read_response(resp, &json!(page), MAX_ANSWER_BYTES).await?;
        let result = answer
            .get("result")
            .ok_or_else(|| format!("tools/list failed: {answer:.300}"))?;
        for raw in result
            .get("tools")
            .and_then(Value::as_array)
            .ok_or("tools/list answered no tools array")?
        {
            // The gateway's own function for a live contract, over the tool as listed.
            let (name, live) =
                live_tool(raw).ok_or_else(|| format!("a tool without a digest: {raw:.300}"))?;
            if let Some(old) = tools.insert(name.clone(), live.digest.clone())
                && old != live.digest
            {
                return Err(format!("{name} is listed twice with two contracts"));
            }
            if tools.len() > MAX_TOOLS_PER_SERVER {
                return Err(format!("over {MAX_TOOLS_PER_SERVER} tools"));
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => cursor = Some(c.into()),
            _ => break,
        }
        if page == MAX_PAGES {
            return Err(format!("tools/list has over {MAX_PAGES} pages"));
        }
    }
    if let Some(s) = session {
        let _ = http.delete(url).header(SESSION_HEADER, s).send().await;
    }
    Ok(tools)
}

async fn run(args: &[String]) -> Result<Vec<u8>, String> {
    let (url, server, namespace, name, sse) = match args {
        [u, s, ns, n] => (u, s, ns, n, None),
        [u, s, ns, n, sse] => (u, s, ns, n, Some(sse)),
        _ => {
            return Err(
                "usage: allow-all-bundle URL SERVER_KEY AGENT_NAMESPACE AGENT_NAME [SSE_URL]"
                    .into(),
            );
        }
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let mut all = BTreeMap::new();
    for caps in [
        json!({}),
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}},
               "roots": {"listChanged": true}}),
    ] {
        for (tool, digest) in list(&http, url, caps).await? {
            match all.get(&tool) {
                Some(d) if d != &digest => {
                    return Err(format!(
                        "{tool} has one contract for one client and another for the other"
                    ));
                }
                _ => {
                    all.insert(tool, digest);
                }
            }
        }
    }
    if all.is_empty() {
        return Err(format!("{url} lists no tools"));
    }
    let mut tools: Vec<BundleTool> = all
        .into_iter()
        .map(|(tool, digest)| BundleTool {
            contract_digest: Some(digest),
            decision: "eligible".into(),
            deny_paths: vec![],
            eligible_until: None,
            guard: None,
            key: format!("{server}::{tool}"),
            name: tool,
            reasons: vec![],
            risk_score: 0.0,
            server: server.clone(),
        })
        .collect();
    tools.sort_by(|a, b| a.key.cmp(&b.key));
    let doc = BundleDocument {
        agent: AgentRef {
            name: name.clone(),
            namespace: namespace.clone(),
        },
        catalog_digest: ZERO.into(),
        default_decision: "deny".into(),
        governance_digest: ZERO.into(),
        kind: BUNDLE_KIND.into(),
        profile: "Explore".into(),
        schema_version: BUNDLE_SCHEMA_VERSION,
        servers: vec![BundleServer {
            endpoint: BundleEndpoint {
                headers: vec![],
                transport: if sse.is_some() {
                    Transport::SSE
                } else {
                    Transport::StreamableHTTP
                },
                url: sse.unwrap_or(url).clone(),
            },
            key: server.clone(),
        }],
        tools,
    };
    let bytes = to_canonical_json(&doc);
    // What the gateway will read must parse as a bundle.
    mcpgov_core::bundle::parse(&bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes).and_then(|()| out.flush()).unwrap();
        }
        Err(e) => {
            eprintln!("allow-all-bundle: {e}");
            std::process::exit(1);
        }
    }
}
