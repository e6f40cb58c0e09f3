//! `mcpgov crawl` against real MCP servers from npm and PyPI on loopback, including a
//! test server that misbehaves on purpose. No cluster needed.

use mcpgov_e2e::{McpServer, mcpgov_bin};
use serde_json::Value;
use std::process::Command;

struct Crawl {
    ok: bool,
    status: Value,
    stderr: String,
}

/// Crawl one MCPServer manifest pointing at `url`; `extra_spec` is YAML merged into spec.
fn crawl(url: &str, transport: &str, extra_spec: &str, allow_loopback: bool) -> Crawl {
    let dir = std::env::temp_dir().join(format!("mcpgov-crawl-{:08x}", rand::random::<u32>()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("server.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: target, namespace: crawl}}\n\
             spec:\n  endpoint: {{url: \"{url}\", transport: {transport}, timeoutSeconds: 5}}\n{extra_spec}"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(mcpgov_bin());
    cmd.arg("crawl").arg("-f").arg(&manifest);
    if allow_loopback {
        cmd.arg("--allow-loopback");
    }
    let out = cmd.output().expect("run mcpgov crawl");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let list: Value = serde_saphyr::from_str(&stdout).unwrap_or(Value::Null);
    Crawl {
        ok: out.status.success(),
        status: list["items"][0]["status"].clone(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn crawled(c: &Crawl) -> (String, String, String) {
    let cond = c.status["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["type"] == "Crawled"))
        .cloned()
        .unwrap_or(Value::Null);
    (
        cond["status"].as_str().unwrap_or("").to_string(),
        cond["reason"].as_str().unwrap_or("").to_string(),
        cond["message"].as_str().unwrap_or("").to_string(),
    )
}

fn tool_names(c: &Crawl) -> Vec<String> {
    c.status["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn server_everything_over_streamable_http_and_sse() {
    let http = McpServer::start("everything-http", &[]);
    let c = crawl(&http.url, "StreamableHTTP", "", true);
    assert!(c.ok, "{}", c.stderr);
    assert_eq!(crawled(&c).0, "True", "{:?}", crawled(&c));
    let names = tool_names(&c);
    assert!(names.len() >= 10, "{names:?}");
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    assert_eq!(c.status["protocolVersion"], "2025-11-25");
    assert!(
        c.status["catalogDigest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    // Contract digests are stable across crawls of an unchanged server.
    let again = crawl(&http.url, "StreamableHTTP", "", true);
    assert_eq!(c.status["tools"], again.status["tools"]);
    assert_eq!(c.status["catalogDigest"], again.status["catalogDigest"]);

    let sse = McpServer::start("everything-sse", &[]);
    let s = crawl(&sse.url, "SSE", "", true);
    assert!(s.ok, "{}", s.stderr);
    assert_eq!(tool_names(&s), names, "same server, either transport");
    println!("{}", c.stderr.trim());
    println!("{}", s.stderr.trim());
}

#[test]
fn stdio_servers_behind_supergateway() {
    for (kind, transport) in [("filesystem-http", "StreamableHTTP"), ("memory-sse", "SSE")] {
        let srv = McpServer::start(kind, &[]);
        let c = crawl(&srv.url, transport, "", true);
        assert!(c.ok, "{kind}: {}", c.stderr);
        assert!(!tool_names(&c).is_empty(), "{kind}");
        println!("{kind}: {}", c.stderr.trim());
    }
}

#[test]
fn paging_over_many_pages_and_method_not_found() {
    let srv = McpServer::start(
        "testserver",
        &["--tools", "250", "--page-size", "10", "--no-resources"],
    );
    let c = crawl(&srv.url, "StreamableHTTP", "", true);
    assert!(c.ok, "{}", c.stderr);
    assert_eq!(tool_names(&c).len(), 250);
    let not_impl: Vec<&str> = c.status["notImplemented"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(not_impl.contains(&"resources/list"), "{not_impl:?}");
    println!("250 tools over 25 pages: {}", c.stderr.trim());
}

#[test]
fn misbehaving_servers_fail_the_crawl_with_a_reason() {
    let repeat = McpServer::start(
        "testserver",
        &["--tools", "30", "--page-size", "5", "--repeat-cursor"],
    );
    let c = crawl(&repeat.url, "StreamableHTTP", "", true);
    assert!(!c.ok);
    assert_eq!(crawled(&c).1, "RepeatedCursor", "{:?}", crawled(&c));
    assert!(c.status["tools"].is_null(), "never a partial catalog");

    let hang = McpServer::start("testserver", &["--hang-list"]);
    let c = crawl(&hang.url, "StreamableHTTP", "", true);
    assert_eq!(crawled(&c).1, "Timeout", "{:?}", crawled(&c));

    let auth = McpServer::start("testserver", &["--auth-token", "s3cret"]);
    let c = crawl(&auth.url, "StreamableHTTP", "", true);
    let (_, reason, message) = crawled(&c);
    assert_eq!(reason, "Unauthorized");
    assert!(message.contains("realm=\"mcpgov-test\""), "{message}");

    let many = McpServer::start("testserver", &["--tools", "20"]);
    let c = crawl(
        &many.url,
        "StreamableHTTP",
        "  crawl: {maxTools: 10}\n",
        true,
    );
    let (_, reason, message) = crawled(&c);
    assert_eq!(reason, "OverCap");
    assert!(message.contains("maxTools"), "{message}");

    let big = McpServer::start(
        "testserver",
        &["--tools", "5", "--big-descriptions", "300000"],
    );
    let c = crawl(
        &big.url,
        "StreamableHTTP",
        "  crawl: {maxBytes: 1048576}\n",
        true,
    );
    let (_, reason, message) = crawled(&c);
    assert_eq!(reason, "OverCap");
    assert!(message.contains("maxBytes"), "{message}");
}

#[test]
fn loopback_is_refused_unless_allowed() {
    let srv = McpServer::start("testserver", &[]);
    let c = crawl(&srv.url, "StreamableHTTP", "", false);
    assert!(!c.ok);
    assert_eq!(crawled(&c).1, "AddressRefused", "{:?}", crawled(&c));
    let c = crawl("http://169.254.169.254/mcp", "StreamableHTTP", "", true);
    assert_eq!(
        crawled(&c).1,
        "AddressRefused",
        "metadata stays refused: {:?}",
        crawled(&c)
    );
}
