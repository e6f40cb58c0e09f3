//! Self-managed serving certificate: the first replica to find no usable Secret makes
//! a CA and a serving certificate (rcgen) and creates the Secret; every other replica
//! loses the create race (409) and reads the winner's, so all replicas serve one
//! certificate under one CA. Each replica then keeps the ValidatingWebhookConfiguration's
//! `caBundle` equal to that CA (a `helm upgrade` resets it to the template's value).
//!
//! Renewal without a gap: the replica that replaces the certificate keeps the CA it
//! replaces in the Secret (`previous-ca.crt`, until that CA's own end), and the
//! `caBundle` carries both, the new CA first. Every replica puts the new bundle in
//! place before it serves the new certificate, so a replica still serving the old one
//! (for up to a refresh period) is trusted all along (docs/admission.md).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::collections::BTreeMap;

pub const CA_KEY: &str = "ca.crt";
pub const CERT_KEY: &str = "tls.crt";
pub const KEY_KEY: &str = "tls.key";
/// The CA a renewal replaced, kept for the overlap.
pub const PREVIOUS_CA_KEY: &str = "previous-ca.crt";
/// When the previous CA's certificates stop being valid (RFC 3339).
const PREVIOUS_NOT_AFTER_ANNOTATION: &str = "mcpgov.io/admission-previous-not-after";
/// The names the certificate was made for (comma-separated): a Secret made for other
/// names is replaced.
const HOSTS_ANNOTATION: &str = "mcpgov.io/admission-hosts";
/// When the certificate stops being valid (RFC 3339): replaced a month before.
const NOT_AFTER_ANNOTATION: &str = "mcpgov.io/admission-not-after";
const VALID_DAYS: i64 = 365;
const RENEW_DAYS: i64 = 30;

/// The PEM texts one replica serves with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    /// The CA this one replaced and its end, while certificates under it may still be
    /// served by a replica that has not swapped yet.
    pub previous: Option<(String, jiff::Timestamp)>,
}

impl Material {
    /// What the webhook's `caBundle` holds: this CA, then the previous one.
    pub fn ca_bundle(&self) -> String {
        let mut b = self.ca_pem.clone();
        if let Some((prev, _)) = &self.previous {
            if !b.ends_with('\n') {
                b.push('\n');
            }
            b.push_str(prev);
        }
        b
    }
}

/// Where the Secret lives and what the certificate names.
#[derive(Clone, Debug)]
pub struct CertConfig {
    pub namespace: String,
    pub secret: String,
    /// DNS names or IP addresses the API server dials (the Service's names, or
    /// 127.0.0.1 when it calls a `url:`).
    pub hosts: Vec<String>,
    /// The ValidatingWebhookConfiguration whose `caBundle` is kept; none: left alone
    /// (e.g. cert-manager's CA injector or a hand-made configuration).
    pub webhook_config: Option<String>,
}

/// A fresh CA and a serving certificate for `hosts`, valid from now for a year.
pub fn generate(hosts: &[String], now: jiff::Timestamp) -> Result<Material, String> {
    let err = |e: rcgen::Error| format!("cannot make the admission certificate: {e}");
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "mcpgov admission CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    set_validity(&mut ca, now)?;
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(hosts.to_vec()).map_err(err)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "mcpgov admission webhook");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    set_validity(&mut leaf, now)?;
    let leaf_key = KeyPair::generate().map_err(err)?;
    let cert = leaf.signed_by(&leaf_key, &issuer).map_err(err)?;
    Ok(Material {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: leaf_key.serialize_pem(),
        previous: None,
    })
}

/// From a day before `now` (clock skew between replicas and the API server) to
/// `VALID_DAYS` after, at day granularity.
fn set_validity(p: &mut CertificateParams, now: jiff::Timestamp) -> Result<(), String> {
    let day = |days: i64| {
        let d = now
            .checked_add(jiff::SignedDuration::from_hours(24 * days))
            .map_err(|e| format!("certificate validity: {e}"))?
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date();
        Ok::<_, String>(rcgen::date_time_ymd(
            i32::from(d.year()),
            d.month() as u8,
            d.day() as u8,
        ))
    };
    p.not_before = day(-1)?;
    p.not_after = day(VALID_DAYS)?;
    Ok(())
}

fn not_after(now: jiff::Timestamp) -> String {
    now.checked_add(jiff::SignedDuration::from_hours(24 * (VALID_DAYS - 1)))
        .unwrap_or(now)
        .to_string()
}

/// The Secret's material when it is complete, made for `hosts` and not due for renewal.
pub(crate) fn usable(secret: &Secret, hosts: &[String], now: jiff::Timestamp) -> Option<Material> {
    let ann = secret.metadata.annotations.as_ref()?;
    if ann.get(HOSTS_ANNOTATION)? != &hosts.join(",") {
        return None;
    }
    let until: jiff::Timestamp = ann.get(NOT_AFTER_ANNOTATION)?.parse().ok()?;
    if until
        <= now
            .checked_add(jiff::SignedDuration::from_hours(24 * RENEW_DAYS))
            .ok()?
    {
        return None;
    }
    let data = secret.data.as_ref()?;
    let text = |k: &str| String::from_utf8(data.get(k)?.0.clone()).ok();
    let previous = text(PREVIOUS_CA_KEY).zip(
        ann.get(PREVIOUS_NOT_AFTER_ANNOTATION)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok()),
    );
    Some(Material {
        ca_pem: text(CA_KEY)?,
        cert_pem: text(CERT_KEY)?,
        key_pem: text(KEY_KEY)?,
        previous: previous.filter(|(_, until)| *until > now),
    })
}

/// The CA of a Secret being replaced, and its end, while certificates under it are
/// still valid: what the new Secret keeps for the overlap.
fn outgoing_ca(secret: &Secret, now: jiff::Timestamp) -> Option<(String, jiff::Timestamp)> {
    let until: jiff::Timestamp = secret
        .metadata
        .annotations
        .as_ref()?
        .get(NOT_AFTER_ANNOTATION)?
        .parse()
        .ok()?;
    let pem = String::from_utf8(secret.data.as_ref()?.get(CA_KEY)?.0.clone()).ok()?;
    (until > now && pem.contains("-----BEGIN CERTIFICATE-----")).then_some((pem, until))
}

/// New material to replace `existing` (none: the first), keeping its CA for the overlap.
pub fn renew(
    existing: Option<&Secret>,
    hosts: &[String],
    now: jiff::Timestamp,
) -> Result<Material, String> {
    let mut fresh = generate(hosts, now)?;
    fresh.previous = existing.and_then(|s| outgoing_ca(s, now));
    Ok(fresh)
}

pub(crate) fn secret_of(cfg: &CertConfig, m: &Material, now: jiff::Timestamp) -> Secret {
    let mut data = BTreeMap::from([
        (
            CA_KEY.to_string(),
            ByteString(m.ca_pem.clone().into_bytes()),
        ),
        (
            CERT_KEY.to_string(),
            ByteString(m.cert_pem.clone().into_bytes()),
        ),
        (
            KEY_KEY.to_string(),
            ByteString(m.key_pem.clone().into_bytes()),
        ),
    ]);
    let mut annotations = BTreeMap::from([
        (HOSTS_ANNOTATION.to_string(), cfg.hosts.join(",")),
        (NOT_AFTER_ANNOTATION.to_string(), not_after(now)),
    ]);
    if let Some((pem, until)) = &m.previous {
        data.insert(
            PREVIOUS_CA_KEY.to_string(),
            ByteString(pem.clone().into_bytes()),
        );
        annotations.insert(PREVIOUS_NOT_AFTER_ANNOTATION.to_string(), until.to_string());
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(cfg.secret.clone()),
            namespace: Some(cfg.namespace.clone()),
            annotations: Some(annotations),
            labels: Some(BTreeMap::from([(
                crate::names::MANAGED_BY.to_string(),
                crate::names::MANAGER.to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    }
}

/// The material every replica agrees on: the Secret's when usable, else a new one
/// written under optimistic concurrency (the loser of a race reads the winner's).
pub async fn provision(client: &Client, cfg: &CertConfig) -> Result<Material, String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &cfg.namespace);
    let at = |e: kube::Error| format!("admission Secret {}/{}: {e}", cfg.namespace, cfg.secret);
    for _ in 0..3 {
        let now = jiff::Timestamp::now();
        let existing = api.get_opt(&cfg.secret).await.map_err(at)?;
        if let Some(m) = existing.as_ref().and_then(|s| usable(s, &cfg.hosts, now)) {
            return Ok(m);
        }
        let fresh = renew(existing.as_ref(), &cfg.hosts, now)?;
        let mut secret = secret_of(cfg, &fresh, now);
        let written = match existing {
            None => api.create(&PostParams::default(), &secret).await,
            Some(old) => {
                // Replace only the version we read: a concurrent writer wins.
                secret.metadata.resource_version = old.metadata.resource_version;
                api.replace(&cfg.secret, &PostParams::default(), &secret)
                    .await
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(secret = %cfg.secret, hosts = %cfg.hosts.join(","), "made the admission certificate");
                return Ok(fresh);
            }
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(at(e)),
        }
    }
    Err(format!(
        "admission Secret {}/{}: kept changing under three attempts",
        cfg.namespace, cfg.secret
    ))
}

/// Set every webhook's `caBundle` in the configuration to `ca_pem` (one CA, or the new
/// and the previous during a renewal); `Ok(false)` when the configuration does not
/// exist (yet).
pub async fn sync_ca_bundle(client: &Client, name: &str, ca_pem: &str) -> Result<bool, String> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let at = |e: kube::Error| format!("ValidatingWebhookConfiguration {name}: {e}");
    for _ in 0..3 {
        let Some(mut cfg) = api.get_opt(name).await.map_err(at)? else {
            return Ok(false);
        };
        let want = ByteString(ca_pem.as_bytes().to_vec());
        let mut changed = false;
        for w in cfg.webhooks.iter_mut().flatten() {
            if w.client_config.ca_bundle.as_ref() != Some(&want) {
                w.client_config.ca_bundle = Some(want.clone());
                changed = true;
            }
        }
        if !changed {
            return Ok(true);
        }
        match api.replace(name, &PostParams::default(), &cfg).await {
            Ok(_) => {
                tracing::info!(configuration = %name, "set the admission caBundle");
                return Ok(true);
            }
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(at(e)),
        }
    }
    Err(format!(
        "ValidatingWebhookConfiguration {name}: kept changing under three attempts"
    ))
}
