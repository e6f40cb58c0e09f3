//! `kubectl mcpgov` on the real API server: kubectl finds the plugin on PATH as
//! `kubectl-mcpgov` (a symlink to the built binary), and the plugin reads the live
//! estate with the caller's credentials — why, check-access, what-if, bundle
//! --verify, DOT and Mermaid, and a clear refusal where the caller may not read.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use mcpgov::crd::Agent;
use mcpgov_e2e::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The quickstart example, moved into `ns`.
fn example(file: &str, ns: &str) -> String {
    std::fs::read_to_string(repo().join("examples/quickstart").join(file))
        .unwrap()
        .replace("namespace: quickstart", &format!("namespace: {ns}"))
}

/// A temp dir holding the plugin symlink (and test files); removed on drop.
struct PluginDir(PathBuf);

impl PluginDir {
    fn new(ns: &str) -> PluginDir {
        let dir = std::env::temp_dir().join(format!("mcpgov-plugin-{ns}"));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("kubectl-mcpgov");
        let _ = std::fs::remove_file(&link);
        let bin = std::fs::canonicalize(mcpgov_bin()).expect("the mcpgov binary is built");
        std::os::unix::fs::symlink(bin, &link).unwrap();
        PluginDir(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// `kubectl mcpgov ARGS` with the plugin dir first on PATH (kubectl itself comes
    /// from the control plane's bin dir, which `env` puts on PATH).
    fn kubectl_mcpgov(&self, args: &[&str]) -> Output {
        self.kubectl_mcpgov_env(args, &[])
    }

    fn kubectl_mcpgov_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .collect::<Vec<_>>();
        if let Some(bin) = std::env::var_os("MCPGOV_BIN_DIR") {
            path.insert(0, bin.into());
        }
        path.insert(0, self.0.clone());
        let mut cmd = Command::new("kubectl");
        cmd.arg("mcpgov")
            .args(args)
            .env("PATH", std::env::join_paths(path).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("kubectl runs")
    }
}

impl Drop for PluginDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        out(o),
        err(o)
    );
    out(o)
}

/// Apply the quickstart estate and its catalog into `ns`.
async fn quickstart(client: &kube::Client, ns: &str, dir: &PluginDir) {
    apply(client, ns, &example("governance.yaml", ns))
        .await
        .expect("estate applies");
    std::fs::write(dir.path("catalog.yaml"), example("catalog.yaml", ns)).unwrap();
    mcpgov::catalog::apply(&[dir.path("catalog.yaml")], ns)
        .await
        .expect("catalog applies");
}

/// DOT as `dot` would read it, checked for structure (Graphviz may not be installed):
/// one digraph, balanced quotes and braces, every edge between declared nodes.
fn assert_dot(text: &str, edges: usize) {
    assert!(text.starts_with("digraph mcpgov {\n"), "{text}");
    assert!(text.ends_with("}\n"), "{text}");
    let mut nodes = Vec::new();
    let mut seen_edges = Vec::new();
    for line in text.lines().skip(1) {
        let line = line.trim();
        if line == "}" {
            continue;
        }
        assert!(line.ends_with(';'), "a statement per line: {line}");
        let unescaped_quotes = line.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped_quotes.matches('"').count() % 2, 0, "{line}");
        let words: Vec<&str> = line.split(' ').collect();
        let head = words[0];
        if head.starts_with('n') && words.get(1) == Some(&"->") {
            seen_edges.push((head.to_string(), words[2].to_string()));
        } else if head.starts_with('n') && line.contains("[label=") {
            nodes.push(head.to_string());
        }
    }
    assert_eq!(seen_edges.len(), edges, "{text}");
    for (a, b) in &seen_edges {
        assert!(nodes.contains(a) && nodes.contains(b), "{a} -> {b}: {text}");
    }
}

fn assert_mermaid(text: &str, edges: usize) {
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "flowchart LR")
        .skip(1)
        .collect();
    assert!(!body.is_empty(), "a flowchart: {text}");
    let declared: Vec<&str> = body
        .iter()
        .filter(|l| !l.contains("-->") && !l.contains("linkStyle"))
        .map(|l| l.trim().split(['[', '(', '{']).next().unwrap())
        .collect();
    let edge_lines: Vec<&&str> = body.iter().filter(|l| l.contains("-->|\"")).collect();
    assert_eq!(edge_lines.len(), edges, "{text}");
    for l in edge_lines {
        let from = l.trim().split(' ').next().unwrap();
        let to = l.trim().rsplit(' ').next().unwrap();
        assert!(
            declared.contains(&from) && declared.contains(&to),
            "{l}: {text}"
        );
        assert_eq!(l.matches('"').count(), 2, "{l}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn why_check_access_and_bundle_verify_through_kubectl() {
    let client = client().await;
    let ns = namespace(&client, "plugin").await;
    let dir = PluginDir::new(&ns);
    let op = Operator::start(&ns, 300).await;
    quickstart(&client, &ns, &dir).await;
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    let published = wait_for(&agents, "vibe-coder", "a published bundle", |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.violations == Some(1) && s.bundle.is_some())
    })
    .await;
    let published = published.status.unwrap().bundle.unwrap();
    let gov = ["-n", ns.as_str(), "--governance-namespace", ns.as_str()];
    let args = |extra: &[&str]| -> Vec<String> {
        extra
            .iter()
            .chain(gov.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        dir.kubectl_mcpgov(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };

    // why: the verdict, the grant and the path with its evidence, read live.
    let why = ok(&run(&["why", "vibe-coder", "publish_note"]));
    assert!(
        why.starts_with(&format!(
            "DENY: agent {ns}/vibe-coder -> tool {ns}/policy-gateway::publish_note\n"
        )),
        "{why}"
    );
    for want in [
        format!("Grant {ns}/vibe-coder-notes selector \"policy-gateway::publish_note\""),
        "1. VIOLATION".to_string(),
        "WRITES file:///demo/drafts (OperatorAsserted, High, evidence \"quickstart/server.py::publish_note\")".to_string(),
        format!("GOVERNED_BY Policy {ns}/drafts-deny via \"file:///demo/drafts\""),
        "exception: none".to_string(),
    ] {
        assert!(why.contains(&want), "{want}\n---\n{why}");
    }
    let allowed = ok(&run(&["why", "vibe-coder", "read_note"]));
    assert!(allowed.starts_with("ALLOW: "), "{allowed}");

    // check-access: the same engine answer as JSON, live.
    let v: Value =
        serde_json::from_str(&ok(&run(&["check-access", "vibe-coder", "publish_note"]))).unwrap();
    assert_eq!(v["verdict"], "DENY");
    assert_eq!(v["denyPaths"][0]["policy"], format!("{ns}/drafts-deny"));
    let v: Value = serde_json::from_str(&ok(&run(&[
        "query",
        "check-access",
        "vibe-coder",
        "read_note",
    ])))
    .unwrap();
    assert_eq!(v["verdict"], "ALLOW");

    // Paths as pictures.
    assert_dot(
        &ok(&run(&["why", "vibe-coder", "publish_note", "-o", "dot"])),
        3,
    );
    assert_mermaid(
        &ok(&run(&[
            "why",
            "vibe-coder",
            "publish_note",
            "-o",
            "mermaid",
        ])),
        3,
    );
    assert_dot(
        &ok(&run(&[
            "check-access",
            "vibe-coder",
            "publish_note",
            "-o",
            "dot",
        ])),
        3,
    );

    // The context's namespace is the default, as for kubectl.
    let kc = dir.path("kubeconfig");
    std::fs::copy(std::env::var("KUBECONFIG").unwrap(), &kc).unwrap();
    let set = Command::new(
        std::env::var_os("MCPGOV_BIN_DIR")
            .map(|d| PathBuf::from(d).join("kubectl"))
            .unwrap_or_else(|| "kubectl".into()),
    )
    .args(["config", "set-context", "--current", "--namespace", &ns])
    .env("KUBECONFIG", &kc)
    .output()
    .unwrap();
    ok(&set);
    let why_default = dir.kubectl_mcpgov_env(
        &[
            "why",
            "vibe-coder",
            "publish_note",
            "--governance-namespace",
            &ns,
        ],
        &[("KUBECONFIG", &kc)],
    );
    assert_eq!(ok(&why_default), why);
    // … and --kubeconfig names the file the same way.
    let why_flag = dir.kubectl_mcpgov(&[
        "why",
        "vibe-coder",
        "publish_note",
        "--governance-namespace",
        &ns,
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    assert_eq!(ok(&why_flag), why);

    // bundle --verify: the published ConfigMap is what the live estate compiles to. The
    // operator may still be settling (one revision per input it saw), so the sha to find
    // is the one the Agent's status reports by then, within a bound.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (verified, current) = loop {
        let out = ok(&run(&["bundle", "vibe-coder", "--verify"]));
        let a = agents.get("vibe-coder").await.unwrap();
        let sha = a.status.and_then(|s| s.bundle).map(|b| b.sha256);
        let sha = sha.unwrap_or_default();
        if out.contains(&sha) || std::time::Instant::now() > deadline {
            break (out, sha);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(
        verified.starts_with(&format!(
            "verified: ConfigMap {ns}/{} holds the bundle of Agent {ns}/vibe-coder",
            published.config_map_name
        )),
        "{verified}"
    );
    assert!(
        verified.contains(&current),
        "{verified} (status says {current})"
    );
    // Without --verify, the plugin prints the bytes the ConfigMap holds.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm = cms.get(&published.config_map_name).await.unwrap();
    let bytes = cm.data.as_ref().unwrap()["bundle.json"].clone();
    assert_eq!(ok(&run(&["bundle", "vibe-coder"])), bytes);

    // Tamper with the published bundle (the operator stopped, or it would repair
    // it): verify fails, naming the decision that changed.
    op.stop();
    assert!(bytes.contains(r#""decision":"rejected""#), "{bytes}");
    let tampered = bytes.replacen(r#""decision":"rejected""#, r#""decision":"eligible""#, 1);
    cms.patch(
        &published.config_map_name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"bundle.json": tampered}})),
    )
    .await
    .unwrap();
    let failed = run(&["bundle", "vibe-coder", "--verify"]);
    assert_eq!(
        failed.status.code(),
        Some(1),
        "{}{}",
        out(&failed),
        err(&failed)
    );
    let report = out(&failed);
    assert!(report.starts_with("DIFFERS: ConfigMap"), "{report}");
    assert!(
        report.contains("annotation mcpgov.io/bundle-sha256: says"),
        "{report}"
    );
    assert!(
        report.contains(r#"].decision: published "eligible", fresh "rejected""#),
        "{report}"
    );
    assert!(err(&failed).contains("difference(s)"), "{}", err(&failed));

    // A missing ConfigMap is said as such.
    cms.delete(&published.config_map_name, &Default::default())
        .await
        .unwrap();
    let missing = run(&["bundle", "vibe-coder", "--verify"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        err(&missing).contains("MISSING: no ConfigMap"),
        "{}",
        err(&missing)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_if_shows_the_findings_a_change_adds_or_removes() {
    let client = client().await;
    let ns = namespace(&client, "whatif").await;
    let dir = PluginDir::new(&ns);
    quickstart(&client, &ns, &dir).await;
    let change = dir.path("reviewer.yaml");
    std::fs::write(
        &change,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: reviewer}
spec: {profile: Strict}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: reviewer-publish}
spec:
  agent: reviewer
  tools: ["policy-gateway::publish_note"]
  provenance: {evidence: "TICKET-9"}
"#,
    )
    .unwrap();
    let change = change.to_str().unwrap();
    let gov = ["--governance-namespace", ns.as_str(), "-n", ns.as_str()];
    let with =
        |a: &[&str]| -> Vec<String> { a.iter().chain(&gov).map(|s| s.to_string()).collect() };
    let run = |a: &[&str]| {
        let a = with(a);
        dir.kubectl_mcpgov(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };

    let report: Value =
        serde_json::from_str(&ok(&run(&["what-if", "-f", change, "-o", "json"]))).unwrap();
    let added = report["added"].as_array().unwrap();
    assert_eq!(added.len(), 1, "{report:#}");
    assert_eq!(added[0]["kind"], "Violation");
    assert_eq!(added[0]["agent"], format!("{ns}/reviewer"));
    assert_eq!(report["removed"], serde_json::json!([]));
    assert_eq!(report["before"]["violations"], 1);
    assert_eq!(report["after"]["violations"], 2);

    let table = ok(&run(&["what-if", "-f", change]));
    assert!(table.starts_with("Findings the change adds:\n"), "{table}");
    assert!(
        table.contains(&format!("+ Violation  DenyViolation  Agent {ns}/reviewer")),
        "{table}"
    );
    assert!(
        table.ends_with("after:  2 violation(s), 0 exception(s), 0 drift, 0 unresolved\n"),
        "{table}"
    );

    // As a gate: the change adds a violation.
    let gated = run(&["what-if", "-f", change, "--fail-on", "violation"]);
    assert_eq!(gated.status.code(), Some(1), "{}", err(&gated));

    // Deleting the existing Grant removes the existing violation.
    let grant = dir.path("grant.yaml");
    std::fs::write(
        &grant,
        "apiVersion: mcpgov.io/v1alpha1\nkind: Grant\nmetadata: {name: vibe-coder-notes}\nspec: {agent: vibe-coder, tools: [policy-gateway::read_note]}\n",
    )
    .unwrap();
    let report: Value = serde_json::from_str(&ok(&run(&[
        "what-if",
        "--delete",
        "-f",
        grant.to_str().unwrap(),
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(report["added"], serde_json::json!([]), "{report:#}");
    let removed = report["removed"].as_array().unwrap();
    assert!(
        removed
            .iter()
            .any(|f| f["kind"] == "Violation" && f["agent"] == format!("{ns}/vibe-coder")),
        "{report:#}"
    );

    // Nothing was applied.
    let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
    assert!(agents.get_opt("reviewer").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_rights_is_refused_naming_the_namespace() {
    let client = client().await;
    let ns = namespace(&client, "rights").await;
    let other = namespace(&client, "norights").await;
    let dir = PluginDir::new(&ns);
    quickstart(&client, &ns, &dir).await;
    let user = format!("reader-{ns}");
    // The user may read mcpgov objects in `ns` only.
    apply(
        &client,
        &ns,
        &format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: mcpgov-reader}}
rules:
  - apiGroups: [mcpgov.io]
    resources: [mcpservers, agents, policies, grants]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: mcpgov-reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: mcpgov-reader}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{user}"}}]
"#
        ),
    )
    .await
    .expect("RBAC applies");

    let why = |extra: &[&str]| {
        let mut a = vec!["why", "vibe-coder", "publish_note", "--as", user.as_str()];
        a.extend_from_slice(extra);
        dir.kubectl_mcpgov(&a)
    };
    // In its own namespace the user gets the answer (RBAC may take a moment).
    let mut answered = why(&["-n", &ns, "--governance-namespace", &ns]);
    for _ in 0..50 {
        if answered.status.success() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        answered = why(&["-n", &ns, "--governance-namespace", &ns]);
    }
    assert!(ok(&answered).starts_with("DENY: "));
    // It cannot list servers cluster-wide: said, not hidden.
    assert!(
        err(&answered).contains("cannot list MCPServers in all namespaces"),
        "{}",
        err(&answered)
    );

    // Another namespace: refused, naming it and the kinds.
    let refused = why(&["-n", &other, "--governance-namespace", &ns]);
    assert_eq!(refused.status.code(), Some(2), "{}", out(&refused));
    let e = err(&refused);
    assert!(
        e.contains(&format!(
            "cannot list mcpservers in namespace {other}: forbidden"
        )),
        "{e}"
    );
    assert!(e.contains(&format!("User \"{user}\" cannot list")), "{e}");
    assert!(out(&refused).is_empty());

    // A governance namespace it may not read is refused too, not skipped.
    let refused = why(&["-n", &ns, "--governance-namespace", &other]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains(&format!(
            "cannot list policies in namespace {other}: forbidden"
        )),
        "{}",
        err(&refused)
    );

    // -A without cluster-wide rights.
    let refused = why(&["-A"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains("in all namespaces: forbidden"),
        "{}",
        err(&refused)
    );

    // Credentials the API server does not accept: said as such, not as "forbidden".
    let bad = dir.path("bad-kubeconfig");
    std::fs::write(
        &bad,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: bad\n\
             clusters: [{{name: e2e, cluster: {{server: \"{}\", certificate-authority: \"{}\"}}}}]\n\
             users: [{{name: bad, user: {{token: not-a-token}}}}]\n\
             contexts: [{{name: bad, context: {{cluster: e2e, user: bad, namespace: {ns}}}}}]\n",
            std::env::var("MCPGOV_APISERVER_URL").unwrap(),
            std::env::var("MCPGOV_CA_FILE").unwrap(),
        ),
    )
    .unwrap();
    let refused = dir.kubectl_mcpgov(&[
        "check",
        "--kubeconfig",
        bad.to_str().unwrap(),
        "--governance-namespace",
        &ns,
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains(&format!(
            "cannot list mcpservers in namespace {ns}: unauthorized: the API server did not accept"
        )),
        "{}",
        err(&refused)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_are_paged_and_bounded() {
    let client = client().await;
    let ns = namespace(&client, "paging").await;
    let dir = PluginDir::new(&ns);
    quickstart(&client, &ns, &dir).await;
    // 250 more Agents, each granted publish_note: more than two pages of 100.
    let mut many = String::new();
    for i in 0..250 {
        many.push_str(&format!(
            "---\napiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: bot-{i}}}\nspec: {{profile: Strict}}\n\
             ---\napiVersion: mcpgov.io/v1alpha1\nkind: Grant\nmetadata: {{name: bot-{i}}}\n\
             spec: {{agent: bot-{i}, tools: [\"policy-gateway::publish_note\"]}}\n"
        ));
    }
    apply(&client, &ns, &many).await.expect("agents apply");
    let base = ["-n", ns.as_str(), "--governance-namespace", ns.as_str()];
    let run = |extra: &[&str]| dir.kubectl_mcpgov(&[extra, &base[..]].concat());
    let report: Value = serde_json::from_str(&ok(&run(&["check", "-o", "json"]))).unwrap();
    // Every agent of every page: 251 violations.
    assert_eq!(
        report["summary"]["violations"], 251,
        "{}",
        report["summary"]
    );

    // Over the object bound: refused, not truncated.
    let refused = run(&["check", "--max-objects", "300"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains("more than --max-objects (300) objects; refusing"),
        "{}",
        err(&refused)
    );
    // Over the response bound: refused while reading the body.
    let refused = run(&["check", "--max-response-size", "4Ki"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains("response larger than --max-response-size (4096 bytes (4 KiB))"),
        "{}",
        err(&refused)
    );
}

/// A tool shared into the namespace asked about from another one: the plugin finds the
/// server through a cluster-wide list and reads the Policies of its namespace; a user
/// who may not is told which part was not seen, or refused.
#[tokio::test(flavor = "multi_thread")]
async fn servers_shared_from_another_namespace_count_with_their_policies() {
    let client = client().await;
    let team = namespace(&client, "team").await;
    let shared = namespace(&client, "shared").await;
    let dir = PluginDir::new(&team);
    apply(
        &client,
        &shared,
        &format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: search}}
spec:
  endpoint: {{url: "http://search.{shared}.svc:8080/mcp"}}
  sharing: {{namespaces: [{team}]}}
  dataAccess: [{{tool: web_search, resource: "https://*/**", mode: Reads, provenance: {{evidence: "S-1"}}}}]
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {{name: no-web}}
spec: {{effect: Deny, governs: {{resources: [{{uri: "https://*/**", provenance: {{evidence: "P-1"}}}}]}}}}
"#
        ),
    )
    .await
    .expect("shared estate applies");
    std::fs::write(
        dir.path("catalog.yaml"),
        format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: search, namespace: {shared}}}
spec: {{endpoint: {{url: "http://search.{shared}.svc:8080/mcp"}}}}
status:
  lastSuccessfulCrawlTime: "2026-11-01T00:00:00Z"
  tools: [{{name: web_search, contractDigest: "sha256:aa"}}]
"#
        ),
    )
    .unwrap();
    mcpgov::catalog::apply(&[dir.path("catalog.yaml")], &shared)
        .await
        .expect("catalog applies");
    apply(
        &client,
        &team,
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: bot}
spec: {profile: Strict}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: bot}
spec: {agent: bot, tools: ["web_search"]}
"#,
    )
    .await
    .expect("team estate applies");
    let why = |extra: &[&str]| {
        let base = [
            "why",
            "bot",
            "web_search",
            "-n",
            team.as_str(),
            "--governance-namespace",
            team.as_str(),
        ];
        dir.kubectl_mcpgov(&[&base[..], extra].concat())
    };

    // With the rights to see it: the shared server's tool, governed by its Policy.
    let answer = ok(&why(&[]));
    assert!(
        answer.starts_with(&format!(
            "DENY: agent {team}/bot -> tool {shared}/search::web_search\n"
        )),
        "{answer}"
    );
    assert!(
        answer.contains(&format!("GOVERNED_BY Policy {shared}/no-web")),
        "{answer}"
    );

    // A user of the team namespace only: the shared server is not seen, and stderr
    // says so (servers named by bare name or glob need the cluster-wide list).
    let user = format!("dev-{team}");
    let rbac = |kind: &str, scope: &str| {
        let (role, binding) = if kind == "Cluster" {
            ("ClusterRole", "ClusterRoleBinding")
        } else {
            ("Role", "RoleBinding")
        };
        format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: {role}
metadata: {{name: {scope}}}
rules: [{{apiGroups: [mcpgov.io], resources: [{resources}], verbs: [get, list]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {binding}
metadata: {{name: {scope}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {role}, name: {scope}}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{user}"}}]
"#,
            resources = if kind == "Cluster" {
                "mcpservers"
            } else {
                "mcpservers, agents, policies, grants"
            }
        )
    };
    apply(&client, &team, &rbac("", "mcpgov-dev"))
        .await
        .expect("role applies");
    let as_user = ["--as", user.as_str()];
    let mut limited = why(&as_user);
    for _ in 0..50 {
        if limited.status.success() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        limited = why(&as_user);
    }
    assert!(
        ok(&limited).starts_with("TOOL_NOT_FOUND: "),
        "{}",
        out(&limited)
    );
    assert!(
        err(&limited).contains(&format!(
            "cannot list MCPServers in all namespaces: servers other namespaces share with {team} by bare name or glob are not seen"
        )),
        "{}",
        err(&limited)
    );

    // Allowed to list servers cluster-wide but not the sharing namespace's Policies:
    // refused, since the answer would miss the Policy that governs the shared tool.
    let cluster_role = format!("mcpgov-servers-{team}");
    let cluster = rbac("Cluster", &cluster_role);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&cluster).unwrap();
    for doc in docs {
        let api = kube::Api::<kube::api::DynamicObject>::all_with(
            client.clone(),
            &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                "rbac.authorization.k8s.io",
                "v1",
                doc["kind"].as_str().unwrap(),
            )),
        );
        api.patch(
            doc["metadata"]["name"].as_str().unwrap(),
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&doc),
        )
        .await
        .expect("cluster RBAC applies");
    }
    let mut refused = why(&as_user);
    for _ in 0..50 {
        if refused.status.code() == Some(2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        refused = why(&as_user);
    }
    assert_eq!(refused.status.code(), Some(2), "{}", out(&refused));
    assert!(
        err(&refused).contains(&format!(
            "cannot list policies in namespace {shared}: forbidden"
        )),
        "{}",
        err(&refused)
    );
    for kind in ["ClusterRoleBinding", "ClusterRole"] {
        let api = kube::Api::<kube::api::DynamicObject>::all_with(
            client.clone(),
            &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                "rbac.authorization.k8s.io",
                "v1",
                kind,
            )),
        );
        let _ = api.delete(&cluster_role, &Default::default()).await;
    }
}
