//! Crawl scheduling: every MCPServer is crawled every `crawl.intervalSeconds` and at once
//! when its spec changes, with bounded concurrency across servers and per-server
//! exponential backoff with jitter on failure.
//!
//! After a good crawl the server's session is kept open (up to [`MAX_WATCHED`] of them)
//! to hear `notifications/*/list_changed`; one brings the next crawl forward (no sooner
//! than [`EARLY_MIN_GAP`] after the last). The interval still applies: notifications are
//! unreliable in practice, and a kept session is dropped when its server's next crawl
//! starts, its spec changes or it is removed.
//! Results go back to the index task, which owns the engine and every status write.

use super::watch::Msg;
use crate::crawler::{self, NetPolicy, Target, Transport};
use crate::crd::MCPServer;
use crate::crd::server::Transport as SpecTransport;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, ResourceExt};
use mcpgov_engine::ObjKey;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};

/// Sessions kept open for list-changed notifications, across all servers. Past it a
/// server is not watched: its scheduled re-list still applies.
pub const MAX_WATCHED: usize = 256;

/// A list-changed notification crawls again no sooner than this after the last crawl
/// ended (or the interval, if shorter), so a server that announces a change on every
/// listing cannot keep the crawler busy.
pub const EARLY_MIN_GAP: Duration = Duration::from_secs(5);

/// What the scheduler needs of one MCPServer; a change of any field crawls at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrawlSpec {
    pub url: String,
    pub sse: bool,
    /// (header name, Secret name, key): values are read at crawl time, never stored.
    pub headers: Vec<(String, String, String)>,
    pub timeout: Duration,
    pub interval: Duration,
    pub max_tools: usize,
    pub max_bytes: usize,
    /// The server's contract approval: an approval re-crawls at once, so the status
    /// diff and the pending count follow it without waiting for the interval.
    pub contracts: mcpgov_engine::Contracts,
}

impl CrawlSpec {
    /// The crawler's target, with header values already read.
    pub fn target(&self, headers: Vec<(String, String)>) -> Target {
        Target {
            url: self.url.clone(),
            transport: if self.sse {
                Transport::Sse
            } else {
                Transport::StreamableHttp
            },
            headers,
            request_timeout: self.timeout,
            // Connect, initialize, and a few list pages.
            deadline: self.timeout * 6,
            max_tools: self.max_tools,
            max_bytes: self.max_bytes,
        }
    }

    pub fn of(s: &MCPServer) -> CrawlSpec {
        let e = &s.spec.endpoint;
        CrawlSpec {
            url: e.url.clone(),
            sse: e.transport == SpecTransport::SSE,
            headers: e
                .headers
                .iter()
                .map(|h| {
                    let r = &h.value_from.secret_key_ref;
                    (h.name.clone(), r.name.clone(), r.key.clone())
                })
                .collect(),
            timeout: Duration::from_secs(e.timeout_seconds.max(1) as u64),
            interval: Duration::from_secs(s.spec.crawl.interval_seconds.max(1) as u64),
            max_tools: s.spec.crawl.max_tools.max(1) as usize,
            max_bytes: s.spec.crawl.max_bytes.max(1) as usize,
            contracts: s.contract_pins(),
        }
    }
}

pub type Specs = BTreeMap<ObjKey, CrawlSpec>;

/// How one crawl ended.
#[derive(Debug)]
pub struct Outcome {
    pub key: ObjKey,
    pub spec: CrawlSpec,
    pub finished: jiff::Timestamp,
    pub duration: Duration,
    pub result: Result<crawler::Catalog, Failure>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// CamelCase reason for the condition and the metric label.
    pub reason: &'static str,
    pub message: String,
}

struct Slot {
    spec: CrawlSpec,
    due: Instant,
    failures: u32,
    running: bool,
    /// When the last crawl ended.
    last: Option<Instant>,
}

/// The sessions kept open after good crawls, one per server at most.
#[derive(Default)]
struct Watches {
    tasks: JoinSet<(ObjKey, crawler::WatchEnd)>,
    held: BTreeMap<ObjKey, AbortHandle>,
}

impl Watches {
    /// Stop watching `key` (its session closes).
    fn drop_watch(&mut self, key: &ObjKey) {
        if let Some(h) = self.held.remove(key) {
            h.abort();
        }
    }

    fn hold(&mut self, key: ObjKey, watch: crawler::ListChanged) {
        self.drop_watch(&key);
        let k = key.clone();
        let handle = self.tasks.spawn(async move { (k, watch.await) });
        self.held.insert(key, handle);
    }

    fn has_room(&self) -> bool {
        self.held.len() < MAX_WATCHED
    }

    /// The next watch to end, if it is still the one held for its server.
    async fn next(&mut self) -> Option<(ObjKey, crawler::WatchEnd)> {
        loop {
            match self.tasks.join_next_with_id().await? {
                Ok((id, (key, end))) => {
                    if self.held.get(&key).is_some_and(|h| h.id() == id) {
                        self.held.remove(&key);
                        return Some((key, end));
                    }
                }
                // Aborted (already forgotten) or panicked: forget it.
                Err(e) => self.held.retain(|_, h| h.id() != e.id()),
            }
        }
    }
}

/// glibc's allocator and what crawls free. By default glibc raises its mmap threshold to
/// the size of the largest block it has freed (up to 32 MiB), and its trim threshold to
/// twice that: after one big list response, later ones come from the heap and the heap
/// keeps tens of MiB of free space for good. Measured in the e2e suite, four hostile crawls
/// left the operator 35 MiB larger after they ended. So the crawler fixes the thresholds
/// at glibc's own starting values (a fixed one is never raised) when it starts, and trims
/// the heap (free pages anywhere in it) when it goes idle.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod heap {
    use std::ffi::c_int;

    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
        fn malloc_trim(pad: usize) -> c_int;
    }
    const M_TRIM_THRESHOLD: c_int = -1;
    const M_MMAP_THRESHOLD: c_int = -3;

    pub fn fix_thresholds() {
        // SAFETY: mallopt takes no pointer; it only sets allocator parameters, under
        // the allocator's own lock.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
            mallopt(M_TRIM_THRESHOLD, 128 * 1024);
        }
    }

    pub fn give_back() {
        tokio::task::spawn_blocking(|| {
            // SAFETY: malloc_trim takes no pointer and only releases memory the
            // allocator itself holds as free; it locks each arena it walks.
            unsafe { malloc_trim(0) };
        });
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod heap {
    pub fn fix_thresholds() {}
    pub fn give_back() {}
}

/// Backoff after `failures` consecutive failures: 2^n seconds, at most the interval
/// (and 5 minutes), plus up to a second of jitter so servers do not move in lockstep.
pub fn backoff(failures: u32, interval: Duration) -> Duration {
    let base = Duration::from_secs(1u64 << failures.min(8));
    base.min(interval).min(Duration::from_secs(300))
        + Duration::from_millis(rand::random::<u64>() % 1000)
}

/// Run the scheduler until the index goes away. `concurrency` 0 disables crawling.
/// `list_changed` counts the notifications that brought a crawl forward.
pub fn spawn(
    client: Client,
    net: NetPolicy,
    concurrency: usize,
    mut specs: watch::Receiver<Specs>,
    tx: mpsc::Sender<Msg>,
    list_changed: prometheus::IntCounter,
    leader: Arc<std::sync::atomic::AtomicBool>,
) {
    if concurrency == 0 {
        tracing::info!("crawling disabled (--crawl-concurrency 0): catalogs come from status");
        return;
    }
    heap::fix_thresholds();
    tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(concurrency));
        let mut slots: BTreeMap<ObjKey, Slot> = BTreeMap::new();
        let mut running: JoinSet<(Outcome, Option<crawler::ListChanged>)> = JoinSet::new();
        let mut watches = Watches::default();
        loop {
            // Follow the spec map: new or changed servers are due now.
            {
                let current = specs.borrow_and_update().clone();
                slots.retain(|k, _| {
                    let keep = current.contains_key(k);
                    if !keep {
                        watches.drop_watch(k);
                    }
                    keep
                });
                for (k, spec) in current {
                    match slots.get_mut(&k) {
                        Some(s) if s.spec == spec => {}
                        Some(s) => {
                            watches.drop_watch(&k);
                            s.spec = spec;
                            s.due = Instant::now();
                            s.failures = 0;
                        }
                        None => {
                            slots.insert(
                                k,
                                Slot {
                                    spec,
                                    due: Instant::now(),
                                    failures: 0,
                                    running: false,
                                    last: None,
                                },
                            );
                        }
                    }
                }
            }
            let now = Instant::now();
            // Only the leader crawls; followers read catalogs from status.
            let leading = leader.load(std::sync::atomic::Ordering::SeqCst);
            for (key, slot) in slots
                .iter_mut()
                .filter(|(_, s)| leading && !s.running && s.due <= now)
            {
                // A new crawl replaces the session kept from the last one.
                watches.drop_watch(key);
                slot.running = true;
                let (client, net, permits) = (client.clone(), net.clone(), permits.clone());
                let (key, spec) = (key.clone(), slot.spec.clone());
                let keep = watches.has_room();
                running.spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    crawl_one(&client, &net, key, spec, keep).await
                });
            }
            let next_due = slots.values().filter(|s| !s.running).map(|s| s.due).min();
            let sleep = async {
                match next_due {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = specs.changed() => if changed.is_err() { return },
                Some(done) = running.join_next() => {
                    let Ok((outcome, watch)) = done else { continue };
                    if let Some(s) = slots.get_mut(&outcome.key) {
                        s.running = false;
                        s.last = Some(Instant::now());
                        if outcome.result.is_ok() {
                            s.failures = 0;
                            s.due = Instant::now() + s.spec.interval;
                        } else {
                            s.failures += 1;
                            s.due = Instant::now() + backoff(s.failures, s.spec.interval);
                        }
                        // Kept only for the spec it was crawled with, and while there
                        // is room; otherwise dropping it closes the session.
                        if let Some(w) = watch
                            && s.spec == outcome.spec
                            && watches.has_room()
                        {
                            watches.hold(outcome.key.clone(), w);
                        }
                    }
                    if tx.send(Msg::Crawled(Box::new(outcome))).await.is_err() {
                        return;
                    }
                    if running.is_empty() {
                        heap::give_back();
                    }
                }
                Some((key, end)) = watches.next() => {
                    if let Some(s) = slots.get_mut(&key).filter(|s| !s.running) {
                        match end {
                            crawler::WatchEnd::ListChanged => {
                                list_changed.inc();
                                let gap = EARLY_MIN_GAP.min(s.spec.interval);
                                let earliest = s.last.map_or(Instant::now(), |t| t + gap);
                                s.due = s.due.min(earliest.max(Instant::now()));
                                tracing::info!(server = %key, "list changed; re-crawling early");
                            }
                            crawler::WatchEnd::Closed => {
                                tracing::debug!(server = %key, "watched session ended; the interval applies");
                            }
                        }
                    }
                }
                _ = sleep => {}
            }
        }
    });
}

/// Crawl one server; with `keep`, also return the session kept to watch for list
/// changes (when the server announced them).
async fn crawl_one(
    client: &Client,
    net: &NetPolicy,
    key: ObjKey,
    spec: CrawlSpec,
    keep: bool,
) -> (Outcome, Option<crawler::ListChanged>) {
    let started = Instant::now();
    let span = tracing::info_span!("crawl", server = %key);
    let result = async {
        let headers = read_headers(client, &key, &spec).await?;
        let target = spec.target(headers);
        let crawled = if keep {
            crawler::crawl_and_watch(&target, net).await
        } else {
            crawler::crawl(&target, net).await.map(|c| (c, None))
        };
        crawled.map_err(|e| Failure {
            reason: e.reason(),
            message: e.to_string(),
        })
    };
    let result = tracing::Instrument::instrument(result, span).await;
    let duration = started.elapsed();
    let (result, watch) = match result {
        Ok((c, watch)) => {
            tracing::info!(server = %key, tools = c.tools.len(), elapsed_ms = duration.as_millis() as u64, watching = watch.is_some(), "crawled");
            (Ok(c), watch)
        }
        Err(f) => {
            tracing::warn!(server = %key, reason = f.reason, message = %f.message, "crawl failed");
            (Err(f), None)
        }
    };
    let outcome = Outcome {
        key,
        spec,
        finished: jiff::Timestamp::now(),
        duration,
        result,
    };
    (outcome, watch)
}

/// Header values from Secrets in the server's namespace that opted in and allow this
/// server and URL (see `secrets`). Never logged; nothing is sent when one is refused.
async fn read_headers(
    client: &Client,
    server: &ObjKey,
    spec: &CrawlSpec,
) -> Result<Vec<(String, String)>, Failure> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &server.namespace);
    let mut out = Vec::new();
    for (header, secret, key) in &spec.headers {
        let missing = |what: String| Failure {
            reason: "SecretUnavailable",
            message: format!("header {header}: {what}"),
        };
        let s = api
            .get_opt(secret)
            .await
            .map_err(|e| missing(format!("cannot read Secret {secret}: {e}")))?
            .ok_or_else(|| missing(format!("Secret {secret} not found")))?;
        super::secrets::check(&s, &server.name, &spec.url).map_err(|why| Failure {
            reason: "SecretNotAllowed",
            message: format!("header {header}: {why}"),
        })?;
        let value = s
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|b| String::from_utf8_lossy(&b.0).trim_end().to_string())
            .or_else(|| s.string_data.as_ref().and_then(|d| d.get(key)).cloned())
            .ok_or_else(|| missing(format!("Secret {} has no key {key}", s.name_any())))?;
        out.push((header.clone(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawler::{ListChanged, WatchEnd};

    fn key(name: &str) -> ObjKey {
        ObjKey {
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[tokio::test]
    async fn watches_report_only_the_watch_still_held() {
        let mut w = Watches::default();
        // Replaced before it ends: the first never reports.
        let (replaced, rx) = tokio::sync::oneshot::channel::<()>();
        w.hold(
            key("a"),
            ListChanged::from_future(async move {
                let _ = rx.await;
                WatchEnd::ListChanged
            }),
        );
        w.hold(
            key("a"),
            ListChanged::from_future(async { WatchEnd::Closed }),
        );
        assert_eq!(w.next().await, Some((key("a"), WatchEnd::Closed)));
        assert!(w.held.is_empty());

        // Dropped: never reports, and its future is dropped.
        let (dropped, rx) = tokio::sync::oneshot::channel::<()>();
        w.hold(
            key("b"),
            ListChanged::from_future(async move {
                let _ = rx.await;
                WatchEnd::ListChanged
            }),
        );
        w.drop_watch(&key("b"));
        assert_eq!(w.next().await, None);
        // Both ended without reporting: their futures (and sessions) are gone.
        assert!(replaced.is_closed() && dropped.is_closed());

        w.hold(
            key("c"),
            ListChanged::from_future(async { WatchEnd::ListChanged }),
        );
        assert!(w.has_room());
        assert_eq!(w.next().await, Some((key("c"), WatchEnd::ListChanged)));
    }
}
