//! The validating admission webhook (docs/admission.md): served on every replica over
//! TLS, it denies mcpgov objects that are wrong in themselves with the offline
//! validator's messages. Registered with `failurePolicy: Ignore` by the chart, so an
//! outage of mcpgov never blocks the cluster.

pub mod cert;
pub mod deny;
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

#[derive(Clone)]
struct Ctx {
    governance_namespace: Arc<str>,
}

/// Provision the certificate, then serve until the process stops.
pub async fn run(
    client: kube::Client,
    config: Config,
    governance_namespace: String,
) -> Result<(), String> {
    let material = cert::provision(&client, &config.cert).await?;
    let current: tls::Current = Arc::new(RwLock::new(tls::server_config(
        &material.cert_pem,
        &material.key_pem,
    )?));
    tokio::spawn(refresh(
        client,
        config.cert.clone(),
        material,
        current.clone(),
    ));
    let listener = tls::TlsListener::bind(config.listen, current)
        .await
        .map_err(|e| format!("admission listener on {}: {e}", config.listen))?;
    tracing::info!(addr = %config.listen, path = PATH, "serving the admission webhook");
    let ctx = Ctx {
        governance_namespace: governance_namespace.into(),
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
    loop {
        if let Some(name) = &cfg.webhook_config {
            match cert::sync_ca_bundle(&client, name, &serving.ca_pem).await {
                Ok(true) => said_missing = false,
                Ok(false) if !said_missing => {
                    said_missing = true;
                    tracing::warn!(configuration = %name, "no ValidatingWebhookConfiguration of this name yet; its caBundle is set once it exists");
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "cannot set the admission caBundle"),
            }
        }
        tokio::time::sleep(REFRESH).await;
        match cert::provision(&client, &cfg).await {
            Ok(m) if m != serving => match tls::server_config(&m.cert_pem, &m.key_pem) {
                Ok(c) => {
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
    match review(&ctx, &body, jiff::Timestamp::now()) {
        Ok(out) => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&out).expect("a review serialises"),
        )
            .into_response(),
        Err(why) => (StatusCode::BAD_REQUEST, why).into_response(),
    }
}

/// One review; `Err` when the body is no AdmissionReview v1 request (answered 400, and
/// the API server applies the failure policy).
fn review(ctx: &Ctx, body: &[u8], now: jiff::Timestamp) -> Result<ReviewOut, String> {
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
        return Ok(review::Response::allow(
            uid,
            vec![format!(
                "mcpgov admission: {what} is not an mcpgov.io kind; not reviewed"
            )],
        )
        .into_review());
    }
    let object = match (req.operation.as_str(), req.object) {
        ("CREATE" | "UPDATE", Some(o)) => o,
        // DELETE and CONNECT carry no new object: nothing of the object to deny.
        _ => return Ok(review::Response::allow(uid, Vec::new()).into_review()),
    };
    let namespace = req.namespace.as_deref().unwrap_or("default");
    let problems = deny::problems(&object, namespace, &ctx.governance_namespace, now);
    let response = if problems.is_empty() {
        review::Response::allow(uid, Vec::new())
    } else {
        review::Response::deny(uid, deny::message(&problems), Vec::new())
    };
    Ok(response.into_review())
}

#[cfg(test)]
mod tests;
