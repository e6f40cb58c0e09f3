//! In-process fake MCP servers for the crawler's tests, and the crawl tests run against
//! them: streamable HTTP (answering `initialize` like a 2025-11-25 server, or
//! `server/discover` like a 2026-07-28 one) and legacy SSE, with knobs for the failure
//! paths a real server cannot be made to produce on demand. Each test starts its own
//! server on an ephemeral loopback port; it ends with the test's runtime.

use super::*;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

#[derive(Clone)]
struct Behavior {
    /// Answer `server/discover` (2026-07-28) instead of rejecting it as unknown.
    modern: bool,
    /// `protocolVersion` in the `initialize` result.
    init_version: &'static str,
    capabilities: Value,
    /// `tools/list` pages by the cursor that fetches them.
    tool_pages: Vec<(Option<&'static str>, Value)>,
    resources: Option<Value>,
    templates: Option<Value>,
    prompts: Option<Value>,
    /// Answer every request with this status (and challenge).
    status: Option<(u16, Option<&'static str>)>,
    /// Answer POSTs to the MCP path with a 307 to this location.
    redirect_to: Option<String>,
    tools_delay: Option<Duration>,
    /// `tools/list` answered with this raw JSON as its result (huge or malformed pages).
    raw_tools: Option<Arc<String>>,
    /// `tools/list` answered with this JSON-RPC error.
    tools_error: Option<(i64, String)>,
    /// `initialize` answered with this JSON-RPC error.
    init_error: Option<(i64, String)>,
    /// `initialize` results carry `instructions` this long.
    init_padding: usize,
    /// `serverInfo` of `initialize`.
    server_info: (String, String),
    /// Streamable HTTP answers a request with an event stream (one event) instead of a
    /// JSON body.
    sse_reply: bool,
    /// The SSE `endpoint` event's data, when not the server's own message path.
    sse_endpoint: Option<String>,
    /// Streamable HTTP with a session: `initialize` assigns `Mcp-Session-Id`, a GET of
    /// the MCP path with it opens the standalone stream, DELETE ends it.
    session: bool,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            modern: false,
            init_version: "2025-11-25",
            capabilities: json!({"tools": {}, "resources": {}, "prompts": {}}),
            tool_pages: vec![(
                None,
                json!({"tools": [
                    {"name": "zeta", "inputSchema": {"type": "object"}},
                    {"name": "alpha", "description": "first", "inputSchema": {"type": "object"},
                     "annotations": {"readOnlyHint": true}}
                ]}),
            )],
            resources: Some(
                json!({"resources": [{"uri": "file:///a", "name": "a", "mimeType": "text/plain"}]}),
            ),
            templates: None,
            prompts: Some(json!({"prompts": []})),
            status: None,
            redirect_to: None,
            tools_delay: None,
            raw_tools: None,
            tools_error: None,
            init_error: None,
            init_padding: 0,
            server_info: ("fake".into(), "1.2.3".into()),
            sse_reply: false,
            sse_endpoint: None,
            session: false,
        }
    }
}

struct Fake {
    behavior: Behavior,
    /// Every JSON-RPC message received, in order.
    log: Mutex<Vec<Value>>,
    /// Values of `x-test-key` seen on requests.
    keys: Mutex<Vec<String>>,
    sse: Mutex<HashMap<String, mpsc::UnboundedSender<String>>>,
    /// Open streams that server-initiated notifications go to: standalone GET streams
    /// (no subscription) and `subscriptions/listen` streams (its id).
    streams: Mutex<Vec<(Option<Value>, mpsc::UnboundedSender<String>)>>,
    /// DELETEs of the HTTP session.
    deletes: Mutex<usize>,
}

type Shared = Arc<Fake>;

impl Fake {
    /// Send a notification on every open stream: legacy SSE sessions, standalone GET
    /// streams, and listen streams (stamped with their subscription id).
    fn push(&self, method: &str) {
        let plain = json!({"jsonrpc": "2.0", "method": method});
        let event = |v: &Value| format!("event: message\ndata: {v}\n\n");
        for tx in self.sse.lock().unwrap().values() {
            let _ = tx.send(event(&plain));
        }
        for (sub, tx) in self.streams.lock().unwrap().iter() {
            let msg = match sub {
                Some(id) => json!({"jsonrpc": "2.0", "method": method,
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}}),
                None => plain.clone(),
            };
            let _ = tx.send(event(&msg));
        }
    }

    /// Streams the client still holds (by kind: SSE sessions, GET and listen streams).
    fn open_streams(&self) -> usize {
        let sse = self.sse.lock().unwrap();
        let streams = self.streams.lock().unwrap();
        sse.values().filter(|t| !t.is_closed()).count()
            + streams.iter().filter(|(_, t)| !t.is_closed()).count()
    }

    fn methods(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned))
            .collect()
    }

    fn first(&self, method: &str) -> Value {
        let log = self.log.lock().unwrap();
        log.iter()
            .find(|m| m["method"] == method)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The JSON-RPC result or error for one request.
    async fn dispatch(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        let b = &self.behavior;
        let not_found = (-32601, "Method not found".to_owned());
        let complete = |mut v: Value| {
            if b.modern {
                v["resultType"] = json!("complete");
            }
            v
        };
        match method {
            "initialize" if b.init_error.is_some() => Err(b.init_error.clone().unwrap()),
            "initialize" => Ok(json!({
                "protocolVersion": b.init_version,
                "capabilities": b.capabilities,
                "serverInfo": {"name": b.server_info.0, "version": b.server_info.1},
                "instructions": "i".repeat(b.init_padding),
            })),
            "server/discover" if b.modern => Ok(json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": b.capabilities,
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "2.0.0"}},
            })),
            "tools/list" => {
                if let Some(d) = b.tools_delay {
                    tokio::time::sleep(d).await;
                }
                if let Some(e) = &b.tools_error {
                    return Err(e.clone());
                }
                let cursor = params["cursor"].as_str();
                b.tool_pages
                    .iter()
                    .find(|(c, _)| *c == cursor)
                    .map(|(_, page)| complete(page.clone()))
                    .ok_or((-32602, "unknown cursor".to_owned()))
            }
            "resources/list" => b.resources.clone().map(complete).ok_or(not_found),
            "resources/templates/list" => b.templates.clone().map(complete).ok_or(not_found),
            "prompts/list" => b.prompts.clone().map(complete).ok_or(not_found),
            "ping" => Ok(json!({})),
            _ => Err(not_found),
        }
    }

    /// Log a message and build its reply (serialized), if it is a request.
    async fn handle(&self, headers: &HeaderMap, msg: Value) -> Option<String> {
        if let Some(k) = headers.get("x-test-key").and_then(|v| v.to_str().ok()) {
            self.keys.lock().unwrap().push(k.to_owned());
        }
        self.log.lock().unwrap().push(msg.clone());
        let id = msg.get("id")?.clone();
        let method = msg["method"].as_str()?.to_owned();
        if method == "tools/list"
            && let Some(raw) = &self.behavior.raw_tools
        {
            return Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{raw}}}"#));
        }
        Some(
            match self.dispatch(&method, &msg["params"]).await {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            }
            .to_string(),
        )
    }

    fn refusal(&self) -> Option<Response> {
        let (status, challenge) = self.behavior.status?;
        let mut resp = (StatusCode::from_u16(status).unwrap(), "no").into_response();
        if let Some(c) = challenge {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, c.parse().unwrap());
        }
        Some(resp)
    }
}

fn json_response(v: &Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// A reply as a JSON body, or as an event stream of one `message` event.
fn reply_response(reply: String, sse: bool) -> Response {
    if sse {
        let body = format!("event: message\ndata: {reply}\n\n");
        ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], reply).into_response()
    }
}

/// An event stream fed by `rx` until either side drops.
fn event_stream(rx: mpsc::UnboundedReceiver<String>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|s| (Ok::<_, std::convert::Infallible>(s), rx))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

const FAKE_SESSION: &str = "fake-session-1";

/// GET of the MCP path: the standalone stream of a session, where there are sessions.
async fn mcp_get(State(f): State<Shared>, headers: HeaderMap) -> Response {
    let in_session = headers
        .get("mcp-session-id")
        .is_some_and(|v| v == FAKE_SESSION);
    if !f.behavior.session || !in_session {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    f.streams.lock().unwrap().push((None, tx));
    event_stream(rx)
}

async fn mcp_delete(State(f): State<Shared>) -> StatusCode {
    *f.deletes.lock().unwrap() += 1;
    StatusCode::OK
}

async fn mcp_post(State(f): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = f.refusal() {
        return r;
    }
    if let Some(to) = f
        .behavior
        .redirect_to
        .as_ref()
        .filter(|_| uri.path() == "/mcp")
    {
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, to.clone())],
        )
            .into_response();
    }
    let msg: Value = serde_json::from_slice(&body).unwrap();
    if msg["method"] == "subscriptions/listen" && f.behavior.modern {
        // The response is the stream: the acknowledgment first, then notifications.
        f.log.lock().unwrap().push(msg.clone());
        let id = msg["id"].clone();
        let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": msg["params"]["notifications"],
                       "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        tx.send(format!("event: message\ndata: {ack}\n\n")).unwrap();
        f.streams.lock().unwrap().push((Some(id), tx));
        return event_stream(rx);
    }
    let initialize = msg["method"] == "initialize";
    if msg["method"] == "server/discover" && !f.behavior.modern {
        // What a stateful 2025-11-25 server says to a request outside a session.
        f.log.lock().unwrap().push(msg);
        let err = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
        let mut resp = json_response(&err);
        *resp.status_mut() = StatusCode::BAD_REQUEST;
        return resp;
    }
    match f.handle(&headers, msg).await {
        Some(reply) => {
            let mut resp = reply_response(reply, f.behavior.sse_reply);
            if initialize && f.behavior.session {
                resp.headers_mut()
                    .insert("mcp-session-id", FAKE_SESSION.parse().unwrap());
            }
            resp
        }
        None => StatusCode::ACCEPTED.into_response(),
    }
}

async fn sse_get(State(f): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(r) = f.refusal() {
        return r;
    }
    if let Some(k) = headers.get("x-test-key").and_then(|v| v.to_str().ok()) {
        f.keys.lock().unwrap().push(k.to_owned());
    }
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let id = format!("s{}", f.sse.lock().unwrap().len());
    let endpoint = f
        .behavior
        .sse_endpoint
        .clone()
        .unwrap_or_else(|| format!("/message?sessionId={id}"));
    tx.send(format!(": hello\n\nevent: endpoint\ndata: {endpoint}\n\n"))
        .unwrap();
    f.sse.lock().unwrap().insert(id, tx);
    event_stream(rx)
}

async fn sse_post(State(f): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let Some(tx) = uri
        .query()
        .and_then(|q| q.strip_prefix("sessionId="))
        .and_then(|id| f.sse.lock().unwrap().get(id).cloned())
    else {
        return (StatusCode::NOT_FOUND, "no session").into_response();
    };
    let msg: Value = serde_json::from_slice(&body).unwrap();
    if let Some(reply) = f.handle(&headers, msg).await {
        let _ = tx.send(format!("event: message\ndata: {reply}\n\n"));
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

async fn start(behavior: Behavior) -> (SocketAddr, Shared) {
    let fake = Arc::new(Fake {
        behavior,
        log: Mutex::default(),
        keys: Mutex::default(),
        sse: Mutex::default(),
        streams: Mutex::default(),
        deletes: Mutex::default(),
    });
    let app = Router::new()
        .route("/mcp", get(mcp_get).post(mcp_post).delete(mcp_delete))
        .route("/moved", axum::routing::post(mcp_post))
        .route("/sse", get(sse_get))
        .route("/message", axum::routing::post(sse_post))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, fake)
}

fn target(url: String, transport: Transport) -> Target {
    Target {
        url,
        transport,
        headers: vec![("X-Test-Key".into(), "k-123".into())],
        request_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(20),
        max_tools: 100,
        max_bytes: 1 << 20,
    }
}

const LOOPBACK: NetPolicy = NetPolicy {
    allow_loopback: true,
    allow_private: true,
};

fn check_handshake(f: &Fake, method: &str) {
    let init = f.first(method);
    assert_eq!(init["params"]["clientInfo"]["name"], CLIENT_NAME);
    assert_eq!(
        init["params"]["clientInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(init["params"]["capabilities"], json!({}));
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn crawls_a_2025_11_25_streamable_http_server() {
    let (addr, f) = start(Behavior::default()).await;
    let c = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(c.protocol_version, "2025-11-25");
    assert_eq!(c.server_name, "fake");
    assert_eq!(c.server_version.as_deref(), Some("1.2.3"));
    assert_eq!(c.client_capabilities, json!({}));
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    assert_eq!(c.tools[0].annotations.read_only_hint, Some(true));
    assert_eq!(c.resources.len(), 1);
    assert_eq!(c.not_implemented, vec!["resources/templates/list"]);
    // tools, resources and prompts; the -32601 answer is not a page.
    assert_eq!(c.pages, 3);
    assert!(c.catalog_digest.starts_with("sha256:"));
    // The discover probe is rejected, then the legacy handshake runs in order.
    let methods = f.methods();
    assert_eq!(
        &methods[..4],
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    check_handshake(&f, "initialize");
    assert!(f.keys.lock().unwrap().iter().all(|k| k == "k-123"));
    assert!(!f.keys.lock().unwrap().is_empty());

    // An unchanged server gives the same catalog, digests included.
    let again = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(again, c);
}

#[tokio::test]
async fn crawls_a_2026_07_28_server_through_discovery() {
    let (addr, f) = start(Behavior {
        modern: true,
        ..Behavior::default()
    })
    .await;
    let c = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(c.protocol_version, "2026-07-28");
    assert_eq!(c.server_name, "fake-modern");
    assert_eq!(c.tools.len(), 2);
    let methods = f.methods();
    assert!(!methods.iter().any(|m| m == "initialize"), "{methods:?}");
    // Without a handshake, each request carries the client's identity.
    let list = f.first("tools/list");
    let meta = &list["params"]["_meta"];
    assert!(meta.to_string().contains(CLIENT_NAME), "{list}");
}

#[tokio::test]
async fn crawls_a_legacy_sse_server() {
    let (addr, f) = start(Behavior::default()).await;
    let c = crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(c.protocol_version, "2025-11-25");
    assert_eq!(c.tools.len(), 2);
    assert_eq!(
        &f.methods()[..3],
        ["initialize", "notifications/initialized", "tools/list"]
    );
    check_handshake(&f, "initialize");
    assert!(f.keys.lock().unwrap().len() >= 3);
}

#[tokio::test]
async fn older_protocol_answers_are_recorded_and_unknown_ones_refused() {
    let (addr, _) = start(Behavior {
        init_version: "2024-11-05",
        ..Behavior::default()
    })
    .await;
    let c = crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(c.protocol_version, "2024-11-05");
    let (addr, _) = start(Behavior {
        init_version: "1999-01-01",
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(e.reason(), "ProtocolError", "{e}");
}

#[tokio::test]
async fn sse_endpoint_on_another_origin_is_refused() {
    let (addr, f) = start(Behavior {
        sse_endpoint: Some("http://169.254.169.254/message".into()),
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(
        e,
        CrawlError::Redirect {
            to: "http://169.254.169.254/message".into()
        }
    );
    assert!(f.methods().is_empty());
}

#[tokio::test]
async fn unauthorized_reports_the_challenge_on_both_transports() {
    let challenge = r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource""#;
    let (addr, _) = start(Behavior {
        status: Some((401, Some(challenge))),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            CrawlError::Unauthorized {
                status: 401,
                challenge: Some(challenge.into())
            },
            "{path}"
        );
        assert!(!e.to_string().contains("k-123"));
    }
    let (addr, _) = start(Behavior {
        status: Some((403, None)),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            CrawlError::Unauthorized {
                status: 403,
                challenge: None
            },
            "{path}"
        );
    }
}

#[tokio::test]
async fn http_errors_keep_their_status() {
    for status in [404, 500, 503] {
        let (addr, _) = start(Behavior {
            status: Some((status, None)),
            ..Behavior::default()
        })
        .await;
        for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
            let e = crawl(
                &target(format!("http://{addr}/{path}"), transport),
                &LOOPBACK,
            )
            .await
            .unwrap_err();
            assert_eq!(e, CrawlError::Http { status }, "{path} {status}: {e}");
        }
    }
}

#[tokio::test]
async fn nothing_listening_is_a_connect_failure() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(e.reason(), "ConnectFailed", "{path}: {e}");
    }
}

#[tokio::test]
async fn slow_requests_time_out_and_the_deadline_bounds_the_crawl() {
    let (addr, _) = start(Behavior {
        tools_delay: Some(Duration::from_secs(3)),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
        let mut t = target(format!("http://{addr}/{path}"), transport);
        t.request_timeout = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let e = crawl(&t, &LOOPBACK).await.unwrap_err();
        assert_eq!(
            e,
            CrawlError::Timeout {
                phase: "tools/list"
            },
            "{path}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));

        let mut t = target(format!("http://{addr}/{path}"), transport);
        t.deadline = Duration::from_millis(500);
        let e = crawl(&t, &LOOPBACK).await.unwrap_err();
        assert_eq!(e, CrawlError::Timeout { phase: "deadline" }, "{path}");
    }
}

#[tokio::test]
async fn loopback_is_refused_by_default_before_any_request() {
    let (addr, f) = start(Behavior::default()).await;
    let net = NetPolicy::default();
    for url in [
        format!("http://{addr}/mcp"),
        format!("http://localhost:{}/mcp", addr.port()),
    ] {
        let e = crawl(&target(url.clone(), Transport::StreamableHttp), &net)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                CrawlError::Refused {
                    why: "loopback",
                    ..
                }
            ),
            "{url}: {e:?}"
        );
    }
    let e = crawl(
        &target(
            format!("http://localhost:{}/sse", addr.port()),
            Transport::Sse,
        ),
        &net,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            e,
            CrawlError::Refused {
                why: "loopback",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(f.methods().is_empty());
}

#[tokio::test]
async fn redirects_are_followed_only_within_the_origin() {
    let (addr, _) = start(Behavior::default()).await;
    let (away, f_away) = start(Behavior {
        redirect_to: Some(format!("http://localhost:{}/mcp", addr.port())),
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{away}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(
        e,
        CrawlError::Redirect {
            to: format!("http://localhost:{}/mcp", addr.port())
        }
    );
    assert!(f_away.methods().is_empty());

    let (near, f_near) = start(Behavior {
        redirect_to: Some("/moved".into()),
        ..Behavior::default()
    })
    .await;
    let c = crawl(
        &target(format!("http://{near}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert_eq!(c.tools.len(), 2);
    assert!(f_near.methods().iter().any(|m| m == "tools/list"));

    // A same-origin redirect loop ends at the hop cap.
    let (looping, _) = start(Behavior {
        redirect_to: Some("/mcp".into()),
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{looping}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(e.reason(), "ProtocolError", "{e}");
    assert!(e.to_string().contains("redirects"), "{e}");
}

#[tokio::test]
async fn paging_loops_and_caps_fail_the_crawl_over_the_wire() {
    let looping = Behavior {
        tool_pages: vec![
            (None, json!({"tools": [], "nextCursor": "a"})),
            (Some("a"), json!({"tools": [], "nextCursor": "a"})),
        ],
        ..Behavior::default()
    };
    let (addr, _) = start(looping).await;
    let e = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(e, CrawlError::RepeatedCursor);

    let (addr, _) = start(Behavior::default()).await;
    let mut t = target(format!("http://{addr}/mcp"), Transport::StreamableHttp);
    t.max_tools = 1;
    assert_eq!(
        crawl(&t, &LOOPBACK).await.unwrap_err(),
        CrawlError::OverCap {
            cap: Cap::MaxTools,
            limit: 1
        }
    );
    let mut t = target(format!("http://{addr}/sse"), Transport::Sse);
    t.max_bytes = 64;
    assert_eq!(
        crawl(&t, &LOOPBACK).await.unwrap_err(),
        CrawlError::OverCap {
            cap: Cap::MaxBytes,
            limit: 64
        }
    );
}

#[tokio::test]
async fn undeclared_capabilities_are_not_listed() {
    let (addr, f) = start(Behavior {
        capabilities: json!({"tools": {}}),
        ..Behavior::default()
    })
    .await;
    let c = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap();
    assert!(c.resources.is_empty());
    assert_eq!(
        c.not_implemented,
        vec!["resources/list", "resources/templates/list", "prompts/list"]
    );
    assert!(!f.methods().iter().any(|m| m.starts_with("resources/")));
}

#[tokio::test]
async fn an_oversized_response_is_over_max_bytes_not_buffered() {
    // Over maxBytes the response is refused as it is read, and reported against it.
    let huge = "x".repeat(3 << 20);
    let (addr, _) = start(Behavior {
        tool_pages: vec![(
            None,
            json!({"tools": [{"name": "t", "description": huge, "inputSchema": {}}]}),
        )],
        ..Behavior::default()
    })
    .await;
    for (path, transport) in [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)] {
        let mut t = target(format!("http://{addr}/{path}"), transport);
        t.max_bytes = 1024;
        assert_eq!(
            crawl(&t, &LOOPBACK).await.unwrap_err(),
            CrawlError::OverCap {
                cap: Cap::MaxBytes,
                limit: 1024
            },
            "{path}"
        );
    }
}

/// Both transports, by URL path.
const BOTH: [(&str, Transport); 2] = [("mcp", Transport::StreamableHttp), ("sse", Transport::Sse)];

/// `n` minimal tools, as the raw result of one `tools/list` page.
fn minimal_tools(n: usize) -> String {
    let mut s = String::with_capacity(n * 40 + 16);
    s.push_str(r#"{"tools":["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(r#"{{"name":"t{i:06}","inputSchema":{{}}}}"#));
    }
    s.push_str("]}");
    s
}

/// Regression (issue 10, §2): a 15 MB page of 400,000 minimal tools was parsed whole
/// (by rmcp, then again into JSON values) before `maxTools` was looked at. Now the bytes
/// are counted as they arrive and the tools as they are read: over `maxBytes` reading
/// stops at the cap; under it, at the first tool over `maxTools`. Either way the
/// failure names the cap and its configured limit, on both transports, and on
/// streamable HTTP for a JSON body and for an event stream alike.
#[tokio::test]
async fn a_huge_page_stops_at_the_first_cap_it_reaches() {
    let page = Arc::new(minimal_tools(400_000));
    assert!(page.len() > 14_000_000, "{}", page.len());
    for sse_reply in [false, true] {
        let (addr, _) = start(Behavior {
            raw_tools: Some(page.clone()),
            sse_reply,
            ..Behavior::default()
        })
        .await;
        for (path, transport) in BOTH {
            let what = format!("{path} (sse reply: {sse_reply})");
            let mut t = target(format!("http://{addr}/{path}"), transport);
            t.max_bytes = 4 << 20;
            t.max_tools = 10_000;
            assert_eq!(
                crawl(&t, &LOOPBACK).await.unwrap_err(),
                CrawlError::OverCap {
                    cap: Cap::MaxBytes,
                    limit: 4 << 20
                },
                "{what}"
            );
            t.max_bytes = 16 << 20;
            let e = crawl(&t, &LOOPBACK).await.unwrap_err();
            assert_eq!(
                e,
                CrawlError::OverCap {
                    cap: Cap::MaxTools,
                    limit: 10_000
                },
                "{what}"
            );
            assert!(e.to_string().contains("maxTools (10000)"), "{e}");
        }
    }
}

/// Regression (issue 10, §8): an SSE event over the limit was reported as
/// `ConnectFailed: connection closed` on streamable HTTP, and against the wrong
/// `maxBytes` on the SSE transport. Now: `OverCap`, with the `maxBytes` that was set.
#[tokio::test]
async fn an_oversized_event_is_over_max_bytes_on_both_transports() {
    let huge = "x".repeat(3 << 20);
    let (addr, _) = start(Behavior {
        tool_pages: vec![(
            None,
            json!({"tools": [{"name": "t", "description": huge, "inputSchema": {}}]}),
        )],
        sse_reply: true,
        ..Behavior::default()
    })
    .await;
    // 64 KiB: far under the event (the old client's own event limit, 4 x maxBytes but at
    // least 1 MiB, broke the stream first); 1 MiB: within that limit.
    for max_bytes in [64 << 10, 1 << 20] {
        for (path, transport) in BOTH {
            let mut t = target(format!("http://{addr}/{path}"), transport);
            t.max_bytes = max_bytes;
            let e = crawl(&t, &LOOPBACK).await.unwrap_err();
            assert_eq!(
                e,
                CrawlError::OverCap {
                    cap: Cap::MaxBytes,
                    limit: max_bytes
                },
                "{path} {max_bytes}: {e}"
            );
            let said = format!("maxBytes ({max_bytes} bytes)");
            assert!(e.to_string().contains(&said), "{e}");
        }
    }
}

/// Messages other than list pages (the handshake here) are bounded by the fixed
/// message limit, and say so rather than naming `maxBytes` or a closed connection.
#[tokio::test]
async fn an_oversized_handshake_is_over_the_message_limit() {
    for sse_reply in [false, true] {
        let (addr, _) = start(Behavior {
            init_padding: MESSAGE_LIMIT + 1,
            sse_reply,
            ..Behavior::default()
        })
        .await;
        for (path, transport) in BOTH {
            let e = crawl(
                &target(format!("http://{addr}/{path}"), transport),
                &LOOPBACK,
            )
            .await
            .unwrap_err();
            assert_eq!(
                e,
                CrawlError::OverCap {
                    cap: Cap::Message,
                    limit: MESSAGE_LIMIT
                },
                "{path} (sse reply: {sse_reply}): {e}"
            );
        }
    }
    // The SSE transport's endpoint event too (it was reported against four times
    // maxBytes).
    let (addr, _) = start(Behavior {
        sse_endpoint: Some(format!("/message?pad={}", "p".repeat(MESSAGE_LIMIT))),
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(
        e,
        CrawlError::OverCap {
            cap: Cap::Message,
            limit: MESSAGE_LIMIT
        }
    );
    // Under the limit, a long handshake is fine.
    let (addr, _) = start(Behavior {
        init_padding: 100_000,
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap();
    }
}

/// Regression (issue 10, §8): JSON nested deeper than the parser allows was reported as
/// "cannot reach the server" (`ConnectFailed`). It is a `ProtocolError` that says so.
#[tokio::test]
async fn deeply_nested_json_is_a_protocol_error_on_both_transports() {
    let depth = 100_000;
    let deep = format!(
        r#"{{"tools":[{{"name":"deep","inputSchema":{{"x":{}{}}}}}]}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    for sse_reply in [false, true] {
        let (addr, _) = start(Behavior {
            raw_tools: Some(Arc::new(deep.clone())),
            sse_reply,
            ..Behavior::default()
        })
        .await;
        for (path, transport) in BOTH {
            let e = crawl(
                &target(format!("http://{addr}/{path}"), transport),
                &LOOPBACK,
            )
            .await
            .unwrap_err();
            assert_eq!(e.reason(), "ProtocolError", "{path}: {e}");
            assert!(
                e.to_string().contains("nested deeper than 64 levels"),
                "{e}"
            );
            assert!(e.to_string().contains("tool #0"), "{e}");
        }
    }
    // Malformed JSON is a protocol error too, not a connection failure.
    let (addr, _) = start(Behavior {
        raw_tools: Some(Arc::new(r#"{"tools": [ {"name": "#.into())),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(e.reason(), "ProtocolError", "{path}: {e}");
    }
}

const EVIL: &str =
    "\u{1b}[31mRED\u{1b}[0m\u{1b}[2J\u{7}\rfake\nlevel=error msg=forged\u{202e}gnp.exe ";

fn assert_shown_safely(m: &str, max: usize) {
    assert!(m.len() <= max, "{} bytes", m.len());
    assert!(
        !m.chars().any(|c| c.is_control() || untrusted::is_unsafe(c)),
        "{m:?}"
    );
}

/// Regression (issue 10, §7): a 2 MB JSON-RPC error message was copied whole, escape
/// bytes included, into the failure (then status, logs and the CLI's stderr). Now it is
/// an `RpcError` whose message is one escaped line of at most `MAX_MESSAGE` bytes.
#[tokio::test]
async fn a_huge_error_message_is_bounded_and_escaped() {
    let huge = EVIL.repeat(2 * 1024 * 1024 / EVIL.len());
    let (addr, _) = start(Behavior {
        tools_error: Some((-32603, huge.clone())),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        // The error is the list response: within maxBytes (the default, 4 MiB) it is read.
        let mut t = target(format!("http://{addr}/{path}"), transport);
        t.max_bytes = 4 << 20;
        let e = crawl(&t, &LOOPBACK).await.unwrap_err();
        assert_eq!(e.reason(), "RpcError", "{path}");
        let m = e.to_string();
        assert_shown_safely(&m, untrusted::MAX_MESSAGE);
        assert!(
            m.starts_with("the server answered tools/list with error -32603: \\u{1b}[31mRED"),
            "{m}"
        );
    }
    // The same error on the handshake: under the message limit it is reported the same
    // way; over it, as over the limit.
    let (addr, _) = start(Behavior {
        init_error: Some((-32000, EVIL.repeat(2000))),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(e.reason(), "RpcError", "{path}: {e}");
        assert_shown_safely(&e.to_string(), untrusted::MAX_MESSAGE);
    }
    let (addr, _) = start(Behavior {
        init_error: Some((-32000, huge)),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        let e = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap_err();
        assert_eq!(e.reason(), "OverCap", "{path}: {e}");
    }
}

/// Regression (issue 10, §7): what a server says about itself and its tools reaches
/// status and terminals escaped and bounded; names with control characters are refused.
#[tokio::test]
async fn server_text_in_the_catalog_is_escaped_and_bounded() {
    let long = "v".repeat(10_000);
    let (addr, _) = start(Behavior {
        server_info: (format!("{EVIL}name"), long),
        tool_pages: vec![(
            None,
            json!({"tools": [{"name": "t", "title": EVIL, "description": format!("{EVIL}\nsecond line"),
                "inputSchema": {}, "annotations": {"title": EVIL}}]}),
        )],
        resources: Some(json!({"resources": [{"uri": "file:///a", "name": EVIL, "mimeType": EVIL}]})),
        ..Behavior::default()
    })
    .await;
    for (path, transport) in BOTH {
        let c = crawl(
            &target(format!("http://{addr}/{path}"), transport),
            &LOOPBACK,
        )
        .await
        .unwrap();
        assert_shown_safely(&c.server_name, 256);
        assert_shown_safely(c.server_version.as_deref().unwrap(), 256);
        assert!(
            c.server_name.starts_with("\\u{1b}[31mRED"),
            "{}",
            c.server_name
        );
        let t = &c.tools[0];
        assert_shown_safely(t.title.as_deref().unwrap(), 1024);
        assert_shown_safely(t.annotations.title.as_deref().unwrap(), 1024);
        let d = t.description.as_deref().unwrap();
        assert!(
            d.contains("\nsecond line") && !d.contains('\u{1b}') && !d.contains('\r'),
            "{d:?}"
        );
        assert_shown_safely(c.resources[0].name.as_deref().unwrap(), 1024);
        assert_shown_safely(c.resources[0].mime_type.as_deref().unwrap(), 256);
    }
    let (addr, _) = start(Behavior {
        tool_pages: vec![(
            None,
            json!({"tools": [{"name": format!("a{EVIL}"), "inputSchema": {}}]}),
        )],
        ..Behavior::default()
    })
    .await;
    let e = crawl(
        &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
        &LOOPBACK,
    )
    .await
    .unwrap_err();
    assert_eq!(e.reason(), "ProtocolError");
    assert!(e.to_string().contains("control character U+001B"), "{e}");
}

mod watch;

#[test]
fn the_crawl_future_can_be_spawned() {
    fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}
    let t = target("http://127.0.0.1:1/mcp".into(), Transport::StreamableHttp);
    spawnable(async move { crawl(&t, &LOOPBACK).await });
}
