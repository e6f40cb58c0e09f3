//! Offline validation of a manifest against the same OpenAPI schema the CRDs install,
//! so `mcpgov check` rejects what `kubectl apply` would: unknown fields (kubectl's strict
//! field validation), types, required fields, enums, patterns, lengths, ranges, and the
//! CEL rules (each has a Rust equivalent below; a test fails if one is missing).

use crate::crd::all_crds;
use crate::text;
use regex::Regex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

struct Schemas {
    by_kind: HashMap<String, Value>,
    regexes: HashMap<String, Regex>,
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let mut by_kind = HashMap::new();
        let mut regexes = HashMap::new();
        for crd in all_crds() {
            let v = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema serialises");
            let schema = v["openAPIV3Schema"].clone();
            collect_patterns(&schema, &mut regexes);
            by_kind.insert(crd.spec.names.kind.clone(), schema);
        }
        Schemas { by_kind, regexes }
    })
}

fn collect_patterns(schema: &Value, out: &mut HashMap<String, Regex>) {
    if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
        out.entry(p.to_string())
            .or_insert_with(|| Regex::new(p).expect("CRD patterns are valid regexes"));
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        props.values().for_each(|s| collect_patterns(s, out));
    }
    if let Some(items) = schema.get("items") {
        collect_patterns(items, out);
    }
}

/// CEL rules of the CRDs and their offline equivalents.
fn cel_rule(rule: &str) -> Option<fn(&Value) -> bool> {
    match rule {
        r if r.starts_with("(has(self.resources) ? size(self.resources) : 0)") => Some(|v| {
            let len = |k: &str| v.get(k).and_then(Value::as_array).map_or(0, Vec::len);
            len("resources") + len("tools") > 0
        }),
        "has(self.name) != has(self.pointer)" => {
            Some(|v| v.get("name").is_some() != v.get("pointer").is_some())
        }
        _ => None,
    }
}

/// Problems with `doc` as a `kind` object; `None` when `kind` is not one of ours.
pub fn validate(kind: &str, doc: &Value) -> Option<Vec<String>> {
    let s = schemas();
    let schema = s.by_kind.get(kind)?;
    let mut problems = Vec::new();
    check_metadata(doc, &mut problems);
    for part in ["spec", "status"] {
        if let (Some(v), Some(sch)) = (
            doc.get(part),
            schema.pointer(&format!("/properties/{part}")),
        ) {
            check(v, sch, part, s, &mut problems);
        }
    }
    if doc.get("spec").is_none()
        && schema
            .pointer("/required")
            .is_some_and(|r| r.to_string().contains("spec"))
    {
        problems.push("spec is required".to_string());
    }
    Some(problems)
}

/// `metadata.name` and `metadata.namespace` as the API server checks them for a custom
/// resource; offline they were not checked at all, so `a..b` passed the gate.
fn check_metadata(doc: &Value, out: &mut Vec<String>) {
    let meta = match doc.get("metadata") {
        None => return out.push("metadata.name is required".into()),
        Some(Value::Object(m)) => m,
        Some(_) => return out.push("metadata must be a mapping".into()),
    };
    match meta.get("name") {
        None => out.push("metadata.name is required".into()),
        Some(Value::String(n)) if is_dns1123_subdomain(n) => {}
        Some(Value::String(n)) => out.push(format!(
            "metadata.name {} is not a valid name: a DNS-1123 subdomain is at most 253 \
             characters of lowercase letters, digits, '-' and '.', each '.'-separated part \
             starting and ending with a letter or digit",
            quote(n)
        )),
        Some(_) => out.push("metadata.name must be a string".into()),
    }
    match meta.get("namespace") {
        // Empty is unset: kubectl puts the object in the current namespace.
        None | Some(Value::Null) => {}
        Some(Value::String(ns)) if ns.is_empty() || is_dns1123_label(ns) => {}
        Some(Value::String(ns)) => out.push(format!(
            "metadata.namespace {} is not a valid namespace: a DNS-1123 label is at most 63 \
             characters of lowercase letters, digits and '-', starting and ending with a \
             letter or digit",
            quote(ns)
        )),
        Some(_) => out.push("metadata.namespace must be a string".into()),
    }
}

/// A DNS-1123 label: 1-63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&b.len())
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// A DNS-1123 subdomain (the API server's rule for object names): at most 253
/// characters, dot-separated parts each like a label but of any length.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            b.first().is_some_and(edge)
                && b.last().is_some_and(edge)
                && b.iter().all(|c| edge(c) || *c == b'-')
        })
}

fn check(v: &Value, schema: &Value, path: &str, s: &Schemas, out: &mut Vec<String>) {
    if v.is_null() && schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        return;
    }
    if schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
        && schema.get("properties").is_none()
    {
        return;
    }
    let ty = schema.get("type").and_then(Value::as_str);
    let type_ok = match ty {
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("integer") => v.as_i64().is_some() || v.as_u64().is_some(),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        _ => true,
    };
    if !type_ok {
        out.push(format!(
            "{path}: expected {}, got {}",
            ty.unwrap_or("?"),
            short(v)
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(v)
    {
        let names: Vec<String> = allowed.iter().map(short).collect();
        out.push(format!(
            "{path}: {} is not one of {}",
            short(v),
            names.join(", ")
        ));
    }
    if let Some(text) = v.as_str() {
        check_string(text, schema, path, s, out);
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            out.push(format!("{path}: {n} is below the minimum {min}"));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            out.push(format!("{path}: {n} is above the maximum {max}"));
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            out.push(format!("{path}: needs at least {min} item(s)"));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            out.push(format!("{path}: at most {max} item(s)"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(item, item_schema, &format!("{path}[{i}]"), s, out);
            }
        }
        // A list map (e.g. spec.contracts.approved by tool): the API server refuses two
        // entries with the same keys.
        if schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut seen = std::collections::HashSet::new();
            for (i, item) in items.iter().enumerate() {
                let k: Vec<&Value> = keys.iter().map(|k| &item[*k]).collect();
                if !seen.insert(serde_json::to_string(&k).unwrap_or_default()) {
                    out.push(format!(
                        "{path}[{i}]: duplicate entry ({} repeated)",
                        keys.join(", ")
                    ));
                }
            }
        }
    }
    if let Some(map) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = req.as_str()
                && !map.contains_key(r)
            {
                out.push(format!("{path}.{r} is required"));
            }
        }
        if let Some(props) = props {
            for (k, val) in map {
                match props.get(k) {
                    Some(sch) => check(val, sch, &format!("{path}.{k}"), s, out),
                    None => out.push(format!("{path}: unknown field {}", quote(k))),
                }
            }
        }
    }
    for rule in schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = rule.get("rule").and_then(Value::as_str).unwrap_or_default();
        let holds = cel_rule(text).is_none_or(|f| f(v));
        if !holds {
            let msg = rule.get("message").and_then(Value::as_str).unwrap_or(text);
            out.push(format!("{path}: {msg}"));
        }
    }
}

fn check_string(text: &str, schema: &Value, path: &str, s: &Schemas, out: &mut Vec<String>) {
    let len = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        out.push(format!("{path}: must be at least {min} character(s)"));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        out.push(format!("{path}: must be at most {max} characters"));
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str)
        && !s.regexes[p].is_match(text)
    {
        out.push(format!("{path}: {} does not match {p}", quote(text)));
    }
    if schema.get("format").and_then(Value::as_str) == Some("date-time")
        && text.parse::<jiff::Timestamp>().is_err()
    {
        out.push(format!(
            "{path}: {} is not an RFC 3339 date-time",
            quote(text)
        ));
    }
}

/// A value for a message: strings quoted and escaped, anything else as JSON, shortened
/// on a character boundary (byte slicing panicked inside a multi-byte character).
fn short(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => text::escape(&text::truncate(&other.to_string(), 60)).into_owned(),
    }
}

fn quote(s: &str) -> String {
    text::quote(s, 60)
}

/// Every CEL rule in the generated CRDs; a test checks each has an equivalent.
pub fn cel_rules() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
                    out.extend(
                        rules
                            .iter()
                            .filter_map(|r| r["rule"].as_str().map(String::from)),
                    );
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for schema in schemas().by_kind.values() {
        walk(schema, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_apiservers_dns_1123_rules() {
        for ok in ["a", "a-b", "a.b", "0", "a1.b-2.c", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "a..b",
            ".a",
            "a.",
            "-a",
            "a-",
            "a.-b",
            "A",
            "*",
            "a_b",
            "é",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        for ok in ["a", "team-a", "0x", &"n".repeat(63)] {
            assert!(is_dns1123_label(ok), "{ok}");
        }
        for bad in ["", "a.b", "Team A/../x", "-a", "a-", &"n".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
    }

    #[test]
    fn every_cel_rule_has_an_offline_equivalent() {
        let rules = cel_rules();
        assert!(!rules.is_empty());
        for r in rules {
            assert!(
                cel_rule(&r).is_some(),
                "no offline equivalent for CEL rule {r:?}"
            );
        }
    }

    #[test]
    fn argument_bindings_and_enforcement_are_checked_offline() {
        let server = |argument: serde_json::Value| {
            json!({
                "apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
                "metadata": {"name": "fs"},
                "spec": {"endpoint": {"url": "http://fs:8080/mcp"},
                         "dataAccess": [{"tool": "read_file", "resource": "file:///srv/**",
                                         "mode": "Reads", "argument": argument}]}
            })
        };
        let problems = |a| validate("MCPServer", &server(a)).unwrap().join("\n");
        assert_eq!(
            problems(json!({"name": "path", "template": "file://{path}"})),
            ""
        );
        assert_eq!(
            problems(json!({"pointer": "/a/b", "template": "{url}"})),
            ""
        );
        for (bad, needle) in [
            (
                json!({"name": "path", "pointer": "/path", "template": "file://{path}"}),
                "exactly one of name or pointer",
            ),
            (
                json!({"template": "file://{path}"}),
                "exactly one of name or pointer",
            ),
            (
                json!({"name": "path", "template": "file://{a}{b}"}),
                "template",
            ),
            (
                json!({"name": "path", "template": "file:///srv/x"}),
                "template",
            ),
            (json!({"pointer": "path", "template": "{p}"}), "pointer"),
            (json!({"pointer": "/a~2", "template": "{p}"}), "pointer"),
        ] {
            let p = problems(bad.clone());
            assert!(p.contains(needle), "{bad}: {p:?}");
        }
        let policy = |enforcement: &str| {
            json!({
                "apiVersion": "mcpgov.io/v1alpha1", "kind": "Policy",
                "metadata": {"name": "p"},
                "spec": {"effect": "Deny", "enforcement": enforcement,
                         "governs": {"resources": [{"uri": "file:///**/.env"}]}}
            })
        };
        assert!(validate("Policy", &policy("PerCall")).unwrap().is_empty());
        assert!(validate("Policy", &policy("Static")).unwrap().is_empty());
        assert!(!validate("Policy", &policy("Sometimes")).unwrap().is_empty());
    }

    #[test]
    fn reports_what_the_apiserver_would_reject() {
        let doc = json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
            "metadata": {"name": "g"},
            "spec": {"agent": "Bad_Name", "tools": [], "extra": 1,
                     "expectedExceptions": [{"policy": "p", "reason": "", "expires": "soon"}]}
        });
        let p = validate("Grant", &doc).unwrap();
        let joined = p.join("\n");
        for needle in [
            "spec.agent",
            "spec.tools: needs at least 1",
            "unknown field \"extra\"",
            "reason: must be at least 1",
            "not an RFC 3339",
        ] {
            assert!(joined.contains(needle), "missing {needle:?} in {joined}");
        }
    }

    #[test]
    fn accepts_a_valid_policy_and_rejects_an_empty_one() {
        let ok = json!({"metadata": {"name": "p"}, "spec": {"effect": "Deny",
            "governs": {"resources": [{"uri": "file:///**/*.env"}]}}});
        assert_eq!(validate("Policy", &ok).unwrap(), Vec::<String>::new());
        let empty = json!({"metadata": {"name": "p"}, "spec": {"effect": "Block", "governs": {}}});
        let p = validate("Policy", &empty).unwrap().join("\n");
        assert!(p.contains("at least one resource or tool"), "{p}");
        assert!(p.contains("not one of"), "{p}");
    }

    /// Contract approvals: the digest grammar, a tool without globs or spaces, one
    /// entry per tool (regressions: the API server refuses each of these).
    #[test]
    fn contract_approvals_are_checked_as_the_apiserver_checks_them() {
        let d = format!("sha256:{}", "a".repeat(64));
        let server = |approved: Value| {
            json!({"metadata": {"name": "s"}, "spec": {"endpoint": {"url": "http://s/mcp"},
                "contracts": {"mode": "Pinned", "approved": approved}}})
        };
        let ok = server(json!([{"tool": "lookup", "digest": d}]));
        assert_eq!(validate("MCPServer", &ok).unwrap(), Vec::<String>::new());
        for (bad, needle) in [
            (
                json!([{"tool": "lookup", "digest": "sha256:ABC"}]),
                "digest",
            ),
            (
                json!([{"tool": "lookup", "digest": format!("{d}0")}]),
                "digest",
            ),
            (json!([{"tool": "look up", "digest": d}]), "tool"),
            (json!([{"tool": "lookup"}]), "digest"),
            (
                json!([{"tool": "lookup", "digest": d}, {"tool": "lookup", "digest": d}]),
                "duplicate entry (tool repeated)",
            ),
        ] {
            let p = validate("MCPServer", &server(bad.clone()))
                .unwrap()
                .join("\n");
            assert!(p.contains(needle), "{bad}: {p}");
        }
        let mode = json!({"metadata": {"name": "s"}, "spec": {"endpoint": {"url": "http://s/mcp"},
            "contracts": {"mode": "Strict"}}});
        assert!(!validate("MCPServer", &mode).unwrap().is_empty());
    }
}
