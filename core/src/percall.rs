//! Per-call enforcement: which resource one `tools/call` touches, resolved from its
//! arguments, and whether the call may go through. The gateway and `mcpgov query
//! check-call` both decide with [`CompiledGuard::check`], from the `guard` a bundle
//! carries for a tool (see `docs/semantics.md`, "Per-call enforcement").
//!
//! An argument value is hostile. It is resolved to canonical URIs with the engine's own
//! rules ([`crate::uri::canonicalize`], [`crate::glob::UriPattern`]) and refused outright
//! (`UnresolvedArgument`) whenever a server could read it as something else than we do:
//! backslashes, encoded separators or percent signs (double encoding), escapes of
//! anything but unreserved ASCII, glob stars, control and invisible characters, text that
//! Unicode compatibility normalisation would change, relative paths.

use crate::bundle::{BundleGuard, unix_seconds};
use crate::glob::UriPattern;
use crate::uri::canonicalize;
use serde_json::Value;
use std::fmt;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// Longest argument value resolved; a longer one blocks (no path is this long).
pub const MAX_ARGUMENT_BYTES: usize = 4096;
/// Longest JSON pointer or template a binding may have.
pub const MAX_BINDING_BYTES: usize = 512;

/// Where the argument's value goes in the template, and how the value reads.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// `{x}` alone: the argument is a URI itself (percent-encoding meaningful).
    Uri,
    /// Text around the placeholder: the argument is a path as the server's file system
    /// (or API) reads it, literally; `after_authority` when the placeholder directly
    /// follows `scheme://` (the value must then be absolute).
    Path { after_authority: bool },
}

/// A parsed `dataAccess[].argument`: an RFC 6901 pointer into the call's `arguments`,
/// and a template with one `{label}` placeholder the value replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentBinding {
    pointer: String,
    template: String,
    prefix: String,
    suffix: String,
    shape: Shape,
}

/// Escape one top-level argument name as an RFC 6901 reference token.
pub fn pointer_of_name(name: &str) -> String {
    format!("/{}", name.replace('~', "~0").replace('/', "~1"))
}

impl ArgumentBinding {
    /// Check a binding as a manifest or a bundle writes it.
    pub fn parse(pointer: &str, template: &str) -> Result<Self, String> {
        if pointer.len() > MAX_BINDING_BYTES || template.len() > MAX_BINDING_BYTES {
            return Err(format!(
                "argument pointer and template are limited to {MAX_BINDING_BYTES} bytes"
            ));
        }
        if !pointer.starts_with('/') || pointer.len() < 2 {
            return Err(format!(
                "argument pointer {pointer:?} is not a JSON pointer to a member (`/name`)"
            ));
        }
        // `~` escapes only `~0` and `~1` (RFC 6901 §3).
        let mut chars = pointer.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err(format!("argument pointer {pointer:?} has a bad `~` escape"));
            }
        }
        let (Some(open), Some(close)) = (template.find('{'), template.find('}')) else {
            return Err(format!(
                "template {template:?} has no `{{label}}` placeholder"
            ));
        };
        if close < open || template.matches('{').count() != 1 || template.matches('}').count() != 1
        {
            return Err(format!(
                "template {template:?} must have exactly one `{{label}}` placeholder"
            ));
        }
        let label = &template[open + 1..close];
        if label.is_empty()
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(format!(
                "placeholder {{{label}}} must be a label of letters, digits, `_`, `-`, `.`"
            ));
        }
        let (prefix, suffix) = (&template[..open], &template[close + 1..]);
        let shape = if prefix.is_empty() && suffix.is_empty() {
            Shape::Uri
        } else {
            // The placeholder must sit in the path: the template fixes scheme and
            // authority, so no value can move the call to another host or scheme.
            let scheme_end = prefix.find(':').ok_or_else(|| {
                format!("template {template:?} must start with `scheme:` before the placeholder")
            })?;
            if canonicalize(&format!("{prefix}x")).is_err() {
                return Err(format!(
                    "template {template:?} does not start with a valid URI"
                ));
            }
            let rest = &prefix[scheme_end + 1..];
            // Only `file:` has an empty authority (the local host) a path can follow.
            let after_authority = rest == "//" && prefix[..scheme_end].eq_ignore_ascii_case("file");
            if rest == "//" && !after_authority {
                return Err(format!(
                    "in template {template:?} the argument would name the host"
                ));
            }
            let in_path = after_authority
                || prefix.ends_with('/')
                || (prefix.ends_with(':') && !rest.starts_with("//"));
            if !in_path {
                return Err(format!(
                    "in template {template:?} the placeholder must follow `scheme://`, a `/` \
                     or (opaque URIs) `:`"
                ));
            }
            if suffix.contains(['?', '#']) || crate::glob::has_glob(template) {
                return Err(format!(
                    "template {template:?} may not hold `?`, `#` or `*` after the placeholder"
                ));
            }
            Shape::Path { after_authority }
        };
        Ok(ArgumentBinding {
            pointer: pointer.to_string(),
            template: template.to_string(),
            prefix: prefix.to_string(),
            suffix: suffix.to_string(),
            shape,
        })
    }

    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    pub fn template(&self) -> &str {
        &self.template
    }

    /// The canonical URIs a call's arguments name through this binding: one reading
    /// per way a server may take the value (literally; percent-decoded), each with its
    /// spellings with and without a trailing `/`. A call passes only if every reading
    /// does.
    pub fn resolve(&self, arguments: &Value) -> Result<Vec<Vec<String>>, String> {
        let value = match arguments.pointer(&self.pointer) {
            None => return Err(format!("argument {} is missing", self.pointer)),
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(format!("argument {} is not a string", self.pointer)),
        };
        check_value(value)?;
        match self.shape {
            Shape::Uri => {
                // A URI: percent-escapes mean what they say, once.
                let uri = canonicalize(value).map_err(|e| format!("{}: {e}", self.pointer))?;
                if uri
                    .split_once("://")
                    .is_some_and(|(_, rest)| rest.contains("//"))
                {
                    return Err(format!(
                        "argument {} has an empty path segment (`//`)",
                        self.pointer
                    ));
                }
                Ok(vec![vec![uri]])
            }
            Shape::Path { after_authority } => {
                if after_authority && !value.starts_with('/') {
                    return Err(format!(
                        "argument {} must be an absolute path (a relative one is read \
                         against a directory the gateway cannot see)",
                        self.pointer
                    ));
                }
                if !after_authority && value.starts_with('/') {
                    return Err(format!(
                        "argument {} must not start with `/` (a server may read it as \
                         absolute rather than under the template's path)",
                        self.pointer
                    ));
                }
                let mut texts = vec![literal(value)];
                if value.contains('%') {
                    texts.push(literal(&percent_decoded(value)));
                }
                texts
                    .into_iter()
                    .map(|r| {
                        let uri = canonicalize(&format!("{}{r}{}", self.prefix, self.suffix))
                            .map_err(|e| format!("{}: {e}", self.pointer))?;
                        let other = match uri.strip_suffix('/') {
                            Some(s) if !s.ends_with(':') && !s.ends_with("//") => {
                                Some(s.to_string())
                            }
                            Some(_) => None,
                            None => Some(format!("{uri}/")),
                        };
                        Ok(std::iter::once(uri).chain(other).collect())
                    })
                    .collect()
            }
        }
    }
}

/// Refuse what a server could read differently from us (see the module comment).
fn check_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("the argument is empty".into());
    }
    if v.len() > MAX_ARGUMENT_BYTES {
        return Err(format!(
            "the argument is {} bytes, over {MAX_ARGUMENT_BYTES}",
            v.len()
        ));
    }
    for c in v.chars() {
        let bad = match c {
            '\\' => Some("a backslash"),
            '*' => Some("a glob star"),
            ' ' => None,
            c if c.is_whitespace() || c.is_control() => Some("whitespace or a control character"),
            c if !c.is_ascii()
                && matches!(
                    get_general_category(c),
                    GeneralCategory::Format
                        | GeneralCategory::PrivateUse
                        | GeneralCategory::Surrogate
                        | GeneralCategory::Unassigned
                        | GeneralCategory::LineSeparator
                        | GeneralCategory::ParagraphSeparator
                ) =>
            {
                Some("an invisible, private or unassigned character")
            }
            _ => None,
        };
        if let Some(what) = bad {
            return Err(format!("the argument holds {what} ({c:?})"));
        }
    }
    if !v.is_ascii() && !v.nfkc().eq(v.chars()) {
        return Err(
            "the argument is not in Unicode NFKC form (look-alike or compatibility characters)"
                .into(),
        );
    }
    // Only escapes of unreserved ASCII: everything else (`%2F`, `%5C`, `%25`, `%00`,
    // UTF-8 bytes) reads differently depending on how many times a server decodes.
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |k: usize| b.get(k).and_then(|c| (*c as char).to_digit(16));
            let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                return Err("the argument has a `%` that is not an escape".into());
            };
            let d = (hi * 16 + lo) as u8;
            if !(d.is_ascii_alphanumeric() || matches!(d, b'-' | b'.' | b'_' | b'~')) {
                return Err(format!(
                    "the argument escapes {:?} (only unreserved characters may be escaped)",
                    &v[i..i + 3]
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// The value read literally by a server, as URI text: collapse repeated `/` (file
/// systems do), escape what URI syntax would read otherwise (`%`, `?`, `#`, space,
/// brackets).
fn literal(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 8);
    let mut prev_slash = false;
    for c in v.chars() {
        if c == '/' && prev_slash {
            continue;
        }
        prev_slash = c == '/';
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3F"),
            '#' => out.push_str("%23"),
            ' ' => out.push_str("%20"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            c => out.push(c),
        }
    }
    out
}

/// Decode the escapes [`check_value`] let through (unreserved ASCII only).
fn percent_decoded(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = String::with_capacity(v.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Ok(d) = u8::from_str_radix(&v[i + 1..i + 3], 16)
        {
            out.push(d as char);
            i += 3;
            continue;
        }
        let c = v[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Why a call is blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BlockReason {
    /// The URI lies under a pattern a per-call Deny Policy governs, not excused.
    DenyViolation,
    /// The URI lies outside every pattern the server declared for the argument.
    UndeclaredResource,
    /// The argument is missing, not a string, or cannot be read one way only.
    UnresolvedArgument,
}

impl BlockReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockReason::DenyViolation => "DenyViolation",
            BlockReason::UndeclaredResource => "UndeclaredResource",
            BlockReason::UnresolvedArgument => "UnresolvedArgument",
        }
    }
}

/// A blocked call, with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    pub reason: BlockReason,
    /// The JSON pointer of the argument.
    pub argument: String,
    /// The canonical URI decided on (none when the argument did not resolve).
    pub uri: Option<String>,
    /// The Policy whose pattern governs the URI (`DenyViolation`).
    pub policy: Option<String>,
    /// The governed pattern that matched (`DenyViolation`).
    pub pattern: Option<String>,
    pub detail: String,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason.as_str(), self.detail)
    }
}

/// What a passing call touches: each argument and the URIs it resolved to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub argument: String,
    pub uris: Vec<String>,
}

#[derive(Debug)]
struct CArgument {
    binding: ArgumentBinding,
    declared: Vec<UriPattern>,
}

#[derive(Debug)]
struct CExcept {
    /// `None`: the exception covers the whole Policy for this tool.
    pattern: Option<UriPattern>,
    expires: Option<i64>,
}

#[derive(Debug)]
struct CGoverned {
    policy: String,
    pattern: UriPattern,
    except: Vec<CExcept>,
}

/// A bundle's `guard`, compiled once at load: what [`CompiledGuard::check`] runs.
#[derive(Debug)]
pub struct CompiledGuard {
    arguments: Vec<CArgument>,
    governed: Vec<CGoverned>,
}

fn pattern(raw: &str) -> Result<UriPattern, String> {
    let c = canonicalize(raw).map_err(|e| format!("pattern {raw:?}: {e}"))?;
    if c != raw {
        return Err(format!("pattern {raw:?} is not canonical ({c:?})"));
    }
    UriPattern::new(&c).map_err(|e| format!("pattern {raw:?}: {e}"))
}

impl CompiledGuard {
    /// Compile a bundle's guard; any part that cannot be read refuses the bundle.
    pub fn compile(g: &BundleGuard) -> Result<Self, String> {
        if g.arguments.is_empty() {
            return Err("a guard binds no argument".into());
        }
        let arguments = g
            .arguments
            .iter()
            .map(|a| {
                if a.declared.is_empty() {
                    return Err(format!("argument {} declares no pattern", a.pointer));
                }
                Ok(CArgument {
                    binding: ArgumentBinding::parse(&a.pointer, &a.template)?,
                    declared: a
                        .declared
                        .iter()
                        .map(|d| pattern(d))
                        .collect::<Result<_, _>>()?,
                })
            })
            .collect::<Result<_, String>>()?;
        let governed = g
            .governed
            .iter()
            .map(|gv| {
                Ok(CGoverned {
                    policy: gv.policy.clone(),
                    pattern: pattern(&gv.pattern)?,
                    except: gv
                        .except
                        .iter()
                        .map(|e| {
                            Ok(CExcept {
                                pattern: e.pattern.as_deref().map(pattern).transpose()?,
                                expires: match &e.expires {
                                    None => None,
                                    Some(s) => Some(unix_seconds(s).ok_or_else(|| {
                                        format!("except expires {s:?} is not a bundle instant")
                                    })?),
                                },
                            })
                        })
                        .collect::<Result<_, String>>()?,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(CompiledGuard {
            arguments,
            governed,
        })
    }

    /// Decide one call from its `arguments` at `now` (Unix seconds; exceptions expire
    /// against it). Every bound argument must resolve, every reading of it must lie
    /// under a pattern the server declared for it, and none under a governed pattern
    /// that no live exception excuses.
    pub fn check(&self, arguments: &Value, now: i64) -> Result<Vec<Resolved>, Box<Block>> {
        let mut out = Vec::with_capacity(self.arguments.len());
        for a in &self.arguments {
            let pointer = a.binding.pointer();
            let readings = a.binding.resolve(arguments).map_err(|detail| {
                Box::new(Block {
                    reason: BlockReason::UnresolvedArgument,
                    argument: pointer.to_string(),
                    uri: None,
                    policy: None,
                    pattern: None,
                    detail,
                })
            })?;
            // The spellings of one reading differ only by a trailing `/`, which a server
            // undoes: one of them declared is the resource declared. Every reading must
            // be declared, and any governed spelling of any reading blocks.
            if let Some(r) = readings
                .iter()
                .find(|r| !r.iter().any(|u| a.declared.iter().any(|d| d.matches(u))))
            {
                return Err(Box::new(Block {
                    reason: BlockReason::UndeclaredResource,
                    argument: pointer.to_string(),
                    uri: Some(r[0].clone()),
                    policy: None,
                    pattern: None,
                    detail: format!(
                        "{} is outside every resource the server declares for {pointer}",
                        r[0]
                    ),
                }));
            }
            let mut uris: Vec<String> = Vec::with_capacity(4);
            for u in readings.into_iter().flatten() {
                if !uris.contains(&u) {
                    uris.push(u);
                }
            }
            for u in &uris {
                for g in &self.governed {
                    if !g.pattern.matches(u) {
                        continue;
                    }
                    let excused = g.except.iter().any(|e| {
                        e.expires.is_none_or(|t| now < t)
                            && e.pattern.as_ref().is_none_or(|p| p.matches(u))
                    });
                    if !excused {
                        return Err(Box::new(Block {
                            reason: BlockReason::DenyViolation,
                            argument: pointer.to_string(),
                            uri: Some(u.clone()),
                            policy: Some(g.policy.clone()),
                            pattern: Some(g.pattern.as_str().to_string()),
                            detail: format!(
                                "{u} is governed by Policy {} ({})",
                                g.policy,
                                g.pattern.as_str()
                            ),
                        }));
                    }
                }
            }
            out.push(Resolved {
                argument: pointer.to_string(),
                uris,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
