//! The only code that writes to the API: server-side apply of `/status` (field manager
//! `mcpgov`), bundle ConfigMaps, their removal, and Events. Each call has a timeout and
//! is counted by result.

use super::events::{self, Key, Next, Notice, Series};
use super::jobs::{Done, Event, Job, ObjectId, Op, Report, Written};
use super::metrics::Metrics;
use super::queue::Queue;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use std::fmt;
use std::time::Duration;

pub use crate::names::FIELD_MANAGER;

const TIMEOUT: Duration = Duration::from_secs(10);
/// Reports per list page: each may be up to about 1 MiB.
const REPORT_PAGE: u32 = 20;

/// Errors of the write path. The variant, not a formatted string, labels metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The API server answered with an error (transient unless it is a 4xx other than
    /// conflict/throttling); `code` is absent when no answer came (connection errors).
    Api { code: Option<u16>, message: String },
    /// No answer within the timeout (transient).
    Timeout,
    /// This replica does not hold the lease: it must not write.
    NotLeader,
    /// A ConfigMap to create exists already and is not one mcpgov created.
    Taken,
    /// An earlier step of the same job failed: this one was not sent.
    NotAttempted,
}

impl Error {
    /// The one label of a failure, in every metric that counts failures
    /// (`mcpgov_status_writes_total`, `mcpgov_configmap_writes_total`,
    /// `mcpgov_reconcile_errors_total`).
    pub fn label(&self) -> &'static str {
        match self {
            Error::Api {
                code: Some(409), ..
            }
            | Error::Taken => "conflict",
            Error::Api { .. } => "api",
            Error::Timeout => "timeout",
            Error::NotLeader => "not_leader",
            Error::NotAttempted => "not_attempted",
        }
    }

    /// Whether retrying without a change can help.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api {
                code: Some(code), ..
            } => *code == 409 || *code == 429 || *code >= 500,
            // A new leader reconciles everything anyway; a taken name stays taken.
            Error::NotLeader | Error::Taken => false,
            _ => true,
        }
    }

    fn code(&self) -> Option<u16> {
        match self {
            Error::Api { code, .. } => *code,
            _ => None,
        }
    }
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        let code = match &e {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        };
        Error::Api {
            code,
            message: e.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api { message, .. } => write!(f, "{message}"),
            Error::Timeout => write!(f, "API request timed out after {}s", TIMEOUT.as_secs()),
            Error::NotLeader => write!(f, "not the leader: write skipped"),
            Error::Taken => write!(f, "the name is taken by an object mcpgov did not create"),
            Error::NotAttempted => write!(f, "not attempted: an earlier write failed"),
        }
    }
}

impl std::error::Error for Error {}

async fn timed<T>(fut: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
    match tokio::time::timeout(TIMEOUT, fut).await {
        Ok(r) => r.map_err(Error::from),
        Err(_) => Err(Error::Timeout),
    }
}

/// Events waiting to be published; beyond this a burst drops them (they are
/// notices, not state: status carries the same facts). Held while the writer is busy
/// (`EVENT_HOLD`), a first convergence of the large estate queues about 1,100.
const EVENT_QUEUE: usize = 4096;

/// How long an Event waits for the writer to have nothing queued or in flight: the API
/// server's time goes to status and bundles first, Events after.
const EVENT_HOLD: Duration = Duration::from_secs(10);

/// An Event to publish, with when it was queued.
type Queued = (Notice, ObjectReference, tokio::time::Instant);

#[derive(Clone)]
pub struct Writer {
    client: Client,
    metrics: Metrics,
    events: tokio::sync::mpsc::Sender<Queued>,
    leader: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// True while the writer task has jobs queued or in flight.
    busy: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
}

/// Publishes Events off the reconcile path: awaited inline they were 43% of a pass's
/// API round trips on a 500-agent estate. Series are keyed with the note (`events`).
/// Each waits until the writer is idle, `EVENT_HOLD` at most after it was queued.
async fn publish_events(
    client: Client,
    instance: String,
    mut queue: tokio::sync::mpsc::Receiver<Queued>,
    leader: std::sync::Arc<std::sync::atomic::AtomicBool>,
    mut busy: tokio::sync::watch::Receiver<bool>,
) {
    let mut series = Series::default();
    while let Some((notice, obj, queued)) = queue.recv().await {
        // A closed channel (the writer gone) or the hold over: publish anyway.
        let _ = tokio::time::timeout_at(queued + EVENT_HOLD, busy.wait_for(|b| !*b)).await;
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
                    Err(e) if e.code() == Some(404) => {
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
        let (busy, idle) = tokio::sync::watch::channel(false);
        tokio::spawn(publish_events(
            client.clone(),
            instance,
            queue,
            leader.clone(),
            idle,
        ));
        Writer {
            events,
            client,
            metrics,
            leader,
            busy: std::sync::Arc::new(busy),
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

    /// Run one job's steps in order; after a failure the rest are not sent (an Agent's
    /// status never reports a bundle whose ConfigMap was not written). Each step's
    /// events are queued once it succeeded.
    pub async fn run(&self, job: Job) -> Report {
        let mut steps = Vec::with_capacity(job.steps.len());
        let mut failed = false;
        for step in job.steps {
            let object = step.op.object(&job.object);
            let result = if failed {
                Err(Error::NotAttempted)
            } else {
                self.write(&job.object, &step.op).await
            };
            if result.is_ok() {
                for e in step.events {
                    self.event(e);
                }
            } else {
                failed = true;
            }
            steps.push(Done {
                object,
                op: step.op.held(),
                result,
            });
        }
        Report {
            job: job.object,
            steps,
        }
    }

    async fn write(&self, job: &ObjectId, op: &Op) -> Result<Written, Error> {
        match op {
            Op::Status {
                manager,
                label,
                status,
            } => self.apply_status(job, manager, label, status).await,
            Op::CreateConfigMap(cm) => self.create_configmap(cm).await,
            Op::ApplyConfigMap(cm) => self.apply_configmap(cm).await,
            Op::DeleteConfigMap { name, uid } => {
                self.delete_configmap(&job.key.namespace, name, uid).await
            }
            Op::ApplyReport { api, report } => self.apply_report(*api, report).await,
            Op::DeleteReport { api, uid } => {
                self.delete_report(*api, &job.key.namespace, uid.as_deref())
                    .await
            }
        }
    }

    /// Server-side apply of `status` on the object `id` (field manager `manager`),
    /// counted under `label`.
    async fn apply_status(
        &self,
        id: &ObjectId,
        manager: &str,
        label: &str,
        status: &serde_json::Value,
    ) -> Result<Written, Error> {
        let Some(ar) = id.kind.api_resource() else {
            return Err(Error::Api {
                code: None,
                message: format!("a {} has no status", id.kind.name()),
            });
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &id.key.namespace, &ar);
        let body = serde_json::json!({
            "apiVersion": ar.api_version,
            "kind": ar.kind,
            "status": status,
        });
        let pp = PatchParams::apply(manager).force();
        self.leading()?;
        let result = timed(api.patch_status(&id.key.name, &pp, &Patch::Apply(&body))).await;
        let outcome = match &result {
            Ok(_) => "written",
            Err(e) => e.label(),
        };
        self.metrics
            .writes
            .status_writes
            .with_label_values(&[label, outcome])
            .inc();
        result.map(|o| written(&o.metadata))
    }

    /// Create a bundle ConfigMap that does not exist yet; `Error::Taken` when the name
    /// is: an object we did not create is never applied over.
    async fn create_configmap(&self, cm: &ConfigMap) -> Result<Written, Error> {
        let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        self.leading()?;
        let pp = kube::api::PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..Default::default()
        };
        let result = match timed(api.create(&pp, cm)).await {
            Err(e) if e.code() == Some(409) => Err(Error::Taken),
            r => r.map(|o| written(&o.metadata)),
        };
        self.count_cm(result.as_ref().map(|_| "written"));
        result
    }

    /// Update a bundle ConfigMap mcpgov created for this Agent. `cm` carries the uid it
    /// was seen with, so a same-named object created since is refused, not taken over.
    async fn apply_configmap(&self, cm: &ConfigMap) -> Result<Written, Error> {
        let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        self.leading()?;
        let result = timed(api.patch(name, &pp, &Patch::Apply(cm))).await;
        self.count_cm(result.as_ref().map(|_| "written"));
        result.map(|o| written(&o.metadata))
    }

    /// Delete one of our bundle ConfigMaps, only if it is still the object with `uid`.
    async fn delete_configmap(&self, ns: &str, name: &str, uid: &str) -> Result<Written, Error> {
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
            Err(e) if e.code() == Some(404) => Ok(()),
            r => r.map(|_| ()),
        };
        self.count_cm(result.as_ref().map(|_| "deleted"));
        result.map(|()| Written::default())
    }

    fn count_cm(&self, r: Result<&str, &Error>) {
        let label = match r {
            Ok(l) => l,
            Err(e) => e.label(),
        };
        self.metrics
            .writes
            .configmap_writes
            .with_label_values(&[label])
            .inc();
    }

    /// Server-side apply of one PolicyReport / OpenReports Report (field manager
    /// `mcpgov`).
    async fn apply_report(
        &self,
        api: crate::reports::Api,
        report: &crate::reports::Report,
    ) -> Result<Written, Error> {
        let ns = &report.metadata.namespace;
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), ns, &api.resource());
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        self.leading()?;
        let result = timed(api.patch(&report.metadata.name, &pp, &Patch::Apply(report))).await;
        self.count_report(result.as_ref().map(|_| "written"));
        result.map(|o| written(&o.metadata))
    }

    /// Delete our report in `ns`, only if it is still the object with `uid` (when known).
    async fn delete_report(
        &self,
        api: crate::reports::Api,
        ns: &str,
        uid: Option<&str>,
    ) -> Result<Written, Error> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), ns, &api.resource());
        self.leading()?;
        let dp = DeleteParams {
            preconditions: uid.map(|u| kube::api::Preconditions {
                uid: Some(u.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let result = match timed(api.delete(crate::names::REPORT_NAME, &dp)).await {
            Err(e) if e.code() == Some(404) => Ok(()),
            r => r.map(|_| ()),
        };
        self.count_report(result.as_ref().map(|_| "deleted"));
        result.map(|()| Written::default())
    }

    /// Our reports as the API holds them (labelled as ours, named `mcpgov`), in pages.
    /// A 404 means the API is not served (its CRD is missing).
    pub async fn list_reports(
        &self,
        api: crate::reports::Api,
        namespace: Option<&str>,
    ) -> Result<Vec<DynamicObject>, Error> {
        let ar = api.resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
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

    fn count_report(&self, r: Result<&str, &Error>) {
        let label = match r {
            Ok(l) => l,
            Err(e) => e.label(),
        };
        self.metrics
            .reports
            .report_writes
            .with_label_values(&[label])
            .inc();
    }

    /// Queue an Event for the publishing task; a full queue drops it (logged).
    fn event(&self, e: Event) {
        if self.leading().is_err() {
            return;
        }
        let reason = e.notice.reason.as_str();
        let queued = tokio::time::Instant::now();
        if self
            .events
            .try_send((e.notice, e.regarding, queued))
            .is_err()
        {
            tracing::warn!(reason, "event queue full, event dropped");
        }
    }
}

fn written(meta: &kube::api::ObjectMeta) -> Written {
    Written {
        resource_version: meta.resource_version.clone(),
        uid: meta.uid.clone(),
    }
}

/// API writes in flight at most. The API server served one in 3.7-8.5 ms on the large
/// estate; one at a time capped the operator at ~100 writes/s.
pub const CONCURRENCY: usize = 16;

/// The writer task: jobs from the index go through the queue (`queue`), at most
/// `CONCURRENCY` at once and one per object; every job's report goes back to the
/// index as a message, so it can schedule retries and record what was written.
pub fn spawn<M: From<Report> + Send + 'static>(
    writer: Writer,
    concurrency: usize,
    mut jobs: tokio::sync::mpsc::UnboundedReceiver<Vec<Job>>,
    reports: tokio::sync::mpsc::Sender<M>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut queue = Queue::default();
        let mut running = tokio::task::JoinSet::new();
        // Which object each running task writes: a panicked task still frees it.
        let mut objects = std::collections::HashMap::new();
        let mut open = true;
        loop {
            while running.len() < concurrency.max(1) {
                let Some(job) = queue.start(concurrency.max(1)) else {
                    break;
                };
                let w = writer.clone();
                let object = job.object.clone();
                let task = running.spawn(async move { w.run(job).await });
                objects.insert(task.id(), (object, std::time::Instant::now()));
            }
            let busy = !running.is_empty() || queue.queued() > 0;
            writer
                .busy
                .send_if_modified(|b| std::mem::replace(b, busy) != busy);
            if !open && !busy {
                return;
            }
            tokio::select! {
                batch = jobs.recv(), if open => match batch {
                    Some(batch) => batch.into_iter().for_each(|j| queue.push(j)),
                    None => open = false,
                },
                Some(done) = running.join_next_with_id(), if !running.is_empty() => {
                    let report = match done {
                        Ok((id, r)) => {
                            if let Some((_, started)) = objects.remove(&id) {
                                tracing::debug!(
                                    object = %r.job,
                                    steps = r.steps.len(),
                                    elapsed_ms = started.elapsed().as_millis() as u64,
                                    queued = queue.queued(),
                                    in_flight = running.len(),
                                    "job done"
                                );
                            }
                            r
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "a write task panicked");
                            if let Some((object, _)) = objects.remove(&e.id()) {
                                queue.done(&object);
                            }
                            continue;
                        }
                    };
                    queue.done(&report.job);
                    if reports.send(M::from(report)).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}
