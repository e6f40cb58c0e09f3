//! Where list responses go. The transports (our SSE client, and our HTTP client under
//! rmcp's streamable HTTP transport) read the response to a list request themselves,
//! counting its bytes against `maxBytes` as they arrive, and leave the body here for the
//! session to read into the catalog (`page`). rmcp gets an empty result in its place:
//! it never parses a list page, and never holds one. (Its typed parse buffers the whole
//! message into serde's untagged-enum tree and then builds every tool: a 15 MB page of
//! 400,000 minimal tools took the operator from 65 MB to 751 MB before any cap was
//! looked at.)
//!
//! Every other message (handshake results, notifications, errors) is bounded by the
//! fixed [`MESSAGE_LIMIT`].

use super::error::{Cap, CrawlError};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::sync::Mutex;

/// Bound on any message other than a list page: handshake results, notifications,
/// JSON-RPC errors to anything but a list request. rmcp parses these, at up to about
/// thirty times their size in memory for hostile JSON, so the bound is kept small.
pub const MESSAGE_LIMIT: usize = 256 * 1024;

/// The list request in flight and the crawl's byte budget, shared by a session and its
/// transport.
#[derive(Debug)]
pub(crate) struct ListTap {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    max_bytes: usize,
    /// Bytes of list responses read in this crawl.
    used: usize,
    /// The list request whose response the transport is waiting for.
    pending: Option<RequestId>,
    /// Its response: the body (one JSON-RPC message), or why reading it failed.
    reply: Option<Result<Vec<u8>, CrawlError>>,
}

impl ListTap {
    pub fn new(max_bytes: usize) -> ListTap {
        ListTap {
            state: Mutex::new(State {
                max_bytes,
                used: 0,
                pending: None,
                reply: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes of list responses still allowed.
    pub fn remaining(&self) -> usize {
        let s = self.lock();
        s.max_bytes.saturating_sub(s.used)
    }

    /// Count `n` more bytes of list responses; over `maxBytes`, the crawl fails.
    pub fn charge(&self, n: usize) -> Result<(), CrawlError> {
        let mut s = self.lock();
        s.used = s.used.saturating_add(n);
        if s.used > s.max_bytes {
            return Err(self.over(&s));
        }
        Ok(())
    }

    fn over(&self, s: &State) -> CrawlError {
        CrawlError::OverCap {
            cap: Cap::MaxBytes,
            limit: s.max_bytes,
        }
    }

    /// The over-`maxBytes` failure.
    pub fn over_cap(&self) -> CrawlError {
        self.over(&self.lock())
    }

    /// A list request `id` was sent: its response is ours.
    pub fn expect(&self, id: RequestId) {
        let mut s = self.lock();
        s.pending = Some(id);
        s.reply = None;
    }

    /// The list request in flight, if any.
    pub fn pending(&self) -> Option<RequestId> {
        self.lock().pending.clone()
    }

    /// The response to the pending request (its body, or why it could not be read).
    pub fn put(&self, reply: Result<Vec<u8>, CrawlError>) {
        let mut s = self.lock();
        s.pending = None;
        s.reply = Some(reply);
    }

    /// Take the response left by the transport.
    pub fn take(&self) -> Option<Result<Vec<u8>, CrawlError>> {
        self.lock().reply.take()
    }
}

/// The id of `msg` when it is a list request (`tools/list`, `resources/list`,
/// `resources/templates/list`, `prompts/list`).
pub(crate) fn list_request_id(msg: &ClientJsonRpcMessage) -> Option<RequestId> {
    let ClientJsonRpcMessage::Request(r) = msg else {
        return None;
    };
    match r.request {
        ClientRequest::ListToolsRequest(_)
        | ClientRequest::ListResourcesRequest(_)
        | ClientRequest::ListResourceTemplatesRequest(_)
        | ClientRequest::ListPromptsRequest(_) => Some(r.id.clone()),
        _ => None,
    }
}

/// What rmcp gets instead of a list response: an empty result for the same id.
pub(crate) fn placeholder(id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::response(ServerResult::empty(()), id)
}

/// Whether `data` (one JSON-RPC message) is the response to request `id`: it has that
/// id and no method. Reads nothing but the two members.
pub(crate) fn answers(data: &str, id: &RequestId) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(default)]
        method: Option<IgnoredAny>,
    }
    let Ok(p) = serde_json::from_str::<Probe>(data) else {
        return false;
    };
    let Some(got) = p.id else { return false };
    if p.method.is_some() {
        return false;
    }
    let got: serde_json::Value = match serde_json::from_str(got.get()) {
        Ok(v) => v,
        Err(_) => return false,
    };
    serde_json::to_value(id).is_ok_and(|want| want == got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[test]
    fn the_budget_counts_every_page() {
        let tap = ListTap::new(10);
        assert!(tap.charge(6).is_ok());
        assert_eq!(tap.remaining(), 4);
        assert_eq!(
            tap.charge(5).unwrap_err(),
            CrawlError::OverCap {
                cap: Cap::MaxBytes,
                limit: 10
            }
        );
    }

    #[test]
    fn responses_are_told_from_other_messages() {
        let id = NumberOrString::Number(7);
        assert!(answers(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, &id));
        assert!(answers(r#"{"error":{"code":1,"message":"x"},"id":7}"#, &id));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, &id));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, &id));
        assert!(!answers(
            r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
            &id
        ));
        assert!(!answers("not json", &id));
        let sid = NumberOrString::String("a".into());
        assert!(answers(r#"{"id":"a","result":{}}"#, &sid));
    }
}
