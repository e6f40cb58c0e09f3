//! Listing: pages every list to its end, with a page cap and repeated-cursor detection
//! (rmcp's `list_all_*` has neither and loops forever on a server that repeats a cursor).
//! The caps are enforced while reading: `maxBytes` by the transport as the bytes of each
//! response arrive (see `tap`), `maxTools` by the page reader as each tool is read (see
//! `page`), so an oversized catalog fails early, as a whole, and without being held.

use super::catalog::Listed;
use super::error::{Cap, CrawlError};
use super::page::{Position, Reply};
use super::session::{ListKind, Session};
use std::collections::HashSet;

/// Pages one list may take. Real servers page tens of items at a time; past this a
/// server is cycling through fresh cursors, which cursor repetition cannot catch.
pub const MAX_PAGES_PER_LIST: usize = 1000;

/// Where pages come from: the session, or a scripted source in tests. A page comes with
/// the bytes its response took.
pub(crate) trait PageSource {
    fn declares(&self, kind: ListKind) -> bool;
    async fn page(
        &self,
        kind: ListKind,
        cursor: Option<String>,
        at: Position,
    ) -> Result<(Reply, usize), CrawlError>;
}

impl PageSource for Session {
    fn declares(&self, kind: ListKind) -> bool {
        Session::declares(self, kind)
    }

    async fn page(
        &self,
        kind: ListKind,
        cursor: Option<String>,
        at: Position,
    ) -> Result<(Reply, usize), CrawlError> {
        self.list_page(kind, cursor, at).await
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Caps {
    pub max_tools: usize,
    pub max_bytes: usize,
    pub max_pages: usize,
}

/// List tools, resources, resource templates, and prompts (support only).
pub(crate) async fn list_catalog(src: &impl PageSource, caps: Caps) -> Result<Listed, CrawlError> {
    let mut listed = Listed::default();
    for kind in [
        ListKind::Tools,
        ListKind::Resources,
        ListKind::ResourceTemplates,
        ListKind::Prompts,
    ] {
        // A method the server did not declare is not called: calling it is the client
        // breaking the protocol, and what it would answer is not worth trusting.
        let implemented = src.declares(kind) && list_one(src, kind, caps, &mut listed).await?;
        if !implemented {
            listed.not_implemented.push(kind.method().to_owned());
        }
    }
    Ok(listed)
}

/// Page one list to its end; `false` when the server answered method-not-found.
async fn list_one(
    src: &impl PageSource,
    kind: ListKind,
    caps: Caps,
    listed: &mut Listed,
) -> Result<bool, CrawlError> {
    let method = kind.method();
    let mut cursor: Option<String> = None;
    let mut seen: HashSet<String> = HashSet::new();
    let mut pages = 0usize;
    loop {
        if pages == caps.max_pages {
            return Err(CrawlError::TooManyPages {
                limit: caps.max_pages,
            });
        }
        let at = Position {
            before: match kind {
                ListKind::Tools => listed.tools.len(),
                ListKind::Resources => listed.resources.len(),
                ListKind::ResourceTemplates => listed.resource_templates.len(),
                ListKind::Prompts => 0,
            },
            max_tools: caps.max_tools,
        };
        let (reply, bytes) = src.page(kind, cursor.take(), at).await?;
        // The transport counts as the bytes arrive; this holds the same line for any
        // page source.
        listed.bytes += bytes;
        if listed.bytes > caps.max_bytes {
            return Err(CrawlError::OverCap {
                cap: Cap::MaxBytes,
                limit: caps.max_bytes,
            });
        }
        let page = match reply {
            Reply::Page(p) => p,
            // Optional lists may be declared yet unimplemented; tools are the point.
            Reply::MethodNotFound if pages == 0 && kind != ListKind::Tools => return Ok(false),
            Reply::MethodNotFound => {
                return Err(CrawlError::Protocol(format!(
                    "{method}: the server answered method not found"
                )));
            }
        };
        pages += 1;
        listed.pages += 1;
        // The first page's items are moved, not copied (one page is the common case).
        append(&mut listed.tools, page.tools);
        append(&mut listed.resources, page.resources);
        append(&mut listed.resource_templates, page.templates);
        if listed.tools.len() > caps.max_tools {
            return Err(CrawlError::OverCap {
                cap: Cap::MaxTools,
                limit: caps.max_tools,
            });
        }
        // Listed only to learn whether prompts are supported: one page says so.
        if kind == ListKind::Prompts {
            return Ok(true);
        }
        match page.next_cursor {
            None => return Ok(true),
            // Some servers mark the last page with an empty cursor.
            Some(s) if s.is_empty() => return Ok(true),
            Some(s) => {
                if !seen.insert(s.clone()) {
                    return Err(CrawlError::RepeatedCursor);
                }
                cursor = Some(s);
            }
        }
    }
}

fn append<T>(to: &mut Vec<T>, mut items: Vec<T>) {
    if to.is_empty() {
        *to = items;
    } else {
        to.append(&mut items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A scripted server: for each list, the response bodies keyed by the cursor that
    /// fetches them, read by the same page reader as the session's.
    #[derive(Default)]
    struct Script {
        declared: Vec<ListKind>,
        pages: HashMap<(&'static str, Option<String>), Vec<u8>>,
        asked: RefCell<Vec<(&'static str, Option<String>)>>,
    }

    fn response(v: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": v})).unwrap()
    }

    impl Script {
        fn page(mut self, kind: ListKind, cursor: Option<&str>, reply: Value) -> Self {
            if !self.declared.contains(&kind) {
                self.declared.push(kind);
            }
            self.pages
                .insert((kind.method(), cursor.map(str::to_owned)), response(reply));
            self
        }
        fn not_found(mut self, kind: ListKind) -> Self {
            self.declared.push(kind);
            self.pages.insert(
                (kind.method(), None),
                serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
                    "error": {"code": -32601, "message": "Method not found"}}))
                .unwrap(),
            );
            self
        }
    }

    impl PageSource for Script {
        fn declares(&self, kind: ListKind) -> bool {
            self.declared.contains(&kind)
        }
        async fn page(
            &self,
            kind: ListKind,
            cursor: Option<String>,
            at: Position,
        ) -> Result<(Reply, usize), CrawlError> {
            self.asked
                .borrow_mut()
                .push((kind.method(), cursor.clone()));
            let body = self
                .pages
                .get(&(kind.method(), cursor))
                .ok_or_else(|| CrawlError::Protocol("unscripted page".into()))?;
            let clock = super::super::page::Clock::unbounded();
            Ok((
                super::super::page::read(kind, body, at, &clock)?,
                body.len(),
            ))
        }
    }

    fn tool(n: &str) -> Value {
        json!({"name": n, "inputSchema": {"type": "object"}})
    }

    const CAPS: Caps = Caps {
        max_tools: 100,
        max_bytes: 1 << 20,
        max_pages: 10,
    };

    fn run(s: &Script, caps: Caps) -> Result<Listed, CrawlError> {
        futures::executor::block_on(list_catalog(s, caps))
    }

    #[test]
    fn follows_cursors_to_the_end() {
        let s = Script::default()
            .page(
                ListKind::Tools,
                None,
                json!({"tools": [tool("a")], "nextCursor": "p2"}),
            )
            .page(
                ListKind::Tools,
                Some("p2"),
                json!({"tools": [tool("b")], "nextCursor": "p3"}),
            )
            .page(ListKind::Tools, Some("p3"), json!({"tools": [tool("c")]}))
            .page(
                ListKind::Resources,
                None,
                json!({"resources": [{"uri": "file:///x", "name": "x"}], "nextCursor": ""}),
            )
            .not_found(ListKind::ResourceTemplates)
            .not_found(ListKind::Prompts);
        let l = run(&s, CAPS).unwrap();
        assert_eq!(l.tools.len(), 3);
        assert_eq!(l.resources.len(), 1);
        assert_eq!(l.pages, 4);
        assert_eq!(
            l.not_implemented,
            vec!["resources/templates/list", "prompts/list"]
        );
        assert!(l.bytes > 0);
    }

    #[test]
    fn undeclared_lists_are_not_called() {
        let s = Script::default().page(ListKind::Tools, None, json!({"tools": []}));
        let l = run(&s, CAPS).unwrap();
        assert_eq!(s.asked.borrow().len(), 1);
        assert_eq!(
            l.not_implemented,
            vec!["resources/list", "resources/templates/list", "prompts/list"]
        );
    }

    #[test]
    fn a_repeated_cursor_is_a_loop() {
        let s = Script::default()
            .page(
                ListKind::Tools,
                None,
                json!({"tools": [tool("a")], "nextCursor": "x"}),
            )
            .page(
                ListKind::Tools,
                Some("x"),
                json!({"tools": [], "nextCursor": "y"}),
            )
            .page(
                ListKind::Tools,
                Some("y"),
                json!({"tools": [], "nextCursor": "x"}),
            );
        assert_eq!(run(&s, CAPS).unwrap_err(), CrawlError::RepeatedCursor);
        let same = Script::default()
            .page(
                ListKind::Tools,
                None,
                json!({"tools": [], "nextCursor": "x"}),
            )
            .page(
                ListKind::Tools,
                Some("x"),
                json!({"tools": [], "nextCursor": "x"}),
            );
        assert_eq!(run(&same, CAPS).unwrap_err(), CrawlError::RepeatedCursor);
    }

    #[test]
    fn fresh_cursors_forever_hit_the_page_cap() {
        let mut s = Script::default();
        for i in 0..20 {
            let cur = (i > 0).then(|| format!("c{i}"));
            s = s.page(
                ListKind::Tools,
                cur.as_deref(),
                json!({"tools": [], "nextCursor": format!("c{}", i + 1)}),
            );
        }
        assert_eq!(
            run(&s, CAPS).unwrap_err(),
            CrawlError::TooManyPages { limit: 10 }
        );
        assert_eq!(s.asked.borrow().len(), 10);
    }

    #[test]
    fn over_max_tools_fails_as_a_whole() {
        let s = Script::default()
            .page(
                ListKind::Tools,
                None,
                json!({"tools": [tool("a"), tool("b")], "nextCursor": "2"}),
            )
            .page(ListKind::Tools, Some("2"), json!({"tools": [tool("c")]}));
        let caps = Caps {
            max_tools: 2,
            ..CAPS
        };
        assert_eq!(
            run(&s, caps).unwrap_err(),
            CrawlError::OverCap {
                cap: Cap::MaxTools,
                limit: 2
            }
        );
        let caps = Caps {
            max_tools: 3,
            ..CAPS
        };
        assert_eq!(run(&s, caps).unwrap().tools.len(), 3);
    }

    #[test]
    fn over_max_bytes_fails_as_a_whole() {
        let big = json!({"name": "big", "description": "x".repeat(5000), "inputSchema": {"type": "object"}});
        let s = Script::default()
            .page(
                ListKind::Tools,
                None,
                json!({"tools": [tool("a")], "nextCursor": "2"}),
            )
            .page(ListKind::Tools, Some("2"), json!({"tools": [big]}));
        let caps = Caps {
            max_bytes: 4096,
            ..CAPS
        };
        assert_eq!(
            run(&s, caps).unwrap_err(),
            CrawlError::OverCap {
                cap: Cap::MaxBytes,
                limit: 4096
            }
        );
        // Resources count towards the same budget.
        let many: Vec<Value> = (0..100)
            .map(|i| json!({"uri": format!("file:///r/{i:04}"), "name": format!("resource {i}")}))
            .collect();
        let s = Script::default()
            .page(ListKind::Tools, None, json!({"tools": []}))
            .page(ListKind::Resources, None, json!({"resources": many}));
        assert_eq!(run(&s, caps).unwrap_err().reason(), "OverCap");
    }

    #[test]
    fn method_not_found_on_tools_or_a_later_page_is_an_error() {
        let s = Script::default().not_found(ListKind::Tools);
        assert_eq!(run(&s, CAPS).unwrap_err().reason(), "ProtocolError");
        let mut s = Script::default()
            .page(ListKind::Tools, None, json!({"tools": []}))
            .page(
                ListKind::Resources,
                None,
                json!({"resources": [], "nextCursor": "2"}),
            );
        s.pages.insert(
            ("resources/list", Some("2".into())),
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
                "error": {"code": -32601, "message": "Method not found"}}))
            .unwrap(),
        );
        assert_eq!(run(&s, CAPS).unwrap_err().reason(), "ProtocolError");
    }

    #[test]
    fn malformed_pages_are_protocol_errors() {
        for page in [
            json!({}),
            json!({"tools": {}}),
            json!({"tools": [], "nextCursor": 7}),
            json!({"tools": [], "resultType": "input_required"}),
            json!({"tools": [{"name": "t"}]}),
        ] {
            let s = Script::default().page(ListKind::Tools, None, page.clone());
            assert_eq!(
                run(&s, CAPS).unwrap_err().reason(),
                "ProtocolError",
                "{page}"
            );
        }
        let ok = Script::default().page(
            ListKind::Tools,
            None,
            json!({"tools": [], "resultType": "complete"}),
        );
        assert!(run(&ok, CAPS).is_ok());
    }
}
