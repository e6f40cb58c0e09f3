//! A tool's contract digest: what a gateway recomputes from a live `tools/list` entry to
//! learn whether the tool is still the one the bundle decided on.

use crate::canonical::digest_of;
use serde_json::{Map, Value};

/// The annotation fields the contract covers; others are the server's own business.
const ANNOTATIONS: [&str; 5] = [
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// `sha256:` over the canonical JSON of `{name, title, description, inputSchema,
/// outputSchema, annotations}` of one tool as a server listed it: null or absent fields
/// left out, `annotations` only with a known, non-null field.
pub fn tool_contract_digest(raw_tool: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(raw_tool).map_err(|e| e.to_string())?;
    let Value::Object(tool) = v else {
        return Err("a tool is not an object".into());
    };
    if !tool.get("name").is_some_and(Value::is_string) {
        return Err("a tool has no name".into());
    }
    let mut c = Map::new();
    for k in [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
    ] {
        if let Some(x) = tool.get(k).filter(|x| !x.is_null()) {
            c.insert(k.into(), x.clone());
        }
    }
    let annotations: Map<String, Value> = tool
        .get("annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, x)| ANNOTATIONS.contains(&k.as_str()) && !x.is_null())
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect()
        })
        .unwrap_or_default();
    if !annotations.is_empty() {
        c.insert("annotations".into(), Value::Object(annotations));
    }
    Ok(digest_of(&Value::Object(c)))
}
