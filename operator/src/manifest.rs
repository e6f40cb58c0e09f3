//! Reading governance manifests from YAML and JSON files and directories (multi-document
//! streams and `kind: List`), as `kubectl apply -f` would, into typed objects. The CLI
//! is a CI gate over a pull request's files, so this fails closed: documents of other
//! API groups are skipped (and counted), but anything meant as an mcpgov object that
//! the API server would refuse is an error naming the file and the object. Errors never
//! echo text of a document that did not parse, and escape what they quote.

mod files;
mod json;
mod lines;

use crate::crd::{self, Agent, Grant, MCPServer, Policy, common::GROUP};
use crate::text;
use crate::validate;
use mcpgov_engine as engine;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

pub use files::{
    DEFAULT_MAX_FILE_BYTES, ReadLimits, STDIN_ARG, STDIN_NAME, SkippedFile, describe_size,
    is_stdin, parse_size,
};

/// The kinds of `mcpgov.io`.
pub const KINDS: [&str; 4] = ["MCPServer", "Agent", "Policy", "Grant"];

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
    /// The line its document starts on in `file`, when the loader could tell.
    pub line: Option<usize>,
    pub resource: Resource,
}

/// What a load read, and what it left out.
#[derive(Clone, Debug, Default)]
pub struct Load {
    pub objects: Vec<Loaded>,
    /// Documents of other API groups (Deployments, ConfigMaps, kyverno's Policy…).
    pub skipped_documents: usize,
    /// The skipped documents whose kind is one of ours: most likely an export that
    /// picked up another product's `policies` or `agents` (bare plurals), not ours.
    pub lookalikes: Vec<Lookalike>,
    /// Directory entries a walk did not read (links, FIFOs, devices).
    pub skipped_files: Vec<SkippedFile>,
}

/// An object of one of our kinds (MCPServer, Agent, Policy, Grant) in another API group,
/// e.g. `kyverno.io/v1 Policy` or `kagent.dev/v1alpha2 Agent`. Skipped, but said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookalike {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// As written (escaped and shortened: it is input).
    pub api_version: String,
    /// `Kind ns/name`, escaped and shortened.
    pub object: String,
}

impl Lookalike {
    /// One line for a terminal or a report (`file:line: …`).
    pub fn message(&self) -> String {
        let at = match self.line {
            Some(l) => format!("{}:{l}", text::path(&self.file)),
            None => text::path(&self.file),
        };
        format!(
            "{at}: {} is apiVersion {}, not {}: not an mcpgov object, skipped",
            self.object,
            self.api_version,
            crd::common::API_VERSION
        )
    }
}

/// Bad input: the file, the object (when one was identified) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub file: PathBuf,
    pub object: Option<String>,
    pub message: String,
}

/// Input text may reach a terminal through any part, so all three are escaped here.
impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = text::path(&self.file);
        let message = text::escape(&self.message);
        match &self.object {
            Some(o) => write!(f, "{file}: {}: {message}", text::escape(o)),
            None => write!(f, "{file}: {message}"),
        }
    }
}

impl std::error::Error for InputError {}

/// Every problem a load found, so one CI run shows them all (the first 100).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputErrors(pub Vec<InputError>);

const SHOWN_ERRORS: usize = 100;

/// One error per line; lines after the first carry the CLI's `error: ` prefix too.
impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().take(SHOWN_ERRORS).enumerate() {
            if i > 0 {
                f.write_str("\nerror: ")?;
            }
            write!(f, "{e}")?;
        }
        if self.0.len() > SHOWN_ERRORS {
            write!(f, "\nerror: … and {} more", self.0.len() - SHOWN_ERRORS)?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

impl From<InputError> for InputErrors {
    fn from(e: InputError) -> Self {
        InputErrors(vec![e])
    }
}

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

/// Read every mcpgov object under `paths` (files, or directories walked recursively;
/// `-` is standard input, at most once), each file within `limits`.
pub fn load_paths(paths: &[PathBuf], limits: ReadLimits) -> Result<Load, InputErrors> {
    let mut load = Load::default();
    let mut errors = Vec::new();
    let mut stdin_read = false;
    for p in paths {
        if is_stdin(p) {
            let file = PathBuf::from(STDIN_NAME);
            if std::mem::replace(&mut stdin_read, true) {
                errors.push(InputError {
                    file,
                    object: None,
                    message: "standard input (`-`) is named more than once".into(),
                });
                continue;
            }
            match files::read_stdin(limits).and_then(|bytes| utf8(bytes, &file)) {
                Ok(text) => load_into(&text, &file, &mut load, &mut errors),
                Err(e) => errors.push(e),
            }
            continue;
        }
        for src in files::sources(p, &mut load.skipped_files)? {
            match files::read(&src, limits).and_then(|bytes| utf8(bytes, &src.path)) {
                Ok(text) => load_into(&text, &src.path, &mut load, &mut errors),
                Err(e) => errors.push(e),
            }
        }
    }
    if errors.is_empty() {
        Ok(load)
    } else {
        Err(InputErrors(errors))
    }
}

fn utf8(bytes: Vec<u8>, file: &Path) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| InputError {
        file: file.to_path_buf(),
        object: None,
        message: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// Parse one YAML or JSON stream; `file` names it in errors.
pub fn load_str(text: &str, file: &Path) -> Result<Load, InputErrors> {
    let mut load = Load::default();
    let mut errors = Vec::new();
    load_into(text, file, &mut load, &mut errors);
    if errors.is_empty() {
        Ok(load)
    } else {
        Err(InputErrors(errors))
    }
}

fn load_into(text: &str, file: &Path, load: &mut Load, errors: &mut Vec<InputError>) {
    let file_error = |message: String| InputError {
        file: file.to_path_buf(),
        object: None,
        message,
    };
    let docs = match json_documents(text) {
        Ok(Some(docs)) => docs,
        Err(message) => return errors.push(file_error(message)),
        Ok(None) => {
            match serde_saphyr::from_multiple_with_options(text, yaml_options(text.len())) {
                Ok(docs) => docs,
                Err(e) => return errors.push(file_error(yaml_error(&e))),
            }
        }
    };
    let lines = lines::assign(text, &docs);
    for (i, (doc, line)) in docs.into_iter().zip(lines).enumerate() {
        collect(doc, file, i + 1, line, load, errors);
    }
}

/// The parser's message and where, never the source text: the file may not be a
/// manifest at all (a secret behind a link, a binary), and a snippet would print it.
fn yaml_error(e: &serde_saphyr::Error) -> String {
    let e = e.without_snippet();
    let message = match e {
        // Our words, not the library's advice to change its options.
        serde_saphyr::Error::DuplicateMappingKey { key, location } => format!(
            "duplicate key {} at line {}, column {}",
            key.as_deref()
                .map_or("(not a string)".into(), |k| text::quote(k, 60)),
            location.line(),
            location.column()
        ),
        serde_saphyr::Error::Budget {
            breach: serde_saphyr::budget::BudgetBreach::Depth { .. },
            location,
        } => format!(
            "nested deeper than {YAML_MAX_DEPTH} levels at line {}, column {}",
            location.line(),
            location.column()
        ),
        other => text::truncate(&other.to_string(), 200).into_owned(),
    };
    match e.location() {
        // The parser's messages mostly say where already.
        Some(l) if !message.contains(&format!("line {}", l.line())) => format!(
            "not valid YAML at line {}, column {}: {message}",
            l.line(),
            l.column()
        ),
        _ => format!("not valid YAML: {message}"),
    }
}

/// Nesting the YAML parser accepts (its default): deserialising recurses per level, so
/// this keeps a hostile document off the end of the stack. JSON has serde_json's 128.
const YAML_MAX_DEPTH: usize = 64;

/// The parser's budget grows with the input: its defaults (1,024 documents, 250,000
/// nodes, 1,000,000 events) refuse a rendered estate of a few MB that kubectl applies
/// without complaint, while the limits on aliases and anchors (expansion bombs) and on
/// nesting (64 levels; the stack) stay. Errors come without source snippets.
fn yaml_options(bytes: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = YAML_MAX_DEPTH;
    budget.max_documents = budget.max_documents.max(bytes / 16);
    budget.max_nodes = budget.max_nodes.max(bytes / 2);
    budget.max_events = budget.max_events.max(bytes);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.with_snippet = false;
    options
}

/// A stream whose every document is JSON (what generators and `kubectl -o json`
/// write; JSON is YAML) is read by the JSON parser, many times faster. Anything else,
/// or any document that is not plain JSON, goes to the YAML parser whole (`Ok(None)`).
/// Valid JSON with a duplicate key is an error.
fn json_documents(text: &str) -> Result<Option<Vec<Value>>, String> {
    // Documents are separated by a line that is exactly `---`.
    let text = text.strip_prefix("---\n").unwrap_or(text);
    let mut docs = Vec::new();
    for doc in text.split("\n---\n").map(str::trim) {
        if doc.is_empty() {
            continue;
        }
        if !doc.starts_with('{') {
            return Ok(None);
        }
        match json::parse(doc) {
            Ok(v) => docs.push(v),
            Err(json::JsonError::NotJson) => return Ok(None),
            Err(json::JsonError::Refused(m)) => {
                return Err(format!("document {}: {m}", docs.len() + 1));
            }
        }
    }
    Ok(Some(docs))
}

/// `Kind ns/name` for messages, from whatever the document holds (escaped, shortened).
fn describe(doc: &Value, index: usize) -> String {
    let field = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(|s| text::escape(&text::truncate(s, 80)).into_owned())
    };
    let kind = field(doc.get("kind")).unwrap_or_else(|| "object".into());
    let meta = doc.get("metadata");
    let name = field(meta.and_then(|m| m.get("name")));
    let ns = field(meta.and_then(|m| m.get("namespace")));
    match (ns, name) {
        (Some(ns), Some(n)) => format!("{kind} {ns}/{n}"),
        (None, Some(n)) => format!("{kind} {n}"),
        _ => format!("{kind} (document {index})"),
    }
}

/// Whether a document is ours to validate (`Ok(true)`), another API's to skip
/// (`Ok(false)`), or meant as ours in a form the API server refuses (`Err`): a missing
/// or core apiVersion on one of our kinds, our group mis-cased or without a version,
/// an unserved version, an unknown kind in our group.
fn classify(api_version: Option<&Value>, kind: &str) -> Result<bool, String> {
    let ours_kind = KINDS.iter().any(|k| k.eq_ignore_ascii_case(kind));
    let want = crd::common::API_VERSION;
    let av = match api_version {
        Some(Value::String(s)) => s.as_str(),
        None if ours_kind => {
            return Err(format!("apiVersion is missing; {kind} objects need {want}"));
        }
        Some(_) if ours_kind => return Err(format!("apiVersion must be the string {want}")),
        _ => return Ok(false),
    };
    let Some((group, version)) = av.split_once('/') else {
        if av.trim().eq_ignore_ascii_case(GROUP) {
            return Err(format!(
                "apiVersion {} names no version; use {want}",
                text::quote(av, 60)
            ));
        }
        if ours_kind {
            return Err(format!(
                "{kind} is not a kind of apiVersion {}; use {want}",
                text::quote(av, 60)
            ));
        }
        return Ok(false);
    };
    if group != GROUP {
        if group.trim().eq_ignore_ascii_case(GROUP) {
            return Err(format!(
                "API group {} is not {GROUP} (groups are case-sensitive); use {want}",
                text::quote(group, 60)
            ));
        }
        return Ok(false);
    }
    if version != crd::common::VERSION {
        return Err(format!(
            "apiVersion {} is not served; use {want}",
            text::quote(av, 60)
        ));
    }
    if !KINDS.contains(&kind) {
        return Err(format!(
            "unknown kind {} in {GROUP} (expected MCPServer, Agent, Policy or Grant)",
            text::quote(kind, 60)
        ));
    }
    Ok(true)
}

/// One document: a List's items each in turn, an object of ours loaded, another API's
/// object counted as skipped; every problem goes to `errors`.
fn collect(
    doc: Value,
    file: &Path,
    index: usize,
    line: Option<usize>,
    load: &mut Load,
    errors: &mut Vec<InputError>,
) {
    let is_list = {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        let av = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        kind == "List" || kind.ends_with("List") && av == "v1"
    };
    if !is_list {
        match object(doc, file, index, line) {
            Ok(Doc::Ours(l)) => load.objects.push(l),
            Ok(Doc::Other(lookalike)) => {
                load.skipped_documents += 1;
                load.lookalikes.extend(lookalike);
            }
            Ok(Doc::Empty) => {}
            Err(e) => errors.push(e),
        }
        return;
    }
    let described = describe(&doc, index);
    let Value::Object(mut obj) = doc else {
        unreachable!("a List has a kind, so it is a mapping")
    };
    match obj.remove("items") {
        Some(Value::Array(items)) => {
            for item in items {
                collect(item, file, index, line, load, errors);
            }
        }
        // `items: null` or none: an empty List.
        None | Some(Value::Null) => {}
        Some(_) => errors.push(InputError {
            file: file.to_path_buf(),
            object: Some(described),
            message: "items must be a sequence".into(),
        }),
    }
}

enum Doc {
    Ours(Loaded),
    /// Another API's object: not ours to judge (a lookalike when its kind is ours).
    Other(Option<Lookalike>),
    /// An empty document (`---` twice, a comment only).
    Empty,
}

/// One document that is not a List.
fn object(doc: Value, file: &Path, index: usize, line: Option<usize>) -> Result<Doc, InputError> {
    if doc.is_null() {
        return Ok(Doc::Empty);
    }
    let err = |message: String| InputError {
        file: file.to_path_buf(),
        object: Some(describe(&doc, index)),
        message,
    };
    let Some(obj) = doc.as_object() else {
        return Err(err("a manifest document must be a mapping".into()));
    };
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if !classify(obj.get("apiVersion"), kind).map_err(err)? {
        let lookalike = KINDS.iter().any(|k| k.eq_ignore_ascii_case(kind)).then(|| {
            let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            Lookalike {
                file: file.to_path_buf(),
                line,
                api_version: text::escape(&text::truncate(av, 80)).into_owned(),
                object: describe(&doc, index),
            }
        });
        return Ok(Doc::Other(lookalike));
    }
    let problems = validate::validate(kind, &doc).expect("classify admits our kinds only");
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
        _ => unreachable!("classify admits our kinds only"),
    };
    Ok(Doc::Ours(Loaded {
        file: file.to_path_buf(),
        line,
        resource,
    }))
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
    fn objects_know_the_line_their_document_starts_on() {
        let agent = |n: &str| {
            format!(
                "apiVersion: mcpgov.io/v1alpha1\nkind: Agent\nmetadata: {{name: {n}, namespace: t}}\nspec: {{}}\n"
            )
        };
        let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: mcpgov.io/v1alpha1\n  kind: Agent\n  metadata: {name: c, namespace: t}\n  spec: {}\n";
        let text = format!(
            "# header\n{}---\n---\n# only a comment\n---\n{}---\n{list}",
            agent("a"),
            agent("b")
        );
        let lines: Vec<_> = load_str(&text, Path::new("x.yaml"))
            .unwrap()
            .objects
            .iter()
            .map(|l| l.line)
            .collect();
        assert_eq!(lines, [Some(2), Some(10), Some(15)]);
        let json = format!(
            "---\n{}\n---\n{}\n",
            agents(1, true),
            agents(1, true).replace("a0", "a1")
        );
        let lines: Vec<_> = load_str(&json, Path::new("x.json"))
            .unwrap()
            .objects
            .iter()
            .map(|l| l.line)
            .collect();
        assert_eq!(lines, [Some(2), Some(4)]);
    }

    #[test]
    fn streams_beyond_the_yaml_parsers_default_budget_load() {
        // 1,024 documents is serde-saphyr's default cap; a rendered estate has more.
        for json in [true, false] {
            let text = agents(3000, json);
            let loaded = load_str(&text, Path::new("estate.yaml")).unwrap();
            assert_eq!(loaded.objects.len(), 3000, "json={json}");
        }
    }

    #[test]
    fn json_and_yaml_streams_read_the_same() {
        let json = load_str(&format!("---\n{}\n", agents(3, true)), Path::new("a.json"))
            .unwrap()
            .objects;
        let yaml = load_str(&agents(3, false), Path::new("a.yaml"))
            .unwrap()
            .objects;
        let keys = |l: &[Loaded]| -> Vec<String> {
            l.iter()
                .map(|o| format!("{:?}", o.resource.to_engine("default")))
                .collect()
        };
        assert_eq!(keys(&json), keys(&yaml));
        assert!(json_documents(&agents(3, true)).unwrap().is_some());
        // One YAML document sends the whole stream to the YAML parser.
        let mixed = format!("{}\n---\n{}", agents(1, true), agents(1, false));
        assert!(json_documents(&mixed).unwrap().is_none());
        assert_eq!(
            load_str(&mixed, Path::new("m.yaml")).unwrap().objects.len(),
            2
        );
    }
}
