//! Crawl failures: the public [`CrawlError`], its condition reasons, and the mapping from
//! the layered errors of rmcp, reqwest and our own transports onto it.
//!
//! Messages are built from error chains that never carry request headers, so a header
//! value read from a Secret cannot reach a status condition or a log.

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};
use std::error::Error as StdError;
use std::fmt;

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
    Connect(String),
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
    /// `cap` is `"maxTools"` or `"maxBytes"`.
    OverCap {
        cap: &'static str,
        limit: usize,
    },
    RepeatedCursor,
    TooManyPages {
        limit: usize,
    },
    Protocol(String),
}

impl CrawlError {
    /// A CamelCase constant for condition reasons and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            CrawlError::Refused { .. } => "AddressRefused",
            CrawlError::Redirect { .. } => "RedirectRefused",
            CrawlError::Connect(_) => "ConnectFailed",
            CrawlError::Timeout { .. } => "Timeout",
            CrawlError::Unauthorized { .. } => "Unauthorized",
            CrawlError::Http { .. } => "HttpError",
            CrawlError::OverCap { .. } => "OverCap",
            CrawlError::RepeatedCursor => "RepeatedCursor",
            CrawlError::TooManyPages { .. } => "TooManyPages",
            CrawlError::Protocol(_) => "ProtocolError",
        }
    }
}

impl fmt::Display for CrawlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrawlError::Refused { address, why } => {
                write!(f, "refused to connect to {address}: {why} address")
            }
            CrawlError::Redirect { to } => {
                write!(f, "refused to follow the server to another origin: {to}")
            }
            CrawlError::Connect(msg) => write!(f, "cannot reach the server: {msg}"),
            CrawlError::Timeout { phase: "deadline" } => {
                write!(f, "the crawl did not finish within its deadline")
            }
            CrawlError::Timeout { phase } => write!(f, "timed out waiting for {phase}"),
            CrawlError::Unauthorized {
                status,
                challenge: Some(c),
            } => write!(f, "the server answered HTTP {status}; it asks for: {c}"),
            CrawlError::Unauthorized {
                status,
                challenge: None,
            } => write!(f, "the server answered HTTP {status} without a challenge"),
            CrawlError::Http { status } => write!(f, "the server answered HTTP {status}"),
            CrawlError::OverCap { cap, limit } => {
                write!(f, "the catalog exceeds {cap} ({limit}); nothing was kept")
            }
            CrawlError::RepeatedCursor => {
                write!(f, "the server repeated a pagination cursor (a paging loop)")
            }
            CrawlError::TooManyPages { limit } => {
                write!(f, "a list did not end within {limit} pages")
            }
            CrawlError::Protocol(msg) => write!(f, "protocol error: {msg}"),
        }
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

/// The message of an error and its sources, with repeats dropped.
pub(crate) fn chain_message(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    while let Some(e) = cur {
        // rmcp's wrapper only adds the transport's Rust type name.
        if e.downcast_ref::<DynamicTransportError>().is_none() {
            let s = e.to_string();
            if !parts.iter().any(|p| p.contains(&s)) {
                parts.push(s);
            }
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// `HTTP 404 Not Found: …` as rmcp formats a non-JSON error response.
fn status_in_message(msg: &str) -> Option<u16> {
    let rest = msg.strip_prefix("HTTP ")?;
    let code = rest.get(..3)?;
    code.parse().ok().filter(|c| (100..600).contains(c))
}

fn from_status(status: u16) -> CrawlError {
    match status {
        401 | 403 => CrawlError::Unauthorized {
            status,
            challenge: None,
        },
        _ => CrawlError::Http { status },
    }
}

/// Map a transport-level error chain onto a [`CrawlError`]; `phase` names the request.
pub(crate) fn classify_chain(err: &(dyn StdError + 'static), phase: &'static str) -> CrawlError {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(Carried(c)) = e.downcast_ref::<Carried>() {
            return c.clone();
        }
        if let Some(a) = e.downcast_ref::<AuthRequiredError>() {
            return CrawlError::Unauthorized {
                status: 401,
                challenge: Some(a.www_authenticate_header.clone()),
            };
        }
        if let Some(a) = e.downcast_ref::<InsufficientScopeError>() {
            return CrawlError::Unauthorized {
                status: 403,
                challenge: Some(a.www_authenticate_header.clone()),
            };
        }
        if let Some(h) = e.downcast_ref::<HttpStatusError>() {
            return from_status(h.status);
        }
        if let Some(s) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match s {
                // Neither variant exposes its inner error as a source.
                StreamableHttpError::Client(inner) => return classify_chain(inner, phase),
                StreamableHttpError::HttpStatus(h) => return from_status(h.status),
                StreamableHttpError::UnexpectedServerResponse(msg) => {
                    if let Some(status) = status_in_message(msg) {
                        return from_status(status);
                    }
                }
                StreamableHttpError::SessionExpired => return CrawlError::Http { status: 404 },
                StreamableHttpError::ResponseBodyTooLarge { max_size } => {
                    return CrawlError::OverCap {
                        cap: "maxBytes",
                        limit: *max_size,
                    };
                }
                StreamableHttpError::UnexpectedContentType(ct) => {
                    return CrawlError::Protocol(format!(
                        "{phase}: unexpected content type {}",
                        ct.as_deref().unwrap_or("(none)")
                    ));
                }
                StreamableHttpError::Deserialize(e) => {
                    return CrawlError::Protocol(format!("{phase}: {e}"));
                }
                _ => {}
            }
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

/// Map a failed handshake.
pub(crate) fn from_init(err: &ClientInitializeError, failure: Option<CrawlError>) -> CrawlError {
    const PHASE: &str = "initialize";
    match err {
        ClientInitializeError::TransportError { error, .. } => classify_chain(error, PHASE),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            from_init(fallback, failure)
        }
        ClientInitializeError::ConnectionClosed(_) => failure.unwrap_or_else(|| {
            CrawlError::Connect("the server closed the connection during the handshake".into())
        }),
        ClientInitializeError::JsonRpcError(e) => {
            CrawlError::Protocol(format!("initialize rejected: {} ({})", e.message, e.code.0))
        }
        other => CrawlError::Protocol(format!("{PHASE}: {other}")),
    }
}

/// Map a failed request other than method-not-found, which callers handle first.
pub(crate) fn from_service(
    err: &ServiceError,
    phase: &'static str,
    failure: Option<CrawlError>,
) -> CrawlError {
    match err {
        ServiceError::TransportSend(e) => classify_chain(e, phase),
        ServiceError::TransportClosed => failure.unwrap_or_else(|| {
            CrawlError::Connect(format!("the connection closed during {phase}"))
        }),
        ServiceError::Timeout { .. } => CrawlError::Timeout { phase },
        ServiceError::McpError(e) => {
            CrawlError::Protocol(format!("{phase}: {} ({})", e.message, e.code.0))
        }
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
                cap: "maxTools",
                limit: 1,
            },
            CrawlError::RepeatedCursor,
            CrawlError::TooManyPages { limit: 3 },
            CrawlError::Protocol("x".into()),
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
}
