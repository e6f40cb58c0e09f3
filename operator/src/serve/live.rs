//! `mcpgov operator --mcp-listen ADDR`: the governance questions over streamable HTTP
//! on every replica, answered from the live index's mirror (leader or follower alike),
//! each request authenticated by its bearer token and each answer limited to what the
//! caller may read ([`super::tenancy`]; docs/mcp-server.md).

use super::tenancy::{self, Authenticator, Caller, Refused};
use super::{Governance, MAX_REQUEST_BYTES, foreign_host_or_origin};
use crate::admission::mirror::Mirror;
use crate::controller::bundles;
use crate::questions::{
    GraphId, Published, PublishedBundles, Question, Refusal, Snapshot, Visibility,
};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use mcpgov_engine::ObjKey;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// MCP sessions open at once on one replica; a new one beyond is answered 503.
pub const MAX_SESSIONS: usize = 256;
/// HTTP requests handled at once on one replica; beyond, 503.
pub const MAX_IN_FLIGHT: usize = 64;
/// Longest graph instance read back from a bundle ConfigMap's annotation.
const MAX_INSTANCE: usize = 128;

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// Serve without tokens, reading everything: loopback listeners only (development).
    pub allow_unauthenticated: bool,
    /// Audiences a token must be for (TokenReview `spec.audiences`); empty: the API
    /// server's own.
    pub audiences: Vec<String>,
}

impl Config {
    /// Refuse `--mcp-allow-unauthenticated` on anything but a loopback address.
    pub fn check(&self) -> Result<(), String> {
        if self.allow_unauthenticated && !self.listen.ip().is_loopback() {
            return Err(format!(
                "--mcp-allow-unauthenticated answers anyone, so it needs a loopback \
                 --mcp-listen (127.0.0.1 or [::1]), not {}",
                self.listen
            ));
        }
        Ok(())
    }
}

/// The live index as the questions read it.
pub struct Live {
    mirror: Mirror,
    /// The index's graph instance (random per process).
    instance: String,
    /// The namespace of bare agent names.
    namespace: String,
}

impl Live {
    pub fn new(mirror: Mirror, instance: String) -> Live {
        Live {
            mirror,
            instance,
            namespace: "default".into(),
        }
    }

    pub fn answer(
        &self,
        q: &Question,
        vis: &Visibility,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, Refusal> {
        if !self.mirror.is_ready() {
            return Err(Refusal::Failed(
                "the operator is still reading the cluster; ask again shortly".into(),
            ));
        }
        let state = self.mirror.state.lock().unwrap_or_else(|e| e.into_inner());
        let held = self
            .mirror
            .bundles
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let eval = state.engine.evaluator(jiff::Timestamp::now());
        let s = Snapshot {
            eval: &eval,
            graph: GraphId {
                instance: self.instance.clone(),
                generation: state.engine.generation(),
            },
            namespace: &self.namespace,
            published: Some(&Held(&held)),
        };
        (q.answer)(&s, vis, args)
    }

    /// Every namespace the index holds objects in: those a caller's reviews cover.
    fn namespaces(&self) -> BTreeSet<String> {
        let state = self.mirror.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .engine
            .namespaces()
            .into_iter()
            .map(str::to_string)
            .collect()
    }
}

struct Held<'a>(&'a BTreeMap<ObjKey, Published>);

impl PublishedBundles for Held<'_> {
    fn published(&self, agent: &ObjKey) -> Option<Published> {
        self.0.get(agent).cloned()
    }
}

/// The agent a bundle ConfigMap (as the index holds it) was published for, and what it
/// says of itself. Annotations are anyone's to edit: read bounded.
pub fn published_of(cm: &ConfigMap) -> Option<(ObjKey, Published)> {
    let (agent, _) = bundles::owner(cm)?;
    let namespace = cm.namespace()?;
    let ann = cm.annotations();
    let mut instance = ann
        .get(bundles::INSTANCE_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    if instance.len() > MAX_INSTANCE {
        let mut cut = MAX_INSTANCE;
        while !instance.is_char_boundary(cut) {
            cut -= 1;
        }
        instance.truncate(cut);
    }
    Some((
        ObjKey::new(&namespace, agent),
        Published {
            config_map: cm.name_any(),
            sha256: bundles::held_digest(cm)?.to_string(),
            revision: bundles::revision(cm),
            instance,
            generation: ann
                .get(bundles::GENERATION_ANNOTATION)
                .and_then(|g| g.parse().ok())
                .unwrap_or(0),
        },
    ))
}

struct Gate<R> {
    /// `None`: unauthenticated (loopback, development).
    auth: Option<Arc<Authenticator<R>>>,
    live: Arc<Live>,
    sessions: Arc<LocalSessionManager>,
    in_flight: Arc<Semaphore>,
}

impl<R> Clone for Gate<R> {
    fn clone(&self) -> Self {
        Gate {
            auth: self.auth.clone(),
            live: self.live.clone(),
            sessions: self.sessions.clone(),
            in_flight: self.in_flight.clone(),
        }
    }
}

/// Serve until the process stops. `ready` gets the bound address.
pub async fn run(
    client: kube::Client,
    config: Config,
    mirror: Mirror,
    instance: String,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), String> {
    config.check()?;
    let auth = (!config.allow_unauthenticated).then(|| {
        Arc::new(Authenticator::new(tenancy::Kube {
            client,
            audiences: config.audiences.clone(),
        }))
    });
    let app = router(auth, mirror, instance);
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("MCP listener on {}: {e}", config.listen))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("MCP listener: {e}"))?;
    tracing::info!(addr = %bound, path = "/mcp", authenticated = !config.allow_unauthenticated, "serving the governance questions over MCP");
    ready(bound);
    serve_on(listener, app)
        .await
        .map_err(|e| format!("MCP server: {e}"))
}

/// Serve `app` with Nagle off (`nodelay`).
pub async fn serve_on(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    axum::serve(nodelay(listener), app).await
}

/// The listener with Nagle off on every connection: a streamed answer is written in
/// pieces, and Nagle held the last one back until the client's delayed ACK (~40 ms per
/// call, measured).
pub fn nodelay(
    listener: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = std::net::SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    })
}

/// `/mcp` over the mirror, behind the guard (`auth` `None`: unauthenticated).
pub fn router<R: tenancy::Reviews>(
    auth: Option<Arc<Authenticator<R>>>,
    mirror: Mirror,
    instance: String,
) -> Router {
    let live = Arc::new(Live::new(mirror, instance));
    let gov = Governance::live(live.clone());
    let sessions = Arc::new(LocalSessionManager::default());
    // Any Host: the Service's names reach it; browsers cannot attach a bearer token
    // to a rebinding attack, and the unauthenticated mode keeps serve's guard.
    let service: StreamableHttpService<Governance, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(gov.clone()),
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_max_request_body_bytes(MAX_REQUEST_BYTES)
                .disable_allowed_hosts(),
        );
    let gate = Gate {
        auth,
        live,
        sessions,
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
    };
    Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, guard::<R>))
}

/// Before any MCP handling: the request budget, the caller, the session budget.
async fn guard<R: tenancy::Reviews>(
    axum::extract::State(gate): axum::extract::State<Gate<R>>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Ok(_permit) = gate.in_flight.clone().try_acquire_owned() else {
        return busy("too many requests in flight");
    };
    let caller = match &gate.auth {
        None => {
            if let Some(why) = foreign_host_or_origin(req.headers()) {
                return (
                    StatusCode::FORBIDDEN,
                    format!("forbidden: {why} is not a loopback name\n"),
                )
                    .into_response();
            }
            Arc::new(Caller {
                user: "(unauthenticated)".into(),
                visibility: Visibility::All,
            })
        }
        Some(auth) => {
            let Some(token) = bearer(req.headers()) else {
                return unauthorized();
            };
            let live = gate.live.clone();
            match auth.caller(token, move || live.namespaces()).await {
                Ok(c) => c,
                Err(Refused::Unauthenticated) => return unauthorized(),
                Err(Refused::Unavailable(e)) => {
                    tracing::warn!(error = %e, "cannot review an MCP caller's token");
                    return busy("the caller cannot be checked now");
                }
            }
        }
    };
    if !req.headers().contains_key("mcp-session-id")
        && req.method() == axum::http::Method::POST
        && gate.sessions.sessions.read().await.len() >= MAX_SESSIONS
    {
        return busy("too many MCP sessions open");
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// The token of the one `Authorization: Bearer TOKEN` header, bounded.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut all = headers.get_all(header::AUTHORIZATION).iter();
    let value = all.next()?;
    if all.next().is_some() {
        return None;
    }
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.len() <= tenancy::MAX_TOKEN_BYTES
        && !token.contains(char::is_whitespace))
    .then_some(token)
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "unauthorized: send Authorization: Bearer TOKEN (docs/mcp-server.md)\n",
    )
        .into_response()
}

fn busy(why: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        format!("unavailable: {why}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn one_bearer_token_is_read_and_anything_else_is_none() {
        assert_eq!(bearer(&auth(&["Bearer abc.def"])), Some("abc.def"));
        assert_eq!(bearer(&auth(&["bearer  abc"])), Some("abc"));
        let long = format!("Bearer {}", "a".repeat(tenancy::MAX_TOKEN_BYTES + 1));
        for bad in [
            vec![],
            vec!["Bearer"],
            vec!["Bearer "],
            vec!["Basic dXNlcjpwYXNz"],
            vec!["Bearer a b"],
            vec![long.as_str()],
            // Two headers: which one would be checked is ambiguous.
            vec!["Bearer a", "Bearer b"],
        ] {
            assert_eq!(bearer(&auth(&bad)), None, "{:.40?}", bad);
        }
    }

    #[test]
    fn unauthenticated_listening_is_refused_off_loopback() {
        let config = |addr: &str, open: bool| Config {
            listen: addr.parse().unwrap(),
            allow_unauthenticated: open,
            audiences: vec!["mcpgov".into()],
        };
        assert!(config("127.0.0.1:0", true).check().is_ok());
        assert!(config("[::1]:8090", true).check().is_ok());
        assert!(config("0.0.0.0:8090", false).check().is_ok());
        for addr in ["0.0.0.0:8090", "10.0.0.5:8090", "[::]:8090"] {
            let e = config(addr, true).check().unwrap_err();
            assert!(e.contains("loopback"), "{e}");
        }
    }
}
