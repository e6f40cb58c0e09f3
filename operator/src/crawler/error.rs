//! Crawl failures: the public [`CrawlError`], its condition reasons, and the mapping from
//! the layered errors of rmcp, reqwest and our own transports onto it.
//!
//! Messages are built from error chains that never carry request headers, so a header
//! value read from a Secret cannot reach a status condition or a log. Whatever part of a
//! message the server chose (an error message, a challenge, a redirect target, a parser's
//! quote of the input) is bounded and escaped by `Display` (see [`super::untrusted`]): a
//! message is one line of at most [`MAX_MESSAGE`] bytes, wherever it is shown.

use super::untrusted::{self, MAX_MESSAGE};
use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};
use std::error::Error as StdError;
use std::fmt;

/// Which limit a crawl went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    /// `spec.crawl.maxTools`: tools across every page of `tools/list`.
    MaxTools,
    /// `spec.crawl.maxBytes`: bytes of list responses read, every page of every list.
    MaxBytes,
    /// The fixed bound on any other message (handshake results, notifications, errors).
    Message,
}

impl Cap {
    /// How the limit is named in messages: the spec field, or what the fixed one bounds.
    pub fn name(self) -> &'static str {
        match self {
            Cap::MaxTools => "maxTools",
            Cap::MaxBytes => "maxBytes",
            Cap::Message => "the message size limit",
        }
    }
}

/// Why a crawl failed. A failed crawl yields no catalog at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrawlError {
    /// The SSRF guard refused an address (after DNS resolution, or a literal IP).
    Refused {
        address: String,
        why: &'static str,
    },
    /// The server redirected (or, over SSE, pointed its endpoint) to another origin.
    Redirect {
        to: String,
    },
    /// No connection: DNS, TCP or TLS failed, or the URL cannot be used.
    Connect(String),
    /// Connected, but the server closed the connection or the stream before it answered.
    Closed(String),
    Timeout {
        phase: &'static str,
    },
    /// 401 or 403, with the server's `WWW-Authenticate` challenge when it sent one.
    Unauthorized {
        status: u16,
        challenge: Option<String>,
    },
    Http {
        status: u16,
    },
    /// Over a limit, reported with the limit that was configured (or the fixed one).
    OverCap {
        cap: Cap,
        limit: usize,
    },
    RepeatedCursor,
    TooManyPages {
        limit: usize,
    },
    /// The server did not speak MCP as expected: malformed or too deeply nested JSON,
    /// a wrong content type, a result of the wrong shape, an unknown protocol version.
    Protocol(String),
    /// The server answered a request with a JSON-RPC error (other than "method not
    /// found" on an optional list, which is normal).
    Rpc {
        phase: &'static str,
        code: i64,
        message: String,
    },
}

impl CrawlError {
    /// A CamelCase constant for condition reasons and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            CrawlError::Refused { .. } => "AddressRefused",
            CrawlError::Redirect { .. } => "RedirectRefused",
            CrawlError::Connect(_) => "ConnectFailed",
            CrawlError::Closed(_) => "ConnectionClosed",
            CrawlError::Timeout { .. } => "Timeout",
            CrawlError::Unauthorized { .. } => "Unauthorized",
            CrawlError::Http { .. } => "HttpError",
            CrawlError::OverCap { .. } => "OverCap",
            CrawlError::RepeatedCursor => "RepeatedCursor",
            CrawlError::TooManyPages { .. } => "TooManyPages",
            CrawlError::Protocol(_) => "ProtocolError",
            CrawlError::Rpc { .. } => "RpcError",
        }
    }

    /// A JSON-RPC error from the server; its message is kept bounded.
    pub(crate) fn rpc(phase: &'static str, code: i64, message: &str) -> CrawlError {
        CrawlError::Rpc {
            phase,
            code,
            message: untrusted::line(message, MAX_MESSAGE),
        }
    }

    /// The message before it is bounded and escaped.
    fn raw_message(&self) -> String {
        match self {
            CrawlError::Refused { address, why } => {
                format!("refused to connect to {address}: {why} address")
            }
            CrawlError::Redirect { to } => {
                format!("refused to follow the server to another origin: {to}")
            }
            CrawlError::Connect(msg) => format!("cannot reach the server: {msg}"),
            CrawlError::Closed(msg) => format!("the server closed the connection: {msg}"),
            CrawlError::Timeout { phase: "deadline" } => {
                "the crawl did not finish within its deadline".to_owned()
            }
            CrawlError::Timeout { phase } => format!("timed out waiting for {phase}"),
            CrawlError::Unauthorized {
                status,
                challenge: Some(c),
            } => format!("the server answered HTTP {status}; it asks for: {c}"),
            CrawlError::Unauthorized {
                status,
                challenge: None,
            } => format!("the server answered HTTP {status} without a challenge"),
            CrawlError::Http { status } => format!("the server answered HTTP {status}"),
            CrawlError::OverCap {
                cap: Cap::MaxTools,
                limit,
            } => format!("the server lists more than maxTools ({limit}) tools; nothing was kept"),
            CrawlError::OverCap {
                cap: Cap::MaxBytes,
                limit,
            } => format!(
                "the list responses exceed maxBytes ({limit} bytes); reading stopped there and nothing was kept"
            ),
            CrawlError::OverCap {
                cap: Cap::Message,
                limit,
            } => format!(
                "a message from the server exceeds {limit} bytes, the limit for messages other than list pages; nothing was kept"
            ),
            CrawlError::RepeatedCursor => {
                "the server repeated a pagination cursor (a paging loop)".to_owned()
            }
            CrawlError::TooManyPages { limit } => {
                format!("a list did not end within {limit} pages")
            }
            CrawlError::Protocol(msg) => format!("protocol error: {msg}"),
            CrawlError::Rpc {
                phase,
                code,
                message,
            } => format!("the server answered {phase} with error {code}: {message}"),
        }
    }
}

impl fmt::Display for CrawlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&untrusted::line(&self.raw_message(), MAX_MESSAGE))
    }
}

impl StdError for CrawlError {}

/// An error that already is a [`CrawlError`], carried through a transport's error type
/// (our SSE transport, the guarded resolver, the redirect policy) and found again by
/// [`classify_chain`].
#[derive(Debug)]
pub(crate) struct Carried(pub CrawlError);

impl fmt::Display for Carried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl StdError for Carried {}

/// The message of an error and its sources, with repeats dropped, bounded.
pub(crate) fn chain_message(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    while let Some(e) = cur {
        // rmcp's wrapper only adds the transport's Rust type name.
        if e.downcast_ref::<DynamicTransportError>().is_none() {
            let s = untrusted::line(&e.to_string(), MAX_MESSAGE);
            if !parts.iter().any(|p| p.contains(&s)) {
                parts.push(s);
            }
        }
        cur = e.source();
    }
    untrusted::line(&parts.join(": "), MAX_MESSAGE)
}

/// `HTTP 404 Not Found: …` as rmcp formats a non-JSON error response.
fn status_in_message(msg: &str) -> Option<u16> {
    let rest = msg.strip_prefix("HTTP ")?;
    let code = rest.get(..3)?;
    code.parse().ok().filter(|c| (100..600).contains(c))
}

pub(crate) fn from_status(status: u16) -> CrawlError {
    match status {
        401 | 403 => CrawlError::Unauthorized {
            status,
            challenge: None,
        },
        _ => CrawlError::Http { status },
    }
}

/// A JSON parse failure: nesting past the parser's limit says so; anything else is
/// malformed JSON. Both are protocol errors, never a connection problem.
pub(crate) fn from_json(phase: &str, e: &serde_json::Error) -> CrawlError {
    let msg = e.to_string();
    if msg.contains("recursion limit") {
        return CrawlError::Protocol(format!("{phase}: the JSON is nested too deeply ({msg})"));
    }
    CrawlError::Protocol(format!("{phase}: malformed JSON-RPC message: {msg}"))
}

/// What rmcp's bounded SSE reader says when an event is over its limit.
fn event_too_large(msg: &str) -> bool {
    msg.contains("exceeded the maximum size")
}

/// Map a transport-level error chain onto a [`CrawlError`]; `phase` names the request.
pub(crate) fn classify_chain(err: &(dyn StdError + 'static), phase: &'static str) -> CrawlError {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(Carried(c)) = e.downcast_ref::<Carried>() {
            return c.clone();
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(Carried(c)) = io.get_ref().and_then(|i| i.downcast_ref::<Carried>())
        {
            return c.clone();
        }
        if let Some(a) = e.downcast_ref::<AuthRequiredError>() {
            return CrawlError::Unauthorized {
                status: 401,
                challenge: Some(untrusted::line(&a.www_authenticate_header, MAX_MESSAGE)),
            };
        }
        if let Some(a) = e.downcast_ref::<InsufficientScopeError>() {
            return CrawlError::Unauthorized {
                status: 403,
                challenge: Some(untrusted::line(&a.www_authenticate_header, MAX_MESSAGE)),
            };
        }
        if let Some(h) = e.downcast_ref::<HttpStatusError>() {
            return from_status(h.status);
        }
        if let Some(s) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match s {
                // Neither variant exposes its inner error as a source.
                StreamableHttpError::Client(inner) => return classify_chain(inner, phase),
                StreamableHttpError::Io(inner) => return classify_chain(inner, phase),
                StreamableHttpError::HttpStatus(h) => return from_status(h.status),
                StreamableHttpError::UnexpectedServerResponse(msg) => {
                    return match status_in_message(msg) {
                        Some(status) => from_status(status),
                        None => CrawlError::Protocol(format!("{phase}: {msg}")),
                    };
                }
                StreamableHttpError::SessionExpired => return CrawlError::Http { status: 404 },
                // Only messages other than list pages are read by rmcp: list pages are
                // read by our own client (`http`), against maxBytes.
                StreamableHttpError::ResponseBodyTooLarge { max_size } => {
                    return CrawlError::OverCap {
                        cap: Cap::Message,
                        limit: *max_size,
                    };
                }
                StreamableHttpError::Sse(e) => {
                    let msg = e.to_string();
                    return if event_too_large(&msg) {
                        // rmcp reads only messages other than list pages, and its event
                        // limit is the message limit.
                        CrawlError::OverCap {
                            cap: Cap::Message,
                            limit: super::tap::MESSAGE_LIMIT,
                        }
                    } else {
                        CrawlError::Closed(format!("the event stream of {phase} broke: {msg}"))
                    };
                }
                StreamableHttpError::UnexpectedEndOfStream
                | StreamableHttpError::TransportChannelClosed => {
                    return CrawlError::Closed(format!("during {phase}"));
                }
                StreamableHttpError::UnexpectedContentType(ct) => {
                    return CrawlError::Protocol(format!(
                        "{phase}: unexpected content type {}",
                        ct.as_deref().unwrap_or("(none)")
                    ));
                }
                StreamableHttpError::Deserialize(e) => return from_json(phase, e),
                _ => {}
            }
        }
        if let Some(j) = e.downcast_ref::<serde_json::Error>() {
            return from_json(phase, j);
        }
        if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            // The resolver's and redirect policy's own errors sit below reqwest's.
            if let Some(inner) = r.source().map(|s| classify_chain(s, phase))
                && matches!(
                    inner,
                    CrawlError::Refused { .. } | CrawlError::Redirect { .. }
                )
            {
                return inner;
            }
            if r.is_timeout() {
                return CrawlError::Timeout { phase };
            }
            if let Some(status) = r.status() {
                return from_status(status.as_u16());
            }
            if r.is_connect() {
                return CrawlError::Connect(chain_message(e));
            }
            if r.is_body() || r.is_decode() {
                return CrawlError::Closed(format!(
                    "the response to {phase} broke off: {}",
                    chain_message(e)
                ));
            }
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return CrawlError::Timeout { phase };
        }
        cur = e.source();
    }
    CrawlError::Connect(chain_message(err))
}

/// Map a failed handshake; `failure` is what our own transport recorded, if anything.
pub(crate) fn from_init(err: &ClientInitializeError, failure: Option<CrawlError>) -> CrawlError {
    const PHASE: &str = "initialize";
    if let Some(f) = failure {
        return f;
    }
    match err {
        ClientInitializeError::TransportError { error, .. } => classify_chain(error, PHASE),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => from_init(fallback, None),
        ClientInitializeError::ConnectionClosed(_) => {
            CrawlError::Closed("during the handshake".into())
        }
        ClientInitializeError::JsonRpcError(e) => from_error_data(PHASE, e),
        other => CrawlError::Protocol(format!("{PHASE}: {other}")),
    }
}

/// A JSON-RPC error that reached rmcp: a response stream that rmcp saw break is its
/// own error object (marked as such); anything else is the server's.
fn from_error_data(phase: &'static str, e: &rmcp::model::ErrorData) -> CrawlError {
    let closed = e
        .data
        .as_ref()
        .and_then(|d| d.get("io.modelcontextprotocol/transportClosed"))
        .is_some();
    if closed {
        return CrawlError::Closed(format!("the response stream of {phase} ended early"));
    }
    CrawlError::rpc(phase, i64::from(e.code.0), &e.message)
}

/// Map a failed request other than method-not-found, which callers handle first;
/// `failure` is what our own transport recorded, if anything: the cause, where rmcp
/// saw only a consequence (a closed channel, a broken stream).
pub(crate) fn from_service(
    err: &ServiceError,
    phase: &'static str,
    failure: Option<CrawlError>,
) -> CrawlError {
    if let Some(f) = failure {
        return f;
    }
    match err {
        ServiceError::TransportSend(e) => classify_chain(e, phase),
        ServiceError::TransportClosed => CrawlError::Closed(format!("during {phase}")),
        ServiceError::Timeout { .. } => CrawlError::Timeout { phase },
        ServiceError::McpError(e) => from_error_data(phase, e),
        other => CrawlError::Protocol(format!("{phase}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_distinct_camel_case_constants() {
        let all = [
            CrawlError::Refused {
                address: "10.0.0.1".into(),
                why: "private",
            },
            CrawlError::Redirect { to: "x".into() },
            CrawlError::Connect("x".into()),
            CrawlError::Timeout {
                phase: "tools/list",
            },
            CrawlError::Unauthorized {
                status: 401,
                challenge: None,
            },
            CrawlError::Http { status: 500 },
            CrawlError::OverCap {
                cap: Cap::MaxTools,
                limit: 1,
            },
            CrawlError::RepeatedCursor,
            CrawlError::TooManyPages { limit: 3 },
            CrawlError::Protocol("x".into()),
            CrawlError::Closed("x".into()),
            CrawlError::rpc("tools/list", -32603, "x"),
        ];
        let reasons: std::collections::BTreeSet<_> = all.iter().map(|e| e.reason()).collect();
        assert_eq!(reasons.len(), all.len());
        for r in reasons {
            assert!(r.chars().next().unwrap().is_ascii_uppercase());
            assert!(r.chars().all(|c| c.is_ascii_alphanumeric()));
        }
    }

    #[test]
    fn rmcp_status_messages_parse() {
        assert_eq!(status_in_message("HTTP 404 Not Found: nope"), Some(404));
        assert_eq!(status_in_message("HTTP 401 Unauthorized: "), Some(401));
        assert_eq!(status_in_message("HTTP x"), None);
        assert_eq!(status_in_message("oops"), None);
    }

    #[test]
    fn carried_errors_are_found_through_a_chain() {
        #[derive(Debug)]
        struct Outer(Carried);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("outer")
            }
        }
        impl StdError for Outer {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(Carried(CrawlError::Http { status: 502 }));
        assert_eq!(
            classify_chain(&e, "tools/list"),
            CrawlError::Http { status: 502 }
        );
    }

    #[test]
    fn over_cap_messages_name_the_configured_limit() {
        let e = CrawlError::OverCap {
            cap: Cap::MaxBytes,
            limit: 4194304,
        };
        assert_eq!(e.reason(), "OverCap");
        assert!(e.to_string().contains("maxBytes (4194304 bytes)"), "{e}");
        let e = CrawlError::OverCap {
            cap: Cap::MaxTools,
            limit: 10000,
        };
        assert!(e.to_string().contains("maxTools (10000)"), "{e}");
        let e = CrawlError::OverCap {
            cap: Cap::Message,
            limit: 262144,
        };
        assert!(e.to_string().contains("262144 bytes"), "{e}");
        assert!(!e.to_string().contains("maxBytes"), "{e}");
    }

    /// Regression (issue 10, §7): a 2 MB JSON-RPC error message full of escape bytes
    /// became a 2 MB condition message (refused by the API server) and raw escapes on a
    /// terminal. Every message is now one escaped line of at most MAX_MESSAGE bytes.
    #[test]
    fn server_text_in_messages_is_bounded_and_escaped() {
        let evil = "\u{1b}[31mRED\u{1b}[0m\u{7}\rfake\nlevel=error msg=forged\u{202e}x ";
        let huge = evil.repeat(2 * 1024 * 1024 / evil.len() + 1);
        for e in [
            CrawlError::rpc("tools/list", -32603, &huge),
            CrawlError::Protocol(huge.clone()),
            CrawlError::Connect(huge.clone()),
            CrawlError::Closed(huge.clone()),
            CrawlError::Redirect { to: huge.clone() },
            CrawlError::Unauthorized {
                status: 401,
                challenge: Some(huge.clone()),
            },
        ] {
            let m = e.to_string();
            assert!(m.len() <= MAX_MESSAGE, "{}: {} bytes", e.reason(), m.len());
            assert!(
                !m.chars().any(|c| c.is_control() || untrusted::is_unsafe(c)),
                "{}: {m:?}",
                e.reason()
            );
            assert!(m.contains("\\u{1b}[31mRED"), "{m}");
        }
        // The stored message of an RPC error is bounded too, not only its display.
        let CrawlError::Rpc { message, .. } = CrawlError::rpc("initialize", 1, &huge) else {
            unreachable!()
        };
        assert!(message.len() <= MAX_MESSAGE);
    }

    /// Regression (issue 10, §8): JSON nested past the parser's limit was reported as
    /// "cannot reach the server" (ConnectFailed).
    #[test]
    fn unparsable_and_too_deep_json_are_protocol_errors() {
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let err = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        let e = from_json("tools/list", &err);
        assert_eq!(e.reason(), "ProtocolError");
        assert!(e.to_string().contains("nested too deeply"), "{e}");
        // As rmcp reports it: a body it could not parse.
        let rmcp_err: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::UnexpectedServerResponse(
                "failed to parse JSON-RPC message: recursion limit exceeded".into(),
            );
        let e = classify_chain(&rmcp_err, "initialize");
        assert_eq!(e.reason(), "ProtocolError", "{e}");
        let e = classify_chain(
            &StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(
                "HTTP 502 Bad Gateway: x".into(),
            ),
            "initialize",
        );
        assert_eq!(e, CrawlError::Http { status: 502 });
        // A body over rmcp's limit is over the message limit, not maxBytes.
        let e = classify_chain(
            &StreamableHttpError::<reqwest::Error>::ResponseBodyTooLarge { max_size: 7 },
            "initialize",
        );
        assert_eq!(
            e,
            CrawlError::OverCap {
                cap: Cap::Message,
                limit: 7
            }
        );
    }

    #[test]
    fn a_cause_recorded_by_our_transport_wins_over_what_rmcp_saw() {
        let cause = CrawlError::OverCap {
            cap: Cap::MaxBytes,
            limit: 9,
        };
        assert_eq!(
            from_service(
                &ServiceError::TransportClosed,
                "tools/list",
                Some(cause.clone())
            ),
            cause
        );
        assert_eq!(
            from_service(&ServiceError::TransportClosed, "tools/list", None).reason(),
            "ConnectionClosed"
        );
        let e = from_service(
            &ServiceError::McpError(rmcp::model::ErrorData::internal_error("boom", None)),
            "tools/list",
            None,
        );
        assert_eq!(e.reason(), "RpcError");
        assert!(e.to_string().contains("error -32603: boom"), "{e}");
        let io = std::io::Error::other(Carried(cause.clone()));
        assert_eq!(classify_chain(&io, "tools/list"), cause);
    }
}
