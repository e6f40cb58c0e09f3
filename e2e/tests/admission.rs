//! The admission webhook on the real API server, called over TLS with the CA the
//! operator made and put in the configuration's caBundle: `kubectl apply` shows a
//! denial in the offline validator's words, a clean object passes, and with the
//! operator stopped applies pass (failurePolicy: Ignore).

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use mcpgov_e2e::*;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn configuration(name: &str, ns: &str, port: u16) -> ValidatingWebhookConfiguration {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "validate.mcpgov.io",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/validate")},
            "rules": [{
                "apiGroups": ["mcpgov.io"], "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["grants", "agents", "policies", "mcpservers"],
            }, {
                "apiGroups": ["mcpgov.io"], "apiVersions": ["v1alpha1"],
                "operations": ["DELETE"],
                "resources": ["mcpservers"],
            }],
            // Only this test's namespace: other tests run beside it.
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
            "admissionReviewVersions": ["v1"],
        }]
    }))
    .unwrap()
}

fn kubectl_apply(ns: &str, yaml: &str, extra: &[&str]) -> Output {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(["apply", "-n", ns, "-f", "-"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

const EXPIRED: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-git}
spec:
  agent: ci-bot
  tools: ["git::git_show"]
  expectedExceptions:
    - {policy: secrets-deny, reason: "release audit", expires: "2020-01-01T00:00:00Z"}
"#;

const BAD_URI: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-uri}
spec:
  agent: ci-bot
  tools: ["git::git_show"]
  expectedExceptions:
    - {policy: secrets-deny, reason: "r", resource: "file:///srv/%zz"}
"#;

const CLEAN: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-clean}
spec: {agent: docs-bot, tools: ["git::git_log"]}
"#;

const ESTATE: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: git}
spec:
  endpoint: {url: "http://git.example.svc:8080/mcp"}
  dataAccess:
    - {tool: git_show, resource: "file:///srv/app/**", mode: Reads}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: secrets-deny}
spec: {effect: Deny, governs: {resources: [{uri: "file:///srv/app/**"}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: ci-bot}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: release-bot}
spec: {}
"#;

const VIOLATING: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-git}
spec: {agent: ci-bot, tools: ["git::git_show"]}
"#;

const ENFORCE: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: secrets-deny}
spec: {effect: Deny, admission: Enforce, governs: {resources: [{uri: "file:///srv/app/**"}]}}
"#;

const RELEASE: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: release-bot-git}
spec:
  agent: release-bot
  tools: ["git::git_show"]
"#;

const RELEASE_EXCUSED: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: release-bot-git}
spec:
  agent: release-bot
  tools: ["git::git_show"]
  expectedExceptions:
    - {policy: secrets-deny, reason: "release notes read the tree"}
"#;

const DRIFTING: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-nosuch}
spec: {agent: ci-bot, tools: ["nosuch::x"]}
"#;

/// A ConfigMap of the namespace's own, not mcpgov's.
const FOREIGN_CONFIG_MAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: app-settings}
data: {k: v}
"#;

fn agent_with_bundle(name: &str, config_map: &str) -> String {
    format!(
        "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: {name}}}\nspec: {{bundle: {{configMapName: {config_map}}}}}\n"
    )
}

/// Apply until `done` holds on kubectl's output (the mirror follows the watch a few
/// milliseconds behind); the last output.
async fn apply_until(
    ns: &str,
    yaml: &str,
    extra: &[&str],
    done: impl Fn(&Output) -> bool,
) -> Output {
    let start = Instant::now();
    loop {
        let out = kubectl_apply(ns, yaml, extra);
        if done(&out) {
            return out;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "kubectl apply never did it: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_meets_the_webhook_over_tls_and_passes_when_it_is_down() {
    let client = client().await;
    let ns = namespace(&client, "admission").await;
    let port = free_port();
    let name = format!("mcpgov-e2e-{ns}");
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    vwcs.create(&PostParams::default(), &configuration(&name, &ns, port))
        .await
        .unwrap();
    let listen = format!("127.0.0.1:{port}");
    let op = Operator::spawn(
        &ns,
        300,
        &[
            "--crawl-concurrency",
            "0",
            "--admission-listen",
            &listen,
            "--admission-hosts",
            "127.0.0.1",
            "--admission-namespace",
            &ns,
            "--admission-webhook-config",
            &name,
        ],
        "info,mcpgov=debug",
    );
    op.wait_ready().await;

    // Until the caBundle is in and the API server trusts the operator, calls fail and
    // are ignored: wait for the first denial (server-side dry run: nothing is stored).
    let start = Instant::now();
    let denied = loop {
        let out = kubectl_apply(&ns, EXPIRED, &["--dry-run=server"]);
        if !out.status.success() {
            break String::from_utf8_lossy(&out.stderr).into_owned();
        }
        assert!(start.elapsed() < DEADLINE, "the webhook never denied");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let vwc = vwcs.get(&name).await.unwrap();
    let bundle = vwc.webhooks.unwrap()[0].client_config.ca_bundle.clone();
    assert!(
        bundle.is_some_and(|b| b.0.starts_with(b"-----BEGIN CERTIFICATE-----")),
        "the operator set the caBundle"
    );

    // What kubectl prints: the API server's words, then the offline validator's.
    println!("kubectl apply (expired exception): {denied}");
    assert!(
        denied.contains("admission webhook \"validate.mcpgov.io\" denied the request"),
        "{denied}"
    );
    assert!(
        denied.contains("expected exception to secrets-deny expired at 2020-01-01T00:00:00Z"),
        "{denied}"
    );

    let out = kubectl_apply(&ns, BAD_URI, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("kubectl apply (bad URI): {stderr}");
    assert!(!out.status.success());
    assert!(
        stderr.contains("Grant") && stderr.contains("%zz"),
        "{stderr}"
    );

    let out = kubectl_apply(&ns, CLEAN, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Warn: a Grant that creates a violation is admitted, and kubectl prints why.
    apply(&client, &ns, ESTATE).await.unwrap();
    // Wait for the violation itself: until the server's catalog reaches the mirror, the
    // webhook may first warn that the Grant names a tool not served (drift at birth).
    let out = apply_until(&ns, VIOLATING, &["--dry-run=server"], |o| {
        String::from_utf8_lossy(&o.stderr).contains("violate")
    })
    .await;
    let warned = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl apply (violating Grant): {warned}");
    assert!(out.status.success(), "{warned}");
    assert!(
        warned.contains(&format!(
            "Warning: mcpgov: Grant {ns}/ci-bot-git makes {ns}/ci-bot violate {ns}/secrets-deny through"
        )) && warned.contains("git_show"),
        "{warned}"
    );
    let out = kubectl_apply(&ns, VIOLATING, &[]);
    assert!(out.status.success());

    // Enforce: the Policy opts in; a new violation of it is refused, with the path.
    let out = kubectl_apply(&ns, ENFORCE, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = apply_until(&ns, RELEASE, &[], |o| !o.status.success()).await;
    let refused = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl apply (Grant under an Enforce Policy): {refused}");
    assert!(refused.contains("denied the request"), "{refused}");
    assert!(
        refused.contains(&format!(
            "makes {ns}/release-bot violate {ns}/secrets-deny (admission: Enforce) through"
        )) && refused.contains("git_show"),
        "{refused}"
    );
    // The same Grant with the exception the Policy allows (its own namespace) passes.
    let out = kubectl_apply(&ns, RELEASE_EXCUSED, &[]);
    assert!(
        out.status.success(),
        "accepted once excused: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Drift at birth: a Grant naming a tool no server serves is admitted with a warning.
    let out = kubectl_apply(&ns, DRIFTING, &["--dry-run=server"]);
    let warned = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl apply (Grant naming no served tool): {warned}");
    assert!(out.status.success(), "{warned}");
    assert!(
        warned.contains(&format!(
            "Warning: mcpgov: Grant {ns}/ci-bot-nosuch names \"nosuch::x\": {ns}/nosuch::x is not served"
        )),
        "{warned}"
    );

    // Deleting a server is weighed (never refused): the Grants it leaves drifting.
    let out = Command::new("kubectl")
        .args([
            "delete",
            "-n",
            &ns,
            "mcpservers.mcpgov.io",
            "git",
            "--dry-run=server",
        ])
        .output()
        .unwrap();
    let warned = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl delete (a granted server): {warned}");
    assert!(out.status.success(), "{warned}");
    assert!(
        warned.contains(&format!(
            "Warning: mcpgov: deleting MCPServer {ns}/git: its tools are granted by 2 Grant(s) \
             that would drift: {ns}/ci-bot-git ({ns}/git::git_show is not served)"
        )),
        "{warned}"
    );

    // A bundle ConfigMap name that clashes is denied: a ConfigMap mcpgov did not make,
    // then another Agent's bundle (once the mirror has the first Agent).
    let out = kubectl_apply(&ns, FOREIGN_CONFIG_MAP, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl_apply(&ns, &agent_with_bundle("app-bot", "app-settings"), &[]);
    let refused = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl apply (Agent onto a foreign ConfigMap): {refused}");
    assert!(!out.status.success(), "{refused}");
    assert!(
        refused.contains(&format!(
            "Agent {ns}/app-bot: bundle ConfigMap name \"app-settings\" is taken by a ConfigMap \
             mcpgov did not create"
        )),
        "{refused}"
    );
    let out = kubectl_apply(&ns, &agent_with_bundle("first-bot", "bots-bundle"), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = agent_with_bundle("second-bot", "bots-bundle");
    let out = apply_until(&ns, &second, &["--dry-run=server"], |o| !o.status.success()).await;
    let refused = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("kubectl apply (Agent onto another Agent's bundle): {refused}");
    assert!(
        refused.contains(&format!(
            "Agent {ns}/second-bot: bundle ConfigMap name \"bots-bundle\" is also the bundle of \
             Agent {ns}/first-bot"
        )),
        "{refused}"
    );

    // The operator stops: failurePolicy Ignore lets applies through.
    op.stop();
    let start = Instant::now();
    let out = kubectl_apply(&ns, EXPIRED, &[]);
    assert!(
        out.status.success(),
        "with the webhook down the apply passes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "and without a long wait"
    );

    vwcs.delete(&name, &DeleteParams::default()).await.unwrap();
}
