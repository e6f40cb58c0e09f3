//! Tenant input built to cost the engine work (issue 10, finding 1): every case must be
//! refused by a limit or decided within the work budget, failing closed, and the
//! answer must say so. Figures are printed, not asserted (`--nocapture`).

mod common;
use common::*;
use mcpgov_engine::*;
use std::time::Instant;

fn findings_with(e: &Engine, reason: FindingReason) -> Vec<Finding> {
    e.evaluator(now())
        .check()
        .into_iter()
        .filter(|f| f.reason == reason)
        .collect()
}

/// 30,000 `**/` segments overflowed the stack (a crash loop for the operator).
#[test]
fn an_exception_of_thirty_thousand_double_star_segments_is_refused() {
    let huge = format!("file:///{}x", "**/".repeat(30_000));
    let started = Instant::now();
    let e = engine(vec![
        server("t", "fs")
            .tools(&["read"])
            .reads("read", "file:///srv/**")
            .build(),
        deny("t", "secrets").resource("file:///srv/**").build(),
        agent("t", "bot", Profile::Review),
        grant("t", "g", "bot", &["fs::read"])
            .exception("secrets", None, Some(&huge), None)
            .build(),
    ]);
    let invalid = findings_with(&e, FindingReason::InvalidUri);
    println!("30,000 segments: check in {:?}", started.elapsed());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert!(invalid[0].message.contains("longer than the limit of 1024"));
    // The refused exception excuses nothing: the reach stays a violation.
    assert_eq!(findings_with(&e, FindingReason::DenyViolation).len(), 1);
}

#[test]
fn more_wildcards_than_the_limit_are_refused() {
    let many = format!("file:///{}x", "**/".repeat(limits::MAX_URI_WILDCARDS + 1));
    let ok = format!("file:///{}x", "**/".repeat(limits::MAX_URI_WILDCARDS));
    let e = engine(vec![
        deny("t", "p").resource(&many).build(),
        deny("t", "q").resource(&ok).build(),
    ]);
    let invalid = findings_with(&e, FindingReason::InvalidUri);
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert_eq!(invalid[0].object.to_string(), "Policy t/p");
    assert!(invalid[0].message.contains("17 wildcards; the limit is 16"));
}

/// Two globs at the limits whose overlap costs ~900,000 steps: over the per-comparison
/// budget, so the path counts (fail closed) and the finding names the reason.
fn expensive_pair() -> (String, String) {
    let a = format!("file:///{}", format!("{}*", "a".repeat(60)).repeat(16));
    let b = format!("file:///{}", format!("*{}", "a".repeat(60)).repeat(16));
    assert!(a.len() <= limits::MAX_URI_BYTES && b.len() <= limits::MAX_URI_BYTES);
    (a, b)
}

#[test]
fn an_undecided_overlap_fails_closed_and_says_why() {
    let (a, b) = expensive_pair();
    let e = engine(vec![
        server("t", "fs").tools(&["read"]).reads("read", &a).build(),
        deny("t", "secrets").resource(&b).build(),
        agent("t", "bot", Profile::Strict),
        grant("t", "g", "bot", &["fs::read"]).build(),
    ]);
    let v = e.evaluator(now()).check_access(&key("t/bot"), "fs::read");
    assert_eq!(v.verdict, VerdictKind::Deny);
    assert!(
        v.deny_paths[0]
            .undecided
            .as_deref()
            .unwrap()
            .contains("work budget")
    );
    let f = findings_with(&e, FindingReason::PatternBudgetExceeded);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, FindingKind::Violation);
    assert!(f[0].message.contains("t/secrets"));
    // Strict keeps a fail-closed path out of the bundle.
    let eval = e
        .evaluator(now())
        .evaluate_agent(&key("t/bot"), None)
        .unwrap();
    assert!(eval.tools.iter().all(|t| t.decision == Decision::Rejected));
}

/// The second case: 8 dataAccess x 8 Policy patterns at the limits. Every pair
/// is decided or fails closed within budget; the whole check stays bounded.
#[test]
fn eight_by_eight_patterns_at_the_limits_stay_bounded() {
    let (a, b) = expensive_pair();
    let mut s = server("t", "fs").tools(&["read", "write", "list"]);
    let mut p = deny("t", "secrets");
    for i in 0..8 {
        s = s.reads("*", &format!("{}{i}", &a[..a.len() - 2]));
        p = p.resource(&format!("{}{i}", &b[..b.len() - 2]));
    }
    let started = Instant::now();
    let e = engine(vec![
        s.build(),
        p.build(),
        agent("t", "bot", Profile::Strict),
        grant("t", "g", "bot", &["fs::*"]).build(),
    ]);
    let findings = e.evaluator(now()).check();
    println!(
        "8x8 patterns at the limits: check in {:?}",
        started.elapsed()
    );
    assert!(
        findings
            .iter()
            .any(|f| f.reason == FindingReason::PatternBudgetExceeded
                && f.kind == FindingKind::Violation)
    );
}

/// Finding 9: an exception to a Policy the agent never reaches is unused, even when
/// the agent has a deny path to some other Policy.
#[test]
fn an_exception_to_a_policy_never_reached_is_unused() {
    let e = engine(vec![
        server("t", "fs")
            .tools(&["read"])
            .reads("read", "file:///srv/a")
            .build(),
        deny("t", "reached").resource("file:///srv/a").build(),
        deny("t", "elsewhere").resource("file:///etc/**").build(),
        agent("t", "bot", Profile::Review),
        grant("t", "g", "bot", &["fs::read"])
            .exception("elsewhere", None, None, None)
            .build(),
    ]);
    let unused = findings_with(&e, FindingReason::ExceptionUnused);
    assert_eq!(unused.len(), 1, "{unused:?}");
    assert_eq!(unused[0].policy.as_deref(), Some("t/elsewhere"));
    assert_eq!(findings_with(&e, FindingReason::DenyViolation).len(), 1);
}

/// Finding 9: team-c sharing a namesake with `*` must not make team-b's bare-name
/// Grant ambiguous. Own namespace first; shared servers only when nothing matches.
#[test]
fn a_foreign_namesake_cannot_make_a_bare_name_ambiguous() {
    let mut objects = vec![
        server("team-b", "pay").tools(&["refund"]).build(),
        agent("team-b", "bot", Profile::Strict),
        grant("team-b", "g", "bot", &["refund"]).build(),
        agent("team-d", "bot", Profile::Strict),
        grant("team-d", "g", "bot", &["refund"]).build(),
    ];
    let before = engine(objects.clone());
    let v = before
        .evaluator(now())
        .check_access(&key("team-b/bot"), "refund");
    assert_eq!(v.verdict, VerdictKind::Allow);
    objects.push(
        server("team-c", "evil")
            .tools(&["refund"])
            .share(&["*"])
            .build(),
    );
    let after = engine(objects.clone());
    let ev = after.evaluator(now());
    let v = ev.check_access(&key("team-b/bot"), "refund");
    assert_eq!(v.verdict, VerdictKind::Allow);
    assert_eq!(v.tool_key.as_deref(), Some("team-b/pay::refund"));
    assert!(
        ev.check()
            .iter()
            .all(|f| f.reason != FindingReason::Ambiguous)
    );
    // A namespace with no namesake of its own still sees the shared one.
    let v = ev.check_access(&key("team-d/bot"), "refund");
    assert_eq!(v.tool_key.as_deref(), Some("team-c/evil::refund"));
    // Two shared namesakes and none of one's own: ambiguous, never guessed.
    objects.push(
        server("team-e", "other")
            .tools(&["refund"])
            .share(&["*"])
            .build(),
    );
    let v = engine(objects)
        .evaluator(now())
        .check_access(&key("team-d/bot"), "refund");
    assert_eq!(v.verdict, VerdictKind::Ambiguous);
}

/// The exception-coverage budget is the agent's, spent over its tools in key order: a
/// tool asked about alone (check-access) is classified exactly as in the agent's
/// evaluation, even when the budget ran out on the tools before it.
#[test]
fn a_tool_asked_alone_is_classified_as_in_its_agents_evaluation() {
    let (a, b) = expensive_pair();
    let mut grant = grant("t", "g", "bot", &["fs::*"]);
    for k in 0..12 {
        grant = grant.exception("secrets", None, Some(&format!("file:///x{k}/**")), None);
    }
    let e = engine(vec![
        server("t", "fs")
            .tools(&["t0", "t1", "t2", "t3"])
            .reads("*", &a)
            .reads("t3", "file:///plain")
            .build(),
        deny("t", "secrets")
            .resource(&b)
            .resource("file:///plain")
            .build(),
        agent("t", "bot", Profile::Review),
        grant
            .exception("secrets", Some("fs::t3"), None, None)
            .build(),
    ]);
    let ev = e.evaluator(now());
    let whole = ev.evaluate_agent(&key("t/bot"), None).unwrap();
    let mut undecided = 0;
    for t in &whole.tools {
        let alone = ev.check_access(&key("t/bot"), &t.id.to_string());
        assert_eq!(alone.deny_paths, t.deny_paths, "{}", t.id);
        undecided += t
            .deny_paths
            .iter()
            .filter(|p| p.undecided.is_some())
            .count();
    }
    assert!(undecided > 0, "the budget ran out on the way");
    // An unscoped exception needs no budget: t3's literal path is excused all the same.
    let t3 = ev.check_access(&key("t/bot"), "fs::t3");
    assert!(t3.deny_paths.iter().any(|p| p.classification
        == Classification::AuthorizedButGoverned
        && p.resource.as_deref() == Some("file:///plain")));
}
