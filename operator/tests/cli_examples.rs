//! Golden tests of the `mcpgov` binary on the shipped examples, and exit codes on bad
//! input. Regenerate the goldens with `MCPGOV_BLESS=1 cargo test -p mcpgov --test
//! cli_examples` and review the diff.

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

fn check_json(example: &str) -> Value {
    let o = mcpgov(&["check", "-o", "json", "-f", &format!("examples/{example}")]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    golden(&format!("{example}.check.json"), &stdout(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn findings<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[test]
fn quickstart_has_one_violation_under_strict() {
    let r = check_json("quickstart");
    let v = findings(&r, "Violation");
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["agent"], "quickstart/vibe-coder");
    assert_eq!(v[0]["tool"], "quickstart/policy-gateway::publish_note");
    assert_eq!(v[0]["resource"], "file:///demo/drafts");
    assert_eq!(r["summary"]["violations"], 1);
}

#[test]
fn cross_server_ci_bot_reaches_the_secret_through_git_show() {
    let r = check_json("cross-server");
    let v = findings(&r, "Violation");
    let ci: Vec<_> = v.iter().filter(|f| f["agent"] == "ci/ci-bot").collect();
    assert_eq!(ci.len(), 1);
    assert_eq!(ci[0]["tool"], "ci/git::git_show");
    assert_eq!(ci[0]["policy"], "ci/secrets-deny");
    // ops-agent declared its reach: exceptions, not violations.
    assert!(v.iter().all(|f| f["agent"] != "ci/ops-agent"));
    assert!(!findings(&r, "Exception").is_empty());
}

#[test]
fn multi_tenant_team_exception_does_not_excuse_a_platform_deny() {
    let r = check_json("multi-tenant");
    let v = findings(&r, "Violation");
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["policy"], "mcpgov-system/no-customer-pii");
    let reasons: Vec<&str> = findings(&r, "Unresolved")
        .iter()
        .map(|f| f["reason"].as_str().unwrap())
        .collect();
    assert!(reasons.contains(&"ExceptionNotAllowed"), "{reasons:?}");
    assert!(reasons.contains(&"CrossNamespaceDenied"), "{reasons:?}");
}

#[test]
fn fail_on_gates_exit_one_and_print_the_report() {
    let o = mcpgov(&[
        "check",
        "--fail-on",
        "violation",
        "-f",
        "examples/quickstart",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("DenyViolation"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fail-on violation"));
    let o = mcpgov(&["check", "--fail-on", "drift", "-f", "examples/quickstart"]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn bundles_are_golden_and_hash_to_what_stderr_says() {
    for (example, agent) in [
        ("quickstart", "vibe-coder"),
        ("cross-server", "ci/ci-bot"),
        ("cross-server", "ci/ops-agent"),
        ("multi-tenant", "report-bot"),
        // A bundle with a per-call guard (also checked against docs/bundle.schema.json).
        ("per-call", "researcher"),
    ] {
        let o = mcpgov(&["bundle", agent, "-f", &format!("examples/{example}")]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let file = format!("{example}.{}.bundle.json", agent.replace('/', "."));
        golden(&file, &stdout(&o));
        let digest = mcpgov_engine::canonical::sha256_hex(&o.stdout);
        assert!(String::from_utf8_lossy(&o.stderr).contains(&digest));
    }
}

#[test]
fn queries_answer_like_toolgraph() {
    let o = mcpgov(&[
        "query",
        "unsafe-tools",
        "ci-bot",
        "-f",
        "examples/cross-server",
    ]);
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows["rows"].as_array().unwrap().len(), 1);

    let o = mcpgov(&[
        "query",
        "check-access",
        "ci-bot",
        "read_file",
        "-f",
        "examples/cross-server",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "NOT_GRANTED");

    let o = mcpgov(&[
        "query",
        "unsafe-tools",
        "ghost",
        "-f",
        "examples/cross-server",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("AGENT_NOT_FOUND"));

    let o = mcpgov(&[
        "query",
        "blast-radius",
        "file:///srv/app/.env",
        "-f",
        "examples/cross-server",
    ]);
    golden("cross-server.blast-radius.json", &stdout(&o));
    let o = mcpgov(&["query", "audit-report", "-f", "examples/cross-server"]);
    golden("cross-server.audit-report.json", &stdout(&o));
    let o = mcpgov(&[
        "query",
        "eligible-tools",
        "vibe-coder",
        "--profile",
        "review",
        "-f",
        "examples/quickstart",
    ]);
    golden("quickstart.eligible-review.json", &stdout(&o));
}

#[test]
fn bad_manifests_exit_two_naming_the_file_and_object() {
    for (file, needle) in [
        (
            "missing-field.yaml",
            "Grant team-a/no-agent: spec.agent is required",
        ),
        ("bad-enum.yaml", "Policy team-a/block-all: spec.effect"),
        ("bad-uri.yaml", "MCPServer team-a/fs: spec.endpoint.url"),
        ("bad-yaml.yaml", "not valid YAML"),
        ("unknown-kind.yaml", "unknown kind \"Agnet\""),
        (
            "bad-glob.yaml",
            "Policy team-a/stars: spec.governs.resources[0].uri: \"file:///***\" does not match",
        ),
        ("unknown-field.yaml", "unknown field \"expectedException\""),
        ("duplicate.yaml", "Agent team-a/twice is also defined"),
    ] {
        let path = format!("operator/tests/fixtures/bad/{file}");
        let o = mcpgov(&["check", "-f", &path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(&path) && err.contains(needle), "{file}: {err}");
        assert!(o.stdout.is_empty(), "{file}: results must not be printed");
    }
    let o = mcpgov(&["check", "-f", "does/not/exist.yaml"]);
    assert_eq!(o.status.code(), Some(2));
}

const EXAMPLES: [&str; 3] = ["quickstart", "cross-server", "multi-tenant"];

#[test]
fn check_tables_are_golden() {
    for example in EXAMPLES {
        let o = mcpgov(&["check", "-f", &format!("examples/{example}")]);
        assert_eq!(o.status.code(), Some(0), "{example}");
        golden(&format!("{example}.check.txt"), &stdout(&o));
    }
    // The table and the JSON report say the same.
    let table = stdout(&mcpgov(&["check", "-f", "examples/cross-server"]));
    let json = check_json("cross-server");
    for f in json["findings"].as_array().unwrap() {
        let row = format!("{}  ", f["kind"].as_str().unwrap());
        assert!(
            table.lines().any(|l| l.starts_with(&row)
                && l.contains(f["reason"].as_str().unwrap())
                && l.contains(f["object"].as_str().unwrap())),
            "{f} not in\n{table}"
        );
    }
    let s = &json["summary"];
    assert!(table.ends_with(&format!(
        "{} violation(s), {} exception(s), {} drift, {} unresolved, {} invalid\n",
        s["violations"], s["exceptions"], s["drift"], s["unresolved"], s["invalid"]
    )));
}

/// `-o sarif`: golden per example, and every result matches a finding of `-o json`,
/// names a rule, and points at the line where its object's document starts.
#[test]
fn check_sarif_is_golden_and_points_at_each_object() {
    for example in EXAMPLES {
        let dir = format!("examples/{example}");
        let o = mcpgov(&["check", "-o", "sarif", "-f", &dir]);
        assert_eq!(o.status.code(), Some(0), "{example}");
        golden(&format!("{example}.check.sarif.json"), &stdout(&o));
        // Deterministic: a second run prints the same bytes.
        assert_eq!(
            stdout(&mcpgov(&["check", "-o", "sarif", "-f", &dir])),
            stdout(&o)
        );
        let log: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(log["version"], "2.1.0");
        assert!(
            log["$schema"]
                .as_str()
                .unwrap()
                .contains("sarif-schema-2.1.0")
        );
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "mcpgov");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let json = check_json(example);
        let findings = json["findings"].as_array().unwrap();
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), findings.len(), "{example}");
        for (r, f) in results.iter().zip(findings) {
            assert_eq!(r["ruleId"], f["reason"]);
            let rule = &rules[r["ruleIndex"].as_u64().unwrap() as usize];
            assert_eq!(rule["id"], r["ruleId"]);
            assert!(rule["shortDescription"]["text"].is_string());
            assert!(rule["help"]["text"].is_string());
            let level = match f["kind"].as_str().unwrap() {
                "Violation" | "Invalid" => "error",
                "Drift" | "Unresolved" => "warning",
                _ => "note",
            };
            assert_eq!(r["level"], level, "{f}");
            let loc = &r["locations"][0];
            let object = f["object"].as_str().unwrap();
            assert_eq!(loc["logicalLocations"][0]["fullyQualifiedName"], object);
            let uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap();
            assert!(uri.starts_with(&format!("{dir}/")), "{uri}");
            let line = loc["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap() as usize;
            let text = std::fs::read_to_string(root().join(uri)).unwrap();
            let doc: Vec<&str> = text
                .lines()
                .skip(line - 1)
                .take_while(|l| *l != "---")
                .collect();
            let (kind, key) = object.split_once(' ').unwrap();
            let name = key.split('/').next_back().unwrap();
            assert!(
                doc.iter().any(|l| *l == format!("kind: {kind}"))
                    && doc.iter().any(|l| l.contains(&format!("name: {name}"))),
                "{object} is not at {uri}:{line}"
            );
        }
    }
}

/// `-o policyreport` and `-o openreports`: golden per example and for a fixture with
/// every kind of finding; one report per namespace with findings, each finding of
/// `-o json` one result of it, summaries that count them.
#[test]
fn check_policy_reports_are_golden_and_hold_every_finding() {
    let now = NOW.parse::<jiff::Timestamp>().unwrap().as_second();
    let sources = EXAMPLES
        .iter()
        .map(|e| (e.to_string(), format!("examples/{e}")))
        .chain([(
            "every-finding".to_string(),
            "operator/tests/fixtures/reports".to_string(),
        )]);
    for (name, dir) in sources {
        let o = mcpgov(&["check", "-o", "json", "-f", &dir]);
        let json: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let findings = json["findings"].as_array().unwrap();
        let namespace = |f: &Value| {
            let object = f["object"].as_str().unwrap();
            let key = object.split_once(' ').unwrap().1;
            key.split_once('/').unwrap().0.to_string()
        };
        let mut namespaces: Vec<String> = findings.iter().map(namespace).collect();
        namespaces.sort();
        namespaces.dedup();
        for (flag, api_version, kind) in [
            ("policyreport", "wgpolicyk8s.io/v1alpha2", "PolicyReport"),
            ("openreports", "openreports.io/v1alpha1", "Report"),
        ] {
            let o = mcpgov(&["check", "-o", flag, "-f", &dir]);
            assert_eq!(o.status.code(), Some(0), "{name} {flag}");
            golden(&format!("{name}.{flag}.yaml"), &stdout(&o));
            let list: Value = serde_saphyr::from_str(&stdout(&o)).unwrap();
            assert_eq!(
                (&list["apiVersion"], &list["kind"]),
                (&"v1".into(), &"List".into())
            );
            let items = list["items"].as_array().unwrap();
            let listed: Vec<&str> = items
                .iter()
                .map(|i| i["metadata"]["namespace"].as_str().unwrap())
                .collect();
            assert_eq!(listed, namespaces, "{name} {flag}");
            for item in items {
                assert_eq!(item["apiVersion"], api_version);
                assert_eq!(item["kind"], kind);
                assert_eq!(item["metadata"]["name"], "mcpgov");
                let ns = item["metadata"]["namespace"].as_str().unwrap();
                let mine: Vec<&Value> = findings.iter().filter(|f| namespace(f) == ns).collect();
                let results = item["results"].as_array().unwrap();
                assert_eq!(results.len(), mine.len(), "{name} {flag} {ns}");
                let count = |kinds: &[&str]| {
                    mine.iter()
                        .filter(|f| kinds.contains(&f["kind"].as_str().unwrap()))
                        .count()
                };
                let s = &item["summary"];
                assert_eq!(s["fail"], count(&["Violation"]), "{name} {ns}");
                assert_eq!(s["skip"], count(&["Exception"]), "{name} {ns}");
                assert_eq!(s["warn"], count(&["Drift", "Unresolved"]), "{name} {ns}");
                assert_eq!((&s["pass"], &s["error"]), (&0.into(), &0.into()));
                for f in &mine {
                    let (kind, key) = f["object"].as_str().unwrap().split_once(' ').unwrap();
                    let name = key.split_once('/').unwrap().1;
                    let policy = f["policy"].as_str().unwrap_or("mcpgov");
                    let r = results
                        .iter()
                        .find(|r| {
                            r["message"] == f["message"]
                                && r["properties"]["reason"] == f["reason"]
                                && r["resources"][0]["kind"] == kind
                                && r["resources"][0]["name"] == name
                        })
                        .unwrap_or_else(|| panic!("{f} has no result in {ns}"));
                    assert_eq!(r["policy"], policy);
                    assert_eq!(r["source"], "mcpgov");
                    assert_eq!(r["resources"][0]["apiVersion"], "mcpgov.io/v1alpha1");
                    assert_eq!(r["timestamp"]["seconds"], now);
                    if let Some(reason) = f.get("exceptionReason") {
                        assert_eq!(&r["properties"]["exceptionReason"], reason);
                    }
                    if !f["path"].as_array().unwrap().is_empty() {
                        let path: Value =
                            serde_json::from_str(r["properties"]["path"].as_str().unwrap())
                                .unwrap();
                        assert_eq!(path, f["path"]);
                    }
                }
            }
        }
    }
    // The gate works as for the other outputs: reports printed, exit 1.
    let o = mcpgov(&[
        "check",
        "-o",
        "policyreport",
        "--fail-on",
        "violation",
        "-f",
        "examples/quickstart",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("rule: deny-violation"));
    // Invalid input prints no report.
    let o = mcpgov(&[
        "check",
        "-o",
        "openreports",
        "-f",
        "operator/tests/fixtures/bad/bad-uri.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}
