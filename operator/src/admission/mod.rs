//! The validating admission webhook (docs/admission.md): served on every replica over
//! TLS, it denies mcpgov objects that are wrong in themselves with the offline
//! validator's messages. Registered with `failurePolicy: Ignore` by the chart, so an
//! outage of mcpgov never blocks the cluster.

pub mod cert;
pub mod clash;
pub mod consequences;
pub mod deny;
pub mod drift;
pub mod mirror;
pub mod review;
pub mod tls;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use review::{ReviewIn, ReviewOut};
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The path the webhook configuration calls.
pub const PATH: &str = "/validate";
/// Largest AdmissionReview read: an object and its old version, each at most the API
/// server's ~1.5 MiB request limit, plus the envelope.
pub const MAX_BODY: usize = 4 << 20;
/// How often each replica re-reads the Secret (renewal, a rotation by another
/// replica) and restores the `caBundle`.
const REFRESH: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    pub cert: cert::CertConfig,
}

/// The longest a review waits for the mirror and its consequences before answering
/// without them (the chart's timeoutSeconds is 3).
const CONSEQUENCE_BUDGET: Duration = Duration::from_millis(1000);
/// Reviews computing consequences at once; others wait within the budget.
const CONCURRENT_WHAT_IFS: usize = 2;
/// The longest a review waits to read an Agent's bundle ConfigMap.
const CONFIG_MAP_BUDGET: Duration = Duration::from_millis(500);

#[derive(Clone)]
struct Ctx {
    /// For the one read a review makes: an Agent's bundle ConfigMap (none in tests).
    client: Option<kube::Client>,
    governance_namespace: Arc<str>,
    mirror: Option<mirror::Mirror>,
    what_ifs: Arc<tokio::sync::Semaphore>,
}

/// Provision the certificate, then serve until the process stops.
pub async fn run(
    client: kube::Client,
    config: Config,
    governance_namespace: String,
    mirror: Option<mirror::Mirror>,
) -> Result<(), String> {
    let material = cert::provision(&client, &config.cert).await?;
    if let Some(name) = &config.cert.webhook_config {
        // Trust before serving (a renewal this replica just made); failures are said
        // by the refresh loop, which tries again.
        let _ = cert::sync_ca_bundle(&client, name, &material.ca_bundle()).await;
    }
    let current: tls::Current = Arc::new(RwLock::new(tls::server_config(
        &material.cert_pem,
        &material.key_pem,
    )?));
    tokio::spawn(refresh(
        client.clone(),
        config.cert.clone(),
        material,
        current.clone(),
    ));
    let listener = tls::TlsListener::bind(config.listen, current)
        .await
        .map_err(|e| format!("admission listener on {}: {e}", config.listen))?;
    tracing::info!(addr = %config.listen, path = PATH, "serving the admission webhook");
    let ctx = Ctx {
        client: Some(client.clone()),
        governance_namespace: governance_namespace.into(),
        mirror,
        what_ifs: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_WHAT_IFS)),
    };
    axum::serve(listener, router(ctx))
        .await
        .map_err(|e| format!("admission server: {e}"))
}

/// Keep serving what the Secret holds and the caBundle equal to its CA.
async fn refresh(
    client: kube::Client,
    cfg: cert::CertConfig,
    mut serving: cert::Material,
    current: tls::Current,
) {
    let mut said_missing = false;
    let mut sync = async |client: &kube::Client, bundle: &str| {
        let Some(name) = &cfg.webhook_config else {
            return;
        };
        match cert::sync_ca_bundle(client, name, bundle).await {
            Ok(true) => said_missing = false,
            Ok(false) if !said_missing => {
                said_missing = true;
                tracing::warn!(configuration = %name, "no ValidatingWebhookConfiguration of this name yet; its caBundle is set once it exists");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot set the admission caBundle"),
        }
    };
    loop {
        sync(&client, &serving.ca_bundle()).await;
        tokio::time::sleep(REFRESH).await;
        match cert::provision(&client, &cfg).await {
            Ok(m) if m != serving => match tls::server_config(&m.cert_pem, &m.key_pem) {
                Ok(c) => {
                    // The bundle first, trusting old and new: then no replica's
                    // certificate, swapped or not yet, is refused in between.
                    sync(&client, &m.ca_bundle()).await;
                    *current.write().expect("not poisoned") = c;
                    serving = m;
                    tracing::info!("serving a new admission certificate");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "admission Secret holds an unusable certificate")
                }
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the admission Secret"),
        }
    }
}

fn router(ctx: Ctx) -> Router {
    Router::new()
        .route(PATH, post(validate))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(ctx)
}

async fn validate(State(ctx): State<Ctx>, body: Bytes) -> Response {
    let now = jiff::Timestamp::now();
    match review(&ctx, &body, now) {
        Ok((mut out, candidate)) => {
            if let Some(c) = candidate {
                consider(&ctx, &mut out.response, c, now).await;
            }
            (
                [(header::CONTENT_TYPE, "application/json")],
                serde_json::to_vec(&out).expect("a review serialises"),
            )
                .into_response()
        }
        Err(why) => (StatusCode::BAD_REQUEST, why).into_response(),
    }
}

/// Add the consequences of an admitted object: warnings, or a refusal for a new
/// violation of a Policy with `admission: Enforce`. Fails open with a warning when the
/// mirror is not ready or the budget runs out.
async fn consider(ctx: &Ctx, response: &mut review::Response, c: Candidate, now: jiff::Timestamp) {
    let Candidate {
        change,
        namespace,
        bundle,
    } = c;
    let agent = match &change {
        Weigh::Apply(o) => o.key().clone(),
        Weigh::DeleteServer(k) => k.clone(),
    };
    if let (Some(name), Some(client)) = (&bundle, &ctx.client) {
        // One read, bounded; on any failure the clash is left to the Agent's status.
        let read = clash::foreign_config_map(client, &agent.namespace, name);
        match tokio::time::timeout(CONFIG_MAP_BUDGET, read).await {
            Ok(Ok(true)) => {
                let problem = format!("Agent {agent}: {}", clash::foreign_message(name));
                return deny_with(response, vec![problem]);
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read a bundle ConfigMap for admission")
            }
            Err(_) => tracing::warn!("reading a bundle ConfigMap for admission timed out"),
        }
    }
    let Some(m) = ctx.mirror.clone() else {
        return;
    };
    if !m.is_ready() {
        response.warnings.push(
            "mcpgov: the operator is still reading the cluster; consequences not computed".into(),
        );
        return;
    }
    let work = async {
        let permit = ctx.what_ifs.clone().acquire_owned().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut s = m.state.lock().unwrap_or_else(|e| e.into_inner());
            let clash = bundle.as_deref().and_then(|name| {
                clash::other_agent(&s.bundle_names, &agent, name)
                    .map(|other| format!("Agent {agent}: {}", clash::shared_message(name, other)))
            });
            match (clash, change) {
                (Some(problem), _) => Err(problem),
                (None, Weigh::Apply(o)) => Ok(consequences::compute(&mut s, o, &namespace, now)),
                (None, Weigh::DeleteServer(k)) => {
                    Ok(consequences::compute_delete(&mut s, &k, &namespace, now))
                }
            }
        })
        .await
        .ok()
    };
    match tokio::time::timeout(CONSEQUENCE_BUDGET, work).await {
        Ok(Some(Err(problem))) => deny_with(response, vec![problem]),
        Ok(Some(Ok(c))) => {
            response.warnings.extend(c.warnings);
            if !c.refusals.is_empty() {
                response.allowed = false;
                response.status = Some(review::Status {
                    code: 403,
                    reason: "Forbidden",
                    message: deny::message(&c.refusals),
                });
            }
        }
        _ => response.warnings.push(format!(
            "mcpgov: consequences not computed within {} ms; admitted unchecked",
            CONSEQUENCE_BUDGET.as_millis()
        )),
    }
}

/// What a review asks the mirror about.
enum Weigh {
    /// An object admitted by Deny, as it would be stored.
    Apply(mcpgov_engine::Object),
    /// An MCPServer being deleted: the Grants it leaves drifting.
    DeleteServer(mcpgov_engine::ObjKey),
}

/// A change admitted so far, whose consequences are still to be weighed.
struct Candidate {
    change: Weigh,
    /// The request's namespace.
    namespace: String,
    /// An Agent's bundle ConfigMap name.
    bundle: Option<String>,
}

/// Deny after the fact, as Deny itself answers (422, the same message form).
fn deny_with(response: &mut review::Response, problems: Vec<String>) {
    response.allowed = false;
    response.status = Some(review::Status {
        code: 422,
        reason: "Invalid",
        message: deny::message(&problems),
    });
}

/// One review; `Err` when the body is no AdmissionReview v1 request (answered 400, and
/// the API server applies the failure policy).
fn review(
    ctx: &Ctx,
    body: &[u8],
    now: jiff::Timestamp,
) -> Result<(ReviewOut, Option<Candidate>), String> {
    let input: ReviewIn =
        serde_json::from_slice(body).map_err(|e| format!("not an AdmissionReview: {e}"))?;
    if input.api_version != review::API_VERSION || input.kind != review::KIND {
        return Err(format!("expected {} {}", review::API_VERSION, review::KIND));
    }
    let req = input
        .request
        .ok_or_else(|| "AdmissionReview without a request".to_string())?;
    let uid = req.uid;
    let gvk = &req.kind;
    let ours = gvk.group == crate::crd::common::GROUP
        && crate::manifest::KINDS.contains(&gvk.kind.as_str());
    if !ours {
        // A configuration that routes other kinds here is a mistake: say it, never block.
        let what = crate::text::quote(&format!("{}/{} {}", gvk.group, gvk.version, gvk.kind), 120);
        let warning = format!("mcpgov admission: {what} is not an mcpgov.io kind; not reviewed");
        return Ok((
            review::Response::allow(uid, vec![warning]).into_review(),
            None,
        ));
    }
    let namespace = req.namespace.as_deref().unwrap_or("default");
    let object = match (req.operation.as_str(), req.object) {
        ("CREATE" | "UPDATE", Some(o)) => o,
        // Never refused; a server's deletion is weighed for the Grants it leaves drifting.
        ("DELETE", _) if gvk.kind == "MCPServer" && req.name.is_some() => {
            let key = mcpgov_engine::ObjKey::new(namespace, req.name.as_deref().unwrap_or(""));
            let candidate = Candidate {
                change: Weigh::DeleteServer(key),
                namespace: namespace.to_string(),
                bundle: None,
            };
            return Ok((
                review::Response::allow(uid, Vec::new()).into_review(),
                Some(candidate),
            ));
        }
        // DELETE and CONNECT carry no new object: nothing of the object to deny.
        _ => return Ok((review::Response::allow(uid, Vec::new()).into_review(), None)),
    };
    let (problems, mut objects) =
        deny::problems(&object, namespace, &ctx.governance_namespace, now);
    if !problems.is_empty() {
        let response = review::Response::deny(uid, deny::message(&problems), Vec::new());
        return Ok((response.into_review(), None));
    }
    let candidate = (objects.len() == 1).then(|| {
        let read = objects.remove(0);
        Candidate {
            change: Weigh::Apply(read.object),
            namespace: namespace.to_string(),
            bundle: read.bundle,
        }
    });
    Ok((
        review::Response::allow(uid, Vec::new()).into_review(),
        candidate,
    ))
}

#[cfg(test)]
mod bench;
#[cfg(test)]
mod tests;
