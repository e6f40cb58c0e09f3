//! The only code that writes to the API: server-side apply of `/status` (field manager
//! `mcpgov`), bundle ConfigMaps, their removal, and Events. Each call has a timeout and
//! is counted by result.

use super::events::{self, Key, Next, Notice, Series};
use super::metrics::Metrics;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::time::Duration;

pub use crate::names::FIELD_MANAGER;

const TIMEOUT: Duration = Duration::from_secs(10);
/// Reports per list page: each may be up to about 1 MiB.
const REPORT_PAGE: u32 = 20;

/// Errors of the write path. The variant, not a formatted string, labels metrics.
#[derive(Debug)]
pub enum Error {
    /// The API server answered with an error (transient unless it is a 4xx other than
    /// conflict/throttling).
    Api(kube::Error),
    /// No answer within the timeout (transient).
    Timeout,
    /// This replica does not hold the lease: it must not write.
    NotLeader,
}

impl Error {
    pub fn label(&self) -> &'static str {
        match self {
            Error::Api(kube::Error::Api(s)) if s.code == 409 => "conflict",
            Error::Api(_) => "error",
            Error::Timeout => "timeout",
            Error::NotLeader => "not_leader",
        }
    }

    /// Whether retrying without a change can help.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api(kube::Error::Api(s)) => s.code == 409 || s.code == 429 || s.code >= 500,
            // A new leader reconciles everything anyway.
            Error::NotLeader => false,
            _ => true,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api(e) => write!(f, "{e}"),
            Error::Timeout => write!(f, "API request timed out after {}s", TIMEOUT.as_secs()),
            Error::NotLeader => write!(f, "not the leader: write skipped"),
        }
    }
}

impl std::error::Error for Error {}

async fn timed<T>(fut: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
    match tokio::time::timeout(TIMEOUT, fut).await {
        Ok(r) => r.map_err(Error::Api),
        Err(_) => Err(Error::Timeout),
    }
}

/// Events waiting to be published; beyond this a burst drops them (they are
/// notices, not state: status carries the same facts).
const EVENT_QUEUE: usize = 1024;

#[derive(Clone)]
pub struct Writer {
    client: Client,
    metrics: Metrics,
    events: tokio::sync::mpsc::Sender<(Notice, ObjectReference)>,
    leader: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Publishes Events off the reconcile path: awaited inline they were 43% of a pass's
/// API round trips on a 500-agent estate. Series are keyed with the note (`events`).
async fn publish_events(
    client: Client,
    instance: String,
    mut queue: tokio::sync::mpsc::Receiver<(Notice, ObjectReference)>,
    leader: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let mut series = Series::default();
    while let Some((notice, obj)) = queue.recv().await {
        if !leader.load(std::sync::atomic::Ordering::SeqCst) {
            continue;
        }
        let ns = obj.namespace.clone().unwrap_or_else(|| "default".into());
        let api: Api<K8sEvent> = Api::namespaced(client.clone(), &ns);
        let key = Key::new(&notice, &obj);
        let now = jiff::Timestamp::now();
        let sent = match series.next(&key, now) {
            Next::Repeat { name, count } => {
                let patch = events::series_patch(count, now);
                match timed(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))).await
                {
                    Ok(_) => Ok((name, count)),
                    // Gone on the server (events expire): start a new one.
                    Err(Error::Api(kube::Error::Api(s))) if s.code == 404 => {
                        series.forget(&key);
                        create_event(&api, &notice, &obj, &instance, now).await
                    }
                    Err(e) => Err(e),
                }
            }
            Next::Create => create_event(&api, &notice, &obj, &instance, now).await,
        };
        match sent {
            Ok((name, count)) => series.published(key, name, count, now),
            Err(e) => {
                tracing::warn!(error = %e, reason = %notice.reason, "could not publish event")
            }
        }
    }
}

async fn create_event(
    api: &Api<K8sEvent>,
    notice: &Notice,
    obj: &ObjectReference,
    instance: &str,
    now: jiff::Timestamp,
) -> Result<(String, i32), Error> {
    let ev = events::new_event(notice, obj, FIELD_MANAGER, instance, now);
    let name = ev.metadata.name.clone().unwrap_or_default();
    timed(api.create(&PostParams::default(), &ev)).await?;
    Ok((name, 1))
}

impl Writer {
    pub fn new(
        client: Client,
        metrics: Metrics,
        leader: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        let instance = std::env::var("HOSTNAME").unwrap_or_else(|_| FIELD_MANAGER.into());
        let (events, queue) = tokio::sync::mpsc::channel(EVENT_QUEUE);
        tokio::spawn(publish_events(
            client.clone(),
            instance,
            queue,
            leader.clone(),
        ));
        Writer {
            events,
            client,
            metrics,
            leader,
        }
    }

    /// Checked right before every write: a replica that lost the lease writes nothing.
    fn leading(&self) -> Result<(), Error> {
        if self.leader.load(std::sync::atomic::Ordering::SeqCst) {
            Ok(())
        } else {
            Err(Error::NotLeader)
        }
    }

    pub fn skipped_status(&self, kind: &str) {
        self.metrics
            .status_writes
            .with_label_values(&[kind, "skipped"])
            .inc();
    }

    /// Server-side apply of `status` on one object of kind `K` (field manager `mcpgov`).
    pub async fn apply_status<K, S>(&self, ns: &str, name: &str, status: &S) -> Result<(), Error>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug,
        S: Serialize,
    {
        let kind = K::kind(&()).into_owned();
        self.apply_status_as::<K, S>(FIELD_MANAGER, &kind, ns, name, status)
            .await
    }

    /// The same with another field manager (the crawler's), counted under `label`.
    pub async fn apply_status_as<K, S>(
        &self,
        manager: &str,
        label: &str,
        ns: &str,
        name: &str,
        status: &S,
    ) -> Result<(), Error>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug,
        S: Serialize,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), ns);
        let body = serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        });
        let pp = PatchParams::apply(manager).force();
        self.leading()?;
        let result = timed(api.patch_status(name, &pp, &Patch::Apply(&body))).await;
        let outcome = match &result {
            Ok(_) => "written",
            Err(e) => e.label(),
        };
        self.metrics
            .status_writes
            .with_label_values(&[label, outcome])
            .inc();
        result.map(|_| ())
    }

    /// Create a bundle ConfigMap that does not exist yet. `Ok(false)` when the name is
    /// taken: an object we did not create is never applied over.
    pub async fn create_configmap(&self, cm: &ConfigMap) -> Result<bool, Error> {
        let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        self.leading()?;
        let pp = kube::api::PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..Default::default()
        };
        match timed(api.create(&pp, cm)).await {
            Err(Error::Api(kube::Error::Api(s))) if s.code == 409 => {
                self.count_cm(Ok("conflict"));
                Ok(false)
            }
            r => {
                self.count_cm(r.as_ref().map(|_| "written"));
                r.map(|_| true)
            }
        }
    }

    /// Update a bundle ConfigMap mcpgov created for this Agent. `cm` carries the uid it
    /// was seen with, so a same-named object created since is refused, not taken over.
    pub async fn apply_configmap(&self, cm: &ConfigMap) -> Result<(), Error> {
        let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        self.leading()?;
        let result = timed(api.patch(name, &pp, &Patch::Apply(cm))).await;
        self.count_cm(result.as_ref().map(|_| "written"));
        result.map(|_| ())
    }

    /// Delete one of our bundle ConfigMaps, only if it is still the object with `uid`.
    pub async fn delete_configmap(&self, ns: &str, name: &str, uid: &str) -> Result<(), Error> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        self.leading()?;
        let dp = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let result = match timed(api.delete(name, &dp)).await {
            Err(Error::Api(kube::Error::Api(s))) if s.code == 404 => Ok(()),
            r => r.map(|_| ()),
        };
        self.count_cm(result.as_ref().map(|_| "deleted"));
        result
    }

    pub fn skipped_configmap(&self) {
        self.metrics
            .configmap_writes
            .with_label_values(&["skipped"])
            .inc();
    }

    fn count_cm(&self, r: Result<&str, &Error>) {
        let label = match r {
            Ok(l) => l,
            Err(e) => e.label(),
        };
        self.metrics
            .configmap_writes
            .with_label_values(&[label])
            .inc();
    }

    /// Server-side apply of one PolicyReport / OpenReports Report (field manager
    /// `mcpgov`); the uid of the object written.
    pub async fn apply_report(
        &self,
        ar: &ApiResource,
        report: &crate::reports::Report,
    ) -> Result<Option<String>, Error> {
        let ns = &report.metadata.namespace;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, ar);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        self.leading()?;
        let result = timed(api.patch(&report.metadata.name, &pp, &Patch::Apply(report))).await;
        self.count_report(result.as_ref().map(|_| "written"));
        result.map(|o| o.metadata.uid)
    }

    /// Delete our report in `ns`, only if it is still the object with `uid` (when known).
    pub async fn delete_report(
        &self,
        ar: &ApiResource,
        ns: &str,
        uid: Option<&str>,
    ) -> Result<(), Error> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, ar);
        self.leading()?;
        let dp = DeleteParams {
            preconditions: uid.map(|u| kube::api::Preconditions {
                uid: Some(u.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let result = match timed(api.delete(crate::names::REPORT_NAME, &dp)).await {
            Err(Error::Api(kube::Error::Api(s))) if s.code == 404 => Ok(()),
            r => r.map(|_| ()),
        };
        self.count_report(result.as_ref().map(|_| "deleted"));
        result
    }

    /// Our reports as the API holds them (labelled as ours, named `mcpgov`), in pages.
    /// A 404 means the API is not served (its CRD is missing).
    pub async fn list_reports(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
    ) -> Result<Vec<DynamicObject>, Error> {
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, ar),
            None => Api::all_with(self.client.clone(), ar),
        };
        let mut lp = ListParams::default()
            .labels(&format!(
                "{}={}",
                crate::names::MANAGED_BY,
                crate::names::MANAGER
            ))
            .fields(&format!("metadata.name={}", crate::names::REPORT_NAME))
            .limit(REPORT_PAGE);
        let mut out = Vec::new();
        loop {
            let page = timed(api.list(&lp)).await?;
            out.extend(page.items);
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp.continue_token = Some(c),
                _ => return Ok(out),
            }
        }
    }

    pub fn skipped_report(&self) {
        self.count_report(Ok("skipped"));
    }

    fn count_report(&self, r: Result<&str, &Error>) {
        let label = match r {
            Ok(l) => l,
            Err(e) => e.label(),
        };
        self.metrics.report_writes.with_label_values(&[label]).inc();
    }

    /// An Event on a transition, queued for the publishing task; failures are
    /// logged, never fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        if self.leading().is_err() {
            return;
        }
        let ev = Notice {
            warning,
            reason: reason.into(),
            note,
            action: "Reconcile".into(),
        };
        if self.events.try_send((ev, obj.object_ref(&()))).is_err() {
            tracing::warn!(reason, "event queue full, event dropped");
        }
    }
}
