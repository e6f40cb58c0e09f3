//! The operator on a real kube-apiserver + etcd: status, bundles, re-evaluation,
//! no-op resyncs and restarts, schema validation.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use mcpgov::crd::{Agent, Grant, MCPServer, Policy};
use mcpgov_e2e::*;
use std::process::Command;

/// The quickstart estate in `ns`, with the catalog in the MCPServer's status.
fn estate(ns: &str) -> String {
    format!(
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: gw}}
spec:
  endpoint: {{url: "http://gw.{ns}.svc:8080/mcp"}}
  dataAccess:
    - {{tool: read_note, resource: "file:///demo/notes", mode: Reads, provenance: {{evidence: "gw.py::read_note"}}}}
    - {{tool: publish_note, resource: "file:///demo/drafts", mode: Writes, provenance: {{evidence: "gw.py::publish_note"}}}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {{name: drafts-deny}}
spec:
  effect: Deny
  governs: {{resources: [{{uri: "file:///demo/drafts", provenance: {{evidence: "POL-1"}}}}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: vibe-coder}}
spec: {{profile: Strict}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: notes}}
spec:
  agent: vibe-coder
  tools: ["gw::read_note", "gw::publish_note"]
  provenance: {{evidence: "T-1"}}
"#
    )
}

fn catalog(ns: &str) -> String {
    format!(
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: gw, namespace: {ns}}}
spec: {{endpoint: {{url: "http://gw.{ns}.svc:8080/mcp"}}}}
status:
  lastSuccessfulCrawlTime: "2026-11-01T00:00:00Z"
  tools:
    - {{name: read_note, contractDigest: "sha256:aa"}}
    - {{name: publish_note, contractDigest: "sha256:bb"}}
"#
    )
}

/// Apply the estate and its catalog; returns the catalog file (for the CLI).
async fn setup(client: &kube::Client, ns: &str) -> tempfile_path::Dir {
    apply(client, ns, &estate(ns))
        .await
        .expect("estate applies");
    let dir = tempfile_path::Dir::new(ns);
    std::fs::write(
        dir.path("estate.yaml"),
        estate(ns).replace(
            "metadata: {name:",
            &format!("metadata: {{namespace: {ns}, name:"),
        ),
    )
    .unwrap();
    std::fs::write(dir.path("catalog.yaml"), catalog(ns)).unwrap();
    let n = mcpgov::catalog::apply(&[dir.path("catalog.yaml")], ns)
        .await
        .expect("catalog applies");
    assert_eq!(n, 1);
    // The catalog arrives as a status-only change: the server's Ready must follow it.
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), ns);
    wait_condition(&servers, "gw", "Ready", "True").await;
    dir
}

async fn violations(agents: &Api<Agent>, name: &str, n: i64) -> Agent {
    wait_for(
        agents,
        name,
        &format!("{name} with {n} violation(s)"),
        |a| a.status.as_ref().and_then(|s| s.violations) == Some(n),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn violation_then_exception_then_policy_change() {
    let client = client().await;
    let ns = namespace(&client, "verdicts").await;
    let op = Operator::start(&ns, 300).await;
    let _dir = setup(&client, &ns).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);

    let a = violations(&agents, "vibe-coder", 1).await;
    let st = a.status.unwrap();
    assert_eq!(
        condition(Some(&st.conditions), "Compliant"),
        Some(("False".into(), "ViolationsFound".into()))
    );
    assert_eq!(
        condition(Some(&st.conditions), "Ready").map(|c| c.0),
        Some("True".into())
    );
    // The same facts, as Prometheus sees them. Graph sizes are read in the first quiet
    // second after a pass, which may come after this status shows: wait.
    op.wait_metric("mcpgov_agent_violations", &["agent=\"vibe-coder\""], 1.0)
        .await;
    op.wait_metric("mcpgov_graph_nodes", &["kind=\"Agent\""], 1.0)
        .await;
    op.wait_metric("mcpgov_graph_edges", &["kind=\"WRITES\""], 1.0)
        .await;
    for (name, label) in [
        ("mcpgov_agent_violations", "agent=\"vibe-coder\""),
        ("mcpgov_graph_nodes", "kind=\"Agent\""),
        ("mcpgov_graph_edges", "kind=\"WRITES\""),
    ] {
        assert_eq!(op.metric(name, &[label]).await, 1.0, "{name}");
    }
    assert_eq!(op.metric("mcpgov_build_info", &[]).await, 1.0);
    let v = &st.violation_details[0];
    assert_eq!(v.tool, format!("{ns}/gw::publish_note"));
    assert_eq!(v.path[3], "WRITES");
    assert_eq!(st.observed_generation, a.metadata.generation);

    // An exception the Policy allows (same namespace) turns it into an exception.
    apply(
        &client,
        &ns,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: notes}
spec:
  agent: vibe-coder
  tools: ["gw::read_note", "gw::publish_note"]
  expectedExceptions: [{policy: drafts-deny, tool: "gw::publish_note", reason: "editors publish"}]
  provenance: {evidence: "T-1"}
"#,
    )
    .await
    .unwrap();
    let a = wait_for(&agents, "vibe-coder", "the exception", |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.violations == Some(0) && s.exceptions == Some(1))
    })
    .await;
    assert_eq!(
        condition(Some(&a.status.unwrap().conditions), "Compliant").map(|c| c.0),
        Some("True".into())
    );

    // A second agent; a Policy change moves both.
    apply(
        &client,
        &ns,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: reader}
spec: {profile: Review}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: reader}
spec: {agent: reader, tools: ["gw::read_note"]}
"#,
    )
    .await
    .unwrap();
    violations(&agents, "reader", 0).await;
    apply(
        &client,
        &ns,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: drafts-deny}
spec:
  effect: Deny
  governs: {resources: [{uri: "file:///demo/**"}]}
"#,
    )
    .await
    .unwrap();
    violations(&agents, "reader", 1).await;
    // vibe-coder's exception names publish_note only: read_note is now a violation.
    violations(&agents, "vibe-coder", 1).await;
    let policies: Api<Policy> = Api::namespaced(client.clone(), &ns);
    let p = wait_for(&policies, "drafts-deny", "policy counts", |p| {
        p.status.as_ref().and_then(|s| s.violations) == Some(2)
    })
    .await;
    assert_eq!(p.status.unwrap().orphan, Some(false));
    op.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn bundle_configmap_holds_the_cli_bytes_and_follows_grants() {
    let client = client().await;
    let ns = namespace(&client, "bundle").await;
    let op = Operator::start(&ns, 300).await;
    let dir = setup(&client, &ns).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);

    let a = violations(&agents, "vibe-coder", 1).await;
    let published = a.status.unwrap().bundle.expect("bundle status");
    assert_eq!(published.config_map_name, "vibe-coder-mcpgov-bundle");
    let cm = cms.get(&published.config_map_name).await.unwrap();
    let bytes = cm.data.as_ref().unwrap()["bundle.json"].clone();
    assert_eq!(
        cm.metadata.annotations.as_ref().unwrap()["mcpgov.io/bundle-sha256"],
        published.sha256
    );
    assert_eq!(
        cm.metadata.owner_references.as_ref().unwrap()[0].kind,
        "Agent"
    );
    assert_eq!(
        cm.metadata.labels.as_ref().unwrap()["mcpgov.io/agent"],
        "vibe-coder"
    );

    // The offline CLI on the same manifests and catalog prints the same bytes.
    let out = Command::new(mcpgov_bin())
        .args([
            "bundle",
            &format!("{ns}/vibe-coder"),
            "--governance-namespace",
            &ns,
            "-f",
        ])
        .arg(dir.path("estate.yaml"))
        .arg("--catalog")
        .arg(dir.path("catalog.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        bytes,
        "CLI and operator agree byte for byte"
    );

    // Deleting the Grant empties the bundle (the ConfigMap stays, listing nothing).
    delete(&client, &ns, ("mcpgov.io/v1alpha1", "Grant"), "notes").await;
    let cm = wait_for(&cms, &published.config_map_name, "an empty bundle", |cm| {
        cm.data
            .as_ref()
            .is_some_and(|d| d["bundle.json"].contains(r#""tools":[]"#))
    })
    .await;
    let next = published.revision.unwrap() + 1;
    assert_eq!(
        cm.metadata.annotations.unwrap()["mcpgov.io/revision"],
        next.to_string(),
        "each new content is one revision"
    );

    // Disabling the bundle removes the ConfigMap.
    apply(&client, &ns, "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: vibe-coder}\nspec: {bundle: {enabled: false}}\n")
        .await
        .unwrap();
    let start = std::time::Instant::now();
    while cms
        .get_opt(&published.config_map_name)
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            start.elapsed() < DEADLINE,
            "bundle ConfigMap was not removed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    op.stop();
}

/// An expected exception stops excusing at its expiry second, not at the next resync
/// (300 s here): the operator schedules a re-evaluation at the earliest expiry. Grant
/// status shows the expiry (and when it has passed), and the metric carries it until
/// the exception or the Grant goes away.
#[tokio::test(flavor = "multi_thread")]
async fn an_exception_expires_on_time() {
    let client = client().await;
    let ns = namespace(&client, "expiry").await;
    let op = Operator::start(&ns, 300).await;
    let _dir = setup(&client, &ns).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let grants: Api<Grant> = Api::namespaced(client.clone(), &ns);
    violations(&agents, "vibe-coder", 1).await;
    let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(12);
    let grant = |exceptions: &str| {
        format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: notes}}
spec:
  agent: vibe-coder
  tools: ["gw::read_note", "gw::publish_note"]
  expectedExceptions: [{exceptions}]
"#
        )
    };
    let excused = format!(
        r#"{{policy: drafts-deny, reason: "until the review", owner: "team-notes", expires: "{expires}"}}"#
    );
    apply(&client, &ns, &grant(&excused)).await.unwrap();
    violations(&agents, "vibe-coder", 0).await;
    let expiry_of = |expired: bool| {
        let want = (0, "drafts-deny".to_string(), expires.to_string(), expired);
        move |g: &Grant| {
            g.status.as_ref().is_some_and(|s| {
                s.exception_expiries
                    .iter()
                    .map(|e| (e.index, e.policy.clone(), e.expires.clone(), e.expired))
                    .collect::<Vec<_>>()
                    == [want.clone()]
            })
        }
    };
    wait_for(
        &grants,
        "notes",
        "the expiry in status, not yet expired",
        expiry_of(false),
    )
    .await;
    let series = [
        format!("namespace=\"{ns}\""),
        "grant=\"notes\"".to_string(),
        "index=\"0\"".to_string(),
        "policy=\"drafts-deny\"".to_string(),
        "owner=\"team-notes\"".to_string(),
    ];
    let series: Vec<&str> = series.iter().map(String::as_str).collect();
    let metric = "mcpgov_exception_expiry_timestamp_seconds";
    let value = op.metric(metric, &series).await;
    let want = expires.as_millisecond() as f64 / 1000.0;
    assert!(
        (value - want).abs() < 0.002,
        "{metric} is {value}, the expiry is {want}"
    );

    violations(&agents, "vibe-coder", 1).await;
    let late = jiff::Timestamp::now().duration_since(expires);
    println!("violation back {late:?} after the exception expired");
    assert!(late >= jiff::SignedDuration::ZERO, "not before it expired");
    assert!(
        late < jiff::SignedDuration::from_secs(30),
        "on time, not at a resync: {late:?}"
    );
    wait_for(
        &grants,
        "notes",
        "the expiry in status, expired",
        expiry_of(true),
    )
    .await;
    assert_eq!(
        op.metric(metric, &series).await,
        value,
        "an expired exception keeps its series while it is in the Grant"
    );

    // The exception removed: its status entry and its series go.
    apply(&client, &ns, &grant("")).await.unwrap();
    wait_for(&grants, "notes", "no expiries in status", |g| {
        g.status
            .as_ref()
            .is_some_and(|s| s.exception_expiries.is_empty())
    })
    .await;
    wait_series(&op, metric, &series, 0).await;

    // The Grant removed: its series go too.
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 30);
    apply(
        &client,
        &ns,
        &grant(&format!(
            r#"{{policy: drafts-deny, reason: "r", owner: "team-notes", expires: "{later}"}}"#
        )),
    )
    .await
    .unwrap();
    wait_series(&op, metric, &series, 1).await;
    delete(&client, &ns, ("mcpgov.io/v1alpha1", "Grant"), "notes").await;
    wait_series(&op, metric, &series, 0).await;
    op.stop();
}

/// Wait until exactly `n` samples of `name` carry every label given.
async fn wait_series(op: &Operator, name: &str, labels: &[&str], n: usize) {
    let start = std::time::Instant::now();
    loop {
        let text = op.metrics_text().await;
        let found = text
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .filter(|l| labels.iter().all(|want| l.contains(want)))
            .count();
        if found == n {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{name}{labels:?}: {found} series, want {n}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Issue 10, finding 4: a bundle name that names someone else's ConfigMap, or another
/// Agent's bundle, is a conflict on the claimant; nothing is written or deleted.
#[tokio::test(flavor = "multi_thread")]
async fn a_configmap_mcpgov_did_not_create_is_never_taken_over() {
    let client = client().await;
    let ns = namespace(&client, "takeover").await;
    let op = Operator::start(&ns, 300).await;
    let _dir = setup(&client, &ns).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let owned = violations(&agents, "vibe-coder", 1).await;
    let owned_bundle = owned.status.unwrap().bundle.unwrap();

    apply(
        &client,
        &ns,
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {app.properties: "mode=prod"}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: squatter}
spec: {profile: Explore, bundle: {configMapName: app-config}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: thief}
spec: {profile: Explore, bundle: {configMapName: vibe-coder-mcpgov-bundle}}
"#,
    )
    .await
    .unwrap();
    let conflict = |a: &Agent| {
        condition(
            a.status.as_ref().map(|s| s.conditions.as_slice()),
            "BundlePublished",
        ) == Some(("False".into(), "ConfigMapConflict".into()))
    };
    wait_for(&agents, "squatter", "ConfigMapConflict", conflict).await;
    let thief = wait_for(&agents, "thief", "ConfigMapConflict", conflict).await;
    let msg = thief
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "BundlePublished")
        .unwrap()
        .message;
    assert!(
        msg.contains(&format!("Agent {ns}/vibe-coder")),
        "names the owner: {msg}"
    );

    // The application's ConfigMap is untouched: no label, owner or bundle key.
    let app = cms.get("app-config").await.unwrap();
    assert_eq!(app.data.as_ref().unwrap().len(), 1);
    assert_eq!(app.data.as_ref().unwrap()["app.properties"], "mode=prod");
    assert!(app.metadata.labels.is_none() && app.metadata.owner_references.is_none());
    // The first owner keeps its bundle, bytes and status.
    let cm = cms.get(&owned_bundle.config_map_name).await.unwrap();
    assert_eq!(
        cm.metadata.annotations.as_ref().unwrap()["mcpgov.io/bundle-sha256"],
        owned_bundle.sha256
    );
    let a = agents.get("vibe-coder").await.unwrap();
    assert_eq!(
        a.status.unwrap().bundle.unwrap().sha256,
        owned_bundle.sha256
    );

    // Deleting the claimants deletes nothing of theirs, since nothing is theirs.
    delete(&client, &ns, ("mcpgov.io/v1alpha1", "Agent"), "squatter").await;
    delete(&client, &ns, ("mcpgov.io/v1alpha1", "Agent"), "thief").await;
    // A later change proves the operator has handled both deletions.
    delete(&client, &ns, ("mcpgov.io/v1alpha1", "Grant"), "notes").await;
    violations(&agents, "vibe-coder", 0).await;
    assert!(cms.get_opt("app-config").await.unwrap().is_some());
    assert!(
        cms.get_opt(&owned_bundle.config_map_name)
            .await
            .unwrap()
            .is_some()
    );
    op.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn no_op_resync_and_restart_write_nothing() {
    let client = client().await;
    let ns = namespace(&client, "noop").await;
    let op = Operator::start(&ns, 1).await;
    let _dir = setup(&client, &ns).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    violations(&agents, "vibe-coder", 1).await;
    let grants: Api<Grant> = Api::namespaced(client.clone(), &ns);
    wait_for(&grants, "notes", "grant status", |g| {
        g.status.as_ref().and_then(|s| s.resolved_tools) == Some(2)
    })
    .await;

    // Once a full resync has completed after convergence, two more must write nothing.
    // (The resync counter moves when a resync starts; the next one starts only after
    // the previous reconcile has finished.)
    let resync = "mcpgov_agent_evaluations_total";
    let r0 = op.metric(resync, &["trigger=\"resync\""]).await;
    op.wait_metric(resync, &["trigger=\"resync\""], r0 + 2.0)
        .await;
    let written = op
        .metric("mcpgov_status_writes_total", &["result=\"written\""])
        .await;
    let cm_written = op
        .metric("mcpgov_configmap_writes_total", &["result=\"written\""])
        .await;
    op.wait_metric(resync, &["trigger=\"resync\""], r0 + 5.0)
        .await;
    assert_eq!(
        op.metric("mcpgov_status_writes_total", &["result=\"written\""])
            .await,
        written,
        "status writes on a no-op resync"
    );
    assert_eq!(
        op.metric("mcpgov_configmap_writes_total", &["result=\"written\""])
            .await,
        cm_written
    );
    println!(
        "no-op resync: 0 status writes, 0 ConfigMap writes (before: {written} status, {cm_written} ConfigMap)"
    );
    op.stop();

    // A restarted operator republishes nothing that did not change.
    let op = Operator::start(&ns, 300).await;
    op.wait_metric(
        "mcpgov_status_writes_total",
        &["kind=\"Agent\"", "result=\"skipped\""],
        1.0,
    )
    .await;
    op.wait_metric(
        "mcpgov_configmap_writes_total",
        &["result=\"skipped\""],
        1.0,
    )
    .await;
    op.wait_metric(
        "mcpgov_status_writes_total",
        &["kind=\"Policy\"", "result=\"skipped\""],
        1.0,
    )
    .await;
    assert_eq!(
        op.metric("mcpgov_status_writes_total", &["result=\"written\""])
            .await,
        0.0
    );
    assert_eq!(
        op.metric("mcpgov_configmap_writes_total", &["result=\"written\""])
            .await,
        0.0
    );
    op.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_refuses_invalid_manifests_with_the_schema_message() {
    let client = client().await;
    let ns = namespace(&client, "schema").await;
    for (yaml, needle) in [
        (
            "apiVersion: mcpgov.io/v1alpha1\nkind: Policy\nmetadata: {name: p}\nspec: {effect: Block, governs: {resources: [{uri: 'x:1'}]}}\n",
            "Unsupported value: \"Block\"",
        ),
        (
            "apiVersion: mcpgov.io/v1alpha1\nkind: Policy\nmetadata: {name: p}\nspec: {effect: Deny, governs: {}}\n",
            "a Policy must govern at least one resource or tool",
        ),
        (
            "apiVersion: mcpgov.io/v1alpha1\nkind: Grant\nmetadata: {name: g}\nspec: {agent: a, tools: []}\n",
            "spec.tools",
        ),
        (
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {name: s}\nspec: {endpoint: {url: 'ftp://x/mcp'}}\n",
            "spec.endpoint.url",
        ),
        (
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {name: s}\nspec: {endpoint: {url: 'http://x/mcp', timeoutSeconds: 0}}\n",
            "timeoutSeconds",
        ),
    ] {
        let err = apply(&client, &ns, yaml).await.expect_err(yaml);
        let text = err.to_string();
        assert!(text.contains(needle), "expected {needle:?} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cross_namespace_grant_without_sharing_is_refused_in_status() {
    let client = client().await;
    let ns = namespace(&client, "tenancy").await;
    let op = Operator::start(&ns, 300).await;
    apply(
        &client,
        &ns,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: bot}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: steal}
spec: {agent: bot, tools: ["kube-system/billing::refund"]}
"#,
    )
    .await
    .unwrap();
    let grants: Api<Grant> = Api::namespaced(client.clone(), &ns);
    let g = wait_condition(&grants, "steal", "Resolved", "False").await;
    let st = g.status.unwrap();
    assert_eq!(
        condition(Some(&st.conditions), "Resolved").unwrap().1,
        "CrossNamespaceDenied"
    );
    assert_eq!(st.resolved_tools, Some(0));
    assert_eq!(st.unresolved[0].reference, "kube-system/billing::refund");
    op.stop();
}

/// A per-test scratch directory under the system temp dir.
mod tempfile_path {
    use std::path::PathBuf;

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("mcpgov-{name}"));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self, file: &str) -> PathBuf {
            self.0.join(file)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
