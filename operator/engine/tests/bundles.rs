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
    assert_eq!(doc["schemaVersion"], 1);
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
