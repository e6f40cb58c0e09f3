//! Verdicts, deny paths, classification and tenancy, on small estates built in code.

mod common;
use common::*;
use mcpgov_engine::*;

fn verdict(e: &Engine, agent: &str, tool: &str) -> AccessVerdict {
    e.evaluator(now()).check_access(&key(agent), tool)
}

#[test]
fn quickstart_publish_note_is_a_violation_with_its_path() {
    let e = engine(quickstart(Profile::Strict));
    let v = verdict(&e, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert_eq!(v.all_authorized, Some(false));
    assert_eq!(v.deny_paths.len(), 1);
    let p = &v.deny_paths[0];
    assert_eq!(p.classification, Classification::Violation);
    assert_eq!(p.resource.as_deref(), Some("file:///demo/drafts"));
    assert_eq!(
        p.path,
        [
            "agent:qs/vibe-coder",
            "CAN_CALL",
            "tool:qs/gw::publish_note",
            "WRITES",
            "resource:file:///demo/drafts",
            "GOVERNED_BY",
            "policy:qs/drafts-deny"
        ]
    );
    assert_eq!(
        p.provenance.as_ref().unwrap().evidence.as_deref(),
        Some("src.rs::write")
    );
    assert_eq!(p.policy_provenance.evidence.as_deref(), Some("POL-1"));
    assert_eq!(
        verdict(&e, "qs/vibe-coder", "gw::read_note").verdict,
        VerdictKind::Allow
    );
}

#[test]
fn not_found_cases_are_distinct_from_not_granted() {
    let mut objs = quickstart(Profile::Strict);
    objs.push(server("qs", "other").tools(&["secret_tool"]).build());
    let e = engine(objs);
    let v = verdict(&e, "qs/nobody", "gw::read_note");
    assert_eq!(
        (v.verdict, v.agent_found, v.found),
        (VerdictKind::AgentNotFound, false, None)
    );
    let v = verdict(&e, "qs/vibe-coder", "gw::nope");
    assert_eq!(
        (v.verdict, v.found),
        (VerdictKind::ToolNotFound, Some(false))
    );
    let v = verdict(&e, "qs/vibe-coder", "other::secret_tool");
    assert_eq!((v.verdict, v.found), (VerdictKind::NotGranted, Some(true)));
}

#[test]
fn bare_names_resolve_only_when_unique() {
    let mut objs = quickstart(Profile::Strict);
    objs.push(server("qs", "gw2").tools(&["read_note"]).build());
    let e = engine(objs);
    assert_eq!(
        verdict(&e, "qs/vibe-coder", "publish_note").verdict,
        VerdictKind::Deny
    );
    let v = verdict(&e, "qs/vibe-coder", "read_note");
    assert_eq!(v.verdict, VerdictKind::Ambiguous);
    assert_eq!(v.candidates, ["qs/gw::read_note", "qs/gw2::read_note"]);
    assert_eq!(
        verdict(&e, "qs/vibe-coder", "missing").verdict,
        VerdictKind::ToolNotFound
    );
}

#[test]
fn cross_server_reach_through_glob_overlap() {
    let e = engine(vec![
        server("ci", "fs")
            .tools(&["read_file"])
            .reads("read_file", "file:///srv/app/**")
            .build(),
        server("ci", "git")
            .tools(&["git_log", "git_show"])
            .reads("git_log", "git://srv/app/history")
            .reads("git_show", "file:///srv/app/**")
            .build(),
        deny("ci", "secrets").resource("file:///**/.env").build(),
        agent("ci", "ci-bot", Profile::Strict),
        grant("ci", "g", "ci-bot", &["git::*"]).build(),
    ]);
    let rows = e
        .evaluator(now())
        .unsafe_tools(&key("ci/ci-bot"), false)
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool, "ci/git::git_show");
    assert_eq!(rows[0].path.governed_by, "file:///**/.env");
    assert_eq!(
        verdict(&e, "ci/ci-bot", "fs::read_file").verdict,
        VerdictKind::NotGranted
    );
}

#[test]
fn exceptions_classify_and_expire() {
    let base = |g: GrantB| {
        let mut objs = quickstart(Profile::Review);
        objs.retain(|o| o.kind() != Kind::Grant);
        objs.push(g.build());
        engine(objs)
    };
    let tools = &["gw::read_note", "gw::publish_note"];
    let e = base(grant("qs", "g", "vibe-coder", tools).exception(
        "drafts-deny",
        Some("gw::publish_note"),
        Some("file:///demo/drafts"),
        None,
    ));
    let v = verdict(&e, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.verdict, VerdictKind::Deny, "deny still wins");
    assert_eq!(v.all_authorized, Some(true));
    assert_eq!(
        v.deny_paths[0].classification,
        Classification::AuthorizedButGoverned
    );
    assert_eq!(
        v.deny_paths[0].exception_reason.as_deref(),
        Some("on purpose")
    );

    let expired = base(grant("qs", "g", "vibe-coder", tools).exception(
        "drafts-deny",
        None,
        None,
        Some("2026-01-01T00:00:00Z"),
    ));
    let v = verdict(&expired, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.deny_paths[0].classification, Classification::Violation);

    let other_tool = base(grant("qs", "g", "vibe-coder", tools).exception(
        "drafts-deny",
        Some("gw::read_note"),
        None,
        None,
    ));
    let v = verdict(&other_tool, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.deny_paths[0].classification, Classification::Violation);
}

#[test]
fn a_team_cannot_excuse_itself_from_a_platform_deny() {
    let objs = |allowed: &[&str]| {
        vec![
            server("team-a", "db")
                .tools(&["query"])
                .reads("query", "pg://db/customers/1")
                .build(),
            deny("mcpgov-system", "pii")
                .resource("pg://db/customers/**")
                .exceptions_from(allowed)
                .build(),
            agent("team-a", "bot", Profile::Review),
            grant("team-a", "g", "bot", &["db::query"])
                .exception("mcpgov-system/pii", None, None, None)
                .build(),
        ]
    };
    let e = engine(objs(&["ops"]));
    let v = verdict(&e, "team-a/bot", "db::query");
    assert_eq!(v.deny_paths[0].classification, Classification::Violation);
    let f = e.evaluator(now()).check();
    assert!(
        f.iter()
            .any(|f| f.reason == FindingReason::ExceptionNotAllowed)
    );

    let e = engine(objs(&["team-a"]));
    let v = verdict(&e, "team-a/bot", "db::query");
    assert_eq!(
        v.deny_paths[0].classification,
        Classification::AuthorizedButGoverned
    );
}

#[test]
fn policies_govern_their_namespace_and_the_governance_one_governs_all() {
    let e = engine(vec![
        server("team-a", "fs").tools(&["rm"]).build(),
        deny("team-b", "b-rules").tool("*/fs::rm").build(),
        agent("team-a", "bot", Profile::Strict),
        grant("team-a", "g", "bot", &["fs::rm"]).build(),
    ]);
    assert_eq!(
        verdict(&e, "team-a/bot", "fs::rm").verdict,
        VerdictKind::Allow
    );

    let e = engine(vec![
        server("team-a", "fs").tools(&["rm"]).build(),
        deny("mcpgov-system", "platform").tool("*/fs::rm").build(),
        agent("team-a", "bot", Profile::Strict),
        grant("team-a", "g", "bot", &["fs::rm"]).build(),
    ]);
    let v = verdict(&e, "team-a/bot", "fs::rm");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert_eq!(
        v.deny_paths[0].resource, None,
        "direct tool binding has no resource"
    );
}

#[test]
fn grants_reach_other_namespaces_only_through_sharing() {
    let objs = |share: &[&str]| {
        vec![
            server("shared", "search")
                .tools(&["web"])
                .share(share)
                .build(),
            agent("team-a", "bot", Profile::Explore),
            grant(
                "team-a",
                "g",
                "bot",
                &["shared/search::web", "shared/search::*"],
            )
            .build(),
        ]
    };
    for (share, expect) in [
        (&["team-a"][..], VerdictKind::Allow),
        (&["*"][..], VerdictKind::Allow),
        (&["team-b"][..], VerdictKind::ToolNotFound),
        (&[][..], VerdictKind::ToolNotFound),
    ] {
        let e = engine(objs(share));
        let v = verdict(&e, "team-a/bot", "shared/search::web");
        assert_eq!(v.verdict, expect, "sharing {share:?}");
        let refs = e.evaluator(now()).grant_refs(&key("team-a/bot"));
        let denied = refs
            .iter()
            .filter(|r| r.resolution.reason() == "CrossNamespaceDenied")
            .count();
        assert_eq!(denied, if expect == VerdictKind::Allow { 0 } else { 2 });
    }
}

#[test]
fn a_glob_over_namespaces_never_reveals_unshared_servers() {
    let e = engine(vec![
        server("team-b", "secret").tools(&["x"]).build(),
        agent("team-a", "bot", Profile::Explore),
        grant("team-a", "g", "bot", &["*/secret::*"]).build(),
    ]);
    let refs = e.evaluator(now()).grant_refs(&key("team-a/bot"));
    assert_eq!(refs[0].resolution.reason(), "NotFound");
}

#[test]
fn allow_policies_never_deny_and_deny_wins() {
    let mut objs = quickstart(Profile::Strict);
    objs.push(allow("qs", "drafts-ok").resource("file:///demo/**").build());
    let e = engine(objs);
    assert_eq!(
        verdict(&e, "qs/vibe-coder", "gw::read_note").verdict,
        VerdictKind::Allow
    );
    let v = verdict(&e, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert!(v.deny_paths.iter().all(|p| p.policy == "qs/drafts-deny"));
}

#[test]
fn uris_are_compared_canonically() {
    let e = engine(vec![
        server("ns", "s")
            .tools(&["t"])
            .reads("t", "HTTP://user@Example.COM:80/a/./b/../c%7E")
            .build(),
        deny("ns", "p").resource("http://example.com/a/c~").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::t"]).build(),
    ]);
    assert_eq!(verdict(&e, "ns/a", "s::t").verdict, VerdictKind::Deny);
}

#[test]
fn drifted_and_never_crawled_tools_are_never_allowed_in_bundles() {
    let e = engine(vec![
        server("ns", "live").tools(&["a"]).reads("a", "x:1").build(),
        server("ns", "new").uncrawled().build(),
        agent("ns", "bot", Profile::Explore),
        grant(
            "ns",
            "g",
            "bot",
            &["live::a", "live::gone", "new::b", "ghost::c"],
        )
        .build(),
    ]);
    let ev = e.evaluator(now());
    let eval = ev.evaluate_agent(&key("ns/bot"), None).unwrap();
    let decided: Vec<(String, Decision)> = eval
        .tools
        .iter()
        .map(|t| (t.id.to_string(), t.decision))
        .collect();
    assert_eq!(
        decided,
        [
            ("ns/ghost::c".to_string(), Decision::Rejected),
            ("ns/live::a".to_string(), Decision::Eligible),
            ("ns/live::gone".to_string(), Decision::Rejected),
            ("ns/new::b".to_string(), Decision::Rejected),
        ]
    );
    assert!(
        eval.tools
            .iter()
            .filter(|t| t.id.name != "a")
            .all(|t| t.reasons.contains(&Reason::Drifted))
    );
    let drift = ev.drift();
    assert_eq!(drift.len(), 3);
    assert!(drift.iter().any(|d| d.message.contains("not been crawled")));
}

#[test]
fn profiles_reject_what_toolgraph_says() {
    let objs = |p| {
        vec![
            server("ns", "s")
                .tools(&["clean", "unmapped", "excused", "bad"])
                .reads("clean", "x:clean")
                .reads("excused", "x:secret")
                .reads("bad", "x:secret")
                .build(),
            deny("ns", "p").resource("x:secret").build(),
            agent("ns", "a", p),
            grant("ns", "g", "a", &["s::*"])
                .exception("p", Some("s::excused"), None, None)
                .build(),
        ]
    };
    let expect = [
        (Profile::Strict, ["bad", "excused", "unmapped"].as_slice()),
        (Profile::Review, ["bad"].as_slice()),
        (Profile::Explore, [].as_slice()),
    ];
    for (profile, rejected) in expect {
        let e = engine(objs(profile));
        let eval = e
            .evaluator(now())
            .evaluate_agent(&key("ns/a"), None)
            .unwrap();
        let got: Vec<&str> = eval
            .tools
            .iter()
            .filter(|t| t.decision == Decision::Rejected)
            .map(|t| t.id.name.as_str())
            .collect();
        assert_eq!(got, rejected, "{profile:?}");
    }
}

#[test]
fn risk_scores_follow_the_fixed_table() {
    let e = engine(vec![
        server("ns", "s")
            .tools(&["viol", "excused", "unmapped", "weak", "clean"])
            .reads("viol", "x:secret")
            .reads("excused", "x:secret")
            .reads_unbacked("weak", "x:other")
            .reads("clean", "x:other")
            .build(),
        deny("ns", "p").resource("x:secret").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::*", "s::drifted"])
            .exception("p", Some("s::excused"), None, None)
            .build(),
    ]);
    let ev = e.evaluator(now());
    let score = |t: &str| ev.features(&key("ns/a"), t).risk_score.unwrap();
    assert_eq!(score("s::viol"), 1.0);
    assert_eq!(score("s::drifted"), 0.8);
    assert_eq!(score("s::unmapped"), 0.6);
    assert_eq!(score("s::weak"), 0.4);
    assert_eq!(score("s::excused"), 0.2);
    assert_eq!(score("s::clean"), 0.0);
}

#[test]
fn an_exception_resource_must_cover_everything_the_path_can_touch() {
    let classify = |access: &str, excused: &str| {
        let e = engine(vec![
            server("ns", "fs")
                .tools(&["read"])
                .reads("read", access)
                .build(),
            deny("ns", "secrets").resource("file:///**/.env").build(),
            agent("ns", "a", Profile::Review),
            grant("ns", "g", "a", &["fs::read"])
                .exception("secrets", None, Some(excused), None)
                .build(),
        ]);
        verdict(&e, "ns/a", "fs::read").deny_paths[0].classification
    };
    use Classification::*;
    // The tool can read any .env under /srv/app, not only the top one.
    assert_eq!(
        classify("file:///srv/app/**", "file:///srv/app/.env"),
        Violation
    );
    assert_eq!(
        classify("file:///srv/app/**", "file:///srv/app/**/.env"),
        AuthorizedButGoverned
    );
    assert_eq!(
        classify("file:///srv/app/.env", "file:///srv/app/.env"),
        AuthorizedButGoverned
    );
    assert_eq!(
        classify("file:///srv/app/.env", "file:///srv/**"),
        AuthorizedButGoverned
    );
    assert_eq!(
        classify("file:///srv/app/.env", "file:///other/.env"),
        Violation
    );
}
