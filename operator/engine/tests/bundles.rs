//! Bundles: canonical bytes that depend only on the inputs that decided them.

mod common;
use common::*;
use mcpgov_engine::canonical::sha256_hex;
use mcpgov_engine::*;
use proptest::prelude::*;

fn bundle(e: &Engine, agent: &str) -> Bundle {
    e.evaluator(now()).bundle(&key(agent)).unwrap()
}

#[test]
fn bundle_lists_each_granted_tool_once_with_its_decision() {
    let mut objs = quickstart(Profile::Strict);
    objs.push(grant("qs", "g2", "vibe-coder", &["gw::*", "read_note"]).build());
    let e = engine(objs);
    let b = bundle(&e, "qs/vibe-coder");
    let doc: serde_json::Value = serde_json::from_slice(&b.bytes).unwrap();
    assert_eq!(doc["kind"], "mcpgov.io/policy-bundle");
    assert_eq!(doc["schemaVersion"], 2);
    assert_eq!(doc["defaultDecision"], "deny");
    assert_eq!(
        doc["agent"],
        serde_json::json!({"namespace": "qs", "name": "vibe-coder"})
    );
    let tools = doc["tools"].as_array().unwrap();
    let keys: Vec<&str> = tools.iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["qs/gw::publish_note", "qs/gw::read_note"]);
    assert_eq!(tools[0]["decision"], "rejected");
    assert_eq!(tools[0]["reasons"], serde_json::json!(["DenyViolation"]));
    assert_eq!(tools[0]["contractDigest"], "sha256:publish_note");
    assert_eq!(tools[1]["decision"], "eligible");
    assert_eq!(b.sha256, sha256_hex(&b.bytes));
    // Canonical: re-serialising the parsed document with sorted keys gives the same bytes.
    assert_eq!(canonical::to_canonical_json(&doc), b.bytes);
    assert!(!b.bytes.contains(&b'\n') && !b.bytes.starts_with(b"{ "));
}

#[test]
fn unrelated_changes_do_not_move_the_bytes_and_related_ones_do() {
    let e1 = engine(quickstart(Profile::Strict));
    let mut objs = quickstart(Profile::Strict);
    objs.push(server("elsewhere", "s").tools(&["x"]).build());
    objs.push(deny("elsewhere", "p").resource("file:///**").build());
    objs.push(agent("qs", "another", Profile::Review));
    let e2 = engine(objs);
    assert_eq!(bundle(&e1, "qs/vibe-coder"), bundle(&e2, "qs/vibe-coder"));

    // A platform Policy that reaches none of the agent's tools did not decide its
    // bundle; one that reaches a granted tool (even with an Allow) did.
    let mut objs = quickstart(Profile::Strict);
    objs.push(
        deny("mcpgov-system", "p")
            .resource("file:///nothing")
            .build(),
    );
    assert_eq!(
        bundle(&e1, "qs/vibe-coder"),
        bundle(&engine(objs), "qs/vibe-coder")
    );
    let mut objs = quickstart(Profile::Strict);
    objs.push(
        allow("mcpgov-system", "p")
            .resource("file:///demo/notes")
            .build(),
    );
    let e3 = engine(objs);
    let (a, b) = (bundle(&e1, "qs/vibe-coder"), bundle(&e3, "qs/vibe-coder"));
    assert_ne!(
        a.governance_digest, b.governance_digest,
        "a Policy reaching a granted tool is an input"
    );
    assert_eq!(a.catalog_digest, b.catalog_digest);
}

#[test]
fn an_oversized_bundle_is_an_error_naming_the_limit() {
    let names: Vec<String> = (0..6000)
        .map(|i| format!("tool_with_a_long_name_{i:05}"))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let e = engine(vec![
        server("ns", "big").tools(&refs).build(),
        agent("ns", "a", Profile::Explore),
        grant("ns", "g", "a", &["big::*"]).build(),
    ]);
    let err = e.evaluator(now()).bundle(&key("ns/a")).unwrap_err();
    assert!(matches!(err, BundleError::TooLarge { .. }));
    assert!(
        err.to_string().contains("1048576-byte ConfigMap limit"),
        "{err}"
    );
}

/// The document, after checking the reader (the gateway's types) takes it and writes it
/// back to the same bytes.
fn doc(b: &Bundle) -> serde_json::Value {
    let read = mcpgov_core::bundle::parse(&b.bytes).unwrap();
    assert_eq!(canonical::to_canonical_json(&read), b.bytes);
    serde_json::from_slice(&b.bytes).unwrap()
}

#[test]
fn servers_carry_each_listed_tools_endpoint_once_with_secret_names_only() {
    let mut objs = quickstart(Profile::Review);
    objs.push(
        server("qs", "a-remote")
            .tools(&["x", "y"])
            .sse()
            .header("Authorization", "remote-token", "token")
            .header("X-Tenant", "remote-tenant", "id")
            .build(),
    );
    objs.push(server("qs", "unlisted").tools(&["z"]).build());
    objs.push(grant("qs", "g2", "vibe-coder", &["a-remote::*"]).build());
    let d = doc(&bundle(&engine(objs), "qs/vibe-coder"));
    assert_eq!(
        d["servers"],
        serde_json::json!([
            {"endpoint": {"headers": [
                {"name": "Authorization", "secretKeyRef": {"key": "token", "name": "remote-token"}},
                {"name": "X-Tenant", "secretKeyRef": {"key": "id", "name": "remote-tenant"}}],
              "transport": "SSE", "url": "http://a-remote.qs:8080/mcp"},
             "key": "qs/a-remote"},
            {"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": "http://gw.qs:8080/mcp"},
             "key": "qs/gw"}
        ])
    );
    // A new URL is a new bundle (the gateway must learn it), though it decides nothing.
    let mut moved = quickstart(Profile::Review);
    if let Object::Server(s) = &mut moved[0] {
        s.endpoint.url = "http://elsewhere:9000/mcp".into();
    }
    let (a, b) = (
        bundle(&engine(quickstart(Profile::Review)), "qs/vibe-coder"),
        bundle(&engine(moved), "qs/vibe-coder"),
    );
    assert_ne!(a.sha256, b.sha256);
    assert_eq!(a.governance_digest, b.governance_digest);
}

/// `eligibleUntil`: the instant from which an eligible tool that only an expected
/// exception keeps eligible is rejected; the earliest instant at which that is true, not
/// merely the earliest expiry.
#[test]
fn eligible_until_is_when_the_excusing_exception_runs_out() {
    let with = |grants: Vec<Object>| {
        let mut objs = quickstart(Profile::Review);
        objs.extend(grants);
        engine(objs)
    };
    let until = |e: &Engine, at: &str| -> Vec<(String, Option<String>, String)> {
        let b = e
            .evaluator(at.parse().unwrap())
            .bundle(&key("qs/vibe-coder"))
            .unwrap();
        doc(&b)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t.get("eligibleUntil")
                        .map(|u| u.as_str().unwrap().to_string()),
                    t["decision"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let t = |n: &str, u: Option<&str>, d: &str| (n.to_string(), u.map(String::from), d.to_string());

    // One exception, expiring: the tool is eligible until then, rejected from then on.
    let e = with(vec![
        grant("qs", "x1", "vibe-coder", &[])
            .exception("drafts-deny", None, None, Some("2026-07-01T00:00:00Z"))
            .build(),
    ]);
    assert_eq!(
        until(&e, "2026-06-01T00:00:00Z"),
        [
            t("publish_note", Some("2026-07-01T00:00:00Z"), "eligible"),
            t("read_note", None, "eligible")
        ]
    );
    assert_eq!(
        until(&e, "2026-07-01T00:00:00Z")[0],
        t("publish_note", None, "rejected")
    );

    // A second exception covering the same path lasts longer: the tool stays eligible
    // past the first expiry, so eligibleUntil is the second one.
    let e = with(vec![
        grant("qs", "x1", "vibe-coder", &[])
            .exception("drafts-deny", None, None, Some("2026-07-01T00:00:00Z"))
            .build(),
        grant("qs", "x2", "vibe-coder", &[])
            .exception("drafts-deny", None, None, Some("2026-09-01T12:30:00.75Z"))
            .build(),
    ]);
    // Sub-second expiries are written at the second before (never late).
    assert_eq!(
        until(&e, "2026-06-01T00:00:00Z")[0],
        t("publish_note", Some("2026-09-01T12:30:00Z"), "eligible")
    );
    assert_eq!(
        until(&e, "2026-08-01T00:00:00Z")[0],
        t("publish_note", Some("2026-09-01T12:30:00Z"), "eligible")
    );

    // An exception that never expires: no eligibleUntil, even beside one that does.
    let e = with(vec![
        grant("qs", "x1", "vibe-coder", &[])
            .exception("drafts-deny", None, None, Some("2026-07-01T00:00:00Z"))
            .build(),
        grant("qs", "x2", "vibe-coder", &[])
            .exception("drafts-deny", None, None, None)
            .build(),
    ]);
    assert_eq!(
        until(&e, "2026-06-01T00:00:00Z")[0],
        t("publish_note", None, "eligible")
    );

    // Under Strict the excused tool is rejected already: nothing to expire.
    let mut objs = quickstart(Profile::Strict);
    objs.push(
        grant("qs", "x1", "vibe-coder", &[])
            .exception("drafts-deny", None, None, Some("2026-07-01T00:00:00Z"))
            .build(),
    );
    let b = bundle(&engine(objs), "qs/vibe-coder");
    assert!(
        !String::from_utf8(b.bytes)
            .unwrap()
            .contains("eligibleUntil")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The bytes do not depend on the order objects arrive in.
    #[test]
    fn bundle_bytes_do_not_depend_on_arrival_order(seed in any::<u64>()) {
        let mut objs = quickstart(Profile::Review);
        objs.push(server("qs", "gw2").tools(&["a", "b"]).reads("a", "file:///demo/*").build());
        objs.push(grant("qs", "g2", "vibe-coder", &["gw2::*"])
            .exception("drafts-deny", None, None, None).build());
        objs.push(deny("mcpgov-system", "platform").tool("*/gw2::b").build());
        let reference = bundle(&engine(objs.clone()), "qs/vibe-coder");
        // A deterministic shuffle from the seed.
        let mut state = seed;
        for i in (1..objs.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            objs.swap(i, (state >> 33) as usize % (i + 1));
        }
        prop_assert_eq!(bundle(&engine(objs), "qs/vibe-coder"), reference);
    }
}
