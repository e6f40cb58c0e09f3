//! The MCP listener: one streamable-HTTP route per upstream server,
//! `/mcp/<namespace>/<server>`, proxied to the endpoint the bundle publishes, with
//! `tools/list` filtered and `tools/call` decided on the way.

use crate::bundle::BundleStore;
use crate::bundle::Loaded;
use crate::contracts::{Contracts, LiveTool, check_arguments, live_tool};
use crate::decision::{AuditSink, Decision, DecisionRecord, argument_names};
use crate::legacy;
use crate::metrics::Metrics;
use crate::policy::{Denial, Reason, bundle_allows, contract_matches, guard_allows};
use crate::sse;
use crate::upstream::{self, PROTOCOL_HEADER, SESSION_HEADER};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures::StreamExt;
use jiff::Timestamp;
use mcpgov_core::bundle::BundleServer;
use mcpgov_core::bundle::Transport;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Deny what the bundle does not allow.
    Enforce,
    /// Forward everything, record what enforce would have denied (`enforced: false`).
    Warn,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// `namespace/name`.
    pub agent: String,
    pub mode: Mode,
    pub audit_fail_open: bool,
    pub credentials_dir: PathBuf,
    /// Largest request body accepted from the agent.
    pub max_body: usize,
    /// Largest single message (JSON body or event) read from an upstream.
    pub max_message: usize,
    /// How long the gateway's own `tools/list` of a server may take.
    pub list_timeout: Duration,
    /// The MCP listener is on loopback: only loopback names are accepted in `Host` and
    /// `Origin` (DNS rebinding protection).
    pub loopback_only: bool,
}

struct OpenStream {
    server: String,
    tx: mpsc::Sender<Bytes>,
}

pub struct App {
    pub cfg: Config,
    pub store: BundleStore,
    pub contracts: Contracts,
    pub sink: Arc<dyn AuditSink>,
    pub metrics: Metrics,
    client: reqwest::Client,
    streams: Mutex<HashMap<u64, OpenStream>>,
    next_stream: AtomicU64,
    legacy: legacy::Sessions,
}

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
/// Request headers that go upstream; everything else (the agent's own Authorization,
/// cookies, hop-by-hop headers) stays at the gateway.
const FORWARD_REQUEST: [&str; 5] = [
    "accept",
    "content-type",
    SESSION_HEADER,
    PROTOCOL_HEADER,
    "last-event-id",
];
const FORWARD_RESPONSE: [&str; 3] = ["content-type", SESSION_HEADER, "cache-control"];

impl App {
    pub fn new(
        cfg: Config,
        store: BundleStore,
        contracts: Contracts,
        sink: Arc<dyn AuditSink>,
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // A redirect could carry the upstream's credentials elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        App {
            cfg,
            store,
            contracts,
            sink,
            metrics: Metrics::new(),
            client,
            streams: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(0),
            legacy: legacy::Sessions::default(),
        }
    }

    fn enforcing(&self) -> bool {
        self.cfg.mode == Mode::Enforce
    }

    fn base_record(
        &self,
        bundle: Option<&Loaded>,
        method: &str,
        server: &str,
        session: Option<&str>,
    ) -> DecisionRecord {
        DecisionRecord {
            time: Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .unwrap_or(Timestamp::now()),
            agent: self.cfg.agent.clone(),
            bundle_sha: bundle.map(|b| b.sha.clone()),
            method: method.to_string(),
            server: server.to_string(),
            tool: None,
            decision: Decision::Allow,
            enforced: self.enforcing(),
            reasons: Vec::new(),
            bundle_contract_digest: None,
            live_contract_digest: None,
            arg_names: Vec::new(),
            arguments: None,
            session_id: session.map(str::to_string),
            resources: Vec::new(),
        }
    }

    /// Count and write a decision. `false`: it could not be written and the gateway must
    /// fail closed.
    fn record(&self, rec: &DecisionRecord) -> bool {
        let reason = rec.reasons.first().map(String::as_str).unwrap_or("");
        self.metrics
            .decisions
            .with_label_values(&[
                rec.method.as_str(),
                rec.decision.as_str(),
                reason,
                if rec.enforced { "true" } else { "false" },
            ])
            .inc();
        match self.sink.record(rec) {
            Ok(seq) => {
                self.metrics.audit_records.inc();
                self.metrics.audit_sequence.set(seq as i64);
                true
            }
            Err(e) => {
                self.metrics.audit_write_errors.inc();
                warn!(error = %e, method = ?rec.method, "decision not recorded");
                self.cfg.audit_fail_open
            }
        }
    }

    /// Tell every open stream of a server that its tool list changed.
    pub fn notify_list_changed(&self, server: &str) {
        let streams = self.streams.lock().expect("not poisoned");
        let mut n = 0;
        for s in streams.values().filter(|s| s.server == server) {
            if s.tx.try_send(sse::message(LIST_CHANGED)).is_ok() {
                n += 1;
            }
        }
        if n > 0 {
            info!(server = ?server, streams = n, "sent tools/list_changed");
        }
    }

    /// After a bundle swap: notify the servers whose visible tools changed.
    pub fn bundle_swapped(&self, old: Option<&Loaded>, new: &Loaded) {
        let now = Timestamp::now();
        let mut servers: Vec<&String> = new.tools.keys().chain(new.servers.keys()).collect();
        if let Some(o) = old {
            servers.extend(o.tools.keys());
        }
        servers.sort();
        servers.dedup();
        for s in servers {
            let before = old.map(|o| o.view_of(s, now)).unwrap_or_default();
            if before != new.view_of(s, now) {
                self.notify_list_changed(s);
            }
        }
    }

    /// The upstream of a route and its credentials, or why there is none to talk to.
    fn upstream(
        &self,
        bundle: Option<&Loaded>,
        server: &str,
    ) -> Result<(BundleServer, reqwest::header::HeaderMap), Denial> {
        let b = bundle.ok_or_else(|| {
            Denial::new(Reason::NoBundle, "no valid policy bundle has been loaded")
        })?;
        let s = b.servers.get(server).ok_or_else(|| {
            Denial::new(
                Reason::UnknownServer,
                format!("the bundle publishes no server {server}"),
            )
        })?;
        let creds = upstream::credentials(&self.cfg.credentials_dir, s)
            .map_err(|e| Denial::new(Reason::CredentialsMissing, format!("{server}: {e}")))?;
        Ok((s.clone(), creds))
    }

    /// The live contract of a tool: from what clients listed, else from the gateway's own
    /// listing of the server (one at a time per server).
    async fn live(
        &self,
        server: &BundleServer,
        creds: &reqwest::header::HeaderMap,
        tool: &str,
    ) -> Result<Option<LiveTool>, String> {
        if let Some(t) = self.contracts.get(&server.key, tool) {
            return Ok(t);
        }
        let lock = self.contracts.fetch_lock(&server.key);
        let _g = lock.lock().await;
        if let Some(t) = self.contracts.get(&server.key, tool) {
            return Ok(t);
        }
        let tools = if server.endpoint.transport == Transport::SSE {
            let listed = tokio::time::timeout(
                self.cfg.list_timeout,
                legacy::list_tools(
                    &self.client,
                    &server.endpoint.url,
                    creds.clone(),
                    self.cfg.max_message,
                ),
            )
            .await
            .map_err(|_| "listing tools timed out".to_string())??;
            listed.iter().filter_map(live_tool).collect()
        } else {
            upstream::list_tools(
                &self.client,
                &server.endpoint.url,
                creds,
                self.cfg.max_message,
                self.cfg.list_timeout,
            )
            .await?
        };
        debug!(server = %server.key, tools = tools.len(), "listed upstream tools");
        let t = tools.get(tool).cloned();
        self.contracts.replace(&server.key, tools);
        Ok(t)
    }
}

/// The agent-facing listener. Accepted connections get `TCP_NODELAY`: responses are
/// streamed event by event, and with Nagle's algorithm a small write waiting behind an
/// unacknowledged one stalls until the client's delayed ACK (tens of milliseconds on a
/// `tools/list` answer).
pub async fn listen(addr: std::net::SocketAddr) -> std::io::Result<AgentListener> {
    use axum::serve::ListenerExt;
    let l = tokio::net::TcpListener::bind(addr).await?;
    Ok(l.tap_io(no_delay as fn(&mut tokio::net::TcpStream)))
}

pub type AgentListener =
    axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        debug!(error = %e, "TCP_NODELAY not set");
    }
}

pub fn mcp_router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/mcp/{namespace}/{server}",
            get(handle_get).post(handle_post).delete(handle_delete),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            rebinding_guard,
        ))
        .with_state(app)
}

/// DNS rebinding: a web page whose name resolves to 127.0.0.1 reaches a loopback listener
/// with its own name in `Host` and `Origin`. On loopback, anything but a loopback name in
/// either is refused before it is read (no decision is made, so nothing is recorded).
async fn rebinding_guard(
    State(app): State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if app.cfg.loopback_only
        && let Some(why) = foreign_host_or_origin(req.headers())
    {
        warn!(header = %why, "refused a request naming a foreign host (DNS rebinding protection)");
        return (
            StatusCode::FORBIDDEN,
            format!("forbidden: {why} is not a loopback name\n"),
        )
            .into_response();
    }
    next.run(req).await
}

/// The offending header, escaped, when `Host` or `Origin` names anything but
/// `localhost`, `127.0.0.1` or `[::1]` (`mcpgov_core::loopback`).
fn foreign_host_or_origin(headers: &HeaderMap) -> Option<String> {
    let (name, v) = mcpgov_core::loopback::foreign_header(
        headers.get(header::HOST).map(HeaderValue::as_bytes),
        headers
            .get_all(header::ORIGIN)
            .iter()
            .map(HeaderValue::as_bytes),
    )?;
    Some(format!(
        "{name} {:?}",
        String::from_utf8_lossy(&v[..v.len().min(100)])
    ))
}

pub fn ops_router(app: Arc<App>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(app): State<Arc<App>>| async move {
                match app.store.current() {
                    Some(b) => (StatusCode::OK, format!("bundle {}\n", b.sha)),
                    None => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "no valid bundle loaded: {}\n",
                            app.store
                                .last_error()
                                .unwrap_or_else(|| "none read yet".into())
                        ),
                    ),
                }
            }),
        )
        .route(
            "/metrics",
            get(|State(app): State<Arc<App>>| async move {
                (
                    [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    app.metrics.render(),
                )
            }),
        )
        .with_state(app)
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn rpc_error(status: StatusCode, id: Option<&Value>, code: i64, message: &str) -> Response {
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": {"code": code, "message": message}}),
    )
}

fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(256).collect())
}

async fn handle_post(
    State(app): State<Arc<App>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let start = Instant::now();
    let server = format!("{ns}/{name}");
    let bytes = match axum::body::to_bytes(body, app.cfg.max_body).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                -32600,
                "request body too large",
            );
        }
    };
    let msg: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return rpc_error(StatusCode::BAD_REQUEST, None, -32700, "parse error"),
    };
    if msg.is_array() {
        // Each message of a batch would need its own decision; the 2025-06-18 revision
        // dropped batches, so the gateway refuses them rather than half-check one.
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            -32600,
            "JSON-RPC batches are not accepted by the mcpgov gateway",
        );
    }
    let bundle = app.store.current();
    let session = session_of(&headers);
    match msg.get("method").and_then(Value::as_str) {
        Some("tools/call") => call(app, server, bundle, msg, headers, session, start).await,
        Some("tools/list") => list(app, server, bundle, msg, headers, bytes, session, start).await,
        method => {
            let id = msg.get("id");
            let method = method.map(str::to_string);
            let up = app.upstream(bundle.as_deref(), &server);
            if let Some(m) = &method {
                let mut rec = app.base_record(bundle.as_deref(), m, &server, session.as_deref());
                match &up {
                    Ok(_) => rec.reasons = vec!["PassThrough".into()],
                    Err(d) => {
                        rec.decision = Decision::Deny;
                        rec.enforced = true;
                        rec.reasons = d.reasons();
                    }
                }
                if !app.record(&rec) {
                    return rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        id,
                        -32603,
                        "mcpgov gateway: the audit log cannot be written",
                    );
                }
            }
            match up {
                Ok((s, creds)) => {
                    app.metrics
                        .added_latency
                        .observe(start.elapsed().as_secs_f64());
                    forward_post(app, s, creds, &headers, bytes, &msg, None).await
                }
                Err(d) => {
                    let status = match d.reason {
                        Reason::UnknownServer => StatusCode::NOT_FOUND,
                        _ => StatusCode::SERVICE_UNAVAILABLE,
                    };
                    rpc_error(
                        status,
                        id,
                        -32603,
                        &format!("mcpgov gateway: {} ({})", d.reason.as_str(), d.detail),
                    )
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn call(
    app: Arc<App>,
    server: String,
    bundle: Option<Arc<Loaded>>,
    msg: Value,
    headers: HeaderMap,

    session: Option<String>,
    start: Instant,
) -> Response {
    let id = msg.get("id").cloned();
    let tool = msg
        .pointer("/params/name")
        .and_then(Value::as_str)
        .map(str::to_string);
    let args = msg.pointer("/params/arguments").cloned();
    let mut rec = app.base_record(bundle.as_deref(), "tools/call", &server, session.as_deref());
    rec.tool = tool.clone();
    rec.arg_names = argument_names(args.as_ref());
    rec.arguments = args.clone();

    // Denials that leave nothing to forward to are enforced in warn mode too.
    let up = app.upstream(bundle.as_deref(), &server);
    let mut forwardable = up.is_ok();
    let denial: Option<Denial> = match (&up, &tool) {
        (Err(d), _) => Some(d.clone()),
        (Ok(_), None) => Some(Denial::new(
            Reason::MalformedRequest,
            "tools/call without a tool name",
        )),
        (Ok((s, creds)), Some(name)) => {
            match bundle_allows(bundle.as_deref(), &server, name, Timestamp::now()) {
                Err(d) => {
                    if let Some(p) = bundle.as_deref().and_then(|b| b.tool(&server, name)) {
                        rec.bundle_contract_digest = p.tool.contract_digest.clone();
                    }
                    Some(d)
                }
                Ok(p) => {
                    rec.bundle_contract_digest = p.tool.contract_digest.clone();
                    match app.live(s, creds, name).await {
                        Err(e) => Some(Denial::new(
                            Reason::NotListed,
                            format!("cannot read {server}'s tools: {e}"),
                        )),
                        Ok(live) => {
                            rec.live_contract_digest = live.as_ref().map(|l| l.digest.clone());
                            match contract_matches(p, live.as_ref().map(|l| l.digest.as_str())) {
                                Err(d) => {
                                    if d.reason == Reason::ContractMismatch {
                                        app.metrics
                                            .contract_mismatches
                                            .with_label_values(&[&server])
                                            .inc();
                                    }
                                    Some(d)
                                }
                                Ok(()) => {
                                    let live = live.expect("matched a live contract");
                                    let checker = app.contracts.checker(&server, &live);
                                    let args = args.clone().unwrap_or_else(|| json!({}));
                                    match check_arguments(&checker, &args) {
                                        Ok(()) => match guard_allows(p, &args, Timestamp::now()) {
                                            Ok(uris) => {
                                                rec.resources = uris;
                                                None
                                            }
                                            Err(d) => {
                                                rec.resources = d.uri.iter().cloned().collect();
                                                Some(d)
                                            }
                                        },
                                        Err(e) if checker.is_err() => {
                                            Some(Denial::new(Reason::SchemaUnusable, e))
                                        }
                                        Err(e) => Some(Denial::new(Reason::InvalidArguments, e)),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if denial
        .as_ref()
        .is_some_and(|d| d.reason == Reason::MalformedRequest)
    {
        forwardable = forwardable && !app.enforcing();
    }
    let name = tool.unwrap_or_default();
    let sha = bundle.as_ref().map(|b| b.sha.clone());
    let deny_now = |d: &Denial| {
        let result = d.call_result(&name, sha.as_deref());
        match &id {
            Some(id) => json_response(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            ),
            None => StatusCode::ACCEPTED.into_response(),
        }
    };
    match &denial {
        Some(d) => {
            rec.decision = Decision::Deny;
            rec.enforced = app.enforcing() || !forwardable;
            rec.reasons = d.reasons();
        }
        None => rec.reasons = vec!["Eligible".into()],
    }
    if !app.record(&rec) {
        let d = Denial::new(
            Reason::AuditUnavailable,
            "the decision could not be recorded",
        );
        return deny_now(&d);
    }
    app.metrics
        .added_latency
        .observe(start.elapsed().as_secs_f64());
    match (denial, up) {
        (Some(d), _) if rec.enforced => {
            // Untrusted text is logged escaped (`?`); argument errors quote argument values,
            // which stay out of the logs.
            let detail = (d.reason != Reason::InvalidArguments).then_some(d.detail.as_str());
            info!(server = ?server, tool = ?name, reason = d.reason.as_str(), detail = ?detail, "tools/call denied");
            deny_now(&d)
        }
        (d, Ok((s, creds))) => {
            if let Some(d) = d {
                info!(
                    server = ?server,
                    tool = ?name,
                    reason = d.reason.as_str(),
                    "tools/call would be denied (warn mode): forwarded"
                );
            }
            // The message as parsed, not the bytes as sent: the upstream sees exactly the
            // call that was decided (a duplicate "name" key cannot mean one tool here and
            // another there).
            let decided = Bytes::from(serde_json::to_vec(&msg).expect("a Value serialises"));
            forward_post(app, s, creds, &headers, decided, &msg, None).await
        }
        (_, Err(d)) => deny_now(&d),
    }
}

/// What `tools/list` answers may show: eligible tools whose live contract is the approved
/// one. Hidden tools are recorded one by one; in warn mode they stay in the list.
struct ListFilter {
    app: Arc<App>,
    bundle: Option<Arc<Loaded>>,
    server: String,
    id: Option<Value>,
    session: Option<String>,
    /// The request asked for the first page: a page with no `nextCursor` is then the whole
    /// list and replaces the server's live view.
    first_page: bool,
}

impl ListFilter {
    /// Rewrite one JSON-RPC message if it is the answer to our request.
    fn apply(&self, data: &str) -> Option<String> {
        if data.trim().is_empty() {
            // A priming event (resumability): no message in it.
            return None;
        }
        let Ok(mut v) = serde_json::from_str::<Value>(data) else {
            // It may be the answer, and nothing of it can be checked: it never reaches
            // the client (too deep, not JSON, ...).
            return Some(
                json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": -32603,
                    "message": "mcpgov gateway: the upstream's tools/list answer cannot be read"}})
                .to_string(),
            );
        };
        if v.get("id") != self.id.as_ref() {
            return None;
        }
        let result = v.get_mut("result")?;
        self.filter(result);
        Some(v.to_string())
    }

    fn filter(&self, result: &mut Value) {
        let app = &self.app;
        let now = Timestamp::now();
        let complete = self.first_page && result.get("nextCursor").is_none_or(Value::is_null);
        if !result.is_object() {
            *result = json!({});
        }
        if !result.get("tools").is_some_and(Value::is_array) {
            result["tools"] = json!([]);
        }
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return;
        };
        let mut seen = Vec::with_capacity(tools.len());
        let mut kept = Vec::with_capacity(tools.len());
        let mut ok = true;
        for raw in tools.drain(..) {
            let live = app.contracts.live_tool(&raw);
            let verdict = match &live {
                None => Err((
                    Denial::new(
                        Reason::MalformedTool,
                        "a listed tool has no name or cannot be digested",
                    ),
                    None,
                )),
                Some((name, lt)) => {
                    match bundle_allows(self.bundle.as_deref(), &self.server, name, now) {
                        Err(d) => Err((
                            d,
                            self.bundle
                                .as_deref()
                                .and_then(|b| b.tool(&self.server, name))
                                .and_then(|p| p.tool.contract_digest.clone()),
                        )),
                        Ok(p) => contract_matches(p, Some(&lt.digest))
                            .map_err(|d| (d, p.tool.contract_digest.clone())),
                    }
                }
            };
            if let Some(l) = &live {
                seen.push(l.clone());
            }
            match verdict {
                Ok(()) => kept.push(raw),
                Err((d, pinned)) => {
                    if d.reason == Reason::ContractMismatch {
                        app.metrics
                            .contract_mismatches
                            .with_label_values(&[&self.server])
                            .inc();
                    }
                    let mut rec = app.base_record(
                        self.bundle.as_deref(),
                        "tools/list",
                        &self.server,
                        self.session.as_deref(),
                    );
                    rec.tool = live.as_ref().map(|(n, _)| n.clone());
                    rec.decision = Decision::Deny;
                    rec.reasons = d.reasons();
                    rec.bundle_contract_digest = pinned;
                    rec.live_contract_digest = live.as_ref().map(|(_, l)| l.digest.clone());
                    ok &= app.record(&rec);
                    if !app.enforcing() {
                        kept.push(raw);
                    }
                }
            }
        }
        if !ok {
            // Hidden tools that could not be recorded: show nothing rather than an
            // unrecorded list.
            kept.clear();
        }
        *tools = kept;
        if complete {
            app.contracts
                .replace(&self.server, seen.into_iter().collect());
        } else {
            app.contracts.observe(&self.server, &seen);
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn list(
    app: Arc<App>,
    server: String,
    bundle: Option<Arc<Loaded>>,
    msg: Value,
    headers: HeaderMap,
    bytes: Bytes,
    session: Option<String>,
    start: Instant,
) -> Response {
    let id = msg.get("id").cloned();
    let mut rec = app.base_record(bundle.as_deref(), "tools/list", &server, session.as_deref());
    let up = app.upstream(bundle.as_deref(), &server);
    if let Err(d) = &up {
        rec.decision = Decision::Deny;
        rec.enforced = true;
        rec.reasons = d.reasons();
    } else {
        rec.reasons = vec!["Listed".into()];
    }
    let recorded = app.record(&rec);
    app.metrics
        .added_latency
        .observe(start.elapsed().as_secs_f64());
    match up {
        Ok((s, creds)) if recorded => {
            let filter = ListFilter {
                app: app.clone(),
                bundle,
                server,
                first_page: msg.pointer("/params/cursor").is_none_or(Value::is_null),
                id,
                session,
            };
            forward_post(app, s, creds, &headers, bytes, &msg, Some(filter)).await
        }
        // Nothing to forward to, or nothing recorded: an empty list (fail closed).
        _ => json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
        ),
    }
}

async fn handle_get(
    State(app): State<Arc<App>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let server = format!("{ns}/{name}");
    let bundle = app.store.current();
    match app.upstream(bundle.as_deref(), &server) {
        Ok((s, _)) if s.endpoint.transport == Transport::SSE => legacy_get(app, &s, &headers),
        Ok((s, creds)) => forward(app, s, creds, Method::GET, &headers, None, None).await,
        Err(d) => rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            -32603,
            &format!("mcpgov gateway: {}", d.reason.as_str()),
        ),
    }
}

async fn handle_delete(
    State(app): State<Arc<App>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let server = format!("{ns}/{name}");
    let bundle = app.store.current();
    match app.upstream(bundle.as_deref(), &server) {
        Ok((s, _)) if s.endpoint.transport == Transport::SSE => legacy_delete(&app, &s, &headers),
        Ok((s, creds)) => forward(app, s, creds, Method::DELETE, &headers, None, None).await,
        Err(d) => rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            -32603,
            &format!("mcpgov gateway: {}", d.reason.as_str()),
        ),
    }
}

/// Removes a GET stream from the registry when its body is dropped (client gone).
struct StreamGuard {
    app: Arc<App>,
    id: u64,
}

/// Counts an agent-facing stream and, given its sender, registers it so the gateway's
/// own `list_changed` notices reach it; the guard undoes both when the stream ends.
fn open_stream(app: &Arc<App>, server: &str, tx: Option<mpsc::Sender<Bytes>>) -> StreamGuard {
    let id = app.next_stream.fetch_add(1, Ordering::Relaxed);
    if let Some(tx) = tx {
        app.streams.lock().expect("not poisoned").insert(
            id,
            OpenStream {
                server: server.to_string(),
                tx,
            },
        );
    }
    app.metrics.open_streams.inc();
    StreamGuard {
        app: app.clone(),
        id,
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.app
            .streams
            .lock()
            .expect("not poisoned")
            .remove(&self.id);
        self.app.metrics.open_streams.dec();
    }
}

/// Send a request upstream and stream its answer back. Event streams are passed event by
/// event (so `list_changed` is seen and a `tools/list` answer can be filtered); a GET
/// stream also carries the gateway's own `list_changed` after a bundle swap.
async fn forward(
    app: Arc<App>,
    server: BundleServer,
    creds: reqwest::header::HeaderMap,
    method: Method,
    headers: &HeaderMap,
    body: Option<Bytes>,
    filter: Option<ListFilter>,
) -> Response {
    let mut req = app.client.request(method.clone(), &server.endpoint.url);
    for h in FORWARD_REQUEST {
        for v in headers.get_all(h) {
            req = req.header(h, v.as_bytes());
        }
    }
    req = req.headers(creds);
    if let Some(b) = body {
        req = req.body(b);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            warn!(server = %server.key, error = ?e.to_string(), "upstream unreachable");
            return rpc_error(
                StatusCode::BAD_GATEWAY,
                None,
                -32603,
                &format!("mcpgov gateway: upstream {} unreachable", server.key),
            );
        }
    };
    let status = resp.status();
    let mut out = Response::builder().status(status.as_u16());
    for h in FORWARD_RESPONSE {
        if let Some(v) = resp.headers().get(h) {
            out = out.header(
                h,
                HeaderValue::from_bytes(v.as_bytes()).unwrap_or(HeaderValue::from_static("")),
            );
        }
    }
    let is_sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let max = app.cfg.max_message;
    let key = server.key.clone();
    if is_sse {
        let watcher = app.clone();
        let f = move |data: &str| {
            if data.contains("notifications/tools/list_changed")
                && serde_json::from_str::<Value>(data)
                    .ok()
                    .and_then(|v| v.get("method").cloned())
                    == Some(json!("notifications/tools/list_changed"))
            {
                info!(server = %key, "upstream tools/list_changed: forgetting its live contracts");
                watcher.contracts.invalidate(&key);
            }
            filter.as_ref().and_then(|f| f.apply(data))
        };
        let events = sse::transform(resp.bytes_stream(), max, f);
        if method == Method::GET && status.is_success() {
            let (tx, rx) = mpsc::channel::<Bytes>(16);
            let guard = open_stream(&app, &server.key, Some(tx));
            let injected = tokio_stream_from(rx).map(Ok::<_, sse::BoxError>);
            // An upstream stream that breaks ends its part quietly: the agent keeps the
            // stream and the gateway's own notices on it.
            let events = events.take_while(|r| std::future::ready(r.is_ok()));
            let merged = futures::stream::select(events, injected).map(move |x| {
                let _ = &guard;
                x
            });
            return out
                .body(Body::from_stream(merged))
                .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response());
        }
        return out
            .body(Body::from_stream(events))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response());
    }
    match filter {
        // Whatever the status: a list never reaches the client unfiltered.
        Some(f) => {
            // A JSON answer to tools/list: read it whole (bounded), filter, re-serialise.
            let mut buf = Vec::new();
            let mut stream = resp.bytes_stream();
            while let Some(c) = stream.next().await {
                let Ok(c) = c else {
                    return rpc_error(
                        StatusCode::BAD_GATEWAY,
                        f.id.as_ref(),
                        -32603,
                        "mcpgov gateway: upstream answer broke off",
                    );
                };
                if buf.len() + c.len() > max {
                    return rpc_error(
                        StatusCode::BAD_GATEWAY,
                        f.id.as_ref(),
                        -32603,
                        "mcpgov gateway: upstream tools/list answer too large",
                    );
                }
                buf.extend_from_slice(&c);
            }
            let text = String::from_utf8_lossy(&buf);
            match f.apply(&text) {
                Some(new) => out
                    .body(Body::from(new))
                    .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
                // Not the answer we asked for (an error, another id): passed as it came.
                None => out
                    .body(Body::from(buf))
                    .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
            }
        }
        _ => out
            .body(Body::from_stream(resp.bytes_stream()))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
    }
}

fn tokio_stream_from(mut rx: mpsc::Receiver<Bytes>) -> impl futures::Stream<Item = Bytes> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A POST to an upstream of either transport.
async fn forward_post(
    app: Arc<App>,
    server: BundleServer,
    creds: reqwest::header::HeaderMap,
    headers: &HeaderMap,
    body: Bytes,
    msg: &Value,
    filter: Option<ListFilter>,
) -> Response {
    if server.endpoint.transport != Transport::SSE {
        return forward(
            app,
            server,
            creds,
            Method::POST,
            headers,
            Some(body),
            filter,
        )
        .await;
    }
    let id = msg.get("id");
    let (sess, sid) = match session_of(headers) {
        Some(sid) => match app.legacy.get(&sid) {
            Some(s) if s.server == server.key => (s, sid),
            _ => return rpc_error(StatusCode::NOT_FOUND, id, -32001, "session not found"),
        },
        None if msg.get("method").and_then(Value::as_str) == Some("initialize") => {
            let watcher = app.clone();
            let key = server.key.clone();
            let on_message = move |data: &str| {
                if data.contains("notifications/tools/list_changed") {
                    watcher.contracts.invalidate(&key);
                }
            };
            let opened = legacy::open(
                &app.client,
                &server.key,
                &server.endpoint.url,
                creds,
                app.cfg.max_message,
                on_message,
            )
            .await;
            let sess = match opened {
                Ok(s) => s,
                Err(e) => {
                    warn!(server = %server.key, error = ?e, "SSE upstream unreachable");
                    return rpc_error(
                        StatusCode::BAD_GATEWAY,
                        id,
                        -32603,
                        &format!("mcpgov gateway: upstream {} unreachable", server.key),
                    );
                }
            };
            match app.legacy.insert(sess.clone()) {
                Ok(sid) => (sess, sid),
                Err(e) => return rpc_error(StatusCode::SERVICE_UNAVAILABLE, id, -32603, &e),
            }
        }
        None => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                "no session: initialize first",
            );
        }
    };
    let session = HeaderValue::from_str(&sid).expect("hex");
    match sess.send(&app.client, msg).await {
        Ok(None) => (StatusCode::ACCEPTED, [(SESSION_HEADER, session)]).into_response(),
        Ok(Some(data)) => {
            let data = filter.and_then(|f| f.apply(&data)).unwrap_or(data);
            (
                StatusCode::OK,
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    ),
                    (header::HeaderName::from_static(SESSION_HEADER), session),
                ],
                data,
            )
                .into_response()
        }
        Err(e) => {
            warn!(server = %server.key, error = ?e, "SSE upstream");
            rpc_error(
                StatusCode::BAD_GATEWAY,
                id,
                -32603,
                &format!("mcpgov gateway: upstream {}: {e}", server.key),
            )
        }
    }
}

/// The standalone GET stream of an SSE upstream's session.
fn legacy_get(app: Arc<App>, server: &BundleServer, headers: &HeaderMap) -> Response {
    let Some(sess) = session_of(headers)
        .and_then(|sid| app.legacy.get(&sid))
        .filter(|s| s.server == server.key)
    else {
        return rpc_error(StatusCode::NOT_FOUND, None, -32001, "session not found");
    };
    let rx = sess.attach();
    let guard = open_stream(&app, &server.key, sess.pusher());
    let body = tokio_stream_from(rx).map(move |b| {
        let _ = &guard;
        Ok::<_, sse::BoxError>(b)
    });
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

fn legacy_delete(app: &App, server: &BundleServer, headers: &HeaderMap) -> Response {
    match session_of(headers).and_then(|sid| {
        app.legacy
            .get(&sid)
            .filter(|s| s.server == server.key)
            .map(|_| sid)
    }) {
        Some(sid) => {
            if let Some(s) = app.legacy.remove(&sid) {
                s.close();
            }
            StatusCode::OK.into_response()
        }
        None => rpc_error(StatusCode::NOT_FOUND, None, -32001, "session not found"),
    }
}

#[cfg(test)]
mod rebinding_tests {
    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert(header::HOST, HeaderValue::from_str(v).unwrap());
        }
        if let Some(v) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_loopback_names_pass() {
        for ok in [
            "127.0.0.1:8480",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8480",
            "[::1]",
        ] {
            assert_eq!(
                foreign_host_or_origin(&headers(Some(ok), None)),
                None,
                "{ok}"
            );
        }
        assert_eq!(
            foreign_host_or_origin(&headers(Some("127.0.0.1:1"), Some("http://localhost:3000"))),
            None
        );
        for bad in [
            "evil.example.com",
            "evil.example.com:8480",
            "127.0.0.1.evil.example.com",
            "localhost.evil.example.com:80",
            "[::1]evil",
            "10.0.0.1:8480",
        ] {
            assert!(
                foreign_host_or_origin(&headers(Some(bad), None)).is_some(),
                "{bad}"
            );
        }
        for bad in [
            "http://evil.example.com",
            "null",
            "file://",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(
                foreign_host_or_origin(&headers(Some("127.0.0.1"), Some(bad))).is_some(),
                "{bad}"
            );
        }
        // The operator's rule now: a port is digits, and every Origin is checked.
        assert!(foreign_host_or_origin(&headers(Some("localhost:evil"), None)).is_some());
        let mut two = headers(Some("127.0.0.1"), Some("http://localhost"));
        two.append(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example.com"),
        );
        assert!(
            foreign_host_or_origin(&two).is_some(),
            "a second Origin cannot hide behind a good first one"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::serve::Listener;

    #[tokio::test]
    async fn agent_connections_are_not_delayed_by_nagle() {
        let mut l = listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (io, _) = l.accept().await;
        assert!(
            io.nodelay().unwrap(),
            "accepted connection without TCP_NODELAY"
        );
        client.await.unwrap().unwrap();
    }
}
