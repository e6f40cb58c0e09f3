//! Per-call enforcement: a per-call Deny Policy reached only through argument-bound
//! dataAccess leaves the tool eligible (`GuardedPerCall`) and puts a guard in the
//! bundle; a Static Policy, or an unbound edge, decides as before.

mod common;
use common::*;
use mcpgov_engine::*;
use serde_json::{Value, json};

/// The filesystem server of the issue: read_file reads /srv through its `path`.
fn estate(per_call: bool, bound: bool, profile: Profile) -> Vec<Object> {
    let fs = server("team", "fs").tools(&["read_file", "write_file"]);
    let fs = if bound {
        fs.reads_arg("read_file", "file:///srv/**", "/path", "file://{path}")
    } else {
        fs.reads("read_file", "file:///srv/**")
    };
    let p = deny("mcpgov-system", "no-dotenv").resource("file:///**/.env");
    let p = if per_call { p.per_call() } else { p };
    vec![
        fs.build(),
        p.build(),
        agent("team", "bot", profile),
        grant("team", "g", "bot", &["fs::read_file"]).build(),
    ]
}

fn tool_of(e: &Engine, tool: &str) -> (Decision, Vec<Reason>, f64) {
    let eval = e
        .evaluator(now())
        .evaluate_agent(&key("team/bot"), None)
        .unwrap();
    let t = eval.tools.iter().find(|t| t.id.name == tool).unwrap();
    (t.decision, t.reasons.clone(), t.risk_score)
}

fn bundle_tool(e: &Engine) -> Value {
    let b = e.evaluator(now()).bundle(&key("team/bot")).unwrap();
    let doc: Value = serde_json::from_slice(&b.bytes).unwrap();
    // The bundle is canonical and reads back with core's reader.
    assert_eq!(canonical::to_canonical_json(&doc), b.bytes);
    mcpgov_core::bundle::parse(&b.bytes).unwrap();
    doc["tools"][0].clone()
}

#[test]
fn a_per_call_policy_through_a_bound_argument_is_guarded_under_every_profile() {
    for profile in [Profile::Strict, Profile::Review, Profile::Explore] {
        let e = engine(estate(true, true, profile));
        let (d, reasons, score) = tool_of(&e, "read_file");
        assert_eq!(d, Decision::Eligible, "{profile:?}");
        assert_eq!(reasons, [Reason::GuardedPerCall]);
        assert_eq!(score, 0.3);
    }
    let e = engine(estate(true, true, Profile::Strict));
    let t = bundle_tool(&e);
    assert_eq!(t["decision"], "eligible");
    assert_eq!(t["denyPaths"][0]["classification"], "GuardedPerCall");
    assert_eq!(
        t["guard"],
        json!({
            "arguments": [{"declared": ["file:///srv/**"], "pointer": "/path", "template": "file://{path}"}],
            "governed": [{"except": [], "pattern": "file:///**/.env", "policy": "mcpgov-system/no-dotenv"}]
        })
    );
    // check-access says what is statically reached, all of it decided per call.
    let v = e
        .evaluator(now())
        .check_access(&key("team/bot"), "fs::read_file");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert_eq!(v.all_authorized, Some(true));
    let f = e.evaluator(now()).agent_findings(&key("team/bot"));
    assert!(f.iter().all(|f| f.kind != FindingKind::Violation), "{f:?}");
    assert!(
        f.iter()
            .any(|f| f.reason == mcpgov_engine::FindingReason::GuardedPerCall)
    );
}

#[test]
fn static_policies_and_unbound_edges_stay_violations_without_a_guard() {
    for (per_call, bound) in [(false, true), (true, false), (false, false)] {
        let e = engine(estate(per_call, bound, Profile::Strict));
        let (d, reasons, score) = tool_of(&e, "read_file");
        assert_eq!(d, Decision::Rejected, "{per_call} {bound}");
        assert_eq!(reasons, [Reason::DenyViolation]);
        assert_eq!(score, 1.0);
        let t = bundle_tool(&e);
        assert!(t.get("guard").is_none(), "{t}");
        assert_eq!(t["denyPaths"][0]["classification"], "Violation");
    }
    // A binding on a Static estate moves nothing in its bundle but the digest of the
    // governance that decided it (the binding is part of it).
    let doc = |bound| {
        let e = engine(estate(false, bound, Profile::Strict));
        let b = e.evaluator(now()).bundle(&key("team/bot")).unwrap();
        let mut d: Value = serde_json::from_slice(&b.bytes).unwrap();
        let g = d["governanceDigest"].take();
        (d, g)
    };
    let ((a, ga), (b, gb)) = (doc(true), doc(false));
    assert_eq!(a, b);
    assert_ne!(ga, gb);
}

#[test]
fn an_unbound_claim_of_the_same_resource_makes_the_edge_static() {
    let mut objs = estate(true, true, Profile::Strict);
    objs[0] = server("team", "fs")
        .tools(&["read_file"])
        .reads_arg("read_file", "file:///srv/**", "/path", "file://{path}")
        .reads("read_file", "file:///srv/**")
        .build();
    let e = engine(objs);
    assert_eq!(tool_of(&e, "read_file").0, Decision::Rejected);
}

#[test]
fn two_bound_arguments_are_both_checked_and_an_invalid_binding_is_static() {
    let mut objs = estate(true, true, Profile::Strict);
    objs[0] = server("team", "fs")
        .tools(&["read_file", "move_file"])
        .reads_arg("move_file", "file:///srv/**", "/source", "file://{source}")
        .reads_arg("move_file", "file:///srv/**", "/destination", "file://{d}")
        .reads_arg("read_file", "file:///srv/**", "/path", "https://{path}")
        .build();
    objs[3] = grant("team", "g", "bot", &["fs::read_file", "fs::move_file"]).build();
    let e = engine(objs);
    assert_eq!(tool_of(&e, "move_file").0, Decision::Eligible);
    assert_eq!(tool_of(&e, "read_file").0, Decision::Rejected);
    let problems = e.compile_findings();
    assert!(
        problems
            .iter()
            .any(|f| f.reason == mcpgov_engine::FindingReason::InvalidArgumentBinding),
        "{problems:?}"
    );
    let b = e.evaluator(now()).bundle(&key("team/bot")).unwrap();
    let doc: Value = serde_json::from_slice(&b.bytes).unwrap();
    let mv = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "move_file")
        .unwrap();
    let ptrs: Vec<&str> = mv["guard"]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(ptrs, ["/destination", "/source"]);
}

#[test]
fn the_agents_exceptions_travel_with_the_governed_pattern() {
    let mut objs = estate(true, true, Profile::Strict);
    objs[3] = grant("team", "g", "bot", &["fs::read_file"])
        .exception(
            "mcpgov-system/no-dotenv",
            Some("fs::read_file"),
            Some("file:///srv/app/**"),
            Some("2026-07-01T00:00:00.5Z"),
        )
        .exception("mcpgov-system/other", None, None, None)
        .build();
    objs[1] = deny("mcpgov-system", "no-dotenv")
        .resource("file:///**/.env")
        .per_call()
        .exceptions_from(&["team"])
        .build();
    let e = engine(objs);
    let t = bundle_tool(&e);
    assert_eq!(
        t["guard"]["governed"][0]["except"],
        json!([{"expires": "2026-07-01T00:00:00Z", "grant": "team/g", "pattern": "file:///srv/app/**"}])
    );
    // The exception's resource does not cover the whole path: still guarded.
    assert_eq!(tool_of(&e, "read_file").1, [Reason::GuardedPerCall]);
}

#[test]
fn switching_enforcement_or_a_binding_moves_the_decision_incrementally() {
    let mut e = engine(estate(false, true, Profile::Strict));
    assert_eq!(tool_of(&e, "read_file").0, Decision::Rejected);
    let per_call = deny("mcpgov-system", "no-dotenv")
        .resource("file:///**/.env")
        .per_call()
        .build();
    let impact = e.apply(per_call);
    assert!(impact.agents.contains(&key("team/bot")), "{impact:?}");
    assert_eq!(tool_of(&e, "read_file").0, Decision::Eligible);
    // The binding goes: the same Policy is a static violation again.
    let unbound = estate(true, false, Profile::Strict).remove(0);
    let impact = e.apply(unbound);
    assert!(impact.agents.contains(&key("team/bot")), "{impact:?}");
    assert_eq!(tool_of(&e, "read_file").0, Decision::Rejected);
    // And a fresh engine agrees with the incremental one.
    let fresh = engine(estate(true, false, Profile::Strict));
    let bytes = |e: &Engine| e.evaluator(now()).bundle(&key("team/bot")).unwrap().bytes;
    assert_eq!(bytes(&e), bytes(&fresh));
}
