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
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| InputError {
        file: file.to_path_buf(),
        object: None,
        message: format!("not valid YAML: {e}"),
    })?;
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        collect(doc, file, i + 1, &mut out)?;
    }
    Ok(out)
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
