//! The CRD reference (`docs/crd-reference.md`), generated from the same schemas the CRDs
//! install, so it cannot drift from them (a test compares the committed file).

use serde_json::Value;
use std::fmt::Write;

fn constraints(s: &Value) -> String {
    let mut out = Vec::new();
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = e
            .iter()
            .map(|x| format!("`{}`", x.as_str().unwrap_or("")))
            .collect();
        out.push(format!("one of {}", v.join(", ")));
    }
    if let Some(d) = s.get("default") {
        out.push(format!(
            "default `{}`",
            serde_json::to_string(d).unwrap_or_default()
        ));
    }
    for (k, label) in [
        ("minimum", "min"),
        ("maximum", "max"),
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
    ] {
        if let Some(n) = s.get(k).and_then(Value::as_f64) {
            out.push(format!("{label} {n}"));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        out.push(format!("pattern `{}`", p.replace('|', "\\|")));
    }
    if let Some(f) = s.get("format").and_then(Value::as_str) {
        out.push(format!("format {f}"));
    }
    for r in s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(m) = r.get("message").and_then(Value::as_str) {
            out.push(format!("rule: {m}"));
        }
    }
    out.join("; ")
}

fn type_of(s: &Value) -> String {
    match s.get("type").and_then(Value::as_str) {
        Some("array") => format!("[]{}", s.get("items").map(type_of).unwrap_or_default()),
        Some(t) => t.to_string(),
        None if s.get("x-kubernetes-preserve-unknown-fields").is_some() => "object".into(),
        None => "any".into(),
    }
}

fn rows(path: &str, s: &Value, required: bool, out: &mut String) {
    let desc = s
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .replace('\n', " ")
        .replace('|', "\\|");
    let _ = writeln!(
        out,
        "| `{path}` | {} | {} | {} | {desc} |",
        type_of(s),
        if required { "yes" } else { "" },
        constraints(s)
    );
    let item = if s.get("type").and_then(Value::as_str) == Some("array") {
        s.get("items")
    } else {
        Some(s)
    };
    let Some(obj) = item else { return };
    let req: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let suffix = if item.map(|i| !std::ptr::eq(i, s)).unwrap_or(false) {
        "[]"
    } else {
        ""
    };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        // Conditions have the standard Kubernetes shape: documented once, not per field.
        if path.ends_with("conditions") {
            return;
        }
        for (k, v) in props {
            rows(
                &format!("{path}{suffix}.{k}"),
                v,
                req.contains(&k.as_str()),
                out,
            );
        }
    }
}

/// The whole reference as Markdown.
pub fn markdown() -> String {
    let mut out = String::from(
        "# CRD reference\n\nGenerated from the Rust types by `mcpgov crds --reference`; do not edit.\n\
         Group `mcpgov.io`, version `v1alpha1`, all namespaced, category `mcpgov`.\n\
         `status.conditions` have the standard Kubernetes shape (type, status, reason, message,\n\
         lastTransitionTime, observedGeneration) and are a list map keyed by `type`.\n",
    );
    for crd in super::all_crds() {
        let names = &crd.spec.names;
        let v = &crd.spec.versions[0];
        let _ = writeln!(out, "\n## {}\n", names.kind);
        let shorts = names.short_names.clone().unwrap_or_default().join(", ");
        let _ = writeln!(out, "Plural `{}`, short names {shorts}.\n", names.plural);
        let schema = serde_json::to_value(&v.schema).unwrap_or_default();
        let root = &schema["openAPIV3Schema"];
        if let Some(d) = root.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "{d}\n");
        }
        if let Some(cols) = &v.additional_printer_columns {
            let c: Vec<String> = cols
                .iter()
                .map(|c| format!("{} (`{}`)", c.name, c.json_path))
                .collect();
            let _ = writeln!(out, "Columns: {}.\n", c.join(", "));
        }
        out.push_str(
            "| field | type | required | constraints | description |\n|---|---|---|---|---|\n",
        );
        for part in ["spec", "status"] {
            if let Some(s) = root["properties"].get(part) {
                let required = root["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|x| x == part));
                rows(part, s, required, &mut out);
            }
        }
    }
    out
}
