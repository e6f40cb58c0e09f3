//! Reading one list response: the bytes of a JSON-RPC response to `tools/list`,
//! `resources/list`, `resources/templates/list` or `prompts/list`, read straight into
//! the items the catalog retains, with the limits applied while reading.
//!
//! Nothing is materialised beyond what is kept. The envelope and the items are borrowed
//! from the body (`RawValue`), one item at a time; the tool count is checked as each item
//! is read, so a page of 400,000 tools stops at the first one over `maxTools`. A tool's
//! input and output schemas are not kept at all: the contract digest is computed from
//! the tool's bytes by `mcpgov_core::contract` (the function a gateway recomputes it
//! with), whose streaming RFC 8785 canonicaliser sorts objects through a table of 8-byte
//! offsets, never holds arrays and bounds nesting (64 levels), so a schema costs at
//! most 1.6 times its own size while it is digested, and nothing afterwards. Reading
//! watches the crawl's deadline ([`Clock`], ticked by the canonicaliser as its
//! `Budget`): it runs off the async workers.
//!
//! Strings kept for display (titles, descriptions, names of resources) are escaped and
//! bounded ([`super::untrusted`]); the digest covers them as the server sent them.
//! Identity strings (tool names, resource URIs and URI templates) are not rewritten:
//! one with control characters, or longer than [`MAX_NAME`] / [`MAX_URI`] bytes, fails
//! the crawl as a protocol error.

use super::catalog::{Annotations, Resource, ResourceTemplate, Tool};
use super::error::{Cap, CrawlError};
use super::session::ListKind;
use super::untrusted;
use mcpgov_core::contract::{tool_contract_digest_within, tool_contract_parts_within};
use mcpgov_core::streaming::Budget;
use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::time::Instant;

/// Longest tool name (the CRD's `dataAccess[].tool` allows 256 too).
pub const MAX_NAME: usize = 256;
/// Longest resource URI or URI template.
pub const MAX_URI: usize = 4096;
/// Longest title (tool, annotation) kept; longer ones are cut.
pub const MAX_TITLE: usize = 1024;
/// Longest description kept; longer ones are cut.
pub const MAX_DESCRIPTION: usize = 64 * 1024;
/// Longest short field kept (MIME type).
pub const MAX_SHORT: usize = 256;

/// One page of a list, as retained.
#[derive(Debug, Default)]
pub(crate) struct Page {
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    pub next_cursor: Option<String>,
}

/// What a list request got.
#[derive(Debug)]
pub(crate) enum Reply {
    Page(Page),
    /// JSON-RPC -32601: the server does not implement the method.
    MethodNotFound,
}

/// Where this page starts, for the limits and for item numbers in messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Position {
    /// Items of this kind already listed in this crawl.
    pub before: usize,
    /// `maxTools`; counted across every page of `tools/list`.
    pub max_tools: usize,
}

/// Read the response `body` (one JSON-RPC message) to a `kind` request, within `clock`.
pub(crate) fn read(
    kind: ListKind,
    body: &[u8],
    at: Position,
    clock: &Clock,
) -> Result<Reply, CrawlError> {
    let method = kind.method();
    let body = std::str::from_utf8(body)
        .map_err(|e| CrawlError::Protocol(format!("{method}: the response is not UTF-8: {e}")))?;

    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    let envelope: Envelope = serde_json::from_str(body).map_err(|e| json_error(method, &e))?;
    if let Some(error) = envelope.error {
        #[derive(Deserialize)]
        struct ErrorObject<'a> {
            code: i64,
            #[serde(borrow, default)]
            message: Cow<'a, str>,
        }
        let e: ErrorObject = serde_json::from_str(error.get()).map_err(|e| {
            CrawlError::Protocol(format!("{method}: the error object is malformed: {e}"))
        })?;
        if e.code == -32601 {
            return Ok(Reply::MethodNotFound);
        }
        return Err(CrawlError::rpc(method, e.code, &e.message));
    }
    let result = envelope.result.ok_or_else(|| {
        CrawlError::Protocol(format!(
            "{method}: the response has neither result nor error"
        ))
    })?;

    let mut ctx = Ctx {
        kind,
        at,
        clock,
        page: Page::default(),
        seen_items: false,
        stop: None,
    };
    let read = serde_json::Deserializer::from_str(result.get())
        .deserialize_map(ResultVisitor { ctx: &mut ctx });
    if let Some(stop) = ctx.stop {
        return Err(stop);
    }
    read.map_err(|e| CrawlError::Protocol(format!("{method}: the result is not an object: {e}")))?;
    if !ctx.seen_items {
        return Err(CrawlError::Protocol(format!(
            "{method}: the result has no {} array",
            kind.field()
        )));
    }
    Ok(Reply::Page(ctx.page))
}

fn json_error(method: &str, e: &serde_json::Error) -> CrawlError {
    super::error::from_json(method, e)
}

struct Ctx<'k> {
    kind: ListKind,
    at: Position,
    clock: &'k Clock,
    page: Page,
    seen_items: bool,
    /// Why reading stopped, when it was us (a cap, a bad item) rather than the parser.
    stop: Option<CrawlError>,
}

impl Ctx<'_> {
    fn halt<E: de::Error>(&mut self, e: CrawlError) -> E {
        // Work cut short by the deadline is reported as the deadline, whatever it hit.
        self.stop = Some(if self.clock.expired() {
            CrawlError::Timeout { phase: "deadline" }
        } else {
            e
        });
        E::custom("stopped")
    }
}

struct ResultVisitor<'c, 'k> {
    ctx: &'c mut Ctx<'k>,
}

impl<'de> Visitor<'de> for ResultVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        let method = ctx.kind.method();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == ctx.kind.field() {
                ctx.seen_items = true;
                map.next_value_seed(Items { ctx: &mut *ctx })?;
            } else if key == "nextCursor" {
                let raw: &RawValue = map.next_value()?;
                ctx.page.next_cursor = match serde_json::from_str::<Option<String>>(raw.get()) {
                    Ok(c) => c,
                    Err(_) => {
                        return Err(ctx.halt(CrawlError::Protocol(format!(
                            "{method}: nextCursor is not a string: {}",
                            untrusted::line(raw.get(), 64)
                        ))));
                    }
                };
            } else if key == "resultType" {
                // 2026-07-28 results say whether they are complete; a list never needs input.
                let raw: &RawValue = map.next_value()?;
                if raw.get() != "\"complete\"" {
                    return Err(ctx.halt(CrawlError::Protocol(format!(
                        "{method}: unexpected resultType {}",
                        untrusted::line(raw.get(), 64)
                    ))));
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The items array, read one element at a time.
struct Items<'c, 'k> {
    ctx: &'c mut Ctx<'k>,
}

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} array", self.ctx.kind.field())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ctx = self.ctx;
        if ctx.kind == ListKind::Prompts {
            // Listed only to learn whether prompts are supported.
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        }
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            let read = match ctx.kind {
                ListKind::Tools => {
                    let index = ctx.at.before + ctx.page.tools.len();
                    if index >= ctx.at.max_tools {
                        Err(CrawlError::OverCap {
                            cap: Cap::MaxTools,
                            limit: ctx.at.max_tools,
                        })
                    } else {
                        tool(raw, index, ctx.clock).map(|t| ctx.page.tools.push(t))
                    }
                }
                ListKind::Resources => {
                    let index = ctx.at.before + ctx.page.resources.len();
                    resource(raw, index).map(|r| ctx.page.resources.push(r))
                }
                ListKind::ResourceTemplates => {
                    let index = ctx.at.before + ctx.page.templates.len();
                    template(raw, index).map(|t| ctx.page.templates.push(t))
                }
                ListKind::Prompts => Ok(()),
            };
            if let Err(e) = read {
                return Err(ctx.halt(e));
            }
        }
        Ok(())
    }
}

// --- items ---------------------------------------------------------------------------

fn bad(what: &str, index: usize, msg: &str) -> CrawlError {
    CrawlError::Protocol(format!("{what} #{index}: {msg}"))
}

type Field<'a> = Option<&'a RawValue>;

fn opt_string(raw: Field, key: &str) -> Result<Option<String>, String> {
    match raw {
        None => Ok(None),
        Some(r) => serde_json::from_str::<Option<String>>(r.get())
            .map_err(|_| format!("{key} is not a string")),
    }
}

fn opt_bool(raw: Field, key: &str) -> Result<Option<bool>, String> {
    match raw {
        None => Ok(None),
        Some(r) => serde_json::from_str::<Option<bool>>(r.get())
            .map_err(|_| format!("{key} is not a boolean")),
    }
}

/// An object-valued field, as its raw bytes.
fn opt_object<'a>(raw: Field<'a>, key: &str) -> Result<Option<&'a str>, String> {
    match raw.map(RawValue::get) {
        None | Some("null") => Ok(None),
        Some(r) if r.starts_with('{') => Ok(Some(r)),
        Some(_) => Err(format!("{key} is not an object")),
    }
}

/// A string that names something (a tool, a resource): required, bounded, and free of
/// anything that would have to be escaped to be shown.
fn identity(raw: Field, key: &str, max: usize) -> Result<String, String> {
    let s = opt_string(raw, key)?.unwrap_or_default();
    if s.is_empty() {
        return Err(format!("{key} is missing or empty"));
    }
    if s.len() > max {
        return Err(format!("{key} is longer than {max} bytes"));
    }
    if let Some(c) = s
        .chars()
        .find(|&c| c.is_control() || untrusted::is_unsafe(c))
    {
        return Err(format!(
            "{key} {} contains the control character U+{:04X}",
            untrusted::line(&s, 80),
            c as u32
        ));
    }
    Ok(s)
}

fn shown_line(s: Option<String>, max: usize) -> Option<String> {
    s.map(|s| untrusted::line(&s, max))
}

/// One `tools/list` item as retained: display strings escaped, schemas digested only.
pub(crate) fn tool(raw: &RawValue, index: usize, clock: &Clock) -> Result<Tool, CrawlError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct RawTool<'a> {
        #[serde(borrow, default)]
        name: Field<'a>,
        #[serde(borrow, default)]
        title: Field<'a>,
        #[serde(borrow, default)]
        description: Field<'a>,
        #[serde(borrow, default)]
        annotations: Field<'a>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct RawAnnotations<'a> {
        #[serde(borrow, default)]
        title: Field<'a>,
        #[serde(borrow, default)]
        read_only_hint: Field<'a>,
        #[serde(borrow, default)]
        destructive_hint: Field<'a>,
        #[serde(borrow, default)]
        idempotent_hint: Field<'a>,
        #[serde(borrow, default)]
        open_world_hint: Field<'a>,
    }
    let read = || -> Result<Tool, String> {
        if !raw.get().starts_with('{') {
            return Err("not an object".into());
        }
        let t: RawTool = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        let name = identity(t.name, "name", MAX_NAME)?;
        let title = opt_string(t.title, "title")?;
        let description = opt_string(t.description, "description")?;
        let annotations = match opt_object(t.annotations, "annotations")? {
            None => Annotations::default(),
            Some(a) => {
                let a: RawAnnotations = serde_json::from_str(a).map_err(|e| e.to_string())?;
                Annotations {
                    title: opt_string(a.title, "annotations.title")?,
                    read_only_hint: opt_bool(a.read_only_hint, "readOnlyHint")?,
                    destructive_hint: opt_bool(a.destructive_hint, "destructiveHint")?,
                    idempotent_hint: opt_bool(a.idempotent_hint, "idempotentHint")?,
                    open_world_hint: opt_bool(a.open_world_hint, "openWorldHint")?,
                }
            }
        };
        // The one definition the gateway recomputes, over the same bytes.
        let contract_digest = tool_contract_digest_within(raw.get(), clock)?;
        // Part by part too: what an approval diff compares (a second pass over the
        // schemas, within the same deadline).
        let parts = tool_contract_parts_within(raw.get(), clock)?;
        Ok(Tool {
            name,
            title: shown_line(title, MAX_TITLE),
            description: description.map(|d| untrusted::text(&d, MAX_DESCRIPTION)),
            annotations: Annotations {
                title: shown_line(annotations.title, MAX_TITLE),
                ..annotations
            },
            contract_digest,
            parts,
        })
    };
    read().map_err(|m| bad("tool", index, &m))
}

pub(crate) fn resource(raw: &RawValue, index: usize) -> Result<Resource, CrawlError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct RawResource<'a> {
        #[serde(borrow, default)]
        uri: Field<'a>,
        #[serde(borrow, default)]
        name: Field<'a>,
        #[serde(borrow, default)]
        mime_type: Field<'a>,
    }
    let read = || -> Result<Resource, String> {
        if !raw.get().starts_with('{') {
            return Err("not an object".into());
        }
        let r: RawResource = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        Ok(Resource {
            uri: identity(r.uri, "uri", MAX_URI)?,
            name: shown_line(opt_string(r.name, "name")?, MAX_TITLE),
            mime_type: shown_line(opt_string(r.mime_type, "mimeType")?, MAX_SHORT),
        })
    };
    read().map_err(|m| bad("resource", index, &m))
}

pub(crate) fn template(raw: &RawValue, index: usize) -> Result<ResourceTemplate, CrawlError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct RawTemplate<'a> {
        #[serde(borrow, default)]
        uri_template: Field<'a>,
        #[serde(borrow, default)]
        name: Field<'a>,
    }
    let read = || -> Result<ResourceTemplate, String> {
        if !raw.get().starts_with('{') {
            return Err("not an object".into());
        }
        let t: RawTemplate = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        Ok(ResourceTemplate {
            uri_template: identity(t.uri_template, "uriTemplate", MAX_URI)?,
            name: shown_line(opt_string(t.name, "name")?, MAX_TITLE),
        })
    };
    read().map_err(|m| bad("resource template", index, &m))
}

// --- the contract digest -------------------------------------------------------------

/// Time the reading of one page may take: the crawl's deadline, checked now and then
/// while a page is read (reading runs off the async workers, where the crawl's own timer
/// cannot stop it).
pub(crate) struct Clock {
    deadline: Option<Instant>,
    ticks: Cell<u32>,
    expired: Cell<bool>,
}

impl Clock {
    pub fn until(deadline: Instant) -> Clock {
        Clock {
            deadline: Some(deadline),
            ticks: Cell::new(0),
            expired: Cell::new(false),
        }
    }

    #[cfg(test)]
    pub fn unbounded() -> Clock {
        Clock {
            deadline: None,
            ticks: Cell::new(0),
            expired: Cell::new(false),
        }
    }

    fn expired(&self) -> bool {
        self.expired.get()
    }
}

impl Budget for Clock {
    /// Count one unit of work; every 4096th looks at the time.
    fn tick(&self) -> Result<(), String> {
        let n = self.ticks.get().wrapping_add(1);
        self.ticks.set(n);
        if n.is_multiple_of(4096)
            && let Some(d) = self.deadline
            && Instant::now() > d
        {
            self.expired.set(true);
        }
        if self.expired.get() {
            return Err("the crawl's deadline passed".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpgov_engine::canonical::digest_of;
    use serde_json::{Value, json};

    /// Reading a page runs off the async workers, where the crawl's timer cannot stop it:
    /// it watches the deadline itself.
    #[test]
    fn reading_stops_at_the_deadline() {
        let zeros = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"z","inputSchema":{{"a":[{}]}}}}]}}}}"#,
            vec!["0"; 200_000].join(",")
        );
        let past = Clock::until(Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(
            read(ListKind::Tools, zeros.as_bytes(), AT, &past).unwrap_err(),
            CrawlError::Timeout { phase: "deadline" }
        );
        assert!(read_(ListKind::Tools, zeros.as_bytes(), AT).is_ok());
    }

    fn tool_of(v: &Value) -> Result<Tool, CrawlError> {
        let raw = serde_json::to_string(v).unwrap();
        let raw: &RawValue = serde_json::from_str(&raw).unwrap();
        tool(raw, 0, &Clock::unbounded())
    }

    /// The crawler's digest is the gateway's (`tool_contract_digest` on the same entry),
    /// and catalogs crawled before RFC 8785 keep their digests wherever it writes the
    /// contract as before (the values below are those of schemaVersion 1): no upgrade
    /// shows every tool as a changed contract.
    #[test]
    fn contract_digests_are_unchanged() {
        for (v, v1) in [
            (
                json!({"name": "t", "inputSchema": {"type": "object"}}),
                "sha256:c6005ee7854db532c5afa7ec72ecc502c63014ac9fe51e0b422daf578ebd3e0a",
            ),
            (
                json!({"name": "search", "title": "Search", "description": "Search things\n",
                   "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]},
                   "outputSchema": {"type": "object"},
                   "annotations": {"title": "S", "readOnlyHint": true, "openWorldHint": false, "other": 1},
                   "_meta": {"x": 1}, "icons": []}),
                "sha256:43db550950de5164067106acad60975c41ec0eeb5d9aa4fb70183946ce4faa44",
            ),
            (
                json!({"name": "t", "title": null, "inputSchema": {}, "annotations": {}, "outputSchema": null}),
                "sha256:b36389c54a2da9b725519903a70ca5ef405b96bb0cf7b418b9b92acfa9711d0c",
            ),
            (
                json!({"name": "é\"", "description": "\u{1b}[31m", "inputSchema": {"b": [1.5, {"z": null, "a": true}], "a": "x"}}),
                "sha256:4029c5bc8a92256930ca4d8aed1f2369753b0f005aa8397a87eed5916bdf3c69",
            ),
        ] {
            let t = tool_of(&v).unwrap();
            assert_eq!(t.contract_digest, v1, "{v}");
            let gateway = mcpgov_core::contract::tool_contract_digest(&v.to_string()).unwrap();
            assert_eq!(t.contract_digest, gateway, "{v}");
        }
        assert_eq!(
            tool_of(&json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap()
                .contract_digest,
            digest_of(&json!({"name": "t", "inputSchema": {"type": "object"}}))
        );
    }

    /// What changes under RFC 8785: a number written `1.0` is the number `1`.
    #[test]
    fn a_number_written_two_ways_is_one_contract() {
        let a =
            tool_of(&serde_json::from_str(r#"{"name":"t","inputSchema":{"minimum":1}}"#).unwrap());
        let b = tool_of(
            &serde_json::from_str(r#"{"name":"t","inputSchema":{"minimum":1.0}}"#).unwrap(),
        );
        assert_eq!(a.unwrap().contract_digest, b.unwrap().contract_digest);
    }

    #[test]
    fn same_tool_same_digest_whatever_the_key_order() {
        let a = tool_of(&json!({
            "name": "search",
            "description": "Search things",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })).unwrap();
        let b = tool_of(&json!({
            "annotations": {"openWorldHint": false, "readOnlyHint": true},
            "inputSchema": {"required": ["q"], "properties": {"n": {"type": "integer"}, "q": {"type": "string"}}, "type": "object"},
            "description": "Search things",
            "name": "search"
        }))
        .unwrap();
        assert_eq!(a.contract_digest, b.contract_digest);
        assert!(a.contract_digest.starts_with("sha256:"));
        assert_eq!(a.contract_digest.len(), 7 + 64);
        // Recomputing gives the same value: the digest is a pure function of the contract.
        assert_eq!(tool_of(&json!({
            "name": "search",
            "description": "Search things",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })).unwrap().contract_digest, a.contract_digest);
    }

    #[test]
    fn null_empty_and_absent_are_the_same_contract() {
        let a = tool_of(&json!({"name": "t", "inputSchema": {"type": "object"}})).unwrap();
        let b = tool_of(
            &json!({"name": "t", "title": null, "inputSchema": {"type": "object"},
            "annotations": {}, "outputSchema": null, "_meta": {"x": 1}, "icons": []}),
        )
        .unwrap();
        assert_eq!(a.contract_digest, b.contract_digest);
    }

    #[test]
    fn every_contract_field_changes_the_digest() {
        let base = json!({"name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"title": "A", "readOnlyHint": true, "destructiveHint": false,
                "idempotentHint": true, "openWorldHint": false}});
        let d0 = tool_of(&base).unwrap().contract_digest;
        let changes: Vec<(&str, Value)> = vec![
            ("/name", json!("u")),
            ("/title", json!("T2")),
            ("/description", json!("d2")),
            ("/inputSchema", json!({"type": "object", "properties": {}})),
            ("/outputSchema", json!({"type": "string"})),
            ("/annotations/title", json!("B")),
            ("/annotations/readOnlyHint", json!(false)),
            ("/annotations/destructiveHint", json!(true)),
            ("/annotations/idempotentHint", json!(false)),
            ("/annotations/openWorldHint", json!(true)),
        ];
        for (path, value) in changes {
            let mut v = base.clone();
            *v.pointer_mut(path).unwrap() = value;
            assert_ne!(tool_of(&v).unwrap().contract_digest, d0, "{path}");
        }
    }

    #[test]
    fn display_strings_are_escaped_and_identities_refused() {
        let t = tool_of(&json!({"name": "ok", "title": "\u{1b}[2Jhi",
            "description": "line one\nline two \u{7}", "inputSchema": {},
            "annotations": {"title": "\u{202e}evil"}}))
        .unwrap();
        assert_eq!(t.title.as_deref(), Some("\\u{1b}[2Jhi"));
        assert_eq!(t.description.as_deref(), Some("line one\nline two \\u{7}"));
        assert_eq!(t.annotations.title.as_deref(), Some("\\u{202e}evil"));
        for name in [
            "a\u{1b}[31m",
            "a\nb",
            "a\u{202e}b",
            &"n".repeat(MAX_NAME + 1),
        ] {
            let e = tool_of(&json!({"name": name, "inputSchema": {}})).unwrap_err();
            assert_eq!(e.reason(), "ProtocolError");
            assert!(!e.to_string().contains('\u{1b}'), "{e}");
        }
        let raw: &RawValue = serde_json::from_str(r#"{"uri": "file:///a\u001b[31m"}"#).unwrap();
        assert!(
            resource(raw, 2)
                .unwrap_err()
                .to_string()
                .contains("resource #2")
        );
    }

    #[test]
    fn malformed_items_are_protocol_errors() {
        for v in [
            json!("x"),
            json!({"inputSchema": {}}),
            json!({"name": "", "inputSchema": {}}),
            json!({"name": "t"}),
            json!({"name": "t", "inputSchema": []}),
            json!({"name": "t", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}),
            json!({"name": 5, "inputSchema": {}}),
        ] {
            let raw = serde_json::to_string(&v).unwrap();
            let raw: &RawValue = serde_json::from_str(&raw).unwrap();
            let e = tool(raw, 3, &Clock::unbounded()).unwrap_err();
            assert!(e.to_string().contains("tool #3"), "{e}");
        }
    }

    fn read_(kind: ListKind, body: &[u8], at: Position) -> Result<Reply, CrawlError> {
        read(kind, body, at, &Clock::unbounded())
    }

    fn body(result: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": result})).unwrap()
    }

    const AT: Position = Position {
        before: 0,
        max_tools: 10,
    };

    #[test]
    fn pages_read_into_items_and_a_cursor() {
        let b = body(
            json!({"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "n", "_meta": {"x": [1]}}),
        );
        let Reply::Page(p) = read_(ListKind::Tools, &b, AT).unwrap() else {
            panic!()
        };
        assert_eq!(p.tools.len(), 1);
        assert_eq!(p.next_cursor.as_deref(), Some("n"));
        let b = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}),
        )
        .unwrap();
        assert!(matches!(
            read_(ListKind::Resources, &b, AT).unwrap(),
            Reply::MethodNotFound
        ));
    }

    /// Regression (issue 10, §2): maxTools was checked only after the whole page had
    /// been parsed into memory. Reading now stops at the first tool over the cap.
    #[test]
    fn reading_stops_at_the_first_tool_over_max_tools() {
        let mut big = String::from(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":["#);
        for i in 0..100_000 {
            if i > 0 {
                big.push(',');
            }
            big.push_str(&format!(r#"{{"name":"t{i:06}","inputSchema":{{}}}}"#));
        }
        big.push_str("]}}");
        let at = Position {
            before: 0,
            max_tools: 10,
        };
        assert_eq!(
            read_(ListKind::Tools, big.as_bytes(), at).unwrap_err(),
            CrawlError::OverCap {
                cap: Cap::MaxTools,
                limit: 10
            }
        );
        // Tools of earlier pages count.
        let b = body(
            json!({"tools": [{"name": "a", "inputSchema": {}}, {"name": "b", "inputSchema": {}}]}),
        );
        let at = Position {
            before: 9,
            max_tools: 10,
        };
        assert_eq!(
            read_(ListKind::Tools, &b, at).unwrap_err().reason(),
            "OverCap"
        );
        let at = Position {
            before: 8,
            max_tools: 10,
        };
        assert!(read_(ListKind::Tools, &b, at).is_ok());
    }

    #[test]
    fn malformed_pages_and_errors_say_what_happened() {
        for page in [
            json!({}),
            json!({"tools": {}}),
            json!({"tools": [], "nextCursor": 7}),
            json!({"tools": [], "resultType": "input_required"}),
            json!({"tools": [{"name": "t"}]}),
            json!([]),
        ] {
            let e = read_(ListKind::Tools, &body(page.clone()), AT).unwrap_err();
            assert_eq!(e.reason(), "ProtocolError", "{page}: {e}");
        }
        assert!(
            read_(
                ListKind::Tools,
                &body(json!({"tools": [], "resultType": "complete"})),
                AT
            )
            .is_ok()
        );
        for bad in [
            &b"{"[..],
            b"\xff\xfe",
            b"{\"jsonrpc\":\"2.0\",\"id\":1}",
            b"[1]",
        ] {
            assert_eq!(
                read_(ListKind::Tools, bad, AT).unwrap_err().reason(),
                "ProtocolError"
            );
        }
        // Too deep to parse at all is a protocol error too, and says so.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"d","inputSchema":{{"x":{}{}}}}}]}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let e = read_(ListKind::Tools, deep.as_bytes(), AT).unwrap_err();
        assert_eq!(e.reason(), "ProtocolError");
        assert!(
            e.to_string().contains("nested deeper than 64 levels"),
            "{e}"
        );
        // A JSON-RPC error: its code, and its message bounded and escaped.
        let huge = "\u{1b}[31m".repeat(400_000);
        let b = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": huge}}),
        )
        .unwrap();
        let e = read_(ListKind::Tools, &b, AT).unwrap_err();
        assert_eq!(e.reason(), "RpcError");
        let m = e.to_string();
        assert!(
            m.len() <= untrusted::MAX_MESSAGE
                && m.contains("error -32603")
                && !m.contains('\u{1b}'),
            "{m}"
        );
    }
}
