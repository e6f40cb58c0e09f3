//! `mcpgov approve -f`: offline, from MCPServers with status in files. What waits (and
//! what changed) goes to stderr, escaped; the patch to commit goes to stdout, and it is
//! an MCPServer apply configuration the CRD accepts.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn file(name: &str, text: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_approve");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn approve(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpgov"))
        .arg("approve")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn estate() -> String {
    format!(
        r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: notes, namespace: team}}
spec:
  endpoint: {{url: "http://notes:8080/mcp"}}
  contracts: {{mode: Pinned, approved: [{{tool: lookup, digest: "{D1}"}}]}}
status:
  lastSuccessfulCrawlTime: "2026-01-01T00:00:00Z"
  tools:
  - {{name: lookup, contractDigest: "{D2}"}}
  contracts:
    pendingCount: 1
    pending:
    - tool: lookup
      reason: ContractChanged
      approvedDigest: "{D1}"
      crawledDigest: "{D2}"
      changed: [description]
      diff: ["description: \"a\" → \"a\u001b]0;pwned\u0007\""]
---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: trusting, namespace: team}}
spec:
  endpoint: {{url: "http://t:8080/mcp"}}
status:
  lastSuccessfulCrawlTime: "2026-01-01T00:00:00Z"
  tools:
  - {{name: t, contractDigest: "{D1}"}}
"#
    )
}

#[test]
fn prints_the_diff_escaped_and_the_patch_to_commit() {
    let f = file("estate.yaml", &estate());
    let (code, out, err) = approve(&["-n", "team", "-f", f.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("team/notes::lookup  ContractChanged"), "{err}");
    assert!(
        err.contains("description:") && !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "{err:?}"
    );
    // Only the pinned server: the trusting one is left alone without --pin.
    let docs: Vec<serde_json::Value> = out
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 1, "{out}");
    assert_eq!(docs[0]["metadata"]["name"], "notes");
    assert_eq!(
        docs[0]["spec"]["contracts"]["approved"],
        serde_json::json!([{"tool": "lookup", "digest": D2}])
    );
    let problems = mcpgov::validate::validate("MCPServer", &{
        let mut d = docs[0].clone();
        d["spec"]["endpoint"] = serde_json::json!({"url": "http://notes:8080/mcp"});
        d
    });
    assert_eq!(problems, Some(vec![]));

    // --pin takes the trusting server in too.
    let (_, out, _) = approve(&["-n", "team", "--pin", "-f", f.to_str().unwrap()]);
    assert_eq!(out.matches("kind: MCPServer").count(), 2, "{out}");
    // One tool of one server; nothing pending is not an error.
    let (code, out, err) = approve(&[
        "-n",
        "team",
        "--server",
        "trusting",
        "-f",
        f.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert!(err.contains("nothing pending"), "{err}");
}

#[test]
fn apply_reads_the_cluster_never_files() {
    let f = file("apply.yaml", &estate());
    let (code, _, err) = approve(&["--apply", "-f", f.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--apply"), "{err}");
}
