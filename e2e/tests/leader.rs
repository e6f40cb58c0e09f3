//! Two replicas on one Lease: both keep the graph warm, only the holder writes; when the
//! leader dies the other takes over, rewrites nothing that was correct, and reflects a
//! change made during the failover.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use mcpgov::crd::Agent;
use mcpgov_e2e::*;
use std::time::{Duration, Instant};

const QUICKSTART: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: gw}
spec:
  endpoint: {url: "http://gw.example.svc:8080/mcp"}
  dataAccess:
    - {tool: publish_note, resource: "file:///demo/drafts", mode: Writes, provenance: {evidence: "gw.py"}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: drafts-deny}
spec: {effect: Deny, governs: {resources: [{uri: "file:///demo/drafts"}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: vibe-coder}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: notes}
spec: {agent: vibe-coder, tools: ["gw::publish_note"]}
"#;

async fn leaders(ops: &[&Operator]) -> f64 {
    let mut n = 0.0;
    for op in ops {
        n += op.metric("mcpgov_leader", &[]).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_lease_holder_writes_and_the_other_takes_over() {
    let client = client().await;
    let ns = namespace(&client, "leader").await;
    let a = Operator::start_elected(&ns, 4).await;
    let b = Operator::start_elected(&ns, 4).await;
    let start = Instant::now();
    while leaders(&[&a, &b]).await != 1.0 {
        assert!(start.elapsed() < DEADLINE, "no single leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    apply(&client, &ns, QUICKSTART).await.unwrap();
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let first = wait_for(&agents, "vibe-coder", "a violation in status", |a| {
        a.status.as_ref().and_then(|s| s.violations) == Some(1)
    })
    .await;
    let (leader, follower) = if a.metric("mcpgov_leader", &[]).await == 1.0 {
        (a, b)
    } else {
        (b, a)
    };
    let written = "mcpgov_status_writes_total";
    assert!(leader.metric(written, &["result=\"written\""]).await > 0.0);
    assert_eq!(
        follower.metric(written, &["result=\"written\""]).await,
        0.0,
        "a follower never writes"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let revision =
        |cm: &ConfigMap| cm.metadata.annotations.as_ref().unwrap()["mcpgov.io/revision"].clone();
    let bundle = first.status.unwrap().bundle.unwrap().config_map_name;
    let before = revision(&cms.get(&bundle).await.unwrap());

    // The leader dies without releasing the lease; a change lands during the failover.
    leader.stop();
    apply(
        &client,
        &ns,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: late}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: late}
spec: {agent: late, tools: ["gw::publish_note"]}
"#,
    )
    .await
    .unwrap();
    follower.wait_metric("mcpgov_leader", &[], 1.0).await;
    wait_for(&agents, "late", "the change made during failover", |a| {
        a.status.as_ref().and_then(|s| s.violations) == Some(1)
    })
    .await;
    // What was correct is not rewritten: the old bundle keeps its revision, and the
    // new leader wrote exactly one ConfigMap (the late agent's).
    assert_eq!(revision(&cms.get(&bundle).await.unwrap()), before);
    follower
        .wait_metric(
            "mcpgov_configmap_writes_total",
            &["result=\"skipped\""],
            1.0,
        )
        .await;
    assert_eq!(
        follower
            .metric("mcpgov_configmap_writes_total", &["result=\"written\""])
            .await,
        1.0
    );
    let vibe = agents.get("vibe-coder").await.unwrap();
    assert_eq!(
        vibe.metadata.managed_fields.map(|m| m.len()),
        first.metadata.managed_fields.map(|m| m.len())
    );
    follower.stop();
}
