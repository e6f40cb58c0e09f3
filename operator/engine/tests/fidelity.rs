//! Issue 16: the places where a randomized comparison with Toolgraph 0.4.0 found
//! answers that differed without docs/semantics.md saying so. Each test is one item,
//! on an estate small enough to read; where mcpgov answers differently on purpose the
//! test pins mcpgov's answer and docs/semantics.md says why.

mod common;
use common::*;
use mcpgov_engine::resolve::Resolution;
use mcpgov_engine::*;

fn verdict(e: &Engine, agent: &str, tool: &str) -> AccessVerdict {
    e.evaluator(now()).check_access(&key(agent), tool)
}

fn reasons_of(e: &Engine, kind: FindingKind) -> Vec<(String, String)> {
    e.evaluator(now())
        .check()
        .into_iter()
        .filter(|f| f.kind == kind)
        .map(|f| (f.reason.to_string(), f.object.to_string()))
        .collect()
}

/// Item 1. `read_config` was exposed by an earlier crawl and reads a Deny-governed
/// file; the current crawl no longer lists it. Its dataAccess entry still names it, so
/// the bare-name Grant keeps resolving to the drifted tool: Drift and Violation, never
/// a silent NotFound that lets `check --fail-on violation` pass.
#[test]
fn item1_a_bare_name_keeps_its_drifted_tool_and_its_violation() {
    let objects = |listed: &[&str]| {
        vec![
            server("ns", "fs")
                .tools(listed)
                .reads("read_config", "file:///etc/app/config")
                .build(),
            deny("ns", "secrets").resource("file:///etc/app/**").build(),
            agent("ns", "bot", Profile::Review),
            agent("ns", "other", Profile::Review),
            grant("ns", "g", "bot", &["read_config"]).build(),
        ]
    };
    let before = engine(objects(&["read_config", "list"]));
    let after = engine(objects(&["list"]));
    for e in [&before, &after] {
        assert_eq!(
            reasons_of(e, FindingKind::Violation),
            [("DenyViolation".to_string(), "Agent ns/bot".to_string())]
        );
    }
    let refs = after.evaluator(now()).grant_refs(&key("ns/bot"));
    assert_eq!(
        refs[0].resolution,
        Resolution::Drifted {
            tool: ToolId::new("ns", "fs", "read_config")
        }
    );
    assert!(
        reasons_of(&after, FindingKind::Drift)
            .contains(&("Drifted".to_string(), "Grant ns/g".to_string()))
    );
    let v = verdict(&after, "ns/bot", "read_config");
    assert_eq!((v.verdict, v.drifted), (VerdictKind::Deny, true));
    // A bare lookup of the drifted tool answers as for any tool (Toolgraph too).
    let v = verdict(&after, "ns/other", "read_config");
    assert_eq!(v.verdict, VerdictKind::NotGranted);
    assert_eq!(v.tool_key.as_deref(), Some("ns/fs::read_config"));
    // blast-radius and drift keep the agent.
    let ev = after.evaluator(now());
    let r = ev.blast_radius("file:///etc/app/config", "ns");
    assert_eq!(r.agents, ["ns/bot"]);
    let drift = ev.drift();
    assert!(
        drift
            .iter()
            .any(|d| d.source == queries::DriftSource::Grant && d.tool == "ns/fs::read_config"),
        "{drift:?}"
    );
}

/// Item 1, a tool only a Policy remembers (no dataAccess): the bare Grant keeps it,
/// so unmapped-tools keeps the agent and the direct deny stays a violation; adding or
/// removing that Policy re-resolves the Grant and names its agent in the impact.
#[test]
fn item1_a_policy_binding_remembers_a_tool_for_bare_names() {
    let mut e = engine(vec![
        server("ns", "fs").tools(&["list"]).build(),
        agent("ns", "bot", Profile::Review),
        grant("ns", "g", "bot", &["purge"]).build(),
    ]);
    let refs = e.evaluator(now()).grant_refs(&key("ns/bot"));
    assert_eq!(
        refs[0].resolution,
        Resolution::NotFound,
        "a typo stays a typo"
    );
    let impact = e.apply(deny("ns", "guard").tool("fs::purge").build());
    assert!(impact.agents.contains(&key("ns/bot")), "{impact:?}");
    let ev = e.evaluator(now());
    assert_eq!(
        ev.grant_refs(&key("ns/bot"))[0].resolution.reason(),
        "Drifted"
    );
    let unmapped = ev.unmapped_tools();
    assert_eq!(unmapped.len(), 1);
    assert_eq!(
        (unmapped[0].tool.as_str(), unmapped[0].agents.as_slice()),
        ("ns/fs::purge", &["ns/bot".to_string()][..])
    );
    let v = ev.check_access(&key("ns/bot"), "purge");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert_eq!(v.deny_paths[0].resource, None);
    // A Policy in the governance namespace remembers a tool of a deleted server.
    let e2 = engine(vec![
        deny("mcpgov-system", "guard")
            .tool("ns/gone-server::purge")
            .build(),
        agent("ns", "bot", Profile::Review),
        grant("ns", "g", "bot", &["purge"]).build(),
    ]);
    assert_eq!(
        verdict(&e2, "ns/bot", "purge").tool_key.as_deref(),
        Some("ns/gone-server::purge")
    );
    let impact = e.delete(Kind::Policy, &key("ns/guard"));
    assert!(impact.agents.contains(&key("ns/bot")));
    let refs = e.evaluator(now()).grant_refs(&key("ns/bot"));
    assert_eq!(refs[0].resolution, Resolution::NotFound);
}

/// Item 1: a live tool on one server and a remembered drifted namesake on another is
/// ambiguous (as in Toolgraph), never guessed; a namesake another namespace shares
/// does not count when the reader has its own (the own-namespace-first rule).
#[test]
fn item1_a_live_tool_and_a_drifted_namesake_are_ambiguous() {
    let e = engine(vec![
        server("ns", "a").tools(&["read_config"]).build(),
        server("ns", "b")
            .tools(&[])
            .reads("read_config", "file:///etc/app/config")
            .build(),
        agent("ns", "bot", Profile::Review),
        grant("ns", "g", "bot", &["read_config"]).build(),
    ]);
    let v = verdict(&e, "ns/bot", "read_config");
    assert_eq!(v.verdict, VerdictKind::Ambiguous);
    assert_eq!(v.candidates, ["ns/a::read_config", "ns/b::read_config"]);
    assert!(
        reasons_of(&e, FindingKind::Unresolved)
            .contains(&("Ambiguous".to_string(), "Grant ns/g".to_string()))
    );

    let e = engine(vec![
        server("ns", "a").tools(&["read_config"]).build(),
        server("other", "b")
            .tools(&[])
            .reads("read_config", "file:///etc/app/config")
            .share(&["*"])
            .build(),
        agent("ns", "bot", Profile::Review),
        grant("ns", "g", "bot", &["read_config"]).build(),
        agent("third", "bot", Profile::Review),
        grant("third", "g", "bot", &["read_config"]).build(),
    ]);
    let v = verdict(&e, "ns/bot", "read_config");
    assert_eq!(
        (v.verdict, v.tool_key.as_deref()),
        (VerdictKind::Allow, Some("ns/a::read_config"))
    );
    // With nothing of its own, a namespace finds the shared server's drifted tool.
    let v = verdict(&e, "third/bot", "read_config");
    assert_eq!(v.tool_key.as_deref(), Some("other/b::read_config"));
    assert!(v.drifted);
}

/// Item 2. A tool the agent is not granted that reaches a Deny: check-access lists the
/// deny rows (what granting it would cross) under NOT_GRANTED, and rank-features
/// scores it 1.0 like Toolgraph; the bundle and the findings are unchanged (the agent
/// cannot call it).
#[test]
fn item2_a_tool_not_granted_shows_its_deny_paths() {
    let mut objects = quickstart(Profile::Strict);
    objects.retain(|o| o.kind() != Kind::Grant);
    objects.push(grant("qs", "g", "vibe-coder", &["gw::read_note"]).build());
    let e = engine(objects);
    let v = verdict(&e, "qs/vibe-coder", "gw::publish_note");
    assert_eq!(v.verdict, VerdictKind::NotGranted);
    assert_eq!(v.all_authorized, None);
    assert_eq!(v.deny_paths.len(), 1);
    assert_eq!(v.deny_paths[0].classification, Classification::Violation);
    assert_eq!(
        v.deny_paths[0].resource.as_deref(),
        Some("file:///demo/drafts")
    );
    let f = e
        .evaluator(now())
        .features(&key("qs/vibe-coder"), "gw::publish_note");
    assert_eq!(f.reasons, [Reason::NotGranted, Reason::DenyViolation]);
    assert_eq!(f.risk_score, Some(1.0));
    assert!(!f.granted);
    // Nothing the agent can call reaches the Deny: no violation, nothing unsafe.
    assert!(reasons_of(&e, FindingKind::Violation).is_empty());
    let unsafe_rows = e
        .evaluator(now())
        .unsafe_tools(&key("qs/vibe-coder"), true)
        .unwrap();
    assert!(unsafe_rows.is_empty());
}

/// Item 3. No facts, no score: a candidate that is not found or ambiguous has a null
/// risk score (and null `unbacked`), not 0.0, which reads as "safe".
#[test]
fn item3_not_found_and_ambiguous_have_no_risk_score() {
    let mut objects = quickstart(Profile::Strict);
    objects.push(server("qs", "gw2").tools(&["read_note"]).build());
    let e = engine(objects);
    let ev = e.evaluator(now());
    for tool in ["gw::missing", "read_note"] {
        let f = ev.features(&key("qs/vibe-coder"), tool);
        assert_eq!((f.risk_score, f.unbacked), (None, None), "{tool}");
    }
    let f = ev.features(&key("qs/vibe-coder"), "gw::read_note");
    assert_eq!((f.risk_score, f.unbacked), (Some(0.0), Some(false)));
    let json = serde_json::to_value(ev.features(&key("qs/vibe-coder"), "read_note")).unwrap();
    assert!(json["riskScore"].is_null());
}

/// Item 4. "Unbacked" (risk 0.4) as Toolgraph counts it: the tool's READS/WRITES and
/// every GOVERNED_BY binding reaching it, Deny or Allow, directly or on a resource it
/// touches; a Grant without evidence does not make the tool unbacked.
#[test]
fn item4_unbacked_means_the_tools_evidence_chain_not_the_grant() {
    let e = engine(vec![
        server("ns", "s")
            .tools(&["plain", "allowed", "bound"])
            .reads("plain", "x:plain")
            .reads("allowed", "x:shared")
            .reads("bound", "x:bound")
            .build(),
        allow("ns", "ok").resource_unbacked("x:shared").build(),
        allow("ns", "tools").tool("s::bound").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::*"]).unbacked().build(),
    ]);
    let ev = e.evaluator(now());
    let f = |t: &str| ev.features(&key("ns/a"), t);
    // The Grant cites no evidence: not an unbacked edge of the tool.
    assert_eq!(
        (f("s::plain").unbacked, f("s::plain").risk_score),
        (Some(false), Some(0.0))
    );
    // An Allow binding without evidence on a resource the tool reads: unbacked.
    assert_eq!(
        (f("s::allowed").unbacked, f("s::allowed").risk_score),
        (Some(true), Some(0.4))
    );
    // A backed direct Allow binding: backed.
    assert_eq!(f("s::bound").risk_score, Some(0.0));
    let eval = ev.evaluate_agent(&key("ns/a"), None).unwrap();
    let scores: Vec<(&str, f64)> = eval
        .tools
        .iter()
        .map(|t| (t.id.name.as_str(), t.risk_score))
        .collect();
    assert_eq!(scores, [("allowed", 0.4), ("bound", 0.0), ("plain", 0.0)]);
}

/// Item 5. audit-report status as Toolgraph decides it: a drifted tool fails (mcpgov
/// rejects it in every profile), findings such as a destructive tool with no policy
/// path warn, and only an estate with nothing to report passes.
#[test]
fn item5_audit_status_fails_on_drift_and_warns_on_findings() {
    let report = |objects| engine(objects).evaluator(now()).audit_report();
    let clean = vec![
        server("ns", "s").tools(&["t"]).reads("t", "x:1").build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::t"]).build(),
    ];
    assert_eq!(report(clean.clone()).status, "pass");

    let mut drifted = clean.clone();
    drifted.push(grant("ns", "g2", "a", &["s::gone"]).build());
    let r = report(drifted);
    assert_eq!((r.status, r.counts.violations), ("fail", 0));
    assert_eq!(r.failures, ["1 drifted tool(s)"]);

    let mut destructive = clean;
    destructive.push(
        server("ns", "admin")
            .annotated("wipe", None, Some(true))
            .build(),
    );
    let r = report(destructive);
    assert_eq!(r.status, "warn");
    assert!(r.failures.is_empty());
    assert_eq!(r.warnings, ["1 destructive tool(s) with no policy path"]);
}

/// Item 6. The audit-report counts drifted tools, as Toolgraph does: one drifted tool
/// named by a Grant and by its server's dataAccess is 1 (the drift query lists both
/// objects, and `check` has a Drift finding for each).
#[test]
fn item6_audit_drift_counts_tools_not_objects() {
    let e = engine(vec![
        server("ns", "s")
            .tools(&["t"])
            .reads("t", "x:1")
            .reads("gone", "x:2")
            .build(),
        agent("ns", "a", Profile::Strict),
        grant("ns", "g", "a", &["s::t", "s::gone"]).build(),
    ]);
    let ev = e.evaluator(now());
    assert_eq!(ev.drift().len(), 2);
    assert_eq!(Summary::of(&ev.check()).drift, 2);
    assert_eq!(ev.audit_report().counts.drift, 1);
}

/// Item 7. Two expected exceptions cover the same path: the reason shown is the more
/// specific one's (the one naming a resource), as in Toolgraph, whatever the authored
/// order; among equally specific ones, the first authored.
#[test]
fn item7_the_more_specific_exception_gives_the_reason() {
    let with = |g: GrantB| {
        engine(vec![
            server("ns", "fs")
                .tools(&["read"])
                .reads("read", "file:///srv/app/.env")
                .build(),
            deny("ns", "secrets").resource("file:///**/.env").build(),
            agent("ns", "a", Profile::Review),
            g.build(),
        ])
    };
    let reason = |e: &Engine| {
        let v = verdict(e, "ns/a", "fs::read");
        assert_eq!(v.all_authorized, Some(true));
        v.deny_paths[0].exception_reason.clone().unwrap()
    };
    let g = || grant("ns", "g", "a", &["fs::read"]);
    let wildcard_first = g()
        .exception("secrets", Some("fs::read"), None, None)
        .because("wildcard")
        .exception(
            "secrets",
            Some("fs::read"),
            Some("file:///srv/app/.env"),
            None,
        )
        .because("specific");
    assert_eq!(reason(&with(wildcard_first)), "specific");
    let specific_first = g()
        .exception(
            "secrets",
            Some("fs::read"),
            Some("file:///srv/app/.env"),
            None,
        )
        .because("specific")
        .exception("secrets", Some("fs::read"), None, None)
        .because("wildcard");
    assert_eq!(reason(&with(specific_first)), "specific");
    // Naming the tool is more specific than naming neither.
    let no_tool_first = g()
        .exception("secrets", None, None, None)
        .because("any tool")
        .exception("secrets", Some("fs::read"), None, None)
        .because("this tool");
    assert_eq!(reason(&with(no_tool_first)), "this tool");
    let equal = g()
        .exception("secrets", Some("fs::read"), None, None)
        .because("first")
        .exception("secrets", Some("fs::*"), None, None)
        .because("second");
    assert_eq!(reason(&with(equal)), "first");
}

/// Item 8. One tool bound to one Policy twice (by key and by bare name) is one
/// GOVERNED_BY edge, as in Toolgraph: one deny path, one unbacked row, and no row at
/// all when either binding cites evidence. The same for two spellings of one URI.
#[test]
fn item8_one_tool_bound_twice_is_one_edge() {
    let estate = |guard: PolicyB| {
        engine(vec![
            server("ns", "fs")
                .tools(&["purge", "read"])
                .reads_unbacked("read", "file:///srv/./a")
                .reads("read", "file:///srv/a")
                .build(),
            guard.build(),
            deny("ns", "files")
                .resource_unbacked("file:///srv/a")
                .resource_unbacked("FILE://localhost/srv/./a")
                .build(),
            agent("ns", "bot", Profile::Strict),
            grant("ns", "g", "bot", &["fs::purge", "fs::read"]).build(),
        ])
    };
    let governed = |e: &Engine| -> Vec<(String, String)> {
        e.evaluator(now())
            .unbacked_edges(false)
            .into_iter()
            .filter(|r| r.edge == "GOVERNED_BY")
            .map(|r| (r.from, r.to))
            .collect()
    };
    let both_unbacked = estate(
        deny("ns", "guard")
            .tool_unbacked("fs::purge")
            .tool_unbacked("purge"),
    );
    assert_eq!(
        governed(&both_unbacked),
        [
            ("file:///srv/a".to_string(), "ns/files".to_string()),
            ("ns/fs::purge".to_string(), "ns/guard".to_string()),
        ]
    );
    let v = verdict(&both_unbacked, "ns/bot", "fs::purge");
    assert_eq!(v.deny_paths.len(), 1);
    // Two spellings of one READS edge, one of them backed: one path, backed, no row.
    let v = verdict(&both_unbacked, "ns/bot", "fs::read");
    assert_eq!(v.deny_paths.len(), 1);
    let access = v.deny_paths[0].provenance.as_ref().unwrap();
    assert_eq!(access.evidence.as_deref(), Some("src.rs::read"));
    let reads = both_unbacked.evaluator(now()).unbacked_edges(false);
    assert!(reads.iter().all(|r| r.edge != "READS"), "{reads:?}");

    // Either binding citing evidence backs the edge; the path shows that binding.
    let one_backed = estate(deny("ns", "guard").tool_unbacked("purge").tool("fs::purge"));
    assert_eq!(
        governed(&one_backed),
        [("file:///srv/a".to_string(), "ns/files".to_string())]
    );
    let v = verdict(&one_backed, "ns/bot", "fs::purge");
    assert_eq!(v.deny_paths.len(), 1);
    assert_eq!(v.deny_paths[0].governed_by, "fs::purge");
    assert_eq!(
        v.deny_paths[0].policy_provenance.evidence.as_deref(),
        Some("POL-2")
    );
}

/// URI canonicalisation. Toolgraph (pydantic's URL parser) keeps the host's case for
/// non-special schemes, `%7E`, userinfo and fragments; mcpgov folds them (RFC 3986
/// normalisation), so each spelling below meets the Deny on the plain one. Toolgraph
/// answers ALLOW for all four; mcpgov answers DENY on purpose (docs/semantics.md).
#[test]
fn uri_spellings_toolgraph_keeps_apart_meet_the_deny() {
    for (governed, read) in [
        ("s3://mybucket/**", "s3://MyBucket/data"),
        ("s3://bucket/~x", "s3://bucket/%7Ex"),
        ("s3://bucket/x", "s3://reader:secret@bucket/x"),
        ("s3://bucket/x", "s3://bucket/x#part"),
    ] {
        let e = engine(vec![
            server("ns", "s3")
                .tools(&["get"])
                .reads("get", read)
                .build(),
            deny("ns", "data").resource(governed).build(),
            agent("ns", "a", Profile::Strict),
            grant("ns", "g", "a", &["s3::get"]).build(),
        ]);
        let v = verdict(&e, "ns/a", "s3::get");
        assert_eq!(v.verdict, VerdictKind::Deny, "{read} against {governed}");
    }
    // The other side of folding the host: an exception for `MyBucket` also excuses
    // `mybucket`, which is the same bucket to every S3 client that addresses it by
    // host name (DNS ignores case).
    let e = engine(vec![
        server("ns", "s3")
            .tools(&["get"])
            .reads("get", "s3://mybucket/data")
            .build(),
        deny("ns", "data").resource("s3://mybucket/**").build(),
        agent("ns", "a", Profile::Review),
        grant("ns", "g", "a", &["s3::get"])
            .exception("data", None, Some("s3://MyBucket/**"), None)
            .build(),
    ]);
    assert_eq!(verdict(&e, "ns/a", "s3::get").all_authorized, Some(true));
}
