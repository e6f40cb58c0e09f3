//! A small client for the legacy HTTP+SSE transport (protocol 2024-11-05), which rmcp
//! no longer ships, as an rmcp [`Transport`] so the handshake and requests are rmcp's.
//!
//! The protocol: GET the SSE URL and keep the stream open; its first `endpoint` event
//! names (relative to the SSE URL) where to POST JSON-RPC messages; every reply arrives
//! on the stream as a `message` event. The endpoint must be on the SSE URL's origin, or
//! a server could send the crawler's headers anywhere. rmcp sees only a closed channel
//! when the stream fails, so the cause is left in the session's failure slot.
//!
//! The response to a list request is not handed to rmcp: it goes to the session's tap
//! (see `tap`), counted against `maxBytes`, and rmcp gets a placeholder. While a list
//! request is pending an event may be as large as what `maxBytes` leaves; otherwise
//! (the endpoint event, handshake results, notifications) [`MESSAGE_LIMIT`] bounds it.

use super::error::{Cap, Carried, CrawlError, classify_chain, from_json, from_status};
use super::guard;
use super::session::{FailureSlot, record_failure};
use super::tap::{self, ListTap, MESSAGE_LIMIT};
use super::untrusted::{self, MAX_MESSAGE};
use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Replies buffered between the stream reader and rmcp.
const INBOUND_BUFFER: usize = 64;

/// One server-sent event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub event: String,
    pub data: String,
}

/// An event went over the parser's limit (the caller knows which limit that was).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// Incremental `text/event-stream` parser (the WHATWG rules the transport needs: `event`
/// and `data` fields, comments, CR/LF/CRLF line ends split anywhere across chunks). An
/// event is never held beyond `max_event` bytes, and a one-line event's data is the
/// line's own buffer, not a copy.
pub(crate) struct EventParser {
    line: Vec<u8>,
    event: String,
    data: String,
    after_cr: bool,
    max_event: usize,
}

impl EventParser {
    pub fn new(max_event: usize) -> Self {
        EventParser {
            line: Vec::new(),
            event: String::new(),
            data: String::new(),
            after_cr: false,
            max_event,
        }
    }

    /// Change the limit for what is read from now on.
    pub fn set_limit(&mut self, max_event: usize) {
        self.max_event = max_event;
    }

    /// Parse a chunk, appending completed events to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Event>) -> Result<(), TooLarge> {
        for &b in chunk {
            match b {
                // The LF of a CRLF split across chunks ends nothing new.
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    self.end_line(out);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                    if self.line.len() + self.data.len() > self.max_event {
                        return Err(TooLarge);
                    }
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut VecDeque<Event>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = match String::from_utf8(raw) {
            Ok(l) => l,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        if line.is_empty() {
            // A blank line dispatches; an event without data is dropped.
            let event = std::mem::take(&mut self.event);
            if !self.data.is_empty() {
                let mut data = std::mem::take(&mut self.data);
                data.pop(); // the newline after the last data line
                out.push_back(Event {
                    event: if event.is_empty() {
                        "message".to_owned()
                    } else {
                        event
                    },
                    data,
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value_at) = match line.find(':') {
            Some(i) => {
                let v = i + 1;
                (i, if line[v..].starts_with(' ') { v + 1 } else { v })
            }
            None => (line.len(), line.len()),
        };
        match &line[..field] {
            "event" => self.event = line[value_at..].to_owned(),
            "data" if self.data.is_empty() => {
                // The first data line becomes the data, in place.
                line.drain(..value_at);
                self.data = line;
                self.data.push('\n');
            }
            "data" => {
                self.data.push_str(&line[value_at..]);
                self.data.push('\n');
            }
            // `id` and `retry` serve reconnection, which a crawl does not do.
            _ => {}
        }
    }
}

/// Events from an HTTP body.
struct EventStream<S> {
    body: S,
    parser: EventParser,
    ready: VecDeque<Event>,
    tap: Arc<ListTap>,
}

impl<S, B> EventStream<S>
where
    S: Stream<Item = reqwest::Result<B>> + Unpin,
    B: AsRef<[u8]>,
{
    async fn next(&mut self) -> Result<Option<Event>, CrawlError> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Ok(Some(e));
            }
            match self.body.next().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(classify_chain(&e, "the SSE stream")),
                Some(Ok(chunk)) => {
                    // While a list request is pending, the event being read may be its
                    // response: as large as maxBytes still allows.
                    let listing = self.tap.pending().is_some();
                    let limit = if listing {
                        self.tap.remaining().max(MESSAGE_LIMIT)
                    } else {
                        MESSAGE_LIMIT
                    };
                    self.parser.set_limit(limit);
                    self.parser
                        .feed(chunk.as_ref(), &mut self.ready)
                        .map_err(|TooLarge| {
                            if listing {
                                self.tap.over_cap()
                            } else {
                                CrawlError::OverCap {
                                    cap: Cap::Message,
                                    limit: MESSAGE_LIMIT,
                                }
                            }
                        })?;
                }
            }
        }
    }
}

/// 2xx passes; 401/403 carry the server's challenge; anything else is an HTTP error.
fn check_status(resp: &reqwest::Response) -> Result<(), CrawlError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let code = status.as_u16();
    if code == 401 || code == 403 {
        let challenge = resp
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(|c| untrusted::line(c, MAX_MESSAGE));
        return Err(CrawlError::Unauthorized {
            status: code,
            challenge,
        });
    }
    Err(from_status(code))
}

/// The open stream and the endpoint it announced, as an rmcp transport.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    inbound: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
    failure: FailureSlot,
    tap: Arc<ListTap>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Open the stream and wait for its endpoint event.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: Url,
    tap: Arc<ListTap>,
    failure: FailureSlot,
) -> Result<SseTransport, CrawlError> {
    let resp = client
        .get(url.clone())
        .header(ACCEPT, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache")
        .send()
        .await
        .map_err(|e| classify_chain(&e, "connect"))?;
    check_status(&resp)?;
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !content_type.starts_with("text/event-stream") {
        return Err(CrawlError::Protocol(format!(
            "the SSE URL answered with content type {:?}, not an event stream",
            untrusted::line(&content_type, 64)
        )));
    }
    let mut events = EventStream {
        body: resp.bytes_stream(),
        parser: EventParser::new(MESSAGE_LIMIT),
        ready: VecDeque::new(),
        tap: tap.clone(),
    };
    let announced = loop {
        match events.next().await? {
            Some(e) if e.event == "endpoint" => break e.data,
            // Nothing else is meaningful before the endpoint is known.
            Some(_) => continue,
            None => {
                return Err(CrawlError::Closed(
                    "the SSE stream ended before announcing its endpoint".into(),
                ));
            }
        }
    };
    let endpoint = url
        .join(announced.trim())
        .map_err(|e| CrawlError::Protocol(format!("the SSE endpoint event is not a URL: {e}")))?;
    guard::check_same_origin(&url, &endpoint)?;
    let (tx, inbound) = mpsc::channel(INBOUND_BUFFER);
    let reader = tokio::spawn(read_messages(events, tx, failure.clone()));
    Ok(SseTransport {
        client,
        endpoint,
        inbound,
        reader,
        failure,
        tap,
    })
}

/// Forward `message` events to rmcp until the stream ends or fails; then record why and
/// close the channel, which rmcp sees as the transport closing. The response to the
/// pending list request goes to the tap instead, and rmcp gets a placeholder.
async fn read_messages<S, B>(
    mut events: EventStream<S>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    failure: FailureSlot,
) where
    S: Stream<Item = reqwest::Result<B>> + Unpin,
    B: AsRef<[u8]>,
{
    let why = loop {
        match events.next().await {
            Ok(Some(e)) if e.event == "message" => {
                let tap = &events.tap;
                if let Some(id) = tap.pending()
                    && tap::answers(&e.data, &id)
                {
                    let read = tap.charge(e.data.len()).map(|()| e.data.into_bytes());
                    tap.put(read);
                    if tx.send(tap::placeholder(id)).await.is_err() {
                        return;
                    }
                    continue;
                }
                if e.data.len() > MESSAGE_LIMIT {
                    break CrawlError::OverCap {
                        cap: Cap::Message,
                        limit: MESSAGE_LIMIT,
                    };
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&e.data) {
                    Ok(msg) => {
                        if tx.send(msg).await.is_err() {
                            return; // the session is gone
                        }
                    }
                    Err(err) => break from_json("an SSE message", &err),
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => break CrawlError::Closed("the server closed the SSE stream".into()),
            Err(e) => break e,
        }
    };
    // A list request waiting for its response learns why it never came.
    if events.tap.pending().is_some() {
        events.tap.put(Err(why.clone()));
    }
    record_failure(&failure, why);
}

async fn post(
    client: reqwest::Client,
    endpoint: Url,
    message: ClientJsonRpcMessage,
) -> Result<(), CrawlError> {
    let resp = client
        .post(endpoint)
        .json(&message)
        .send()
        .await
        .map_err(|e| classify_chain(&e, "connect"))?;
    // The body ("Accepted") carries nothing: replies come on the stream.
    check_status(&resp)
}

impl Transport<RoleClient> for SseTransport {
    type Error = Carried;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let failure = self.failure.clone();
        if let Some(id) = tap::list_request_id(&item) {
            self.tap.expect(id);
        }
        async move {
            post(client, endpoint, item).await.map_err(|e| {
                record_failure(&failure, e.clone());
                Carried(e)
            })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &str, size: usize) -> Vec<Event> {
        let mut p = EventParser::new(1 << 16);
        let mut out = VecDeque::new();
        for chunk in input.as_bytes().chunks(size) {
            p.feed(chunk, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    #[test]
    fn parses_events_however_the_body_is_chunked() {
        let input = ": keepalive\r\nevent: endpoint\r\ndata: /message?sessionId=1\r\n\r\n\
                     data: {\"a\":\ndata: 1}\n\nevent:message\rdata:x\r\r\
                     event: empty\n\n";
        let want = vec![
            Event {
                event: "endpoint".into(),
                data: "/message?sessionId=1".into(),
            },
            Event {
                event: "message".into(),
                data: "{\"a\":\n1}".into(),
            },
            Event {
                event: "message".into(),
                data: "x".into(),
            },
        ];
        for size in [1, 2, 3, 7, 1000] {
            assert_eq!(parse_in_chunks(input, size), want, "chunk size {size}");
        }
    }

    #[test]
    fn an_oversized_event_is_refused() {
        let mut p = EventParser::new(16);
        let mut out = VecDeque::new();
        let err = p
            .feed(b"data: 0123456789abcdefghij\n\n", &mut out)
            .unwrap_err();
        assert_eq!(err, TooLarge);
        // Within the limit, over several data lines.
        let mut p = EventParser::new(16);
        p.feed(b"data: 0123\ndata: 4567\n\n", &mut out).unwrap();
        assert_eq!(out.pop_front().unwrap().data, "0123\n4567");
    }
}
