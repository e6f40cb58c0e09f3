//! Tool keys and selectors: `server::tool`, `namespace/server::tool`, or a bare tool
//! name, each part optionally a `*` glob.

use crate::glob::{has_glob, name_matches};
use serde::Serialize;
use std::fmt;
use std::sync::Arc;

/// A concrete tool: the server's namespace and name, and the tool's name on it.
/// Shared: a clone is a reference count, since every agent's evaluation and every
/// cache holds the same ids; its text form is built once. Fields read through
/// `Deref` (`id.name`).
#[derive(Clone)]
pub struct ToolId(Arc<Interned>);

struct Interned {
    parts: ToolParts,
    /// `namespace/server::name`.
    key: String,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ToolParts {
    pub namespace: String,
    pub server: String,
    pub name: String,
}

impl std::ops::Deref for ToolId {
    type Target = ToolParts;
    fn deref(&self) -> &ToolParts {
        &self.0.parts
    }
}

impl PartialEq for ToolId {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.parts == other.0.parts
    }
}

impl Eq for ToolId {}

impl PartialOrd for ToolId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.parts.cmp(&other.0.parts)
    }
}

impl std::hash::Hash for ToolId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}

impl fmt::Debug for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.parts.fmt(f)
    }
}

impl Serialize for ToolId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.parts.serialize(s)
    }
}

impl ToolId {
    pub fn new(namespace: &str, server: &str, name: &str) -> Self {
        ToolId(Arc::new(Interned {
            key: format!("{namespace}/{server}::{name}"),
            parts: ToolParts {
                namespace: namespace.to_string(),
                server: server.to_string(),
                name: name.to_string(),
            },
        }))
    }

    /// `namespace/server::name`.
    pub fn as_str(&self) -> &str {
        &self.0.key
    }

    /// `namespace/server`, the server's object key as text.
    pub fn server_key(&self) -> &str {
        &self.0.key[..self.namespace.len() + 1 + self.server.len()]
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.key)
    }
}

/// A parsed tool selector. `namespace` is `None` when the key did not name one (the
/// reader's namespace applies); `server` is `None` for a bare tool name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    pub raw: String,
    pub namespace: Option<String>,
    pub server: Option<String>,
    pub tool: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

fn check_part(part: &str, what: &str, raw: &str) -> Result<(), SelectorError> {
    if part.is_empty() {
        return Err(SelectorError(format!("tool key {raw:?}: empty {what}")));
    }
    if part.chars().any(char::is_whitespace) {
        return Err(SelectorError(format!(
            "tool key {raw:?}: whitespace in {what}"
        )));
    }
    if part.contains("**") {
        return Err(SelectorError(format!(
            "tool key {raw:?}: `**` is not allowed in a {what} (use `*`)"
        )));
    }
    Ok(())
}

impl Selector {
    pub fn parse(raw: &str) -> Result<Selector, SelectorError> {
        let Some((left, tool)) = raw.split_once("::") else {
            check_part(raw, "tool name", raw)?;
            return Ok(Selector {
                raw: raw.to_string(),
                namespace: None,
                server: None,
                tool: raw.to_string(),
            });
        };
        let (namespace, server) = match left.split_once('/') {
            Some((ns, srv)) => {
                check_part(ns, "namespace", raw)?;
                (Some(ns.to_string()), srv)
            }
            None => (None, left),
        };
        check_part(server, "server name", raw)?;
        check_part(tool, "tool name", raw)?;
        if server.contains('/') {
            return Err(SelectorError(format!("tool key {raw:?}: too many `/`")));
        }
        Ok(Selector {
            raw: raw.to_string(),
            namespace,
            server: Some(server.to_string()),
            tool: tool.to_string(),
        })
    }

    /// True when the selector names exactly one tool (no glob, server given).
    pub fn is_literal(&self) -> bool {
        self.server.is_some()
            && !has_glob(&self.tool)
            && !self.server.as_deref().is_some_and(has_glob)
            && !self.namespace.as_deref().is_some_and(has_glob)
    }

    pub fn is_bare(&self) -> bool {
        self.server.is_none()
    }

    /// The namespace the key names, reading it from `home` when it names none.
    pub fn namespace_or<'a>(&'a self, home: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(home)
    }

    /// Whether the namespace part names a namespace other than `home` literally.
    pub fn names_other_namespace(&self, home: &str) -> bool {
        self.namespace
            .as_deref()
            .is_some_and(|ns| !has_glob(ns) && ns != home)
    }

    /// Whether this selector, read from namespace `home`, matches `id`. A bare name
    /// matches the tool name on any server: callers decide which servers are in scope.
    pub fn matches(&self, id: &ToolId, home: &str) -> bool {
        if !name_matches(&self.tool, &id.name) {
            return false;
        }
        let Some(server) = &self.server else {
            return true;
        };
        name_matches(server, &id.server) && name_matches(self.namespace_or(home), &id.namespace)
    }

    /// The one tool a literal selector names.
    pub fn literal_id(&self, home: &str) -> Option<ToolId> {
        if !self.is_literal() {
            return None;
        }
        Some(ToolId::new(
            self.namespace_or(home),
            self.server.as_deref()?,
            &self.tool,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_shapes() {
        let s = Selector::parse("fs::read_file").unwrap();
        assert_eq!(
            (s.namespace, s.server.as_deref(), s.tool.as_str()),
            (None, Some("fs"), "read_file")
        );
        let s = Selector::parse("team-b/git::git_*").unwrap();
        assert_eq!(s.namespace.as_deref(), Some("team-b"));
        assert!(!s.is_literal());
        let s = Selector::parse("read_file").unwrap();
        assert!(s.is_bare() && !s.is_literal());
    }

    #[test]
    fn rejects_malformed_keys() {
        for bad in [
            "",
            "::x",
            "fs::",
            "/fs::x",
            "a/b/c::x",
            "fs::read file",
            "fs::**",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn matching_reads_the_home_namespace() {
        let id = ToolId::new("team-a", "fs", "read_file");
        let s = Selector::parse("fs::read_*").unwrap();
        assert!(s.matches(&id, "team-a"));
        assert!(!s.matches(&id, "team-b"));
        assert!(Selector::parse("*/fs::*").unwrap().matches(&id, "x"));
        assert!(Selector::parse("read_file").unwrap().matches(&id, "x"));
        assert_eq!(
            Selector::parse("fs::read_file")
                .unwrap()
                .literal_id("team-a"),
            Some(id)
        );
    }
}
