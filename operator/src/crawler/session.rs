//! One MCP session over rmcp: the handshake with a fixed client identity and capability
//! set, protocol version negotiation, requests bounded by the per-request timeout and the
//! crawl deadline, and closing.
//!
//! Requests go through `Peer::send_request` rather than `Peer::list_*`: the latter read
//! and fill rmcp's response cache and may answer a failed re-list with a stale cached
//! page. The cache is also switched off, in case a later rmcp routes more through it.
//! The responses to list requests never reach rmcp at all: the transports leave them
//! in the session's tap (`tap`), and `list_page` reads them (`page`).

use super::catalog::Agreed;
use super::changes::{Handler, ListChanged};
use super::error::{self, CrawlError};
use super::page::{self, Position};
use super::tap::{ListTap, MESSAGE_LIMIT};
use super::untrusted;
use super::{NetPolicy, Target, Transport, guard, http, sse};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, ErrorCode, Implementation,
    InitializeRequestParams, PaginatedRequestParams, ProtocolVersion, RequestOptionalParam,
    ServerCapabilities, SubscriptionFilter,
};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// `clientInfo.name` on every crawl; the version is this crate's.
pub const CLIENT_NAME: &str = "mcpgov-crawler";

/// How long a finished session may take to close (a DELETE of its HTTP session) in the
/// background; the crawl does not wait for it.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Longest `serverInfo.name` or `.version` kept.
const MAX_SERVER_INFO: usize = 256;

/// The capabilities the crawler declares: none of the optional client capabilities
/// (no sampling, roots or elicitation), so servers have nothing to ask of it.
fn declared_capabilities() -> ClientCapabilities {
    ClientCapabilities::default()
}

/// The declared client capabilities as JSON (an empty object), as recorded in catalogs.
pub fn client_capabilities() -> Value {
    serde_json::to_value(declared_capabilities())
        .unwrap_or_else(|_| Value::Object(Default::default()))
}

fn client_config() -> ClientConfig {
    InitializeRequestParams::new(
        declared_capabilities(),
        Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Where a transport reports why it failed when all rmcp sees is a closed channel.
pub(crate) type FailureSlot = Arc<Mutex<Option<CrawlError>>>;

pub(crate) fn record_failure(slot: &FailureSlot, err: CrawlError) {
    let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
    // The first failure is the cause; later ones are consequences.
    if s.is_none() {
        *s = Some(err);
    }
}

/// Which list a listing request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    /// The result field holding the items.
    pub fn field(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    fn request(self, cursor: Option<String>) -> ClientRequest {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        match self {
            ListKind::Tools => {
                ClientRequest::ListToolsRequest(RequestOptionalParam::with_param(params))
            }
            ListKind::Resources => {
                ClientRequest::ListResourcesRequest(RequestOptionalParam::with_param(params))
            }
            ListKind::ResourceTemplates => ClientRequest::ListResourceTemplatesRequest(
                RequestOptionalParam::with_param(params),
            ),
            ListKind::Prompts => {
                ClientRequest::ListPromptsRequest(RequestOptionalParam::with_param(params))
            }
        }
    }
}

pub(crate) struct Session {
    running: Option<RunningService<RoleClient, Handler>>,
    /// Raised by the handler on a list-changed notification.
    changed: Arc<Notify>,
    failure: FailureSlot,
    agreed: Agreed,
    /// 2026-07-28 or later: list changes come only through `subscriptions/listen`.
    modern: bool,
    server_capabilities: ServerCapabilities,
    request_timeout: Duration,
    deadline: Instant,
    tap: Arc<ListTap>,
}

/// Run `fut` within `limit`, capped by the crawl deadline; a timeout names `phase`, or
/// "deadline" when the crawl deadline is what ran out.
pub(crate) async fn bounded<T>(
    limit: Duration,
    deadline: Instant,
    phase: &'static str,
    fut: impl Future<Output = T>,
) -> Result<T, CrawlError> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let (limit, phase) = if remaining < limit {
        (remaining, "deadline")
    } else {
        (limit, phase)
    };
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| CrawlError::Timeout { phase })
}

impl Session {
    /// Connect and complete the handshake.
    pub async fn open(
        target: &Target,
        net: &NetPolicy,
        deadline: Instant,
    ) -> Result<Session, CrawlError> {
        let url = guard::check_url(&target.url, net)?;
        let client = guard::http_client(&target.headers, net, target.request_timeout)?;
        let failure = FailureSlot::default();
        let tap = Arc::new(ListTap::new(target.max_bytes));
        let rt = target.request_timeout;
        let started = Instant::now();
        let handler = Handler::new(client_config());
        let changed = handler.changed();
        let running = match target.transport {
            Transport::StreamableHttp => {
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    // One crawl is one session: a server that drops it fails the crawl
                    // rather than having the catalog stitched from two sessions.
                    .reinit_on_expired_session(false)
                    // List responses are read by `http::Client` against maxBytes; rmcp
                    // reads only the rest.
                    .max_json_response_size(MESSAGE_LIMIT)
                    .max_sse_event_size(MESSAGE_LIMIT)
                    .control_request_timeout(rt)
                    .max_concurrent_requests(1);
                let http = http::Client {
                    http: client.clone(),
                    tap: tap.clone(),
                    failure: failure.clone(),
                };
                let transport =
                    || StreamableHttpClientTransport::with_client(http.clone(), config.clone());
                // `server/discover` first (2026-07-28); a server that rejects it as
                // unknown gets the `initialize` handshake (2025-11-25 and older).
                let lifecycle = ClientLifecycleMode::Auto {
                    preferred_versions: vec![
                        ProtocolVersion::V_2026_07_28,
                        ProtocolVersion::V_2025_11_25,
                    ],
                    legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
                };
                // Up to two requests: the discover probe and the legacy fallback.
                let first = bounded(
                    rt.saturating_mul(2),
                    deadline,
                    "initialize",
                    serve_client_with_lifecycle(handler.clone(), transport(), lifecycle),
                )
                .await?;
                match first {
                    // Older servers may answer an unknown method (the discover probe)
                    // with an empty success instead of -32601; rmcp falls back only on
                    // an error. Anything that is not a discover result means "not a
                    // 2026-07-28 server": start over with `initialize` on a fresh
                    // transport, as the spec's backward-compatibility rules ask.
                    Err(ClientInitializeError::ExpectedInitResult(_)) => {
                        tracing::debug!(url = %url, "discover probe not understood; initialize instead");
                        bounded(
                            rt,
                            deadline,
                            "initialize",
                            serve_client_with_lifecycle(
                                handler,
                                transport(),
                                ClientLifecycleMode::Initialize,
                            ),
                        )
                        .await?
                    }
                    other => other,
                }
            }
            Transport::Sse => {
                let transport = bounded(
                    rt,
                    deadline,
                    "connect",
                    sse::connect(client, url.clone(), tap.clone(), failure.clone()),
                )
                .await??;
                // The legacy transport predates discovery: `initialize` only.
                bounded(
                    rt,
                    deadline,
                    "initialize",
                    serve_client_with_lifecycle(
                        handler,
                        transport,
                        ClientLifecycleMode::Initialize,
                    ),
                )
                .await?
            }
        }
        .map_err(|e| error::from_init(&e, taken(&failure)))?;

        // Nothing read through rmcp's cache, ever: see the module comment.
        running
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;

        let info = running
            .peer()
            .peer_info()
            .ok_or_else(|| CrawlError::Protocol("the handshake left no server info".into()))?;
        let version = info.protocol_version.clone();
        if !ProtocolVersion::KNOWN_VERSIONS.contains(&version) {
            return Err(CrawlError::Protocol(format!(
                "the server agreed to protocol version {}, which this client does not speak",
                untrusted::line(version.as_str(), 64)
            )));
        }
        // serverInfo is the server's to say: kept escaped and bounded.
        let agreed = Agreed {
            protocol_version: version.as_str().to_owned(),
            server_name: info
                .server_info
                .as_ref()
                .map(|i| untrusted::line(&i.name, MAX_SERVER_INFO))
                .unwrap_or_default(),
            server_version: info
                .server_info
                .as_ref()
                .map(|i| untrusted::line(&i.version, MAX_SERVER_INFO))
                .filter(|v| !v.is_empty()),
            client_capabilities: client_capabilities(),
        };
        tracing::debug!(
            url = %url,
            protocol = %agreed.protocol_version,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "crawler handshake done"
        );
        Ok(Session {
            running: Some(running),
            changed,
            failure,
            agreed,
            modern: version >= ProtocolVersion::V_2026_07_28,
            server_capabilities: info.capabilities.clone(),
            request_timeout: rt,
            deadline,
            tap,
        })
    }

    pub fn agreed(&self) -> Agreed {
        self.agreed.clone()
    }

    /// Whether the server declared the capability behind `kind`.
    pub fn declares(&self, kind: ListKind) -> bool {
        let c = &self.server_capabilities;
        match kind {
            ListKind::Tools => c.tools.is_some(),
            ListKind::Resources | ListKind::ResourceTemplates => c.resources.is_some(),
            ListKind::Prompts => c.prompts.is_some(),
        }
    }

    /// One page of a list, bounded by the request timeout and the crawl deadline, read
    /// into the catalog's items; with the bytes it took.
    pub async fn list_page(
        &self,
        kind: ListKind,
        cursor: Option<String>,
        at: Position,
    ) -> Result<(page::Reply, usize), CrawlError> {
        let phase = kind.method();
        let Some(running) = self.running.as_ref() else {
            return Err(CrawlError::Closed(format!(
                "the session closed before {phase}"
            )));
        };
        self.tap.take();
        let sent = running.peer().send_request(kind.request(cursor));
        let answered = bounded(self.request_timeout, self.deadline, phase, sent).await?;
        match (self.tap.take(), answered) {
            (Some(Ok(body)), _) => {
                let bytes = body.len();
                // Parsing a large page is CPU work: off the async workers.
                let deadline = self.deadline;
                let reply = tokio::task::spawn_blocking(move || {
                    page::read(kind, &body, at, &page::Clock::until(deadline))
                })
                .await
                .map_err(|e| CrawlError::Protocol(format!("{phase}: {e}")))??;
                Ok((reply, bytes))
            }
            (Some(Err(e)), _) => Err(e),
            (None, Ok(_)) => Err(CrawlError::Protocol(format!(
                "{phase}: the response never reached the crawler"
            ))),
            (None, Err(rmcp::ServiceError::McpError(e)))
                if e.code == ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok((page::Reply::MethodNotFound, 0))
            }
            (None, Err(e)) => Err(error::from_service(&e, phase, taken(&self.failure))),
        }
    }

    /// The list-changed notifications the server announced (`listChanged` on tools,
    /// resources or prompts); empty when it announced none.
    fn announced_changes(&self) -> SubscriptionFilter {
        SubscriptionFilter::builder()
            .tools_list_changed()
            .resources_list_changed()
            .prompts_list_changed()
            .build()
            .supported_by(&self.server_capabilities)
    }

    /// Keep the session open to hear of list changes; `None` (and the session closed)
    /// when the server announced none or, at 2026-07-28, would not open a
    /// `subscriptions/listen` stream within the request timeout. Never fails the crawl.
    pub async fn into_watch(mut self) -> Option<ListChanged> {
        let wanted = self.announced_changes();
        if wanted == SubscriptionFilter::default() {
            return None;
        }
        let subscription = if self.modern {
            let peer = self.running.as_ref()?.peer().clone();
            let listen = peer.listen(wanted);
            match bounded(
                self.request_timeout,
                self.deadline,
                "subscriptions/listen",
                listen,
            )
            .await
            {
                Ok(Ok(sub)) => Some(sub),
                Ok(Err(e)) => {
                    let e = untrusted::line(&e.to_string(), untrusted::MAX_MESSAGE);
                    tracing::debug!(error = %e, "subscriptions/listen refused; not watching");
                    return None;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "subscriptions/listen unanswered; not watching");
                    return None;
                }
            }
        } else {
            None
        };
        let running = self.running.take()?;
        Some(ListChanged::new(
            running,
            self.changed.clone(),
            subscription,
        ))
    }

    /// Close in the background (bounded): the catalog does not wait for the goodbye.
    pub fn close(&mut self) {
        if let Some(mut running) = self.running.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                let _ = running.close_with_timeout(CLOSE_GRACE).await;
            });
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

fn taken(slot: &FailureSlot) -> Option<CrawlError> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
