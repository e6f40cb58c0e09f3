//! The operator crawling real MCP servers on loopback: catalogs land in status and the
//! graph, a dead server keeps its last good catalog marked stale and recovers, and a
//! changed tool list shows up as drift and a new contract digest.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use mcpgov::crd::{Agent, Grant, MCPServer};
use mcpgov_e2e::*;

fn crawled(s: &MCPServer) -> Option<(String, String)> {
    condition(
        s.status.as_ref().map(|s| s.conditions.as_slice()),
        "Crawled",
    )
}

/// An Explore agent `helper` and a Grant of one tool, as YAML documents to append.
fn helper_granted(tool: &str) -> String {
    format!(
        r#"---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: helper}}
spec: {{profile: Explore}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: helper}}
spec: {{agent: helper, tools: ["{tool}"]}}
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_is_crawled_goes_stale_and_recovers() {
    let client = client().await;
    let ns = namespace(&client, "crawl").await;
    let mut srv = McpServer::start("everything-http", &[]);
    let op = Operator::start_crawling(&ns, 300).await;
    apply(
        &client,
        &ns,
        &format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: everything}}
spec:
  endpoint: {{url: "{}", timeoutSeconds: 5}}
  crawl: {{intervalSeconds: 10}}
{}"#,
            srv.url,
            helper_granted("everything::echo")
        ),
    )
    .await
    .unwrap();

    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    let s = wait_condition(&servers, "everything", "Crawled", "True").await;
    let st = s.status.unwrap();
    assert!(st.tool_count.unwrap() >= 10);
    // The governance side follows the crawl: Ready (indexed) without another event.
    wait_condition(&servers, "everything", "Ready", "True").await;
    assert_eq!(st.protocol_version.as_deref(), Some("2025-11-25"));
    let echo = st
        .tools
        .iter()
        .find(|t| t.name == "echo")
        .expect("echo crawled");
    assert!(
        echo.contract_digest
            .as_deref()
            .unwrap()
            .starts_with("sha256:")
    );
    let first_success = st.last_successful_crawl_time.clone().unwrap();

    let grants: Api<Grant> = Api::namespaced(client.clone(), &ns);
    wait_for(&grants, "helper", "the grant resolves", |g| {
        g.status.as_ref().and_then(|s| s.resolved_tools) == Some(1)
    })
    .await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    wait_for(&agents, "helper", "echo is eligible", |a| {
        a.status.as_ref().and_then(|s| s.eligible) == Some(1)
    })
    .await;

    // The server goes away: Crawled=False, the catalog stays (stale), decisions hold.
    srv.stop();
    let s = wait_condition(&servers, "everything", "Crawled", "False").await;
    let st = s.status.unwrap();
    assert!(
        st.tools.iter().any(|t| t.name == "echo"),
        "last good catalog kept"
    );
    assert!(st.last_error.is_some());
    let msg = st
        .conditions
        .iter()
        .find(|c| c.type_ == "Crawled")
        .unwrap()
        .message
        .clone();
    assert!(msg.contains("kept (stale)"), "{msg}");
    assert!(st.last_successful_crawl_time.as_deref() >= Some(first_success.as_str()));
    let a = agents.get("helper").await.unwrap();
    assert_eq!(
        a.status.unwrap().eligible,
        Some(1),
        "a stale catalog does not flip decisions"
    );

    // It comes back on the same address: the crawler recovers (backoff, not interval).
    srv.restart();
    wait_condition(&servers, "everything", "Crawled", "True").await;
    op.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_tool_list_is_drift_and_a_new_contract_digest() {
    let client = client().await;
    let ns = namespace(&client, "drift").await;
    let dir = std::env::temp_dir().join(format!("mcpgov-variant-{ns}"));
    std::fs::create_dir_all(&dir).unwrap();
    let variant = dir.join("tools.json");
    let write = |tools: serde_json::Value| std::fs::write(&variant, tools.to_string()).unwrap();
    write(serde_json::json!([
        {"name": "read_doc", "description": "Read a document", "annotations": {"readOnlyHint": true}},
        {"name": "delete_doc", "description": "Delete a document", "annotations": {"destructiveHint": true}}
    ]));
    let srv = McpServer::start("testserver", &["--variant-file", variant.to_str().unwrap()]);
    let op = Operator::start_crawling(&ns, 300).await;
    let manifest = |interval: u32| {
        format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: docs}}
spec:
  endpoint: {{url: "{}", timeoutSeconds: 5}}
  crawl: {{intervalSeconds: {interval}}}
  dataAccess:
    - {{tool: delete_doc, resource: "file:///docs/**", mode: Writes, provenance: {{evidence: "docs.py::delete"}}}}
"#,
            srv.url
        )
    };
    apply(&client, &ns, &manifest(10)).await.unwrap();
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    // The catalog (crawler's write) and the drift (the index's) are two writes: wait for
    // both to reflect the first crawl.
    let s = wait_for(&servers, "docs", "first crawl, no drift", |s| {
        s.status
            .as_ref()
            .is_some_and(|st| st.tool_count == Some(2) && st.drift.is_empty())
    })
    .await;
    let digest_of = |s: &MCPServer, name: &str| {
        s.status
            .as_ref()
            .unwrap()
            .tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.contract_digest.clone())
    };
    let before = digest_of(&s, "read_doc").unwrap();

    // The server drops delete_doc and rewords read_doc.
    write(serde_json::json!([
        {"name": "read_doc", "description": "Read a document (v2)", "annotations": {"readOnlyHint": true}}
    ]));
    let s = wait_for(&servers, "docs", "drift after the re-crawl", |s| {
        s.status
            .as_ref()
            .is_some_and(|st| st.tool_count == Some(1) && !st.drift.is_empty())
    })
    .await;
    assert_eq!(
        s.status.as_ref().unwrap().drift[0].tool,
        format!("{ns}/docs::delete_doc")
    );
    assert_ne!(
        digest_of(&s, "read_doc").unwrap(),
        before,
        "the contract changed"
    );
    op.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_come_only_from_opted_in_secrets_bound_to_the_host() {
    let client = client().await;
    let ns = namespace(&client, "auth").await;
    let srv = McpServer::start("testserver", &["--auth-token", "s3cret-token"]);
    let op = Operator::start_crawling(&ns, 300).await;
    let server = |secret_key: &str| {
        format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: private}}
spec:
  endpoint:
    url: "{}"
    timeoutSeconds: 5
    headers:
      - name: Authorization
        valueFrom: {{secretKeyRef: {{name: private-token, key: {secret_key}}}}}
"#,
            srv.url
        )
    };
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    let refused = |s: &MCPServer| crawled(s).is_some_and(|c| c.1 == "SecretNotAllowed");
    // Not opted in: the operator refuses it, and sends nothing.
    apply(
        &client,
        &ns,
        r#"
apiVersion: v1
kind: Secret
metadata: {name: private-token}
stringData: {token: "Bearer s3cret-token", wrong: "Bearer nope"}
"#,
    )
    .await
    .unwrap();
    apply(&client, &ns, &server("wrong")).await.unwrap();
    let s = wait_for(&servers, "private", "SecretNotAllowed", refused).await;
    assert!(message(&s).contains("not labelled mcpgov.io/credentials"));
    // Opted in, but bound to another host: still refused.
    let secret = |hosts: &str| {
        format!(
            r#"
apiVersion: v1
kind: Secret
metadata:
  name: private-token
  labels: {{mcpgov.io/credentials: "true"}}
  annotations: {{mcpgov.io/allowed-hosts: "{hosts}"}}
stringData: {{token: "Bearer s3cret-token", wrong: "Bearer nope"}}
"#
        )
    };
    apply(&client, &ns, &secret("api.example.com"))
        .await
        .unwrap();
    // A spec change crawls at once (the Secret change alone does not).
    apply(&client, &ns, &server("token")).await.unwrap();
    let s = wait_for(&servers, "private", "bound elsewhere", |s| {
        refused(s) && message(s).contains("api.example.com")
    })
    .await;
    assert!(
        message(&s).contains("only, not to 127.0.0.1"),
        "{}",
        message(&s)
    );
    // Bound to this server's host: used.
    let host = srv.url.split('/').nth(2).unwrap().to_string();
    apply(&client, &ns, &secret(&host)).await.unwrap();
    apply(&client, &ns, &server("wrong")).await.unwrap();
    let s = wait_for(&servers, "private", "Unauthorized", |s| {
        crawled(s).is_some_and(|c| c.1 == "Unauthorized")
    })
    .await;
    let st = s.status.unwrap();
    let msg = &st
        .conditions
        .iter()
        .find(|c| c.type_ == "Crawled")
        .unwrap()
        .message;
    assert!(
        msg.contains("realm=\"mcpgov-test\""),
        "the challenge is reported: {msg}"
    );
    let whole = serde_json::to_string(&st).unwrap();
    assert!(
        !whole.contains("nope") && !whole.contains("s3cret"),
        "no header value in status"
    );

    // The right key: the spec change crawls at once and succeeds.
    apply(&client, &ns, &server("token")).await.unwrap();
    wait_condition(&servers, "private", "Crawled", "True").await;
    op.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_changed_notification_re_crawls_before_the_interval() {
    let client = client().await;
    let ns = namespace(&client, "listchanged").await;
    let dir = std::env::temp_dir().join(format!("mcpgov-variant-{ns}"));
    std::fs::create_dir_all(&dir).unwrap();
    let variant = dir.join("tools.json");
    let write = |tools: serde_json::Value| std::fs::write(&variant, tools.to_string()).unwrap();
    write(serde_json::json!([
        {"name": "read_doc", "description": "Read a document"},
        {"name": "delete_doc", "description": "Delete a document"}
    ]));
    let srv = McpServer::start(
        "testserver",
        &[
            "--variant-file",
            variant.to_str().unwrap(),
            "--notify-on-change",
        ],
    );
    let op = Operator::start_crawling(&ns, 300).await;
    // An hour between scheduled crawls: within the test only a notification re-crawls.
    // Streamable HTTP speaks 2026-07-28 with this server (a `subscriptions/listen`
    // stream); SSE is a handshake session (notifications on its event stream).
    let sse_url = srv.sse_url.clone().expect("the testserver serves SSE");
    apply(
        &client,
        &ns,
        &format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: docs-http}}
spec:
  endpoint: {{url: "{}", timeoutSeconds: 5}}
  crawl: {{intervalSeconds: 3600}}
---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: docs-sse}}
spec:
  endpoint: {{url: "{sse_url}", transport: SSE, timeoutSeconds: 5}}
  crawl: {{intervalSeconds: 3600}}
"#,
            srv.url
        ),
    )
    .await
    .unwrap();
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    let tool_count =
        |n: i64| move |s: &MCPServer| s.status.as_ref().is_some_and(|st| st.tool_count == Some(n));
    let mut first = Vec::new();
    for name in ["docs-http", "docs-sse"] {
        let s = wait_for(&servers, name, "first crawl: 2 tools", tool_count(2)).await;
        first.push(s.status.unwrap().last_successful_crawl_time.unwrap());
    }

    // The server drops a tool and says so; the crawler listens and lists again.
    write(serde_json::json!([
        {"name": "read_doc", "description": "Read a document"}
    ]));
    for (name, before) in ["docs-http", "docs-sse"].into_iter().zip(first) {
        let s = wait_for(&servers, name, "a re-crawl: 1 tool", tool_count(1)).await;
        let st = s.status.unwrap();
        assert_eq!(st.tools.len(), 1, "{name}");
        assert!(
            st.last_successful_crawl_time.as_deref() > Some(before.as_str()),
            "{name}: a new crawl"
        );
    }
    op.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Started on servers that never crawled, the operator publishes an agent's first bundle
/// after the first crawl — not a bundle with every tool drifted, rewritten seconds later.
#[tokio::test(flavor = "multi_thread")]
async fn the_first_bundle_waits_for_the_first_crawl() {
    let client = client().await;
    let ns = namespace(&client, "first-crawl").await;
    // tools/list answers after 3 s: well after the watches list (~0.5 s).
    let srv = McpServer::start("testserver", &["--slow-list", "3"]);
    apply(
        &client,
        &ns,
        &format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: slow}}
spec:
  endpoint: {{url: "{}", timeoutSeconds: 10}}
{}"#,
            srv.url,
            helper_granted("slow::tool_000")
        ),
    )
    .await
    .unwrap();
    let op = Operator::start_crawling(&ns, 300).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    wait_for(&agents, "helper", "tool_000 is eligible", |a| {
        a.status.as_ref().and_then(|s| s.eligible) == Some(1)
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm = cms.get("helper-mcpgov-bundle").await.unwrap();
    let annotations = cm.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("mcpgov.io/revision").map(String::as_str),
        Some("1"),
        "one publish, after the crawl (a drifted bundle first would make this 2)"
    );
    assert!(cm.data.unwrap()["bundle.json"].contains(r#""decision":"eligible""#));
    drop(op);
}

fn message(s: &MCPServer) -> String {
    s.status
        .as_ref()
        .and_then(|st| st.conditions.iter().find(|c| c.type_ == "Crawled"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}
