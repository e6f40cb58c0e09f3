//! The gateway in front of server-everything (npm), driven over plain JSON-RPC.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

const SRV: &str = "team/everything";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_filtered_calls_decided() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    assert!(
        live.contains_key("echo"),
        "server-everything lists echo: {live:?}"
    );
    let others: Vec<&String> = live.keys().filter(|k| *k != "echo").collect();
    let (rejected, drifted, expired) = (others[0].as_str(), others[1].as_str(), others[2].as_str());
    let wrong = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[
            T::eligible(SRV, "echo", &live["echo"]),
            T::rejected(SRV, rejected, &live[rejected], "team/no-writes"),
            // Approved with another contract than the server's: a rug pull.
            T::eligible(SRV, drifted, wrong),
            T {
                until: Some("2020-01-01T00:00:00Z"),
                ..T::eligible(SRV, expired, &live[expired])
            },
        ],
    ));
    let gw = Gateway::start(dir.path(), &[]);
    gw.wait_ready(200, "sha256:").await;

    // A call before any list: the gateway lists the server itself to check the contract.
    let mut fresh = Client::connect(&gw.route(SRV)).await;
    let r = fresh.call("echo", json!({"message": "hi"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert!(
        r.to_string().contains("hi"),
        "echo answered through the gateway: {r}"
    );

    let mut c = Client::connect(&gw.route(SRV)).await;
    assert_eq!(
        c.names().await,
        vec!["echo"],
        "only the eligible tool with its approved contract"
    );

    let r = c.call(rejected, json!({})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(reason(&r), "Rejected");
    assert_eq!(r["structuredContent"]["policy"], "team/no-writes");
    assert!(
        r["structuredContent"]["bundleSha"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Rejected")
    );

    let r = c.call(drifted, json!({})).await;
    assert_eq!(reason(&r), "ContractMismatch", "{r}");
    let r = c.call(expired, json!({})).await;
    assert_eq!(reason(&r), "DenyViolation", "{r}");
    let r = c.call("no-such-tool", json!({})).await;
    assert_eq!(reason(&r), "NotInBundle", "{r}");
    // echo wants a string `message`.
    let r = c.call("echo", json!({"message": 42})).await;
    assert_eq!(reason(&r), "InvalidArguments", "{r}");
    let r = c.call("echo", json!({})).await;
    assert_eq!(reason(&r), "InvalidArguments", "{r}");
    let r = c.call("echo", json!({"message": "through"})).await;
    assert!(r.to_string().contains("through"), "{r}");

    // Other methods pass through (and are recorded).
    let p = c.request("ping", json!({})).await;
    assert!(p.get("result").is_some(), "{p}");
    assert_eq!(c.delete().await, 200);

    let recs = gw.records();
    let find = |method: &str, tool: &str, reason: &str| {
        recs.iter().any(|r| {
            r["method"] == method
                && r["tool"] == tool
                && r["reasons"][0] == reason
                && r["server"] == SRV
        })
    };
    assert!(find("tools/call", rejected, "Rejected"));
    assert!(
        find("tools/list", drifted, "ContractMismatch"),
        "hidden tools are recorded"
    );
    assert!(find("tools/list", rejected, "Rejected"));
    assert!(
        recs.iter()
            .any(|r| r["method"] == "ping" && r["decision"] == "allow")
    );
    let mism = recs
        .iter()
        .find(|r| r["method"] == "tools/call" && r["tool"] == drifted)
        .unwrap();
    assert_eq!(mism["bundleContractDigest"], wrong);
    assert_eq!(mism["liveContractDigest"], live[drifted].as_str());
    let allowed = recs
        .iter()
        .find(|r| r["method"] == "tools/call" && r["tool"] == "echo" && r["decision"] == "allow")
        .unwrap();
    assert_eq!(allowed["argNames"], json!(["message"]));
    assert!(
        !std::fs::read_to_string(&gw.audit)
            .unwrap()
            .contains("through"),
        "argument values never reach the log in clear"
    );
    let (_, metrics) = gw.get_ops("/metrics").await;
    assert!(
        metrics.contains("mcpgov_gateway_contract_mismatches_total{server=\"team/everything\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("mcpgov_gateway_bundle_loaded 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warn_mode_forwards_and_records() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::rejected(SRV, "echo", &live["echo"], "team/no-echo")],
    ));
    let gw = Gateway::start(dir.path(), &["--mode", "warn"]);
    gw.wait_ready(200, "sha256:").await;
    let mut c = Client::connect(&gw.route(SRV)).await;
    assert!(
        c.names().await.contains(&"echo".to_string()),
        "warn mode hides nothing"
    );
    let r = c.call("echo", json!({"message": "shadow"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert!(r.to_string().contains("shadow"), "{r}");
    let recs = gw.records();
    let rec = recs
        .iter()
        .find(|r| r["method"] == "tools/call" && r["tool"] == "echo")
        .expect("the call is recorded");
    assert_eq!(rec["decision"], "deny");
    assert_eq!(rec["enforced"], false);
    assert_eq!(rec["reasons"][0], "Rejected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_bundle_denies_then_swaps_apply_without_restart() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    let gw = Gateway::start(dir.path(), &[]);
    gw.wait_ready(503, "no valid bundle").await;
    let mut c = Client::new(&gw.route(SRV));
    let r = c.call("echo", json!({"message": "x"})).await;
    assert_eq!(reason(&r), "NoBundle", "{r}");
    assert_eq!(r["isError"], true);
    let l = c.request("tools/list", json!({})).await;
    assert_eq!(l["result"]["tools"], json!([]));

    // A bundle arrives: the same gateway process starts allowing echo.
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "echo", &live["echo"])],
    ));
    gw.wait_ready(200, "sha256:").await;
    let mut c = Client::connect(&gw.route(SRV)).await;
    let mut stream = c.open_stream().await;
    assert_eq!(c.names().await, vec!["echo"]);
    assert!(
        c.call("echo", json!({"message": "one"}))
            .await
            .to_string()
            .contains("one")
    );

    // An invalid bundle (for another agent) keeps the last good one; readiness stays up.
    let mut other = bundle(&[(SRV, &server.url)], &[]);
    other["agent"]["name"] = json!("someone-else");
    dir.publish_bundle(&other);
    let gw_ref = &gw;
    eventually("bundle_valid 0", Duration::from_secs(5), || async move {
        gw_ref
            .get_ops("/metrics")
            .await
            .1
            .contains("mcpgov_gateway_bundle_valid 0")
    })
    .await;
    gw.wait_ready(200, "sha256:").await;
    assert!(
        c.call("echo", json!({"message": "two"}))
            .await
            .to_string()
            .contains("two")
    );
    assert!(gw.logs().contains("last good one"), "{}", gw.logs());

    // A swap that rejects echo: the open session hears list_changed and is denied.
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::rejected(SRV, "echo", &live["echo"], "team/no-echo")],
    ));
    expect_event(
        &mut stream,
        "notifications/tools/list_changed",
        Duration::from_secs(5),
    )
    .await;
    let r = c.call("echo", json!({"message": "three"})).await;
    assert_eq!(reason(&r), "Rejected", "{r}");
    assert!(c.names().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_sessions() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "echo", &live["echo"])],
    ));
    let gw = Gateway::start(dir.path(), &[]);
    gw.wait_ready(200, "sha256:").await;
    let route = gw.route(SRV);
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let route = route.clone();
            tokio::spawn(async move {
                let mut c = Client::connect(&route).await;
                let _stream = c.open_stream().await;
                let msg = format!("session-{i}");
                let r = c.call("echo", json!({"message": msg})).await;
                assert!(r.to_string().contains(&msg), "{r}");
                assert_eq!(c.delete().await, 200);
                c.session.clone().unwrap()
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for t in tasks {
        sessions.push(t.await.unwrap());
    }
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 20, "every session has its own id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_upstreams_are_bridged() {
    // The legacy HTTP+SSE transport upstream; streamable HTTP towards the agent.
    let direct = Server::start("everything-http", &[]);
    let live = digests(&direct.url).await;
    let server = Server::start("everything-sse", &[]);
    let mut b = bundle(
        &[(SRV, &server.url)],
        &[
            T::eligible(SRV, "echo", &live["echo"]),
            T::rejected(SRV, "get-sum", &live["get-sum"], "team/no-sums"),
        ],
    );
    b["servers"][0]["endpoint"]["transport"] = json!("SSE");
    let mut dir = BundleDir::new();
    dir.publish_bundle(&b);
    let gw = Gateway::start(dir.path(), &[]);
    gw.wait_ready(200, "sha256:").await;

    // A call before any list: the gateway lists the SSE server itself.
    let mut fresh = Client::connect(&gw.route(SRV)).await;
    assert!(
        fresh.session.is_some(),
        "the gateway gives the session an id"
    );
    let r = fresh.call("echo", json!({"message": "sse-first"})).await;
    assert!(r.to_string().contains("sse-first"), "{r}");

    let mut c = Client::connect(&gw.route(SRV)).await;
    let mut stream = c.open_stream().await;
    assert_eq!(c.names().await, vec!["echo"]);
    let r = c.call("get-sum", json!({"a": 1, "b": 2})).await;
    assert_eq!(reason(&r), "Rejected", "{r}");
    let r = c.call("echo", json!({"message": 1})).await;
    assert_eq!(reason(&r), "InvalidArguments", "{r}");
    assert!(
        c.call("echo", json!({"message": "bridged"}))
            .await
            .to_string()
            .contains("bridged")
    );

    // A swap reaches the session's GET stream.
    let mut b2 = bundle(&[(SRV, &server.url)], &[]);
    b2["servers"][0]["endpoint"]["transport"] = json!("SSE");
    dir.publish_bundle(&b2);
    expect_event(
        &mut stream,
        "notifications/tools/list_changed",
        Duration::from_secs(5),
    )
    .await;
    assert!(c.names().await.is_empty());
    assert_eq!(c.delete().await, 200);
    let (status, _) = c
        .raw(json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        .await;
    assert_eq!(status, 404, "a deleted session is gone");
}

/// `audit verify` run as the binary's subcommand on `log`: exit code and stdout.
fn verify_cli(files: &[&std::path::Path], extra: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpgov-gateway"))
        .args(["audit", "verify"])
        .args(extra)
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_file_chain_survives_a_restart_and_verifies() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[T::eligible(SRV, "echo", &live["echo"])],
    ));
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("audit.log");
    let key = logs.path().join("key");
    std::fs::write(&key, [42u8; 32]).unwrap();
    let flags = [
        "--audit-file",
        file.to_str().unwrap(),
        "--audit-key-file",
        key.to_str().unwrap(),
    ];
    let mut digests_seen = Vec::new();
    for round in 0..2 {
        let gw = Gateway::start(dir.path(), &flags);
        gw.wait_ready(200, "sha256:").await;
        let mut c = Client::connect(&gw.route(SRV)).await;
        let r = c.call("echo", json!({"message": "same"})).await;
        assert_ne!(r["isError"], true, "{r}");
        let r = c.call("no-such-tool", json!({})).await;
        assert_eq!(reason(&r), "NotInBundle", "{r}");
        let (_, metrics) = gw.get_ops("/metrics").await;
        let seq: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("mcpgov_gateway_audit_sequence "))
            .unwrap_or_else(|| panic!("no audit sequence in {metrics}"))
            .parse()
            .unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(
            last["seq"], seq,
            "the metric is the chain's head (round {round})"
        );
        let echo = text
            .lines()
            .rev()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["tool"] == "echo" && r["method"] == "tools/call")
            .unwrap();
        digests_seen.push(echo["argDigest"].as_str().unwrap().to_string());
        assert!(!text.contains("same"), "argument values never in clear");
        drop(gw);
    }
    assert_eq!(
        digests_seen[0], digests_seen[1],
        "a keyed digest is stable across restarts with the same key"
    );

    let (code, out) = verify_cli(&[&file], &["--from-genesis"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: "), "{out}");

    // A copy with one decision flipped is caught, and the line is named.
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains(r#""decision":"deny""#))
        .unwrap();
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    edited[i] = edited[i].replace(r#""decision":"deny""#, r#""decision":"allow""#);
    let bad = logs.path().join("edited.log");
    std::fs::write(&bad, edited.join("\n") + "\n").unwrap();
    let (code, out) = verify_cli(&[&bad], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(":{}", i + 1)),
        "names line {}: {out}",
        i + 1
    );
    let (code, _) = verify_cli(&[], &[]);
    assert_eq!(code, 2, "no file is a usage error");
}
