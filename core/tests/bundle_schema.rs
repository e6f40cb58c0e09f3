//! The published JSON Schema of the bundle (`docs/bundle.schema.json`, draft 2020-12)
//! accepts every golden bundle the engine writes, and the v2 fields as the brief defines
//! them, and refuses what a gateway must not take for a bundle.

use serde_json::{Value, json};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("docs/bundle.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::meta::validate(&schema).expect("the schema is a 2020-12 schema");
    jsonschema::draft202012::new(&schema).unwrap()
}

fn goldens() -> Vec<(String, Value)> {
    let dir = root().join("operator/tests/golden");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".bundle.json"))
        .map(|p| {
            let v = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (p.display().to_string(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 4,
        "golden bundles not found in {}",
        dir.display()
    );
    out
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_golden_bundle_matches_the_schema() {
    let v = validator();
    for (name, doc) in goldens() {
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{name}");
    }
}

/// A golden bundle with the optional v2 parts filled in: headers and an expiry.
fn full() -> Value {
    let (_, mut doc) = goldens()
        .into_iter()
        .find(|(_, d)| {
            d["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["decision"] == "eligible")
        })
        .unwrap();
    doc["servers"][0]["endpoint"]["headers"] = json!([
        {"name": "Authorization", "secretKeyRef": {"key": "token", "name": "github-token"}}
    ]);
    doc["servers"][0]["endpoint"]["transport"] = json!("SSE");
    let tools = doc["tools"].as_array_mut().unwrap();
    let eligible = tools
        .iter_mut()
        .find(|t| t["decision"] == "eligible")
        .unwrap();
    eligible["eligibleUntil"] = json!("2026-12-01T15:00:00Z");
    doc
}

#[test]
fn the_optional_v2_fields_are_accepted() {
    let v = validator();
    let doc = full();
    assert_eq!(errors(&v, &doc), Vec::<String>::new());
    // And the reader takes the same document.
    let bytes = mcpgov_core::canonical::to_canonical_json(&doc);
    let read = mcpgov_core::bundle::parse(&bytes).unwrap();
    assert_eq!(mcpgov_core::canonical::to_canonical_json(&read), bytes);
}

#[test]
fn what_a_gateway_must_not_take_is_refused() {
    let v = validator();
    let eligible = |d: &mut Value| -> usize {
        d["tools"]
            .as_array()
            .unwrap()
            .iter()
            .position(|t| t.get("eligibleUntil").is_some())
            .unwrap()
    };
    type Mutation = Box<dyn Fn(&mut Value)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "schemaVersion 1",
            Box::new(|d| d["schemaVersion"] = json!(1)),
        ),
        (
            "no servers",
            Box::new(|d| {
                d.as_object_mut().unwrap().remove("servers");
            }),
        ),
        (
            "a header value in clear",
            Box::new(|d| d["servers"][0]["endpoint"]["headers"][0]["value"] = json!("hunter2")),
        ),
        (
            "an unknown transport",
            Box::new(|d| d["servers"][0]["endpoint"]["transport"] = json!("stdio")),
        ),
        (
            "a url that is not http",
            Box::new(|d| d["servers"][0]["endpoint"]["url"] = json!("file:///etc/passwd")),
        ),
        (
            "an expiry with an offset",
            Box::new(move |d| {
                let i = eligible(d);
                d["tools"][i]["eligibleUntil"] = json!("2026-12-01T15:00:00+01:00")
            }),
        ),
        (
            "an expiry with fractions",
            Box::new(move |d| {
                let i = eligible(d);
                d["tools"][i]["eligibleUntil"] = json!("2026-12-01T15:00:00.5Z")
            }),
        ),
        (
            "an expiry on a rejected tool",
            Box::new(move |d| {
                let i = eligible(d);
                d["tools"][i]["decision"] = json!("rejected")
            }),
        ),
        ("an unknown field", Box::new(|d| d["allow"] = json!(["*"]))),
        (
            "an unknown decision",
            Box::new(|d| d["tools"][0]["decision"] = json!("maybe")),
        ),
        (
            "a digest that is not sha256",
            Box::new(|d| d["tools"][0]["contractDigest"] = json!("md5:abc")),
        ),
        (
            "a default of allow",
            Box::new(|d| d["defaultDecision"] = json!("allow")),
        ),
    ];
    for (what, mutate) in mutations {
        let mut doc = full();
        mutate(&mut doc);
        assert!(!v.is_valid(&doc), "{what} was accepted");
    }
}
