//! Reading governance manifests from YAML files and directories (multi-document streams
//! and `kind: List`), as `kubectl apply -f` would, into typed objects. Objects of other
//! API groups are skipped; anything unreadable or invalid is an error naming the file
//! and the object.

use crate::crd::{self, Agent, Grant, MCPServer, Policy, common::GROUP};
use crate::validate;
use mcpgov_engine as engine;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// One custom resource read from a file.
#[derive(Clone, Debug)]
pub enum Resource {
    MCPServer(Box<MCPServer>),
    Agent(Box<Agent>),
    Policy(Box<Policy>),
    Grant(Box<Grant>),
}

#[derive(Clone, Debug)]
pub struct Loaded {
    pub file: PathBuf,
    pub resource: Resource,
}

/// Bad input: the file, the object (when one was identified) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub file: PathBuf,
    pub object: Option<String>,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Some(o) => write!(f, "{}: {o}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for InputError {}

impl Resource {
    pub fn to_engine(&self, default_ns: &str) -> engine::Object {
        match self {
            Resource::MCPServer(s) => engine::Object::Server(s.to_engine(default_ns)),
            Resource::Agent(a) => engine::Object::Agent(a.to_engine(default_ns)),
            Resource::Policy(p) => engine::Object::Policy(p.to_engine(default_ns)),
            Resource::Grant(g) => engine::Object::Grant(g.to_engine(default_ns)),
        }
    }
}

fn yaml_files(path: &Path) -> Result<Vec<PathBuf>, InputError> {
    let err = |message: String| InputError {
        file: path.to_path_buf(),
        object: None,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let entries = std::fs::read_dir(path).map_err(|e| err(format!("cannot list: {e}")))?;
    for entry in entries {
        let p = entry.map_err(|e| err(format!("cannot list: {e}")))?.path();
        if p.is_dir() {
            out.extend(yaml_files(&p)?);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Read every mcpgov object under `paths` (files or directories, recursively).
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Loaded>, InputError> {
    let mut out = Vec::new();
    for p in paths {
        for file in yaml_files(p)? {
            let text = std::fs::read_to_string(&file).map_err(|e| InputError {
                file: file.clone(),
                object: None,
                message: format!("cannot read: {e}"),
            })?;
            out.extend(load_str(&text, &file)?);
        }
    }
    Ok(out)
}

/// Parse one YAML stream; `file` names it in errors.
pub fn load_str(text: &str, file: &Path) -> Result<Vec<Loaded>, InputError> {
    let docs = match json_documents(text) {
        Some(docs) => docs,
        None => serde_saphyr::from_multiple_with_options(text, yaml_options(text.len())).map_err(
            |e| InputError {
                file: file.to_path_buf(),
                object: None,
                message: format!("not valid YAML: {e}"),
            },
        )?,
    };
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        collect(doc, file, i + 1, &mut out)?;
    }
    Ok(out)
}

/// The parser's budget grows with the input: its defaults (1,024 documents, 250,000
/// nodes, 1,000,000 events) refuse a rendered estate of a few MB that kubectl applies
/// without complaint, while the limits on aliases and anchors (expansion bombs) stay.
fn yaml_options(bytes: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = budget.max_documents.max(bytes / 16);
    budget.max_nodes = budget.max_nodes.max(bytes / 2);
    budget.max_events = budget.max_events.max(bytes);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// A stream whose every document is JSON (what generators and `kubectl -o json`
/// write; JSON is YAML) is read by the JSON parser, many times faster. Anything else,
/// or any document that is not plain JSON, goes to the YAML parser whole.
fn json_documents(text: &str) -> Option<Vec<Value>> {
    // Documents are separated by a line that is exactly `---`.
    let text = text.strip_prefix("---\n").unwrap_or(text);
    let mut docs = Vec::new();
    for doc in text.split("\n---\n").map(str::trim) {
        if doc.is_empty() {
            continue;
        }
        if !doc.starts_with('{') {
            return None;
        }
        docs.push(serde_json::from_str(doc).ok()?);
    }
    Some(docs)
}

fn describe(doc: &Value, index: usize) -> String {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("object");
    let meta = doc.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    match (ns, name) {
        (Some(ns), Some(n)) => format!("{kind} {ns}/{n}"),
        (None, Some(n)) => format!("{kind} {n}"),
        _ => format!("{kind} (document {index})"),
    }
}

fn collect(doc: Value, file: &Path, index: usize, out: &mut Vec<Loaded>) -> Result<(), InputError> {
    if doc.is_null() {
        return Ok(());
    }
    let err = |message: String| InputError {
        file: file.to_path_buf(),
        object: Some(describe(&doc, index)),
        message,
    };
    let Some(obj) = doc.as_object() else {
        return Err(err("a manifest document must be a mapping".into()));
    };
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "List" || kind.ends_with("List") && api_version == "v1" {
        let items = obj.get("items").and_then(Value::as_array).cloned();
        for item in items.unwrap_or_default() {
            collect(item, file, index, out)?;
        }
        return Ok(());
    }
    let Some((group, version)) = api_version.split_once('/') else {
        return Ok(());
    };
    if group != GROUP {
        return Ok(());
    }
    if version != crd::common::VERSION {
        return Err(err(format!(
            "apiVersion {api_version} is not served; use {}",
            crd::common::API_VERSION
        )));
    }
    let problems = validate::validate(kind, &doc).ok_or_else(|| {
        err(format!(
            "unknown kind {kind:?} in {GROUP} (expected MCPServer, Agent, Policy or Grant)"
        ))
    })?;
    if !problems.is_empty() {
        return Err(err(problems.join("; ")));
    }
    let typed = |e: serde_json::Error| err(e.to_string());
    let resource = match kind {
        "MCPServer" => Resource::MCPServer(Box::new(
            serde_json::from_value(doc.clone()).map_err(typed)?,
        )),
        "Agent" => Resource::Agent(Box::new(
            serde_json::from_value(doc.clone()).map_err(typed)?,
        )),
        "Policy" => Resource::Policy(Box::new(
            serde_json::from_value(doc.clone()).map_err(typed)?,
        )),
        "Grant" => Resource::Grant(Box::new(
            serde_json::from_value(doc.clone()).map_err(typed)?,
        )),
        _ => unreachable!("validate knows only the four kinds"),
    };
    out.push(Loaded {
        file: file.to_path_buf(),
        resource,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agents(n: usize, json: bool) -> String {
        (0..n)
            .map(|i| {
                if json {
                    format!(
                        r#"{{"apiVersion":"mcpgov.io/v1alpha1","kind":"Agent","metadata":{{"name":"a{i}","namespace":"t"}},"spec":{{"profile":"Strict"}}}}"#
                    )
                } else {
                    format!(
                        "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata:\n  name: a{i}\n  namespace: t\nspec:\n  profile: Strict"
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    #[test]
    fn streams_beyond_the_yaml_parsers_default_budget_load() {
        // 1,024 documents is serde-saphyr's default cap; a rendered estate has more.
        for json in [true, false] {
            let text = agents(3000, json);
            let loaded = load_str(&text, Path::new("estate.yaml")).unwrap();
            assert_eq!(loaded.len(), 3000, "json={json}");
        }
    }

    #[test]
    fn json_and_yaml_streams_read_the_same() {
        let json = load_str(&format!("---\n{}\n", agents(3, true)), Path::new("a.json")).unwrap();
        let yaml = load_str(&agents(3, false), Path::new("a.yaml")).unwrap();
        let keys = |l: &[Loaded]| -> Vec<String> {
            l.iter()
                .map(|o| format!("{:?}", o.resource.to_engine("default")))
                .collect()
        };
        assert_eq!(keys(&json), keys(&yaml));
        assert!(json_documents(&agents(3, true)).is_some());
        // One YAML document sends the whole stream to the YAML parser.
        let mixed = format!("{}\n---\n{}", agents(1, true), agents(1, false));
        assert!(json_documents(&mixed).is_none());
        assert_eq!(load_str(&mixed, Path::new("m.yaml")).unwrap().len(), 2);
    }
}
