//! Fairness between tenants (issue 10, finding 1) on the real API server: one
//! namespace's deliberately expensive Grants must not hold up another namespace's
//! Agent. Its own test binary: the operator here watches every namespace.

use mcpgov::crd::Agent;
use mcpgov_e2e::*;
use std::time::{Duration, Instant};

/// Two globs at the input limits whose overlap needs ~900,000 search steps: over the
/// per-comparison budget, so every exception check on the path spends a whole budget.
fn expensive_pair() -> (String, String) {
    let a = format!("file:///{}", format!("{}*", "a".repeat(60)).repeat(16));
    let b = format!("file:///{}", format!("*{}", "a".repeat(60)).repeat(16));
    (a, b)
}

const AGENTS: usize = 6;

fn attacker_estate() -> (String, String) {
    let (a, b) = expensive_pair();
    let governance = format!(
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: fs}}
spec:
  endpoint: {{url: "http://fs.local:8080/mcp"}}
  dataAccess: [{{tool: read, resource: "{a}", mode: Reads}}]
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {{name: deny}}
spec: {{effect: Deny, governs: {{resources: [{{uri: "{b}"}}]}}}}
"#
    );
    let mut agents = String::new();
    for i in 0..AGENTS {
        let exceptions: String = (0..10)
            .map(|k| format!("\n    - {{policy: deny, resource: \"file:///x{k}/**\", reason: r}}"))
            .collect();
        agents.push_str(&format!(
            r#"
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: bot-{i}}}
spec: {{profile: Review}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: g-{i}}}
spec:
  agent: bot-{i}
  tools: ["fs::read"]
  expectedExceptions:{exceptions}
"#
        ));
    }
    (governance, agents)
}

const VICTIM: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: gw}
spec:
  endpoint: {url: "http://gw.local:8080/mcp"}
  dataAccess: [{tool: publish, resource: "file:///drafts", mode: Writes}]
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: drafts}
spec: {effect: Deny, governs: {resources: [{uri: "file:///drafts"}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: writer}
spec: {profile: Strict}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: publish}
spec: {agent: writer, tools: ["gw::publish"]}
"#;

async fn catalog(ns: &str, server: &str, tool: &str) {
    let dir = std::env::temp_dir().join(format!("mcpgov-{ns}"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("catalog.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: {server}, namespace: {ns}}}\n\
             spec: {{endpoint: {{url: \"http://{server}.local:8080/mcp\"}}}}\nstatus:\n  \
             lastSuccessfulCrawlTime: \"2026-11-01T00:00:00Z\"\n  tools: [{{name: {tool}, contractDigest: \"sha256:aa\"}}]\n"
        ),
    )
    .unwrap();
    assert_eq!(mcpgov::catalog::apply(&[file], ns).await.unwrap(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

fn violations(a: &Agent) -> Option<i64> {
    a.status.as_ref().and_then(|s| s.violations)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expensive_namespace_does_not_hold_up_another() {
    let client = client().await;
    // Names sort the attacker first: without fairness its agents would all go first.
    let attacker = namespace(&client, "fair-a").await;
    let victim = namespace(&client, "fair-b").await;
    let op = Operator::start_all_namespaces(&victim).await;

    apply(&client, &victim, VICTIM).await.unwrap();
    catalog(&victim, "gw", "publish").await;
    let writers: kube::Api<Agent> = kube::Api::namespaced(client.clone(), &victim);
    wait_for(&writers, "writer", "one violation", |a| {
        violations(a) == Some(1)
    })
    .await;

    // The attacker's server and Policy with its catalog, then its agents; at once after
    // them, the victim excuses its reach (violations 1 -> 0).
    let (governance, agents) = attacker_estate();
    apply(&client, &attacker, &governance).await.unwrap();
    catalog(&attacker, "fs", "read").await;
    let started = Instant::now();
    apply(&client, &attacker, &agents).await.unwrap();
    apply(
        &client,
        &victim,
        "apiVersion: mcpgov.io/v1alpha1\nkind: Policy\nmetadata: {name: drafts}\n\
         spec: {effect: Deny, governs: {resources: [{uri: \"file:///archive\"}]}}\n",
    )
    .await
    .unwrap();

    let bots: kube::Api<Agent> = kube::Api::namespaced(client.clone(), &attacker);
    let (mut victim_done, mut attacker_done) = (None, None);
    while victim_done.is_none() || attacker_done.is_none() {
        assert!(started.elapsed() < DEADLINE * 3, "did not converge");
        if victim_done.is_none() && violations(&writers.get("writer").await.unwrap()) == Some(0) {
            victim_done = Some(started.elapsed());
        }
        if attacker_done.is_none() {
            let mut all = true;
            for i in 0..AGENTS {
                all &= violations(&bots.get(&format!("bot-{i}")).await.unwrap()).is_some();
            }
            if all {
                attacker_done = Some(started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (v, a) = (victim_done.unwrap(), attacker_done.unwrap());
    println!("victim's change visible after {v:?}; the attacker's {AGENTS} agents after {a:?}");
    assert!(
        v < a,
        "the victim waited for the whole attacker: {v:?} vs {a:?}"
    );
    // Every attacker agent failed closed on the undecided comparison.
    for i in 0..AGENTS {
        let b = bots.get(&format!("bot-{i}")).await.unwrap();
        assert_eq!(violations(&b), Some(1), "bot-{i} keeps its violation");
    }
    assert!(
        op.metric("mcpgov_evaluation_slices_exhausted_total", &[])
            .await
            >= 1.0
    );
    op.stop();
}
