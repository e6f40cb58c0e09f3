//! Every golden bundle the engine writes reads back through the reader's types, and
//! writing those types canonically gives the same bytes: reader and writer agree.

use mcpgov_core::bundle::{BundleError, parse};
use mcpgov_core::canonical::to_canonical_json;
use std::path::Path;

fn goldens() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../operator/tests/golden");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".bundle.json"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    assert!(
        out.len() >= 4,
        "golden bundles not found in {}",
        dir.display()
    );
    out
}

#[test]
fn golden_bundles_round_trip() {
    for (name, bytes) in goldens() {
        let doc = parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(to_canonical_json(&doc), bytes, "{name}");
    }
}

#[test]
fn foreign_and_oversized_documents_are_refused() {
    let (_, bytes) = goldens().remove(0);
    let text = String::from_utf8(bytes).unwrap();
    let wrong = text.replace("mcpgov.io/policy-bundle", "example.com/other");
    assert!(matches!(
        parse(wrong.as_bytes()),
        Err(BundleError::WrongKind(_))
    ));
    let future = text.replace("\"schemaVersion\":2", "\"schemaVersion\":99");
    assert_eq!(
        parse(future.as_bytes()),
        Err(BundleError::UnsupportedVersion(99))
    );
    assert!(matches!(
        parse(b"{\"kind\":"),
        Err(BundleError::Malformed(_))
    ));
    // A field this reader does not know, at any depth, or a v2 field that is malformed.
    for (from, to) in [
        ("\"defaultDecision\"", "\"allow\":true,\"defaultDecision\""),
        ("\"headers\":[]", "\"headers\":[],\"tls\":{}"),
        (
            "\"transport\":\"StreamableHTTP\"",
            "\"transport\":\"stdio\"",
        ),
        ("\"key\":\"", "\"eligibleUntil\":\"soon\",\"key\":\""),
        (
            "\"key\":\"",
            "\"eligibleUntil\":\"2026-02-30T00:00:00Z\",\"key\":\"",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let bad = text.replacen(from, to, 1);
        assert!(
            matches!(
                parse(bad.as_bytes()),
                Err(BundleError::Malformed(_) | BundleError::Invalid(..))
            ),
            "{to}"
        );
    }
    // A tool or a server listed twice (two rules for one key) is ambiguous: refused.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for list in ["tools", "servers"] {
        let mut twice = doc.clone();
        let first = twice[list][0].clone();
        twice[list].as_array_mut().unwrap().push(first);
        assert!(
            matches!(
                parse(&to_canonical_json(&twice)),
                Err(BundleError::Invalid(..))
            ),
            "{list}"
        );
    }
    let big = vec![b' '; 1024 * 1024 + 1];
    assert!(matches!(parse(&big), Err(BundleError::TooLarge(_))));
}
