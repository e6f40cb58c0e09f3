//! The audit questions over a whole estate.

mod common;
use common::*;
use mcpgov_engine::*;

fn estate() -> Engine {
    engine(vec![
        server("ns", "fs")
            .tools(&["read_file", "list_dir"])
            .annotated("write_file", Some(true), None)
            .annotated("delete_file", None, Some(true))
            .annotated("purge", None, Some(true))
            .reads("read_file", "file:///srv/**")
            .writes("write_file", "file:///srv/**")
            .reads_unbacked("list_dir", "file:///srv")
            .build(),
        deny("ns", "secrets").resource("file:///srv/.env").build(),
        deny("ns", "purge-guard").tool("fs::purge").build(),
        deny("ns", "nobody-reaches")
            .resource_unbacked("db://x")
            .build(),
        agent("ns", "bot", Profile::Strict),
        grant(
            "ns",
            "g",
            "bot",
            &["fs::read_file", "fs::list_dir", "fs::delete_file"],
        )
        .unbacked()
        .build(),
    ])
}

#[test]
fn orphan_policies_are_those_no_agent_reaches() {
    let e = estate();
    let rows = e.evaluator(now()).orphan_policies();
    let names: Vec<&str> = rows.iter().map(|r| r.policy.as_str()).collect();
    assert_eq!(names, ["ns/nobody-reaches", "ns/purge-guard"]);
}

#[test]
fn unbacked_edges_include_grants_only_when_asked() {
    let e = estate();
    let ev = e.evaluator(now());
    let edges: Vec<(&str, String)> = ev
        .unbacked_edges(false)
        .into_iter()
        .map(|r| (r.edge, r.from))
        .collect();
    assert_eq!(
        edges,
        [
            ("GOVERNED_BY", "db://x".to_string()),
            ("READS", "ns/fs::list_dir".to_string())
        ]
    );
    let with_grants = ev.unbacked_edges(true);
    assert_eq!(
        with_grants.iter().filter(|r| r.edge == "CAN_CALL").count(),
        3
    );
}

#[test]
fn destructive_tools_without_any_policy_path() {
    let e = estate();
    let rows = e.evaluator(now()).destructive_unsafeguarded();
    let tools: Vec<&str> = rows.iter().map(|r| r.tool.as_str()).collect();
    // purge is governed directly; delete_file has no path at all.
    assert_eq!(tools, ["ns/fs::delete_file"]);
    assert_eq!(rows[0].hint_provenance.confidence, Confidence::Medium);
}

#[test]
fn writes_on_a_read_only_hint_is_a_contradiction() {
    let e = estate();
    let rows = e.evaluator(now()).annotation_contradictions();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool, "ns/fs::write_file");
    assert_eq!(rows[0].resource, "file:///srv/**");
}

#[test]
fn unmapped_tools_are_granted_tools_without_data_access() {
    let e = estate();
    let rows = e.evaluator(now()).unmapped_tools();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool, "ns/fs::delete_file");
    assert_eq!(rows[0].agents, ["ns/bot"]);
}

#[test]
fn blast_radius_of_a_resource_a_glob_and_a_policy() {
    let e = estate();
    let ev = e.evaluator(now());
    let r = ev.blast_radius("file:///srv/.env", "ns");
    assert!(r.found);
    assert_eq!(r.target_kind, Some("resource"));
    assert_eq!(r.policies, ["ns/secrets"]);
    let tools: Vec<&str> = r.impacted.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(tools, ["ns/fs::read_file", "ns/fs::write_file"]);
    assert_eq!(r.agents, ["ns/bot"]);

    let r = ev.blast_radius("file:///srv", "ns");
    let tools: Vec<&str> = r.impacted.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(tools, ["ns/fs::list_dir"]);

    let r = ev.blast_radius("purge-guard", "ns");
    assert_eq!((r.found, r.target_kind), (true, Some("policy")));
    assert_eq!(r.impacted[0].via, ["GOVERNED_BY fs::purge"]);
    assert!(r.agents.is_empty());

    for missing in ["no-such-policy", "gopher://nowhere/x"] {
        let r = ev.blast_radius(missing, "ns");
        assert!(!r.found, "{missing}");
        assert!(r.impacted.is_empty());
    }
}

#[test]
fn audit_report_fails_on_violations_and_passes_a_clean_estate() {
    let e = estate();
    let report = e.evaluator(now()).audit_report();
    assert_eq!(report.status, "fail");
    assert_eq!(report.counts.violations, 1);
    assert_eq!(report.counts.orphan_policies, 2);
    assert_eq!(report.counts.destructive_unsafeguarded, 1);

    let clean = engine(vec![
        server("ns", "s").tools(&["t"]).reads("t", "x:1").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::t"]).build(),
    ]);
    assert_eq!(clean.evaluator(now()).audit_report().status, "pass");
}

#[test]
fn invalid_input_becomes_a_finding_not_a_panic() {
    let e = engine(vec![
        server("ns", "s")
            .tools(&["t"])
            .reads("t", "no scheme here")
            .build(),
        deny("ns", "p").resource("x:/***").tool("a/b/c::t").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::t"])
            .exception("p", None, None, Some("next tuesday"))
            .build(),
    ]);
    let findings = e.evaluator(now()).check();
    let invalid: Vec<(String, &str)> = findings
        .iter()
        .filter(|f| f.kind == FindingKind::Invalid)
        .map(|f| (f.object.to_string(), f.reason.as_str()))
        .collect();
    assert_eq!(
        invalid,
        [
            ("Grant ns/g", "InvalidTimestamp"),
            ("Policy ns/p", "InvalidToolKey"),
            ("MCPServer ns/s", "InvalidURI"),
            ("Policy ns/p", "InvalidURI"),
        ]
        .map(|(o, r)| (o.to_string(), r))
    );
}
