//! Living beside Kyverno and kagent (issue 15, section 1). Their CRDs use our plurals
//! (`policies.kyverno.io`, `agents.kagent.dev`, kmcp's `mcpservers.kagent.dev`), and
//! kubectl answers a bare plural with one group of its choosing. With stand-ins of those
//! CRDs installed (written here: the real group, kind, plural and singular names, and an
//! open schema) and objects of the same names in both, the kubectl commands our docs
//! give must address our objects only, and `mcpgov check` must say so when fed an export
//! made with the bare plurals.

use mcpgov_e2e::kubectl_docs::{self, GROUP};
use mcpgov_e2e::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A stand-in CRD: the real group, kind, plural, singular, short names and category of
/// another project's kind, with an open schema.
struct StandIn {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static str,
    category: &'static str,
    what: &'static str,
}

const STAND_INS: [StandIn; 3] = [
    StandIn {
        group: "kyverno.io",
        version: "v1",
        kind: "Policy",
        plural: "policies",
        short_names: "[pol]",
        category: "kyverno",
        what: "Kyverno's Policy",
    },
    StandIn {
        group: "kagent.dev",
        version: "v1alpha2",
        kind: "Agent",
        plural: "agents",
        short_names: "[]",
        category: "kagent",
        what: "kagent's Agent",
    },
    StandIn {
        group: "kagent.dev",
        version: "v1alpha1",
        kind: "MCPServer",
        plural: "mcpservers",
        short_names: "[]",
        category: "kagent",
        what: "kmcp's MCPServer",
    },
];

fn stand_ins_yaml() -> String {
    STAND_INS
        .iter()
        .map(|c| {
            let singular = c.kind.to_lowercase();
            format!(
                r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {singular}, shortNames: {short}, categories: [{category}]}}
  versions:
    - name: {version}
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
          description: Stand-in for {what}.
          properties:
            spec: {{type: object, description: Its spec., x-kubernetes-preserve-unknown-fields: true}}
            status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"#,
                plural = c.plural,
                group = c.group,
                kind = c.kind,
                short = c.short_names,
                category = c.category,
                version = c.version,
                what = c.what,
            )
        })
        .collect::<Vec<_>>()
        .join("---")
}

/// Their objects, named as ours are in the quickstart.
const THEIRS: &str = r#"
apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata: {name: vibe-coder}
spec: {type: Declarative, declarative: {systemMessage: "you help"}}
---
apiVersion: kagent.dev/v1alpha1
kind: MCPServer
metadata: {name: policy-gateway}
spec: {deployment: {image: "example/mcp:1"}}
---
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: drafts-deny}
spec: {rules: [{name: require-team, match: {any: [{resources: {kinds: [Pod]}}]}}]}
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the command runs")
}

/// `kubectl ARGS`, which must succeed; its stdout.
fn kubectl(args: &[&str]) -> String {
    let out = run(Command::new("kubectl").args(args));
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn kubectl_stdin(args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The API groups of the objects `kubectl get RESOURCE -n NS -o json` returns.
fn groups(resource: &str, ns: &str) -> Vec<(String, String)> {
    let v: Value =
        serde_json::from_str(&kubectl(&["get", resource, "-n", ns, "-o", "json"])).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let av = o["apiVersion"].as_str().unwrap();
            (
                av.split('/').next().unwrap().to_string(),
                o["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every kubectl command of the docs, scripts and chart notes.
fn documented() -> Vec<kubectl_docs::Command> {
    let root = repo();
    kubectl_docs::documented_files(&root)
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            kubectl_docs::commands(f.strip_prefix(&root).unwrap_or(f), &text)
        })
        .collect()
}

/// No cluster needed: a bare `agents` or `policies` in a documented command is a bug.
#[test]
fn documented_kubectl_commands_name_our_resources_unambiguously() {
    let cmds = documented();
    assert!(
        cmds.len() > 60,
        "only {} kubectl commands found",
        cmds.len()
    );
    let mut bad = Vec::new();
    let mut ours = 0;
    for c in &cmds {
        for r in &c.resources {
            match kubectl_docs::names_ours(&c.verb, r) {
                Ok(true) => ours += 1,
                Ok(false) => {}
                Err(e) => bad.push(format!(
                    "{}:{}: {e}\n    {}",
                    c.file.display(),
                    c.line,
                    c.text
                )),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} ambiguous:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(ours > 20, "only {ours} commands name our resources");
}

/// Documented resource names by verb kind: what `get` takes, and what `explain` takes.
fn documented_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut listed = BTreeSet::new();
    let mut explained = BTreeSet::new();
    for c in documented() {
        for r in c.resources {
            if kubectl_docs::names_ours(&c.verb, &r) == Ok(true) {
                match c.verb.as_str() {
                    "explain" => explained.insert(r),
                    _ => listed.insert(r),
                };
            }
        }
    }
    (listed, explained)
}

fn mcpgov(args: &[&str]) -> Output {
    run(Command::new(mcpgov_bin()).args(args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_commands_address_only_our_objects_beside_kyverno_and_kagent() {
    let client = client().await;
    let ns = namespace(&client, "eco").await;
    let dir = std::env::temp_dir().join(&ns);
    std::fs::create_dir_all(&dir).unwrap();

    kubectl_stdin(&["apply", "-f", "-"], &stand_ins_yaml());
    kubectl(&[
        "wait",
        "--for=condition=established",
        "--timeout=60s",
        "crd/policies.kyverno.io",
        "crd/agents.kagent.dev",
        "crd/mcpservers.kagent.dev",
    ]);
    let quickstart = std::fs::read_to_string(repo().join("examples/quickstart/governance.yaml"))
        .unwrap()
        .replace("namespace: quickstart", &format!("namespace: {ns}"));
    kubectl_stdin(&["apply", "--server-side", "-f", "-"], &quickstart);
    kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], THEIRS);

    let op = Operator::start(&ns, 300).await;
    let catalog = std::fs::read_to_string(repo().join("examples/quickstart/catalog.yaml"))
        .unwrap()
        .replace("namespace: quickstart", &format!("namespace: {ns}"));
    let catalog_file = dir.join("catalog.yaml");
    std::fs::write(&catalog_file, catalog).unwrap();
    let out = mcpgov(&[
        "catalog",
        "apply",
        "--catalog",
        catalog_file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // kubectl wait, as scripts/demo.sh and docs/install.md write it.
    kubectl(&[
        "wait",
        "--for=jsonpath={.status.violations}=1",
        "-n",
        &ns,
        "agents.mcpgov.io/vibe-coder",
        "--timeout=60s",
    ]);
    kubectl(&[
        "wait",
        "--for=condition=Ready",
        "-n",
        &ns,
        "agents.mcpgov.io/vibe-coder",
        "mcpservers.mcpgov.io/policy-gateway",
        "--timeout=60s",
    ]);

    // The hazard is real here: some bare plural answers with another product's objects.
    let mut foreign = Vec::new();
    for bare in ["mcpservers", "agents", "policies"] {
        let g = groups(bare, &ns);
        println!("kubectl get {bare}: {g:?}");
        if g.iter().any(|(group, _)| group != GROUP) {
            foreign.push(bare);
        }
    }
    assert!(
        !foreign.is_empty(),
        "no bare plural resolved to Kyverno or kagent"
    );
    let bare_wait = run(Command::new("kubectl").args([
        "wait",
        "--for=condition=Ready",
        "-n",
        &ns,
        "agent/vibe-coder",
        "--timeout=2s",
    ]));
    println!(
        "kubectl wait agent/vibe-coder: {}{}",
        String::from_utf8_lossy(&bare_wait.stdout),
        String::from_utf8_lossy(&bare_wait.stderr)
    );

    // Every resource name the docs pass to get/describe/wait/..., and only ours answer.
    let (listed, explained) = documented_names();
    println!("documented names: {listed:?}; explain: {explained:?}");
    for want in [
        "mcpgov",
        "agents.mcpgov.io",
        "mcpservers.mcpgov.io",
        "grants.mcpgov.io",
        "policies.mcpgov.io",
    ] {
        assert!(listed.contains(want), "the docs never use {want}");
    }
    for r in &listed {
        let g = groups(r, &ns);
        assert!(!g.is_empty(), "kubectl get {r}: none of our objects");
        assert!(
            g.iter().all(|(group, _)| group == GROUP),
            "kubectl get {r} answers with another group: {g:?}"
        );
    }
    let mut kinds: Vec<String> = groups("mcpgov", &ns).into_iter().map(|(_, k)| k).collect();
    kinds.sort();
    assert_eq!(kinds, ["Agent", "Grant", "MCPServer", "Policy"]);
    let described = kubectl(&["describe", "agents.mcpgov.io", "vibe-coder", "-n", &ns]);
    assert!(described.contains("mcpgov.io/v1alpha1") && !described.contains("kagent.dev"));

    // kubectl explain: the documented paths explain our kinds.
    assert!(!explained.is_empty(), "the docs show no kubectl explain");
    for path in explained
        .iter()
        .map(String::as_str)
        .chain(["agents.mcpgov.io.spec.profile", "mcppolicy.spec.effect"])
    {
        let text = kubectl(&["explain", path]);
        assert!(
            text.lines()
                .any(|l| l.starts_with("GROUP:") && l.ends_with(GROUP)),
            "kubectl explain {path}:\n{text}"
        );
    }

    // The documented export reads back whole, with no warning.
    let export = dir.join("estate.yaml");
    std::fs::write(
        &export,
        kubectl(&["get", "mcpgov", "-n", &ns, "-o", "yaml"]),
    )
    .unwrap();
    let out = mcpgov(&["check", "-o", "json", "-f", export.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.get("warnings").is_none());
    assert_eq!(report["summary"]["violations"], 1, "{report}");

    // The export the docs used to give: another product's objects, and a warning.
    let bare = dir.join("bare.yaml");
    std::fs::write(
        &bare,
        kubectl(&[
            "get",
            "mcpservers,agents,policies,grants",
            "-n",
            &ns,
            "-o",
            "yaml",
        ]),
    )
    .unwrap();
    let out = mcpgov(&["check", "-f", bare.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("mcpgov check on the bare-plural export:\n{stderr}");
    for plural in &foreign {
        let (kind, group) = match *plural {
            "agents" => ("Agent", "kagent.dev"),
            "mcpservers" => ("MCPServer", "kagent.dev"),
            _ => ("Policy", "kyverno.io"),
        };
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("warning: ") && l.contains(kind) && l.contains(group)),
            "no warning for {kind} of {group}: {stderr}"
        );
    }
    assert!(stderr.contains("kubectl get mcpgov -A -o yaml"), "{stderr}");
    let out = mcpgov(&["check", "-o", "sarif", "-f", bare.to_str().unwrap()]);
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("SARIF notifications");
    assert_eq!(notes.len(), foreign.len(), "{notes:?}");

    op.stop();
    // The stand-ins go: later tests on this control plane see the usual API.
    let _ = run(Command::new("kubectl").args([
        "delete",
        "crd",
        "policies.kyverno.io",
        "agents.kagent.dev",
        "mcpservers.kagent.dev",
        "--wait=false",
    ]));
    let _ = std::fs::remove_dir_all(&dir);
}
