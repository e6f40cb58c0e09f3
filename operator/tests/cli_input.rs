//! `mcpgov check` as a CI gate over a pull request's files (issue 10): it reads regular
//! files only, within a size cap, never echoes what is not a manifest, never panics,
//! escapes what it prints, and fails closed on anything meant as an mcpgov object that
//! the API server would refuse. Each test runs the binary on files made in a temp dir.
#![cfg(unix)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOW: &str = "2026-11-29T00:00:00Z";
/// Must never reach stderr: the environment holds it as a CI token would.
const SECRET: &str = "ci-token-4f1c9a7e";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A fresh directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_input")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `mcpgov ARGS --now NOW` with the secret in its environment, at most 2 GiB of
/// address space (reading /dev/zero whole would take the machine's memory) and 30 s.
fn mcpgov(args: &[&str], envs: &[(&str, &str)]) -> Run {
    mcpgov_stdin(args, envs, None)
}

/// `mcpgov` with `input` on its standard input (else none).
fn mcpgov_stdin(args: &[&str], envs: &[(&str, &str)], input: Option<Vec<u8>>) -> Run {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 2097152; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_mcpgov"))
        .args(args)
        .args(["--now", NOW])
        .env("MCPGOV_TEST_CI_TOKEN", SECRET)
        .envs(envs.iter().copied())
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpgov runs");
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // mcpgov stops reading at the cap: a broken pipe is expected then.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        });
    }
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = e.join().unwrap();
    let run = Run {
        code: status.and_then(|s| s.code()),
        stdout: String::from_utf8_lossy(&o.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    assert!(status.is_some(), "mcpgov {args:?} hung: {}", run.stderr);
    assert!(
        !stderr.contains(&0x1b) && !run.stdout.contains('\u{1b}'),
        "a raw escape reached the terminal: {:?}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(SECRET) && !run.stdout.contains(SECRET),
        "the environment leaked: {}",
        run.stderr
    );
    run
}

fn check(paths: &[&Path]) -> Run {
    let mut args = vec!["check", "-f"];
    let p: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(p.iter().map(String::as_str));
    mcpgov(&args, &[])
}

const AGENT: &str = "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: bot, namespace: team-a}\nspec: {profile: Strict}\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

#[test]
fn directory_walks_skip_symlinks_and_special_files_and_say_so() {
    let d = tmp("walk");
    write(&d, "agent.yaml", AGENT);
    std::os::unix::fs::symlink("/proc/self/environ", d.join("env.yaml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.yaml")).unwrap();
    std::os::unix::fs::symlink("agent.yaml", d.join("again.yaml")).unwrap();
    mkfifo(&d.join("pipe.yaml"));
    let r = check(&[&d]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for name in ["env.yaml", "zero.yaml", "again.yaml"] {
        let line = r.stderr.lines().find(|l| l.contains(name));
        assert!(
            line.is_some_and(|l| l.contains("skipped") && l.contains("symbolic link")),
            "{name}: {}",
            r.stderr
        );
    }
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains("pipe.yaml") && l.contains("not a regular file")),
        "{}",
        r.stderr
    );
}

#[test]
fn explicitly_named_paths_must_be_regular_files() {
    let d = tmp("explicit");
    let fifo = d.join("pipe.yaml");
    mkfifo(&fifo);
    for p in [fifo.as_path(), Path::new("/dev/zero")] {
        let r = check(&[p]);
        assert_eq!(r.code, Some(2), "{}: {}", p.display(), r.stderr);
        assert!(
            r.stderr.contains(&p.display().to_string()) && r.stderr.contains("not a regular file"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn files_over_the_size_cap_are_refused_naming_the_file_and_the_cap() {
    let d = tmp("cap");
    let big = write(&d, "big.yaml", &format!("{AGENT}# {}\n", "x".repeat(4096)));
    let name = big.display().to_string();
    let r = mcpgov(&["check", "--max-file-size", "1Ki", "-f", &name], &[]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(&name) && r.stderr.contains("1024"),
        "{}",
        r.stderr
    );
    let r = mcpgov(&["check", "-f", &name], &[("MCPGOV_MAX_FILE_SIZE", "2048")]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("2048"), "{}", r.stderr);
    assert_eq!(check(&[&big]).code, Some(0));
    // /proc files stat as empty: the cap holds while reading, whatever the size says.
    let r = mcpgov(
        &["check", "--max-file-size", "16", "-f", "/proc/self/environ"],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("16 bytes"), "{}", r.stderr);
}

#[test]
fn parse_errors_give_the_place_but_never_the_source_text() {
    // An explicitly named /proc file is read (it is regular), fails to parse, and its
    // bytes stay out of the message.
    let r = check(&[Path::new("/proc/self/environ")]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("line 1"), "{}", r.stderr);
    assert!(!r.stderr.contains("MCPGOV_TEST_CI_TOKEN"), "{}", r.stderr);
    let d = tmp("snippet");
    let f = write(
        &d,
        "broken.yaml",
        "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: x}\nspec: [ \"PRIVATE-KEY-MATERIAL\u{1b}[2J\n",
    );
    let r = check(&[&f]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("broken.yaml") && r.stderr.contains("line "),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("PRIVATE-KEY-MATERIAL"), "{}", r.stderr);
}

#[test]
fn multibyte_characters_in_invalid_values_do_not_panic() {
    let d = tmp("multibyte");
    for (i, filler) in ["é", "日", "🦀", "x"].iter().enumerate() {
        for prefix in ["", "a", "ab", "abc"] {
            let value = format!("{prefix}{}", filler.repeat(80));
            let f = write(
                &d,
                &format!("v{i}-{}.yaml", prefix.len()),
                &format!(
                    "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: a, namespace: t}}\nspec: {{profile: \"{value}\"}}\n"
                ),
            );
            let r = check(&[&f]);
            assert_eq!(r.code, Some(2), "{value}: {}", r.stderr);
            assert!(r.stderr.contains("spec.profile"), "{}", r.stderr);
        }
    }
}

#[test]
fn input_text_is_escaped_on_stderr() {
    let d = tmp("escape");
    // A value, an unknown field, a kind and a file name carrying terminal escapes.
    let f = write(
        &d,
        "values.yaml",
        "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: a, namespace: t}\nspec: {profile: \"\\e]0;pwned\\a\\e[2J\", \"x\\e[31m\": 1}\n",
    );
    let r = check(&[&f]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("\\u{1b}"), "{}", r.stderr);
    let f = write(
        &d,
        "kind.yaml",
        "apiVersion: mcpgov.io/v1alpha1\nkind: \"Agent\\e[8m\"\nmetadata: {name: \"\\e[31mred\", namespace: t}\nspec: {}\n",
    );
    let r = check(&[&f]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let f = write(&d, "evil\u{1b}[31m.yaml", "spec: [\n");
    let r = check(&[&f]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("evil\\u{1b}[31m.yaml"), "{}", r.stderr);
}

#[test]
fn mcpgov_objects_with_a_wrong_api_version_or_kind_fail_closed() {
    let d = tmp("apiversion");
    for (file, doc, needle) in [
        (
            "no-api-version.yaml",
            "kind: Agent\nmetadata: {name: bot, namespace: team-a}\nspec: {}\n",
            "Agent team-a/bot",
        ),
        (
            "core-api-version.yaml",
            "apiVersion: v1\nkind: Grant\nmetadata: {name: g, namespace: team-a}\nspec: {agent: bot, tools: [\"a::b\"]}\n",
            "Grant team-a/g",
        ),
        (
            "mis-cased-group.yaml",
            "apiVersion: MCPGOV.io/v1alpha1\nkind: Policy\nmetadata: {name: p, namespace: team-a}\nspec: {effect: Deny, governs: {tools: [{tool: \"a::*\"}]}}\n",
            "Policy team-a/p",
        ),
        (
            "unknown-version.yaml",
            "apiVersion: mcpgov.io/v1beta9\nkind: MCPServer\nmetadata: {name: s, namespace: team-a}\nspec: {endpoint: {url: \"http://s/mcp\"}}\n",
            "MCPServer team-a/s",
        ),
        (
            "group-only.yaml",
            "apiVersion: mcpgov.io\nkind: Agent\nmetadata: {name: bot, namespace: team-a}\nspec: {}\n",
            "Agent team-a/bot",
        ),
        (
            "unknown-kind.yaml",
            "apiVersion: mcpgov.io/v1alpha1\nkind: Widget\nmetadata: {name: w, namespace: team-a}\nspec: {}\n",
            "Widget team-a/w",
        ),
        (
            "in-a-list.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- kind: Grant\n  metadata: {name: g, namespace: team-a}\n  spec: {agent: bot, tools: [\"a::b\"]}\n",
            "Grant team-a/g",
        ),
    ] {
        let f = write(&d, file, &format!("{AGENT}---\n{doc}"));
        let r = check(&[&f]);
        assert_eq!(r.code, Some(2), "{file}: {}", r.stderr);
        assert!(
            r.stderr.contains(&f.display().to_string()) && r.stderr.contains(needle),
            "{file}: {}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{file}: {}", r.stdout);
    }
}

#[test]
fn other_kinds_are_skipped_and_counted() {
    let d = tmp("others");
    let f = write(
        &d,
        "mixed.yaml",
        &format!(
            "{AGENT}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n---\napiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {{name: k}}\nspec: {{}}\n"
        ),
    );
    let r = check(&[&f]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("skipped 3 document(s)"), "{}", r.stderr);
    let r = mcpgov(
        &["check", "-o", "json", "-f", &f.display().to_string()],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("skipped 3 document(s)"), "{}", r.stderr);
}

/// What `kubectl get mcpservers,agents,policies,grants -A -o yaml` exports with Kyverno and
/// kagent installed: their objects under our plurals (issue 15).
const BARE_PLURAL_EXPORT: &str = "apiVersion: v1
kind: List
items:
- apiVersion: kagent.dev/v1alpha1
  kind: MCPServer
  metadata: {name: tools, namespace: team-a}
  spec: {deployment: {image: x}}
- apiVersion: kagent.dev/v1alpha2
  kind: Agent
  metadata: {name: helper, namespace: team-a}
  spec: {type: Declarative}
- apiVersion: kyverno.io/v1
  kind: Policy
  metadata: {name: require-labels, namespace: team-a}
  spec: {rules: []}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: team-a}
";

#[test]
fn objects_of_our_kinds_from_other_api_groups_are_warned_about() {
    let d = tmp("lookalikes");
    let f = write(&d, "estate.yaml", BARE_PLURAL_EXPORT);
    let file = f.display().to_string();
    let r = check(&[&f]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let warnings: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    // One line per lookalike (not the Deployment) and the hint.
    assert_eq!(warnings.len(), 4, "{}", r.stderr);
    for (object, av) in [
        ("MCPServer team-a/tools", "kagent.dev/v1alpha1"),
        ("Agent team-a/helper", "kagent.dev/v1alpha2"),
        ("Policy team-a/require-labels", "kyverno.io/v1"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(object) && w.contains(av) && w.contains(&file)),
            "{object}: {}",
            r.stderr
        );
    }
    assert!(!r.stderr.contains("Deployment"), "{}", r.stderr);
    assert!(
        r.stderr.contains("kubectl get mcpgov -A -o yaml"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("warning: 3 object(s) of our kinds"),
        "{}",
        r.stdout
    );

    let r = mcpgov(&["check", "-o", "json", "-f", &file], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let w = v["warnings"]
        .as_array()
        .expect("warnings in the JSON report");
    assert_eq!(w.len(), 3, "{}", r.stdout);
    assert_eq!(w[2]["reason"], "ForeignApiGroup");
    assert_eq!(w[2]["object"], "Policy team-a/require-labels");
    assert_eq!(w[2]["apiVersion"], "kyverno.io/v1");
    assert_eq!(w[2]["file"], file.as_str());
    assert_eq!(w[2]["line"], 1, "a List's items carry the List's line");
    assert_eq!(v["summary"]["violations"], 0);

    let r = mcpgov(&["check", "-o", "sarif", "-f", &file], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let n = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("notifications in the SARIF log");
    assert_eq!(n.len(), 3);
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], true);
    assert_eq!(n[1]["level"], "warning");
    assert_eq!(n[1]["descriptor"]["id"], "ForeignApiGroup");
    assert!(
        n[1]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("kagent.dev/v1alpha2")
    );
    assert!(
        n[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("estate.yaml")
    );

    // Every command that reads manifests says it.
    let r = mcpgov(&["query", "drift", "-f", &file], &[]);
    assert!(r.stderr.contains("kyverno.io/v1"), "{}", r.stderr);

    // Our own objects alone: no warning, and the reports keep their shape.
    let ours = write(&d, "ours.yaml", AGENT);
    let r = check(&[&ours]);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);
    let ours = ours.display().to_string();
    let r = mcpgov(&["check", "-o", "json", "-f", &ours], &[]);
    assert!(!r.stdout.contains("warnings"), "{}", r.stdout);
    let r = mcpgov(&["check", "-o", "sarif", "-f", &ours], &[]);
    assert!(!r.stdout.contains("invocations"), "{}", r.stdout);
}

#[test]
fn lookalike_warnings_are_escaped_and_bounded() {
    let d = tmp("lookalikes-hostile");
    let mut text = String::from(
        "apiVersion: \"evil.io/v1\\u001b[31m\"\nkind: Agent\nmetadata: {name: a, namespace: t}\n",
    );
    for i in 0..500 {
        text.push_str(&format!(
            "---\napiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {{name: p{i}, namespace: t}}\n"
        ));
    }
    let f = write(&d, "many.yaml", &text);
    let r = check(&[&f]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains('\u{1b}'), "an escape reached stderr");
    assert!(r.stderr.contains("evil.io/v1\\u{1b}[31m"), "{}", r.stderr);
    let lines = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .count();
    assert!(lines <= 22, "{lines} warning lines");
    assert!(r.stderr.contains("and 481 more"), "{}", r.stderr);
    assert!(r.stdout.contains("warning: 501 object(s)"), "{}", r.stdout);
}

#[test]
fn names_and_namespaces_the_apiserver_refuses_fail() {
    let d = tmp("names");
    let long = "a".repeat(254);
    let long_ns = "n".repeat(64);
    for (i, (name, ns)) in [
        ("a..b", "team-a"),
        ("*", "team-a"),
        ("a.-b", "team-a"),
        ("-a", "team-a"),
        ("Bot", "team-a"),
        (long.as_str(), "team-a"),
        ("bot", "Team A/../x"),
        ("bot", "a.b"),
        ("bot", long_ns.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let f = write(
            &d,
            &format!("n{i}.yaml"),
            &format!(
                "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: {name:?}, namespace: {ns:?}}}\nspec: {{}}\n"
            ),
        );
        let r = check(&[&f]);
        assert_eq!(r.code, Some(2), "{name:?} {ns:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&f.display().to_string()) && r.stderr.contains("Agent "),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("metadata."), "{}", r.stderr);
    }
    // The longest valid ones still load.
    let ok = write(
        &d,
        "ok.yaml",
        &format!(
            "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: {}, namespace: {}}}\nspec: {{}}\n",
            [
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(61)
            ]
            .join("."),
            "n".repeat(63)
        ),
    );
    let r = check(&[&ok]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn json_duplicate_keys_are_refused_at_any_depth() {
    let d = tmp("json-dup");
    for (file, doc, key) in [
        (
            "top.json",
            r#"{"apiVersion":"mcpgov.io/v1alpha1","kind":"Agent","kind":"Grant","metadata":{"name":"a","namespace":"t"},"spec":{}}"#,
            "\"kind\"",
        ),
        (
            "spec.json",
            r#"{"apiVersion":"mcpgov.io/v1alpha1","kind":"Agent","metadata":{"name":"a","namespace":"t"},"spec":{"profile":"Explore","profile":"Strict"}}"#,
            "\"profile\"",
        ),
        (
            "deep.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"mcpgov.io/v1alpha1","kind":"Agent","metadata":{"name":"a","namespace":"t","labels":{"x":"1","x":"2"}},"spec":{}}]}"#,
            "\"x\"",
        ),
    ] {
        let f = write(&d, file, doc);
        let r = check(&[&f]);
        assert_eq!(r.code, Some(2), "{file}: {}", r.stderr);
        assert!(
            r.stderr.contains(&f.display().to_string())
                && r.stderr.contains("duplicate")
                && r.stderr.contains(key),
            "{file}: {}",
            r.stderr
        );
    }
}

#[test]
fn stdin_is_read_with_dash_alone_or_beside_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart");
    let gov = std::fs::read(root.join("governance.yaml")).unwrap();
    let catalog = root.join("catalog.yaml").display().to_string();
    let dir = root.display().to_string();
    let whole = mcpgov(&["check", "-o", "json", "-f", &dir], &[]);
    assert_eq!(whole.code, Some(0), "{}", whole.stderr);
    // The governance on stdin, the catalog as a file: the same report as the directory.
    for args in [
        vec!["check", "-o", "json", "-f", "-", "-f", &catalog],
        vec!["check", "-o", "json", "-f", &catalog, "-"],
        vec!["check", "-o", "json", "-f", "-", "--catalog", &catalog],
    ] {
        let r = mcpgov_stdin(&args, &[], Some(gov.clone()));
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        assert_eq!(r.stdout, whole.stdout, "{args:?}");
    }
    // Empty standard input is an empty stream.
    let r = mcpgov_stdin(&["check", "-f", "-"], &[], Some(Vec::new()));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn stdin_fails_closed_like_a_file_and_is_named_stdin() {
    // The same size cap.
    let big = format!("{AGENT}# {}\n", "x".repeat(4096)).into_bytes();
    let r = mcpgov_stdin(
        &["check", "--max-file-size", "1Ki", "-f", "-"],
        &[],
        Some(big),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("<stdin>: larger than the cap of 1024 bytes"),
        "{}",
        r.stderr
    );
    // The same validation, naming <stdin> and the object.
    let bad = AGENT.replace("Strict", "Lenient").into_bytes();
    let r = mcpgov_stdin(&["check", "-f", "-"], &[], Some(bad));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("<stdin>: Agent team-a/bot:"),
        "{}",
        r.stderr
    );
    // Not UTF-8, and text that is no manifest: refused without echoing it.
    let r = mcpgov_stdin(&["check", "-f", "-"], &[], Some(b"\xff\xfe".to_vec()));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("<stdin>: not UTF-8"), "{}", r.stderr);
    let r = mcpgov_stdin(
        &["check", "-f", "-"],
        &[],
        Some(format!("{SECRET}: [\n").into_bytes()),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("<stdin>: not valid YAML"), "{}", r.stderr);
    // Standard input can be read once.
    for args in [
        vec!["check", "-f", "-", "-f", "-"],
        vec!["check", "-f", "-", "--catalog", "-"],
    ] {
        let r = mcpgov_stdin(&args, &[], Some(AGENT.as_bytes().to_vec()));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("standard input"), "{}", r.stderr);
    }
}

/// Two Agents of a namespace whose bundles would share a ConfigMap: `check` reports
/// each with the words the admission webhook denies with, and `--fail-on any` trips.
#[test]
fn agents_sharing_a_bundle_configmap_name_are_reported_as_the_webhook_denies() {
    let d = tmp("bundle-clash");
    let f = write(
        &d,
        "agents.yaml",
        "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: a, namespace: ci}\nspec: {bundle: {configMapName: shared}}\n---\napiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: b, namespace: ci}\nspec: {bundle: {configMapName: shared}}\n---\napiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: c, namespace: web}\nspec: {bundle: {configMapName: shared}}\n---\napiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {name: shared-mcpgov, namespace: ci}\nspec: {}\n",
    );
    let path = f.display().to_string();
    let r = mcpgov(&["check", "-o", "json", "-f", &path], &[]);
    let out: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stderr);
    let clashes: Vec<(String, String)> = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["reason"] == "BundleNameClash")
        .map(|f| {
            (
                f["object"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let words = |other: &str| {
        format!(
            "bundle ConfigMap name \"shared\" is also the bundle of Agent {other}: choose \
             another spec.bundle.configMapName"
        )
    };
    // ci/a and ci/b clash; web/c is another namespace, ci/shared-mcpgov another name.
    assert_eq!(
        clashes,
        vec![
            ("Agent ci/a".to_string(), words("ci/b")),
            ("Agent ci/b".to_string(), words("ci/a")),
        ],
        "{}",
        r.stdout
    );
    let r = mcpgov(&["check", "--fail-on", "any", "-f", &path], &[]);
    assert_ne!(r.code, Some(0), "{}", r.stdout);
}
