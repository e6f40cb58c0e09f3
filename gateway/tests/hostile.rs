//! Credentials, a failing audit sink, and hostile clients and servers.

mod common;

use common::*;
use serde_json::json;

const SRV: &str = "team/tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_credentials_come_from_mounted_secrets_only() {
    let server = Server::start("testserver", &["--tools", "1", "--auth-token", "s3cret"]);
    let live = digests_with(&server.url, Some("s3cret")).await;
    let mut b = bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "tool_000", &live["tool_000"])],
    );
    b["servers"][0]["endpoint"]["headers"] =
        json!([{"name": "Authorization", "secretKeyRef": {"name": "tests-token", "key": "token"}}]);
    let mut dir = BundleDir::new();
    dir.publish_bundle(&b);
    let creds = tempfile::tempdir().unwrap();
    let gw = Gateway::launch(dir.path(), &[], Some(creds.path()), None);
    gw.wait_ready(200, "sha256:").await;

    // Not mounted: refused, clearly, before anything reaches the server.
    let mut c = Client::new(&gw.route(SRV));
    let r = c.call("tool_000", json!({"text": "x"})).await;
    assert_eq!(reason(&r), "CredentialsMissing", "{r}");
    assert!(
        r["structuredContent"]["detail"]
            .as_str()
            .unwrap()
            .contains("tests-token")
    );
    let (status, init) = c
        .raw(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .await;
    assert_eq!(status, 503, "{init}");

    // Mounted (as a Secret volume would be): used from the next request on.
    std::fs::create_dir(creds.path().join("tests-token")).unwrap();
    std::fs::write(creds.path().join("tests-token/token"), "Bearer s3cret\n").unwrap();
    // The agent sends no token (and one it sent would not be forwarded).
    let mut c = Client::connect_with(&gw.route(SRV), Some("agent-must-not-pass-this")).await;
    let r = c.call("tool_000", json!({"text": "x"})).await;
    assert!(r.to_string().contains("tool_000: x"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_audit_fails_closed_unless_told_otherwise() {
    let server = Server::start("testserver", &["--tools", "1"]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "tool_000", &live["tool_000"])],
    ));
    for (flags, forwarded) in [(&[][..], false), (&["--audit-fail-open"][..], true)] {
        // stdout is a pipe nobody reads: every record write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let gw = Gateway::launch(dir.path(), flags, None, Some(writer.into()));
        gw.wait_ready(200, "sha256:").await;
        let mut c = Client::new(&gw.route(SRV));
        let (status, init) = c
            .raw(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
            .await;
        if !forwarded {
            assert_eq!(status, 503, "{init}");
            let r = c.call("tool_000", json!({"text": "x"})).await;
            assert_eq!(reason(&r), "AuditUnavailable", "{r}");
            let l = c.request("tools/list", json!({})).await;
            assert_eq!(l["result"]["tools"], json!([]));
        } else {
            assert_eq!(status, 200, "{init}");
            c.notify("notifications/initialized").await;
            let r = c.call("tool_000", json!({"text": "x"})).await;
            assert!(r.to_string().contains("tool_000: x"), "{r}");
        }
        let (_, m) = gw.get_ops("/metrics").await;
        assert!(
            !m.contains("mcpgov_gateway_audit_write_errors_total 0"),
            "{m}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_refused() {
    let server = Server::start("testserver", &["--tools", "1"]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "tool_000", &live["tool_000"])],
    ));
    let gw = Gateway::start(dir.path(), &["--max-body-bytes", "65536"]);
    gw.wait_ready(200, "sha256:").await;
    let http = reqwest::Client::new();
    let post = |body: String| {
        http.post(gw.route(SRV))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    // A batch could hide a call among allowed messages.
    let batch =
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}]);
    assert_eq!(post(batch.to_string()).await.unwrap().status(), 400);
    assert_eq!(post("{not json".into()).await.unwrap().status(), 400);
    assert_eq!(
        post(format!("\"{}\"", "a".repeat(70_000)))
            .await
            .unwrap()
            .status(),
        413
    );
    // Too deep for the parser: refused, not forwarded.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(post(deep).await.unwrap().status(), 400);
    // A route the bundle does not publish.
    let r = http
        .post(format!("{}/mcp/team/unknown", gw.base))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Duplicate keys: the call decided is the call forwarded (the last "name" wins in
    // both), so an allowed first name cannot smuggle another tool through.
    let mut c = Client::connect(&gw.route(SRV)).await;
    let (_, v) = c
        .raw(serde_json::from_str(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tool_000","name":"tool_999","arguments":{"text":"d"}}}"#).unwrap())
        .await;
    assert_eq!(
        v["result"]["structuredContent"]["reason"], "NotInBundle",
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_servers_cannot_get_a_list_through_unchecked() {
    for (mode, extra) in [
        ("deep-json", &["--hostile-depth", "5000"][..]),
        ("huge-list", &["--hostile-tools", "100000"][..]),
    ] {
        let mut args = vec!["--hostile", mode];
        args.extend_from_slice(extra);
        let server = Server::start("testserver", &args);
        let mut dir = BundleDir::new();
        dir.publish_bundle(&bundle(&[(SRV, &server.url)], &[]));
        let gw = Gateway::start(dir.path(), &["--max-message-bytes", "1048576"]);
        gw.wait_ready(200, "sha256:").await;
        let mut c = Client::connect(&gw.route(SRV)).await;
        let (status, v) = c
            .raw(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}))
            .await;
        let tools = v["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
        assert_eq!(tools, 0, "{mode}: status {status}");
        assert!(
            v.get("error").is_some() || status != 200,
            "{mode}: {status} {v:.300}"
        );
    }
}
