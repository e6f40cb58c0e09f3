//! The HTTP client under rmcp's streamable HTTP transport: rmcp's own reqwest client for
//! everything but list requests, which this one POSTs and reads itself (see `tap`): the
//! body is read chunk by chunk against `maxBytes`, a JSON body or the event stream of
//! the answer alike, and left in the tap; rmcp gets a placeholder. Failures are reported
//! for what they are, and an event stream that rmcp saw break over its event limit is
//! recorded as that, not as a closed connection.

use super::error::{Cap, CrawlError, classify_chain, from_status};
use super::session::{FailureSlot, record_failure};
use super::sse::{EventParser, TooLarge};
use super::tap::{self, ListTap, MESSAGE_LIMIT};
use super::untrusted::{self, MAX_MESSAGE};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, RequestId};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

#[derive(Clone)]
pub(crate) struct Client {
    pub http: reqwest::Client,
    pub tap: Arc<ListTap>,
    pub failure: FailureSlot,
}

fn media_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

impl Client {
    /// POST a list request and read its response into the tap.
    async fn list(
        &self,
        uri: &str,
        message: &ClientJsonRpcMessage,
        id: &RequestId,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> std::result::Result<Vec<u8>, CrawlError> {
        const PHASE: &str = "a list request";
        let mut req = self
            .http
            .post(uri)
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .json(message);
        if let Some(a) = auth_header {
            req = req.bearer_auth(a);
        }
        let in_session = session_id.is_some();
        if let Some(s) = session_id {
            req = req.header(HEADER_SESSION_ID, s.as_ref());
        }
        for (name, value) in custom_headers {
            req = req.header(name, value);
        }
        let resp = req.send().await.map_err(|e| classify_chain(&e, PHASE))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            let challenge = resp
                .headers()
                .get(WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(|c| untrusted::line(c, MAX_MESSAGE));
            return Err(CrawlError::Unauthorized { status, challenge });
        }
        if status == 404 && in_session {
            // The session is gone: one crawl is one session, so this is the end of it.
            return Err(CrawlError::Http { status });
        }
        let media = media_type(&resp);
        if !(200..300).contains(&status) {
            // A JSON-RPC error on an error status is still the answer (some servers send
            // "method not found" with a 4xx); any other body is the status.
            if media == JSON_MIME_TYPE {
                let body = self.read_body(resp).await?;
                if std::str::from_utf8(&body).is_ok_and(|b| tap::answers(b, id)) {
                    return Ok(body);
                }
            }
            return Err(from_status(status));
        }
        if status == 202 || status == 204 {
            return Err(CrawlError::Protocol(format!(
                "the server answered a list request with HTTP {status} and no response"
            )));
        }
        match media.as_str() {
            JSON_MIME_TYPE => self.read_body(resp).await,
            EVENT_STREAM_MIME_TYPE => self.read_events(resp, id).await,
            other => Err(CrawlError::Protocol(format!(
                "a list request was answered with content type {:?}",
                untrusted::line(other, 64)
            ))),
        }
    }

    /// The whole body, refused as soon as it would go over what `maxBytes` leaves.
    async fn read_body(&self, resp: reqwest::Response) -> std::result::Result<Vec<u8>, CrawlError> {
        let remaining = self.tap.remaining();
        if resp.content_length().is_some_and(|n| n > remaining as u64) {
            return Err(self.tap.over_cap());
        }
        let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
        let mut chunks = resp.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| classify_chain(&e, "a list response"))?;
            self.tap.charge(chunk.len())?;
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// The event stream of the answer, up to the event that is the response to `id`
    /// (notifications before it are dropped: the crawler asked for none).
    async fn read_events(
        &self,
        resp: reqwest::Response,
        id: &RequestId,
    ) -> std::result::Result<Vec<u8>, CrawlError> {
        let mut parser = EventParser::new(self.tap.remaining());
        let mut ready = VecDeque::new();
        let mut chunks = resp.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| classify_chain(&e, "a list response"))?;
            self.tap.charge(chunk.len())?;
            parser
                .feed(&chunk, &mut ready)
                .map_err(|TooLarge| self.tap.over_cap())?;
            while let Some(event) = ready.pop_front() {
                if event.event == "message" && tap::answers(&event.data, id) {
                    return Ok(event.data.into_bytes());
                }
            }
        }
        Err(CrawlError::Closed(
            "the event stream of a list response ended before the response".into(),
        ))
    }
}

/// Over rmcp's event limit a response stream breaks; rmcp then reports a closed stream.
/// Record the cause.
fn watch_events(
    stream: BoxStream<'static, std::result::Result<Sse, SseError>>,
    failure: FailureSlot,
) -> BoxStream<'static, std::result::Result<Sse, SseError>> {
    stream
        .inspect(move |item| {
            if let Err(e) = item
                && e.to_string().contains("exceeded the maximum size")
            {
                record_failure(
                    &failure,
                    CrawlError::OverCap {
                        cap: Cap::Message,
                        limit: MESSAGE_LIMIT,
                    },
                );
            }
        })
        .boxed()
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        if let Some(id) = tap::list_request_id(&message) {
            self.tap.expect(id.clone());
            let read = self
                .list(&uri, &message, &id, session_id, auth_header, custom_headers)
                .await;
            self.tap.put(read);
            return Ok(StreamableHttpPostResponse::Json(tap::placeholder(id), None));
        }
        let response = self
            .http
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(match response {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(watch_events(stream, self.failure.clone()), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MESSAGE_LIMIT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
