//! `mcpgov check -o sarif`: the findings as a SARIF 2.1.0 log, the format code-scanning
//! tools read (GitHub code scanning, GitLab, Azure DevOps). One rule per finding reason
//! seen, one result per finding, pointing at the manifest file (and the line of the
//! object's document) the object came from. The same input always gives the same bytes:
//! nothing here reads a clock, an absolute path or the environment.

use super::input::{LOOKALIKE_HINT, Origin};
use crate::manifest::Lookalike;
use mcpgov_engine::{Finding, FindingKind, FindingReason, ObjectRef};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// SARIF's level for a finding kind.
pub fn level(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::Violation | FindingKind::Invalid => "error",
        FindingKind::Drift | FindingKind::Unresolved => "warning",
        FindingKind::Exception => "note",
    }
}

/// What a reason means, for the reasons the engine gives today; others fall back on
/// their kind's sentence.
fn describe_reason(reason: FindingReason) -> Option<&'static str> {
    use FindingReason as R;
    Some(match reason {
        R::DenyViolation => {
            "An agent can reach a Deny-governed tool or resource, and no expected exception covers it."
        }
        R::AuthorizedButGoverned => {
            "An agent can reach a Deny-governed tool or resource; an expected exception declares it intended."
        }
        R::Drifted => "Governance names a tool that no crawled server exposes now.",
        R::NotFound => "A reference names a tool or object that does not exist.",
        R::Ambiguous => "A bare tool name matches tools on several servers; it is never guessed.",
        R::AgentNotFound => "A Grant names an Agent that does not exist in its namespace.",
        R::CrossNamespaceDenied => {
            "A reference crosses into a namespace that does not share with the referring one."
        }
        R::ExceptionNotAllowed => {
            "An expected exception names a Policy that does not accept exceptions from the Grant's namespace."
        }
        R::PatternBudgetExceeded => "A glob is over the wildcard budget (docs/security.md).",
        _ => return None,
    })
}

fn describe_kind(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::Violation => "An agent reaches a Deny-governed tool or resource, not excused.",
        FindingKind::Exception => {
            "An agent reaches a Deny-governed tool or resource, covered by an expected exception."
        }
        FindingKind::Drift => "Governance names a tool no server exposes now.",
        FindingKind::Unresolved => {
            "A reference resolves to nothing, to several things, or breaks tenancy."
        }
        FindingKind::Invalid => "Input the engine cannot use.",
    }
}

/// What to do about a finding of this kind.
fn help(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::Violation => {
            "Remove the tool from the agent's Grant, narrow the Policy, or, if the reach is intended, declare an expectedException on the Grant (a Grant in another namespace needs it in the Policy's exceptions.allowedNamespaces). `mcpgov query check-access AGENT TOOL -f ...` shows the evidence path."
        }
        FindingKind::Exception => {
            "Intended reach, declared by an expected exception on the Grant: review its reason, owner and expiry."
        }
        FindingKind::Drift => {
            "Point the Grant, Policy or dataAccess at a tool the server exposes, or refresh the catalog (`mcpgov crawl`, or the operator's next crawl)."
        }
        FindingKind::Unresolved => {
            "Name exactly one existing object or tool: `namespace/server::tool` when a bare name is ambiguous, and only servers shared with the Grant's namespace."
        }
        FindingKind::Invalid => "Fix the object: the engine cannot use it as written.",
    }
}

/// A path as a SARIF URI reference: relative paths stay relative (to the directory
/// `mcpgov check` ran in), separators become `/`, and anything outside RFC 3986's
/// unreserved set and `/` is percent-encoded. Absolute paths become `file://` URIs.
pub fn uri(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    let s = s.strip_prefix("./").unwrap_or(&s);
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

/// `Kind ns/name` split into the name a viewer shows and the whole.
fn logical_location(object: &ObjectRef) -> Value {
    // The text after the last slash, as before (a name with a slash keeps its tail).
    let object = object.to_string();
    let name = object.rsplit('/').next().unwrap_or(&object);
    json!({
        "name": name,
        "fullyQualifiedName": object,
        "kind": "resource",
    })
}

fn result(f: &Finding, rule_index: usize, origins: &BTreeMap<ObjectRef, Origin>) -> Value {
    let mut location = Map::new();
    // Standard input has no URI: such results carry the logical location only.
    if let Some(p) = origins
        .get(&f.object)
        .and_then(|o| physical_location(&o.file, o.line))
    {
        location.insert("physicalLocation".into(), p);
    }
    location.insert(
        "logicalLocations".into(),
        json!([logical_location(&f.object)]),
    );
    let mut properties = Map::new();
    properties.insert("kind".into(), json!(f.kind));
    for (k, v) in [
        ("agent", &f.agent),
        ("tool", &f.tool),
        ("policy", &f.policy),
        ("resource", &f.resource),
    ] {
        if let Some(v) = v {
            properties.insert(k.into(), json!(v));
        }
    }
    if !f.path.is_empty() {
        properties.insert("path".into(), json!(f.path));
    }
    json!({
        "ruleId": f.reason,
        "ruleIndex": rule_index,
        "level": level(f.kind),
        "message": { "text": format!("{}: {}", f.object, f.message) },
        "locations": [Value::Object(location)],
        "properties": Value::Object(properties),
    })
}

/// A physical location for a file and line; none for standard input (no URI).
fn physical_location(file: &Path, line: Option<usize>) -> Option<Value> {
    if file == Path::new(crate::manifest::STDIN_NAME) {
        return None;
    }
    let mut physical = Map::new();
    physical.insert("artifactLocation".into(), json!({ "uri": uri(file) }));
    if let Some(line) = line {
        physical.insert("region".into(), json!({ "startLine": line }));
    }
    Some(Value::Object(physical))
}

/// An object of our kinds in another API group, as a tool execution notification: it
/// is about what the run did not look at, not a finding about the estate.
fn notification(l: &Lookalike) -> Value {
    let mut n = Map::new();
    n.insert(
        "descriptor".into(),
        json!({ "id": super::check::FOREIGN_API_GROUP }),
    );
    n.insert("level".into(), json!("warning"));
    n.insert(
        "message".into(),
        json!({ "text": format!("{} ({LOOKALIKE_HINT})", l.message()) }),
    );
    if let Some(p) = physical_location(&l.file, l.line) {
        n.insert("locations".into(), json!([{ "physicalLocation": p }]));
    }
    Value::Object(n)
}

/// The SARIF log for `findings` (in their order), with one rule per distinct reason
/// (sorted by id); skipped lookalikes become warnings of the run's invocation.
pub fn log(
    findings: &[Finding],
    origins: &BTreeMap<ObjectRef, Origin>,
    lookalikes: &[Lookalike],
) -> Value {
    // A reason's rule takes the kind it first appears with (a reason has one kind).
    let mut kinds: BTreeMap<FindingReason, FindingKind> = BTreeMap::new();
    for f in findings {
        kinds.entry(f.reason).or_insert(f.kind);
    }
    // Sorted by id: the reasons order as their names.
    let index: BTreeMap<FindingReason, usize> =
        kinds.keys().enumerate().map(|(i, r)| (*r, i)).collect();
    let rules: Vec<Value> = kinds
        .iter()
        .map(|(reason, kind)| {
            json!({
                "id": reason,
                "name": reason,
                "shortDescription": {
                    "text": describe_reason(*reason).unwrap_or(describe_kind(*kind))
                },
                "help": { "text": help(*kind) },
                "defaultConfiguration": { "level": level(*kind) },
                "properties": { "kind": kind },
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| result(f, index[&f.reason], origins))
        .collect();
    let mut run = json!({
        "tool": {
            "driver": {
                "name": "mcpgov",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    // Only with something to say, so a clean log keeps its bytes.
    if !lookalikes.is_empty() {
        run["invocations"] = json!([{
            "executionSuccessful": true,
            "toolExecutionNotifications": lookalikes.iter().map(notification).collect::<Vec<_>>(),
        }]);
    }
    json!({
        "version": "2.1.0",
        "$schema": SCHEMA,
        "runs": [run],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn finding(kind: FindingKind, reason: &str, object: &str) -> Finding {
        Finding::new(
            kind,
            reason.parse().unwrap(),
            ObjectRef::parse(object).unwrap(),
            "m",
        )
    }

    #[test]
    fn levels_follow_the_finding_kind() {
        assert_eq!(level(FindingKind::Violation), "error");
        assert_eq!(level(FindingKind::Invalid), "error");
        assert_eq!(level(FindingKind::Drift), "warning");
        assert_eq!(level(FindingKind::Unresolved), "warning");
        assert_eq!(level(FindingKind::Exception), "note");
    }

    #[test]
    fn uris_stay_relative_and_are_escaped() {
        assert_eq!(uri(Path::new("examples/q/gov.yaml")), "examples/q/gov.yaml");
        assert_eq!(uri(Path::new("./a b/c#d.yaml")), "a%20b/c%23d.yaml");
        assert_eq!(uri(Path::new("/srv/x.yaml")), "file:///srv/x.yaml");
        assert_eq!(uri(Path::new("ü.yaml")), "%C3%BC.yaml");
    }

    #[test]
    fn rules_are_one_per_reason_sorted_and_results_point_at_their_file() {
        let findings = vec![
            finding(FindingKind::Violation, "DenyViolation", "Agent t/a"),
            finding(FindingKind::Drift, "Drifted", "Grant t/g"),
            finding(FindingKind::Violation, "DenyViolation", "Agent t/b"),
            finding(FindingKind::Unresolved, "ExceptionExpired", "Grant t/in"),
        ];
        let mut origins = BTreeMap::new();
        origins.insert(
            ObjectRef::parse("Agent t/a").unwrap(),
            Origin {
                file: PathBuf::from("m/a.yaml"),
                line: Some(7),
            },
        );
        origins.insert(
            ObjectRef::parse("Grant t/g").unwrap(),
            Origin {
                file: PathBuf::from("m/g.yaml"),
                line: None,
            },
        );
        origins.insert(
            ObjectRef::parse("Grant t/in").unwrap(),
            Origin {
                file: PathBuf::from("<stdin>"),
                line: Some(1),
            },
        );
        let log = log(&findings, &origins, &[]);
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        let ids: Vec<_> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["DenyViolation", "Drifted", "ExceptionExpired"]);
        let rule = &run["tool"]["driver"]["rules"][2];
        assert!(rule["shortDescription"]["text"].as_str().unwrap().len() > 10);
        assert!(rule["help"]["text"].as_str().unwrap().len() > 10);
        let r = run["results"].as_array().unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!(r[0]["ruleIndex"], 0);
        assert_eq!(r[0]["level"], "error");
        let loc = &r[0]["locations"][0];
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"],
            "m/a.yaml"
        );
        assert_eq!(loc["physicalLocation"]["region"]["startLine"], 7);
        assert_eq!(
            loc["logicalLocations"][0]["fullyQualifiedName"],
            "Agent t/a"
        );
        assert_eq!(loc["logicalLocations"][0]["name"], "a");
        // No line known: no region.
        assert!(
            r[1]["locations"][0]["physicalLocation"]
                .get("region")
                .is_none()
        );
        assert_eq!(r[1]["level"], "warning");
        // Not in any file we know: logical location only.
        assert!(r[2]["locations"][0].get("physicalLocation").is_none());
        // Standard input has no URI.
        assert!(r[3]["locations"][0].get("physicalLocation").is_none());
        assert_eq!(r[3]["ruleIndex"], 2);
    }
}
