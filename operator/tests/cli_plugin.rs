//! Golden tests of `why` (text, DOT, Mermaid) and `what-if` on the shipped examples,
//! read from files; the live forms run in e2e/tests/plugin.rs. Also: how the binary
//! behaves when run as `kubectl-mcpgov`. Regenerate the goldens with `MCPGOV_BLESS=1
//! cargo test -p mcpgov --test cli_plugin` and review the diff.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOW: &str = "2026-11-29T00:00:00Z";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn mcpgov(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpgov"))
        .args(args)
        .args(["--now", NOW])
        .current_dir(root())
        .output()
        .expect("mcpgov runs")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn golden(name: &str, actual: &str) {
    let path = root().join("operator/tests/golden").join(name);
    if std::env::var_os("MCPGOV_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden {}; run with MCPGOV_BLESS=1", path.display()));
    assert!(
        expected == actual,
        "{name} differs from its golden; run with MCPGOV_BLESS=1 and review the diff\n--- actual:\n{actual}"
    );
}

fn example(name: &str) -> [String; 4] {
    [
        "-f".into(),
        format!("examples/{name}/governance.yaml"),
        "--catalog".into(),
        format!("examples/{name}/catalog.yaml"),
    ]
}

#[test]
fn why_is_golden_as_text_dot_and_mermaid() {
    for (ex, agent, tool) in [
        ("quickstart", "vibe-coder", "publish_note"),
        // An authorized exception: the path, its Grant and reason.
        ("cross-server", "ops-agent", "filesystem::read_file"),
    ] {
        let slug = tool.replace("::", ".");
        for (output, ext) in [("text", "txt"), ("dot", "dot"), ("mermaid", "mmd")] {
            let mut args = vec!["why", agent, tool, "-o", output];
            let files = example(ex);
            args.extend(files.iter().map(String::as_str));
            let o = mcpgov(&args);
            golden(&format!("{ex}.why.{agent}.{slug}.{ext}"), &stdout(&o));
        }
    }
}

#[test]
fn why_and_check_access_agree_with_the_json_verdict() {
    let files = example("cross-server");
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    fn with<'a>(a: &[&'a str], files: &[&'a str]) -> Vec<&'a str> {
        [a, files].concat()
    }
    let json: Value = serde_json::from_str(&stdout(&mcpgov(&with(
        &["query", "check-access", "ci-bot", "git::git_show"],
        &files,
    ))))
    .unwrap();
    let top: Value = serde_json::from_str(&stdout(&mcpgov(&with(
        &["check-access", "ci-bot", "git::git_show"],
        &files,
    ))))
    .unwrap();
    assert_eq!(json, top);
    let why: Value = serde_json::from_str(&stdout(&mcpgov(&with(
        &["why", "ci-bot", "git::git_show", "-o", "json"],
        &files,
    ))))
    .unwrap();
    assert_eq!(json, why);
    assert_eq!(json["verdict"], "DENY");
    let text = stdout(&mcpgov(&with(&["why", "ci-bot", "git::git_show"], &files)));
    assert!(
        text.starts_with("DENY: agent ci/ci-bot -> tool ci/git::git_show\n"),
        "{text}"
    );
    // An unknown agent is exit 1, as for the other agent questions.
    let o = mcpgov(&with(&["why", "nobody", "git::git_show"], &files));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("AGENT_NOT_FOUND"));
}

#[test]
fn what_if_over_files_is_golden() {
    let change = "operator/tests/fixtures/what-if/reviewer.yaml";
    let base = [
        "--estate",
        "examples/quickstart/governance.yaml",
        "--catalog",
        "examples/quickstart/catalog.yaml",
    ];
    let table = stdout(&mcpgov(&[&["what-if", "-f", change][..], &base].concat()));
    golden("quickstart.what-if.txt", &table);
    let json = stdout(&mcpgov(
        &[&["what-if", "-f", change, "-o", "json"][..], &base].concat(),
    ));
    golden("quickstart.what-if.json", &json);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["added"][0]["agent"], "quickstart/reviewer");
    assert_eq!(v["removed"][0]["agent"], "quickstart/vibe-coder");
    // The gate trips on what the change adds.
    let o = mcpgov(
        &[
            &["what-if", "-f", change, "--fail-on", "violation"][..],
            &base,
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(1));
    // Applying the estate to itself changes nothing.
    let same = stdout(&mcpgov(
        &[
            &["what-if", "-f", "examples/quickstart/governance.yaml"][..],
            &base,
        ]
        .concat(),
    ));
    assert!(
        same.starts_with("The change adds and removes no findings.\n"),
        "{same}"
    );
}

/// A `kubectl-mcpgov` link to the binary in a fresh temp dir.
fn plugin_link(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpgov-cli-plugin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("kubectl-mcpgov");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcpgov"), &link).unwrap();
    link
}

#[test]
fn as_kubectl_mcpgov_it_names_itself_so_and_reads_the_cluster_by_default() {
    let link = plugin_link("name");
    let help = Command::new(&link).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("Usage: kubectl mcpgov <COMMAND>"), "{help}");
    // No -f: the plugin goes to the cluster (here: a kubeconfig that does not exist),
    // where plain `mcpgov` asks for input instead.
    let missing = link.parent().unwrap().join("no-such-kubeconfig");
    let o = Command::new(&link)
        .args(["check", "--kubeconfig", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("error: kubeconfig: "), "{e}");
    let o = mcpgov(&["check"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no input: give manifests with -f"), "{e}");
    // With -f, the plugin reads files as mcpgov does.
    let o = Command::new(&link)
        .args(["check", "-f", "examples/quickstart", "--now", NOW])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        stdout(&o),
        stdout(&mcpgov(&["check", "-f", "examples/quickstart"]))
    );
    // Usage errors name the command as typed.
    let o = Command::new(&link).arg("no-such-command").output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("kubectl mcpgov"), "{e}");
    let _ = std::fs::remove_dir_all(link.parent().unwrap());
}

#[test]
fn live_only_flags_are_refused_on_files() {
    let o = mcpgov(&["check", "-A", "-f", "examples/quickstart"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-A reads every namespace"));
    let o = mcpgov(&["check", "--live", "-f", "examples/quickstart"]);
    assert_eq!(o.status.code(), Some(2));
    let o = mcpgov(&[
        "bundle",
        "vibe-coder",
        "--verify",
        "-f",
        "examples/quickstart",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--verify compares with the ConfigMap"));
}
