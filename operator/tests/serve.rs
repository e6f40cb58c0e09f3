//! `mcpgov serve` driven by rmcp's client, over stdio and over streamable HTTP: every
//! tool listed from the registry, called, and its structuredContent checked against
//! the output schema it declares; bad arguments are tool errors; the HTTP listener
//! refuses foreign Host and Origin headers and oversized bodies.

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const NOW: &str = "2026-11-29T00:00:00Z";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn serve(extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mcpgov"));
    c.args(["serve", "-f", "examples/cross-server", "--now", NOW])
        .args(extra)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// What `mcpgov query` prints for the same question, as JSON.
fn query(args: &[&str]) -> Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpgov"))
        .arg("query")
        .args(args)
        .args(["-f", "examples/cross-server", "--now", NOW])
        .current_dir(root())
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap()
}

/// One call per tool, with arguments that reach a real answer.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "check_access",
            json!({"agent": "ci-bot", "tool": "git_show"}),
        ),
        ("explain", json!({"agent": "ci-bot", "tool": "git_show"})),
        (
            "eligible_tools",
            json!({"agent": "ci-bot", "profile": "review"}),
        ),
        ("unsafe_tools", json!({"agent": "ci-bot"})),
        ("blast_radius", json!({"target": "file:///srv/app/.env"})),
        ("drift", json!({})),
        ("audit_report", json!({})),
        ("bundle_identity", json!({"agent": "ci-bot"})),
    ]
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// List, call each tool, validate, and compare with the CLI's JSON.
async fn exercise(client: &RunningService<RoleClient, ()>) {
    let tools: Vec<Tool> = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let asked: Vec<&str> = calls().iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, asked,
        "the listed tools are the registry's, in order"
    );
    for t in &tools {
        let a = t.annotations.as_ref().expect("annotated");
        assert_eq!(
            (
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ),
            (Some(true), Some(false), Some(true), Some(false)),
            "{}",
            t.name
        );
        assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
    }
    let mut graphs = Vec::new();
    for (name, args) in calls() {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let r = call(client, name, args).await;
        assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
        let content = r.structured_content.clone().expect("structured content");
        let schema = Value::Object(
            tool.output_schema
                .as_deref()
                .cloned()
                .expect("output schema"),
        );
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&content)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        // The text block says the same, for clients that read only text.
        let text = r.content[0].as_text().expect("text").text.clone();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            content,
            "{name}"
        );
        graphs.push(content["graph"].clone());
    }
    // One state answered every question, and it is the state the CLI names too.
    let cli = query(&["check-access", "ci-bot", "git_show"]);
    assert!(
        graphs.iter().all(|g| *g == cli["graph"]),
        "{graphs:?} vs {}",
        cli["graph"]
    );
    let mcp = call(
        client,
        "check_access",
        json!({"agent": "ci-bot", "tool": "git_show"}),
    )
    .await;
    assert_eq!(
        mcp.structured_content.unwrap(),
        cli,
        "MCP and CLI answer alike"
    );
    let mcp = call(
        client,
        "blast_radius",
        json!({"target": "file:///srv/app/.env"}),
    )
    .await;
    assert_eq!(
        mcp.structured_content.unwrap(),
        query(&["blast-radius", "file:///srv/app/.env"])
    );

    // Bad arguments: a tool error that says what is wrong; the server stays up.
    for (name, args, needle) in [
        (
            "check_access",
            json!({"agent": "ci-bot"}),
            "missing field `tool`",
        ),
        (
            "check_access",
            json!({"agent": "ci-bot", "tool": "x", "as": 1}),
            "unknown field `as`",
        ),
        (
            "eligible_tools",
            json!({"agent": "ci-bot", "profile": "lenient"}),
            "lenient",
        ),
        ("unsafe_tools", json!({"agent": "ghost"}), "AGENT_NOT_FOUND"),
        (
            "check_access",
            json!({"agent": "a".repeat(5000), "tool": "x"}),
            "over the limit",
        ),
        ("drift", json!({"x": null}), "unknown field"),
    ] {
        let r = call(client, name, args).await;
        assert_eq!(r.is_error, Some(true), "{name}: {r:?}");
        let text = &r.content[0].as_text().unwrap().text;
        assert!(text.contains(needle), "{name}: {text}");
    }
    // A tool that is not listed is the protocol's invalid-params error.
    let err = client
        .call_tool(CallToolRequestParams::new("rm_rf"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown tool"), "{err}");
    let still = call(client, "drift", json!({})).await;
    assert_ne!(still.is_error, Some(true));
}

#[tokio::test]
async fn over_stdio() {
    let mut child = serve(&["--stdio"]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("handshake");
    let info = client.peer_info().expect("server info").clone();
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("mcpgov")
    );
    exercise(&client).await;
    client.cancel().await.unwrap();
    // Closing stdin ends the server.
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("serve exits when stdin closes")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn an_oversized_stdio_line_is_dropped_and_the_server_stays_up() {
    use tokio::io::AsyncWriteExt;
    let mut child = serve(&[]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // Over the 1 MiB bound, then a real session on the same pipe.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"{}\"}}\n",
        "x".repeat(2 << 20)
    );
    stdin.write_all(big.as_bytes()).await.unwrap();
    let client = ().serve((stdout, stdin)).await.expect("handshake after the big line");
    let r = call(&client, "drift", json!({})).await;
    assert_ne!(r.is_error, Some(true));
    client.cancel().await.unwrap();
    let _ = child.kill().await;
}

/// Start `serve --listen 127.0.0.1:0` and read the address it bound from stderr.
async fn listening() -> (Child, String) {
    let mut child = serve(&["--listen", "127.0.0.1:0"]).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(u) = line.strip_prefix("mcpgov serve: listening on ") {
                return u.to_string();
            }
        }
        panic!("serve ended without listening")
    })
    .await
    .expect("listening within 30s");
    // Keep draining stderr so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

#[tokio::test]
async fn over_streamable_http() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut child, url) = listening().await;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.clone());
    let client = ().serve(transport).await.expect("handshake");
    exercise(&client).await;
    client.cancel().await.unwrap();

    // DNS rebinding and oversized bodies, with a plain HTTP client.
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let post = |headers: &[(&str, &str)], body: String| {
        let mut r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.body(body).send()
    };
    let ok = post(&[], init.to_string()).await.unwrap();
    assert_eq!(ok.status(), 200);
    for headers in [
        vec![("host", "evil.example")],
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
    ] {
        let r = post(&headers, init.to_string()).await.unwrap();
        assert_eq!(r.status(), 403, "{headers:?}");
        assert!(r.text().await.unwrap().contains("not a loopback name"));
    }
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{{\"p\":\"{}\"}}}}",
        "x".repeat(2 << 20)
    );
    let r = post(&[], big).await.unwrap();
    assert_eq!(r.status(), 413);
    child.kill().await.unwrap();
}

#[test]
fn a_non_loopback_listener_is_refused() {
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:80"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpgov"))
            .args(["serve", "-f", "examples/cross-server", "--listen", addr])
            .current_dir(root())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{addr}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("loopback only"), "{addr}: {err}");
    }
}
