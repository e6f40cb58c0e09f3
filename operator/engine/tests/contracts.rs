//! Contract approval: under a pinned server, only the approved contract of a tool is
//! eligible, under every profile; a trusting server decides as it always did.

mod common;
use common::*;
use mcpgov_engine::*;
use serde_json::{Value, json};

fn estate(profile: Profile, server: ServerB) -> Vec<Object> {
    vec![
        server.build(),
        agent("qs", "a", profile),
        grant("qs", "g", "a", &["gw::read_note", "gw::publish_note"]).build(),
    ]
}

fn tools(e: &Engine) -> Value {
    let b = e.evaluator(now()).bundle(&key("qs/a")).unwrap();
    let doc: Value = serde_json::from_slice(&b.bytes).unwrap();
    doc["tools"].clone()
}

fn gw() -> ServerB {
    // `tools()` gives each tool the digest `sha256:<name>`.
    server("qs", "gw")
        .tools(&["read_note", "publish_note"])
        .reads("read_note", "file:///demo/notes")
        .reads("publish_note", "file:///demo/notes")
}

#[test]
fn a_changed_or_unapproved_contract_is_rejected_under_every_profile() {
    for profile in [Profile::Strict, Profile::Review, Profile::Explore] {
        let e = engine(estate(
            profile,
            gw().pinned(&[
                ("read_note", "sha256:read_note"),
                ("publish_note", "sha256:old"),
            ]),
        ));
        let t = tools(&e);
        // publish_note was approved as another contract: rejected, and the bundle
        // carries the approved digest, so a gateway blocks the live one.
        assert_eq!(t[0]["name"], "publish_note");
        assert_eq!(t[0]["decision"], "rejected", "{profile:?}");
        assert_eq!(t[0]["reasons"], json!(["ContractChanged"]));
        assert_eq!(t[0]["contractDigest"], "sha256:old");
        assert_eq!(t[0]["riskScore"], json!(0.9));
        assert_eq!(t[1]["decision"], "eligible", "{profile:?}");
        assert_eq!(t[1]["contractDigest"], "sha256:read_note");

        let e = engine(estate(
            profile,
            gw().pinned(&[("read_note", "sha256:read_note")]),
        ));
        let t = tools(&e);
        assert_eq!(t[0]["reasons"], json!(["ContractUnapproved"]));
        assert_eq!(t[0]["decision"], "rejected", "{profile:?}");
        let v = e
            .evaluator(now())
            .eligibility(&key("qs/a"), "gw::publish_note", profile);
        assert_eq!(v.rejected_by, [Reason::ContractUnapproved]);
        let v = e
            .evaluator(now())
            .check_access(&key("qs/a"), "gw::publish_note");
        assert_eq!(v.contract, Some(ContractState::Unapproved));
        assert_eq!(serde_json::to_value(&v).unwrap()["contract"], "Unapproved");
    }
}

#[test]
fn trusting_servers_read_as_before_and_approving_restores_the_tool() {
    let trusting = engine(estate(Profile::Strict, gw()));
    let t = tools(&trusting);
    assert_eq!(t[0]["decision"], "eligible");
    assert_eq!(t[0]["contractDigest"], "sha256:publish_note");
    let v = trusting
        .evaluator(now())
        .check_access(&key("qs/a"), "gw::publish_note");
    assert!(serde_json::to_value(&v).unwrap().get("contract").is_none());
    // Trust mode with approvals written down decides nothing differently.
    let mut objs = estate(
        Profile::Strict,
        gw().pinned(&[("publish_note", "sha256:old")]),
    );
    if let Object::Server(s) = &mut objs[0] {
        s.contracts.mode = ContractMode::Trust;
    }
    let e = engine(objs);
    assert_eq!(tools(&e)[0]["decision"], "eligible");
    assert_eq!(tools(&e)[0]["contractDigest"], "sha256:publish_note");

    // Incrementally: pin with a stale approval, then approve what was crawled.
    let mut e = engine(estate(Profile::Strict, gw()));
    let before = e.evaluator(now()).bundle(&key("qs/a")).unwrap();
    e.apply(
        gw().pinned(&[
            ("read_note", "sha256:read_note"),
            ("publish_note", "sha256:old"),
        ])
        .build(),
    );
    assert_eq!(tools(&e)[0]["reasons"], json!(["ContractChanged"]));
    let pinned = e.evaluator(now()).bundle(&key("qs/a")).unwrap();
    assert_ne!(pinned.sha256, before.sha256);
    e.apply(
        gw().pinned(&[
            ("read_note", "sha256:read_note"),
            ("publish_note", "sha256:publish_note"),
        ])
        .build(),
    );
    let t = tools(&e);
    assert_eq!(t[0]["decision"], "eligible");
    assert_eq!(t[0]["reasons"], json!([]));
}

/// A tool the crawl could not digest (no contract digest) is never the approved one.
#[test]
fn a_tool_without_a_crawled_digest_is_not_approved() {
    let mut objs = estate(
        Profile::Explore,
        gw().pinned(&[
            ("read_note", "sha256:read_note"),
            ("publish_note", "sha256:publish_note"),
        ]),
    );
    if let Object::Server(srv) = &mut objs[0] {
        for t in &mut srv.catalog.as_mut().unwrap().tools {
            if t.name == "publish_note" {
                t.contract_digest = None;
            }
        }
    }
    let e = engine(objs);
    let t = tools(&e);
    assert_eq!(t[0]["reasons"], json!(["ContractChanged"]));
    assert_eq!(t[0]["decision"], "rejected");
}
