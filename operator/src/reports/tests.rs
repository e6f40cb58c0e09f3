use super::*;
use mcpgov_engine::{FindingKind, FindingReason, Kind, ObjKey};

fn object(kind: Kind, key: &str) -> ObjectRef {
    ObjectRef::parse(&format!("{kind} {key}")).unwrap()
}

fn violation(agent: &str, tool: &str, policy: &str) -> Finding {
    let mut f = Finding::new(
        FindingKind::Violation,
        FindingReason::DenyViolation,
        object(Kind::Agent, agent),
        format!("{tool} reaches {policy} through file:///**/.env"),
    )
    .agent(agent)
    .tool(tool)
    .policy(policy);
    f.resource = Some("file:///srv/app/**".into());
    f.path = vec![
        format!("agent:{agent}"),
        "CAN_CALL".into(),
        format!("tool:{tool}"),
        "GOVERNED_BY".into(),
        format!("policy:{policy}"),
    ];
    f
}

fn exception(agent: &str, tool: &str, policy: &str, grant: &str) -> Finding {
    let mut f = violation(agent, tool, policy);
    f.kind = FindingKind::Exception;
    f.reason = FindingReason::AuthorizedButGoverned;
    f.exception(grant, "rotates secrets")
}

fn drift(grant: &str, agent: &str, tool: &str) -> Finding {
    Finding::new(
        FindingKind::Drift,
        FindingReason::Drifted,
        object(Kind::Grant, grant),
        format!("\"{tool}\" names {tool}, which no server exposes now"),
    )
    .agent(agent)
    .tool(tool)
}

fn unused(grant: &str, agent: &str, policy: &str) -> Finding {
    Finding::new(
        FindingKind::Unresolved,
        FindingReason::ExceptionUnused,
        object(Kind::Grant, grant),
        format!("expected exception to {policy} covers no path of agent {agent}"),
    )
    .agent(agent)
    .policy(policy)
    .exception(grant, "temporary access")
}

fn reference(kind: &str, key: &str) -> ObjectReference {
    let (ns, name) = key.split_once('/').unwrap();
    ObjectReference {
        api_version: "mcpgov.io/v1alpha1".into(),
        kind: kind.into(),
        namespace: Some(ns.into()),
        name: name.into(),
    }
}

fn policy_reports(findings: &[Finding]) -> Vec<Report> {
    let r = build(findings, &Options::new(Api::PolicyReport));
    assert_eq!(r.unplaced, 0);
    r.reports
}

#[test]
fn a_violation_becomes_a_failing_result_on_its_agent() {
    let reports = policy_reports(&[violation(
        "ci/ci-bot",
        "ci/git::git_show",
        "ci/secrets-deny",
    )]);
    assert_eq!(reports.len(), 1);
    let r = &reports[0].results[0];
    assert_eq!(r.source, "mcpgov");
    assert_eq!(r.policy, "ci/secrets-deny");
    assert_eq!(r.rule, "deny-violation");
    assert_eq!(r.result, Outcome::Fail);
    assert_eq!(r.severity, Severity::High);
    assert_eq!(r.category, "Violation");
    assert_eq!(r.resources, vec![reference("Agent", "ci/ci-bot")]);
    assert_eq!(r.timestamp, None);
    assert!(
        r.message
            .contains("ci/git::git_show reaches ci/secrets-deny")
    );
    let p = &r.properties;
    assert_eq!(p["reason"], "DenyViolation");
    assert_eq!(p["agent"], "ci/ci-bot");
    assert_eq!(p["tool"], "ci/git::git_show");
    assert_eq!(p["resource"], "file:///srv/app/**");
    let path: Vec<String> = serde_json::from_str(&p["path"]).unwrap();
    assert_eq!(path[0], "agent:ci/ci-bot");
    assert_eq!(path.len(), 5);
    assert!(!p.contains_key("exceptionReason"));
}

#[test]
fn an_expected_exception_is_skipped_with_its_reason_and_grant() {
    let reports = policy_reports(&[exception(
        "ci/ops-agent",
        "ci/filesystem::read_file",
        "ci/secrets-deny",
        "ci/ops-grant",
    )]);
    let r = &reports[0].results[0];
    assert_eq!(r.rule, "expected-exception");
    assert_eq!(r.result, Outcome::Skip);
    assert_eq!(r.severity, Severity::Info);
    assert_eq!(r.properties["exceptionReason"], "rotates secrets");
    assert_eq!(r.properties["exceptionGrant"], "ci/ops-grant");
    assert_eq!(
        r.resources,
        vec![
            reference("Agent", "ci/ops-agent"),
            reference("Grant", "ci/ops-grant")
        ]
    );
    assert_eq!(reports[0].summary.skip, 1);
}

#[test]
fn grant_findings_name_the_grant_then_its_agent_once() {
    let reports = policy_reports(&[unused("team-a/g", "team-a/bot", "gov/no-secrets")]);
    let r = &reports[0].results[0];
    assert_eq!(r.rule, "unused-exception");
    assert_eq!(r.result, Outcome::Warn);
    assert_eq!(r.policy, "gov/no-secrets");
    assert_eq!(r.properties["exceptionReason"], "temporary access");
    // The Grant is the object and the exception's Grant: listed once.
    assert_eq!(
        r.resources,
        vec![
            reference("Grant", "team-a/g"),
            reference("Agent", "team-a/bot")
        ]
    );
}

#[test]
fn findings_no_policy_owns_belong_to_the_builtin_policy() {
    let reports = policy_reports(&[drift("team-a/g", "team-a/bot", "team-a/fs::gone")]);
    let r = &reports[0].results[0];
    assert_eq!(r.policy, BUILTIN_POLICY);
    assert_eq!(r.rule, "drift");
    assert_eq!(r.result, Outcome::Warn);
    assert!(!r.properties.contains_key("path"));
}

#[test]
fn one_report_per_namespace_with_findings_each_with_its_own_results() {
    let findings = [
        violation("b/bot", "b/s::t", "gov/p"),
        drift("a/g", "a/bot", "a/s::gone"),
        violation("a/bot", "a/s::t", "gov/p"),
        unused("a/g", "a/bot", "gov/p"),
    ];
    let reports = policy_reports(&findings);
    let namespaces: Vec<&str> = reports
        .iter()
        .map(|r| r.metadata.namespace.as_str())
        .collect();
    assert_eq!(namespaces, ["a", "b"]);
    let a = &reports[0];
    assert_eq!(a.metadata.name, "mcpgov");
    assert_eq!(a.metadata.labels["app.kubernetes.io/managed-by"], "mcpgov");
    assert!(a.metadata.annotations.is_empty());
    assert_eq!(a.scope.kind, "Namespace");
    assert_eq!(a.scope.name, "a");
    assert_eq!(
        a.summary,
        ReportSummary {
            fail: 1,
            warn: 2,
            ..Default::default()
        }
    );
    // Fail first, then the rest by severity (unused-exception is low, drift medium).
    let rules: Vec<&str> = a.results.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(rules, ["deny-violation", "drift", "unused-exception"]);
    assert_eq!(reports[1].summary.fail, 1);
    assert_eq!(reports[1].results.len(), 1);
}

#[test]
fn no_findings_no_reports() {
    assert!(policy_reports(&[]).is_empty());
}

#[test]
fn the_two_apis_differ_only_where_their_schemas_do() {
    let findings = [violation("a/bot", "a/s::t", "gov/p")];
    let old = &build(&findings, &Options::new(Api::PolicyReport)).reports[0];
    let new = &build(&findings, &Options::new(Api::OpenReports)).reports[0];
    assert_eq!(
        (old.api_version.as_str(), old.kind.as_str()),
        ("wgpolicyk8s.io/v1alpha2", "PolicyReport")
    );
    assert_eq!(
        (new.api_version.as_str(), new.kind.as_str()),
        ("openreports.io/v1alpha1", "Report")
    );
    let old_json = serde_json::to_value(old).unwrap();
    assert!(old_json.get("source").is_none());
    assert!(old_json.get("configuration").is_none());
    assert_eq!(new.source.as_deref(), Some("mcpgov"));
    assert_eq!(
        new.configuration.as_ref().unwrap().limits.max_results,
        Bounds::default().max_results
    );
    assert_eq!(old.results, new.results);
    assert_eq!(old.summary, new.summary);
}

#[test]
fn results_carry_the_evaluation_instant_when_given() {
    let mut options = Options::new(Api::PolicyReport);
    options.timestamp = Some("2026-11-29T00:00:00.5Z".parse().unwrap());
    let findings = [violation("a/bot", "a/s::t", "gov/p")];
    let r = &build(&findings, &options).reports[0].results[0];
    assert_eq!(
        r.timestamp,
        Some(Timestamp {
            seconds: 1_795_910_400,
            nanos: 500_000_000
        })
    );
    // Before 1970 the nanoseconds stay positive, as meta/v1 requires.
    let t: jiff::Timestamp = "1969-12-31T23:59:59.25Z".parse().unwrap();
    assert_eq!(
        Timestamp::from(t),
        Timestamp {
            seconds: -1,
            nanos: 250_000_000
        }
    );
}

#[test]
fn the_output_does_not_depend_on_the_inputs_order() {
    let mut findings = Vec::new();
    for i in 0..50 {
        findings.push(violation(
            &format!("ns{}/bot{i}", i % 3),
            &format!("ns{}/s::t{i}", i % 3),
            "gov/p",
        ));
        findings.push(drift(&format!("ns{}/g{i}", i % 4), "x/bot", "x/s::gone"));
        findings.push(unused(&format!("ns{}/g{i}", i % 5), "x/bot", "gov/q"));
    }
    let forward = policy_reports(&findings);
    findings.reverse();
    // An interleaving unlike either order.
    let (even, odd): (Vec<_>, Vec<_>) = findings
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let mixed: Vec<Finding> = odd.into_iter().chain(even).map(|(_, f)| f).collect();
    assert_eq!(forward, policy_reports(&findings));
    assert_eq!(forward, policy_reports(&mixed));
    assert_eq!(
        serde_json::to_string(&forward).unwrap(),
        serde_json::to_string(&policy_reports(&mixed)).unwrap()
    );
}

#[test]
fn a_hundred_thousand_findings_keep_the_most_severe_thousand() {
    let mut findings = Vec::new();
    for i in 0..100_000 {
        findings.push(if i % 10 == 0 {
            violation(&format!("big/bot{i}"), &format!("big/s::t{i}"), "gov/p")
        } else {
            drift(&format!("big/g{i}"), &format!("big/bot{i}"), "big/s::gone")
        });
    }
    let started = std::time::Instant::now();
    let reports = policy_reports(&findings);
    let elapsed = started.elapsed();
    let r = &reports[0];
    assert_eq!(r.results.len(), 1000);
    assert_eq!(
        r.metadata.annotations[names::RESULTS_OMITTED_ANNOTATION],
        "99000"
    );
    // The summary counts every finding; the kept results are the failing ones.
    assert_eq!(r.summary.fail, 10_000);
    assert_eq!(r.summary.warn, 90_000);
    assert!(r.results.iter().all(|x| x.result == Outcome::Fail));
    let bytes = serde_json::to_vec(r).unwrap().len();
    assert!(bytes < 1536 * 1024, "{bytes} bytes");
    // Generous for a debug build on a loaded machine; linear work, one sort.
    assert!(elapsed.as_secs() < 20, "{elapsed:?}");
}

#[test]
fn huge_strings_are_cut_and_counted() {
    let huge = "n".repeat(300_000);
    let mut f = violation(
        &format!("a/{huge}"),
        &format!("a/s::{huge}"),
        &format!("gov/{huge}"),
    );
    f.message = "m".repeat(2_000_000);
    f.path.push(huge.clone());
    let reports = policy_reports(&[f]);
    let r = &reports[0];
    let x = &r.results[0];
    let max = Bounds::default().max_chars;
    assert_eq!(x.message.chars().count(), max);
    assert!(x.message.ends_with('…'));
    assert_eq!(x.policy.chars().count(), max);
    assert_eq!(x.resources[0].name.chars().count(), max);
    for v in x.properties.values() {
        assert!(v.chars().count() <= max, "{}", v.len());
    }
    // message, policy, agent name, agent and tool properties, path.
    assert_eq!(
        r.metadata.annotations[names::VALUES_TRUNCATED_ANNOTATION],
        "6"
    );
    assert!(
        !r.metadata
            .annotations
            .contains_key(names::RESULTS_OMITTED_ANNOTATION)
    );
    assert!(serde_json::to_vec(r).unwrap().len() < 64 * 1024);
}

#[test]
fn cuts_fall_on_character_boundaries() {
    let mut c = Cutter {
        max_chars: 4,
        cut: 0,
    };
    assert_eq!(c.text("ééé"), "ééé");
    assert_eq!(c.text("éééé"), "éééé");
    assert_eq!(c.text("ééééé"), "ééé…");
    assert_eq!(c.text("🦀🦀🦀🦀🦀🦀"), "🦀🦀🦀…");
    assert_eq!(c.cut, 2);
    let mut zero = Cutter {
        max_chars: 0,
        cut: 0,
    };
    assert_eq!(zero.text("a"), "");
    assert_eq!(zero.text(""), "");
    assert_eq!(zero.cut, 1);
}

#[test]
fn the_byte_budget_stops_a_report_before_the_result_count_does() {
    let findings: Vec<Finding> = (0..100)
        .map(|i| {
            let mut f = violation(&format!("a/bot{i}"), "a/s::t", "gov/p");
            f.message = "x".repeat(900);
            f
        })
        .collect();
    let mut options = Options::new(Api::OpenReports);
    options.bounds.max_bytes = 20_000;
    let r = &build(&findings, &options).reports[0];
    let kept = r.results.len();
    assert!(kept > 0 && kept < 100, "{kept}");
    let bytes: usize = r
        .results
        .iter()
        .map(|x| serde_json::to_vec(x).unwrap().len())
        .sum();
    assert!(bytes <= 20_000, "{bytes}");
    assert_eq!(
        r.metadata.annotations[names::RESULTS_OMITTED_ANNOTATION],
        (100 - kept).to_string()
    );
    assert_eq!(r.summary.fail, 100);
    // A budget no result fits in leaves an empty, still valid report.
    options.bounds.max_bytes = 10;
    let r = &build(&findings, &options).reports[0];
    assert!(r.results.is_empty());
    assert_eq!(
        r.metadata.annotations[names::RESULTS_OMITTED_ANNOTATION],
        "100"
    );
}

#[test]
fn objects_without_a_namespace_or_name_are_counted_not_guessed() {
    let mut findings = vec![violation("a/bot", "a/s::t", "gov/p")];
    for (namespace, name) in [("", ""), ("", "x"), ("a", "")] {
        let mut f = violation("a/bot", "a/s::t", "gov/p");
        f.object = ObjectRef::new(Kind::Agent, &ObjKey::new(namespace, name));
        findings.push(f);
    }
    let r = build(&findings, &Options::new(Api::PolicyReport));
    assert_eq!(r.unplaced, 3);
    assert_eq!(r.reports.len(), 1);
    assert_eq!(r.reports[0].results.len(), 1);
    // A name with a slash keeps it: the namespace is up to the first one.
    let mut f = violation("a/bot", "a/s::t", "gov/p");
    f.object = object(Kind::Agent, "a/b/c");
    assert_eq!(namespace_of(&f), Some("a"));
    let r = build(&[f], &Options::new(Api::PolicyReport));
    assert_eq!(r.reports[0].results[0].resources[0].name, "b/c");
}

#[test]
fn hostile_text_survives_yaml_and_json_unchanged() {
    let mut f = violation("a/bot", "a/s::t", "gov/p");
    f.message = "yes\n: - \u{1b}[31m\r\u{202e}null # ~ 'x' \"y\" \u{0}\u{85}\u{2028}\u{9b}".into();
    f.exception_reason = Some("0x10".into());
    let reports = policy_reports(&[f]);
    let yaml = serde_saphyr::to_string(&reports).unwrap();
    // Control characters (C0, C1, DEL) are escaped but a tab; bidi controls stay, as in
    // -o json.
    assert_eq!(
        yaml.chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t'),
        None,
        "{yaml}"
    );
    assert!(yaml.contains("\\e[31m"), "{yaml}");
    let back: Vec<Report> = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, reports);
    let json = serde_json::to_string(&reports).unwrap();
    let back: Vec<Report> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, reports);
}
