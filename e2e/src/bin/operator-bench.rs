//! The operator's figures on the real control plane (issue 6), for `bench/operator-bench.sh`.
//!
//! ```text
//! operator-bench --estate DIR [--namespace bench] [--resync-seconds 60] [--changes 50]
//!                [--apply-concurrency 32] [--with-apply] [--out FILE.md] [--command CMD]
//!                [--revision REV] [--deadline-seconds 900] [--change-gap-ms 250]
//!                [-- OPERATOR_ARGS...]
//! ```
//!
//! `DIR` is what `bench/gen_estate.py DIR SIZE --endpoint-base URL` wrote, with the MCP
//! servers already served at URL (`bench_server.py --http`); KUBECONFIG points at the
//! control plane, the CRDs are installed and `MCPGOV_BIN` names the operator binary.
//!
//! 1. The estate is applied by concurrent server-side apply (timed), with the operator
//!    not running.
//! 2. The operator starts (t0 = spawn). Watches on the five kinds time: every MCPServer
//!    `Crawled=True`; every Agent's status for its generation with the final evaluation
//!    (`drifted` equal to the ghost tools its Grant names, which is only true once every
//!    server's catalog is in) and its bundle ConfigMap holding the sha256 the status
//!    names; then Grants and Policies too; then quiescence (write counters flat).
//! 3. Sequential Grant changes (add one tool, then remove it again), each timed from the
//!    apply returning to the Agent's status and its ConfigMap (parsed) reflecting it.
//! 4. A quiet window holding a full resync pass: writes counted (must be 0).
//! 5. Operator peak RSS (VmHWM), and a restart of the operator on the converged estate
//!    (time to its first full pass, writes: only the crawler's catalog timestamps).
//! 6. With `--with-apply`: a second namespace, a fresh operator already running, and
//!    the estate applied to it: time from the first apply to convergence.
//!
//! Writes are counted from the operator's metrics and, independently, from the API
//! server's `apiserver_request_total` (`kubectl get --raw /metrics`), which also sees
//! Events.

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use mcpgov::crd::{Agent, Grant, MCPServer, Policy};
use mcpgov_e2e::{Operator, client, condition};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const FIELD_MANAGER: &str = "operator-bench";

// ---------------------------------------------------------------------------------
// arguments

struct Args {
    estate: PathBuf,
    namespace: String,
    resync: u64,
    changes: usize,
    apply_concurrency: usize,
    with_apply: bool,
    out: Option<PathBuf>,
    command: String,
    revision: String,
    deadline: Duration,
    change_gap: Duration,
    operator_args: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: operator-bench --estate DIR [--namespace NS] [--resync-seconds N] [--changes N] \
         [--apply-concurrency N] [--with-apply] [--out FILE.md] [--command CMD] [--revision REV] \
         [--deadline-seconds N] [--change-gap-ms N] [-- OPERATOR_ARGS...]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        estate: PathBuf::new(),
        namespace: "bench".into(),
        resync: 60,
        changes: 50,
        apply_concurrency: 32,
        with_apply: false,
        out: None,
        command: String::new(),
        revision: String::new(),
        deadline: Duration::from_secs(900),
        change_gap: Duration::from_millis(250),
        operator_args: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--estate" => a.estate = value().into(),
            "--namespace" => a.namespace = value(),
            "--resync-seconds" => a.resync = value().parse().unwrap_or_else(|_| usage()),
            "--changes" => a.changes = value().parse().unwrap_or_else(|_| usage()),
            "--apply-concurrency" => {
                a.apply_concurrency = value().parse().unwrap_or_else(|_| usage())
            }
            "--with-apply" => a.with_apply = true,
            "--out" => a.out = Some(value().into()),
            "--command" => a.command = value(),
            "--revision" => a.revision = value(),
            "--deadline-seconds" => {
                a.deadline = Duration::from_secs(value().parse().unwrap_or_else(|_| usage()))
            }
            "--change-gap-ms" => {
                a.change_gap = Duration::from_millis(value().parse().unwrap_or_else(|_| usage()))
            }
            "--" => {
                a.operator_args = it.by_ref().collect();
            }
            _ => usage(),
        }
    }
    if a.estate.as_os_str().is_empty() {
        usage()
    }
    a
}

// ---------------------------------------------------------------------------------
// the estate

struct Estate {
    size: String,
    docs: Vec<Value>,
    servers: Vec<String>,
    agents: Vec<String>,
    policies: usize,
    /// Grant name -> its document.
    grants: BTreeMap<String, Value>,
    /// Agent -> Grant name (one each in the generated estates).
    grant_of: HashMap<String, String>,
    /// Agent -> ghost tools its Grant names (drifted once every catalog is in).
    ghosts: HashMap<String, i64>,
    /// Grant -> tools that resolve once every catalog is in.
    resolvable: HashMap<String, i64>,
    /// Server -> its tools (what bench_server.py serves).
    tools: BTreeMap<String, Vec<String>>,
}

fn load_estate(dir: &std::path::Path) -> Estate {
    let gov = std::fs::read_to_string(dir.join("mcpgov/governance.yaml"))
        .expect("read mcpgov/governance.yaml of the estate");
    // gen_estate.py writes one JSON document per `---` section.
    let docs: Vec<Value> = gov
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d).expect("estate documents are JSON"))
        .collect();
    let tools: BTreeMap<String, Vec<String>> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("toolgraph/estate.json")).expect("read estate.json"),
    )
    .expect("estate.json parses");
    let meta: Value = std::fs::read_to_string(dir.join("meta.json"))
        .ok()
        .and_then(|m| serde_json::from_str(&m).ok())
        .unwrap_or(Value::Null);
    let mut e = Estate {
        size: meta["size"].as_str().unwrap_or("?").to_string(),
        docs: Vec::new(),
        servers: Vec::new(),
        agents: Vec::new(),
        policies: 0,
        grants: BTreeMap::new(),
        grant_of: HashMap::new(),
        ghosts: HashMap::new(),
        resolvable: HashMap::new(),
        tools,
    };
    for d in &docs {
        let name = d["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match d["kind"].as_str() {
            Some("MCPServer") => e.servers.push(name),
            Some("Agent") => e.agents.push(name),
            Some("Policy") => e.policies += 1,
            Some("Grant") => {
                let agent = d["spec"]["agent"].as_str().unwrap_or_default().to_string();
                let keys: Vec<&str> = d["spec"]["tools"]
                    .as_array()
                    .map(|t| t.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let ghosts = keys.iter().filter(|k| k.contains("::ghost_")).count() as i64;
                *e.ghosts.entry(agent.clone()).or_default() += ghosts;
                e.resolvable
                    .insert(name.clone(), keys.len() as i64 - ghosts);
                e.grant_of.insert(agent, name.clone());
                e.grants.insert(name, d.clone());
            }
            _ => {}
        }
    }
    e.docs = docs;
    e
}

// ---------------------------------------------------------------------------------
// what the watches saw

#[derive(Default)]
struct ServerView {
    crawled: bool,
    /// When `Crawled=True` was first seen.
    crawled_seen: Option<Instant>,
    last_success: Option<String>,
}

#[derive(Default)]
struct AgentView {
    generation: Option<i64>,
    observed: Option<i64>,
    tools: i64,
    drifted: i64,
    sha: Option<String>,
    updated: Option<Instant>,
}

#[derive(Default)]
struct CmView {
    sha: Option<String>,
    keys: HashSet<String>,
    updated: Option<Instant>,
}

#[derive(Default)]
struct StatusView {
    generation: Option<i64>,
    observed: Option<i64>,
    resolved: Option<i64>,
}

#[derive(Default)]
struct Store {
    listed: HashSet<&'static str>,
    servers: HashMap<String, ServerView>,
    agents: HashMap<String, AgentView>,
    grants: HashMap<String, StatusView>,
    policies: HashMap<String, StatusView>,
    /// By the agent label.
    cms: HashMap<String, CmView>,
}

#[derive(Clone)]
struct Shared {
    store: Arc<Mutex<Store>>,
    tick: Arc<tokio::sync::watch::Sender<u64>>,
}

enum Ev<K> {
    Apply(K),
    Delete(K),
}

impl Shared {
    fn new() -> Shared {
        Shared {
            store: Arc::new(Mutex::new(Store::default())),
            tick: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.store.lock().unwrap())
    }

    /// Watch `api` for as long as the process runs; `on` updates the store.
    fn watch<K, F>(&self, kind: &'static str, api: Api<K>, config: watcher::Config, mut on: F)
    where
        K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
        K::DynamicType: Default,
        F: FnMut(&mut Store, Ev<K>) + Send + 'static,
    {
        let me = self.clone();
        tokio::spawn(async move {
            let mut s = watcher(api, config).default_backoff().boxed();
            while let Some(ev) = s.next().await {
                let ev = match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Ev::Apply(o),
                    Ok(watcher::Event::Delete(o)) => Ev::Delete(o),
                    Ok(watcher::Event::InitDone) => {
                        me.store.lock().unwrap().listed.insert(kind);
                        me.tick.send_modify(|t| *t += 1);
                        continue;
                    }
                    Ok(watcher::Event::Init) => continue,
                    Err(e) => {
                        eprintln!("operator-bench: {kind} watch: {e}; retrying");
                        continue;
                    }
                };
                on(&mut me.store.lock().unwrap(), ev);
                me.tick.send_modify(|t| *t += 1);
            }
        });
    }

    /// The instant `pred` first held (checked after every watch event), or an error
    /// after `deadline`.
    async fn until(
        &self,
        what: &str,
        deadline: Duration,
        pred: impl Fn(&Store) -> bool,
    ) -> Result<Instant, String> {
        let mut rx = self.tick.subscribe();
        let end = tokio::time::Instant::now() + deadline;
        loop {
            rx.borrow_and_update();
            if self.with(&pred) {
                return Ok(Instant::now());
            }
            if tokio::time::timeout_at(end, rx.changed()).await.is_err() {
                return Err(format!("timed out after {deadline:?} waiting for {what}"));
            }
        }
    }
}

fn status_view(
    generation: Option<i64>,
    observed: Option<i64>,
    resolved: Option<i64>,
) -> StatusView {
    StatusView {
        generation,
        observed,
        resolved,
    }
}

/// Start the five watches on `ns` and wait until each has listed.
async fn watch_namespace(client: &Client, ns: &str) -> Shared {
    let shared = Shared::new();
    let cfg = watcher::Config::default;
    shared.watch(
        "MCPServer",
        Api::<MCPServer>::namespaced(client.clone(), ns),
        cfg(),
        |s, ev| match ev {
            Ev::Apply(o) => {
                let st = o.status.as_ref();
                let crawled = condition(st.map(|s| s.conditions.as_slice()), "Crawled")
                    .is_some_and(|c| c.0 == "True");
                let v = s.servers.entry(o.name_any()).or_default();
                v.crawled = crawled;
                if crawled && v.crawled_seen.is_none() {
                    v.crawled_seen = Some(Instant::now());
                }
                v.last_success = st.and_then(|s| s.last_successful_crawl_time.clone());
            }
            Ev::Delete(o) => {
                s.servers.remove(&o.name_any());
            }
        },
    );
    shared.watch(
        "Agent",
        Api::<Agent>::namespaced(client.clone(), ns),
        cfg(),
        |s, ev| match ev {
            Ev::Apply(o) => {
                let st = o.status.clone().unwrap_or_default();
                s.agents.insert(
                    o.name_any(),
                    AgentView {
                        generation: o.metadata.generation,
                        observed: st.observed_generation,
                        tools: st.eligible.unwrap_or(0) + st.rejected.unwrap_or(0),
                        drifted: st.drifted.unwrap_or(0),
                        sha: st.bundle.map(|b| b.sha256),
                        updated: Some(Instant::now()),
                    },
                );
            }
            Ev::Delete(o) => {
                s.agents.remove(&o.name_any());
            }
        },
    );
    shared.watch(
        "Grant",
        Api::<Grant>::namespaced(client.clone(), ns),
        cfg(),
        |s, ev| match ev {
            Ev::Apply(o) => {
                let st = o.status.as_ref();
                s.grants.insert(
                    o.name_any(),
                    status_view(
                        o.metadata.generation,
                        st.and_then(|s| s.observed_generation),
                        st.and_then(|s| s.resolved_tools),
                    ),
                );
            }
            Ev::Delete(o) => {
                s.grants.remove(&o.name_any());
            }
        },
    );
    shared.watch(
        "Policy",
        Api::<Policy>::namespaced(client.clone(), ns),
        cfg(),
        |s, ev| match ev {
            Ev::Apply(o) => {
                let st = o.status.as_ref();
                s.policies.insert(
                    o.name_any(),
                    status_view(
                        o.metadata.generation,
                        st.and_then(|s| s.observed_generation),
                        None,
                    ),
                );
            }
            Ev::Delete(o) => {
                s.policies.remove(&o.name_any());
            }
        },
    );
    shared.watch(
        "ConfigMap",
        Api::<ConfigMap>::namespaced(client.clone(), ns),
        cfg().labels("app.kubernetes.io/managed-by=mcpgov"),
        |s, ev| match ev {
            Ev::Apply(cm) => {
                let Some(agent) = cm.labels().get("mcpgov.io/agent").cloned() else {
                    return;
                };
                let keys = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("bundle.json"))
                    .and_then(|b| serde_json::from_str::<Value>(b).ok())
                    .and_then(|b| {
                        b["tools"].as_array().map(|t| {
                            t.iter()
                                .filter_map(|t| t["key"].as_str().map(String::from))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                s.cms.insert(
                    agent,
                    CmView {
                        sha: cm.annotations().get("mcpgov.io/bundle-sha256").cloned(),
                        keys,
                        updated: Some(Instant::now()),
                    },
                );
            }
            Ev::Delete(cm) => {
                if let Some(agent) = cm.labels().get("mcpgov.io/agent") {
                    s.cms.remove(agent);
                }
            }
        },
    );
    shared
        .until("the watches to list", Duration::from_secs(120), |s| {
            s.listed.len() == 5
        })
        .await
        .expect("watches list");
    shared
}

// ---------------------------------------------------------------------------------
// convergence predicates

fn servers_crawled(s: &Store, e: &Estate) -> bool {
    e.servers
        .iter()
        .all(|n| s.servers.get(n).is_some_and(|v| v.crawled))
}

/// The Agent's status is for its generation, evaluated against every catalog (only its
/// ghost tools drift), and its ConfigMap holds the bundle the status names.
fn agent_final(s: &Store, e: &Estate, name: &str) -> bool {
    let Some(a) = s.agents.get(name) else {
        return false;
    };
    let ghosts = e.ghosts.get(name).copied().unwrap_or(0);
    a.generation.is_some()
        && a.observed == a.generation
        && a.drifted == ghosts
        && a.sha.is_some()
        && s.cms.get(name).is_some_and(|cm| cm.sha == a.sha)
}

fn agents_final(s: &Store, e: &Estate) -> bool {
    e.agents.iter().all(|a| agent_final(s, e, a))
}

fn everything_final(s: &Store, e: &Estate) -> bool {
    let current = |v: &StatusView| v.generation.is_some() && v.observed == v.generation;
    servers_crawled(s, e)
        && agents_final(s, e)
        && e.grants.keys().all(|g| {
            s.grants
                .get(g)
                .is_some_and(|v| current(v) && v.resolved == e.resolvable.get(g).copied())
        })
        && s.policies.len() == e.policies
        && s.policies.values().all(current)
}

// ---------------------------------------------------------------------------------
// metrics

#[derive(Clone, Default)]
struct Samples(Vec<(String, String, f64)>);

impl Samples {
    fn parse(text: &str) -> Samples {
        let mut out = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let Some((head, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = match head.split_once('{') {
                Some((n, l)) => (n, l.trim_end_matches('}')),
                None => (head, ""),
            };
            out.push((name.to_string(), labels.to_string(), value));
        }
        Samples(out)
    }

    /// Sum of `name`'s samples whose labels contain every `k="v"` given.
    fn sum(&self, name: &str, labels: &[&str]) -> f64 {
        self.0
            .iter()
            .filter(|(n, l, _)| n == name && labels.iter().all(|w| l.contains(w)))
            .map(|(_, _, v)| v)
            .sum()
    }

    fn label<'a>(labels: &'a str, key: &str) -> &'a str {
        labels
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.trim_matches('"'))
            .unwrap_or("")
    }

    /// `histogram_quantile` from cumulative buckets: the upper bound of the bucket that
    /// holds quantile `q`.
    fn quantile(&self, name: &str, q: f64) -> Option<f64> {
        let bucket = format!("{name}_bucket");
        let mut b: Vec<(f64, f64)> = self
            .0
            .iter()
            .filter(|(n, _, _)| *n == bucket)
            .map(|(_, l, v)| {
                let le = Self::label(l, "le");
                (le.parse().unwrap_or(f64::INFINITY), *v)
            })
            .collect();
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        let total = b.last()?.1;
        if total == 0.0 {
            return None;
        }
        b.into_iter()
            .find(|(_, c)| *c >= q * total)
            .map(|(le, _)| le)
    }
}

/// What the operator wrote, from its metrics.
#[derive(Clone, Copy, Default, Debug)]
struct Writes {
    agent: f64,
    grant: f64,
    policy: f64,
    server: f64,
    catalog: f64,
    configmap: f64,
    cm_deleted: f64,
    failed: f64,
}

impl Writes {
    fn of(m: &Samples) -> Writes {
        let st = |kind: &str| {
            m.sum(
                "mcpgov_status_writes_total",
                &[&format!("kind=\"{kind}\""), "result=\"written\""],
            )
        };
        let failed: f64 = ["conflict", "api", "timeout"]
            .iter()
            .map(|r| {
                m.sum("mcpgov_status_writes_total", &[&format!("result=\"{r}\"")])
                    + m.sum(
                        "mcpgov_configmap_writes_total",
                        &[&format!("result=\"{r}\"")],
                    )
            })
            .sum();
        Writes {
            agent: st("Agent"),
            grant: st("Grant"),
            policy: st("Policy"),
            server: st("MCPServer"),
            catalog: st("MCPServerCatalog"),
            configmap: m.sum("mcpgov_configmap_writes_total", &["result=\"written\""]),
            cm_deleted: m.sum("mcpgov_configmap_writes_total", &["result=\"deleted\""]),
            failed,
        }
    }

    fn minus(self, o: Writes) -> Writes {
        Writes {
            agent: self.agent - o.agent,
            grant: self.grant - o.grant,
            policy: self.policy - o.policy,
            server: self.server - o.server,
            catalog: self.catalog - o.catalog,
            configmap: self.configmap - o.configmap,
            cm_deleted: self.cm_deleted - o.cm_deleted,
            failed: self.failed - o.failed,
        }
    }

    fn status(&self) -> f64 {
        self.agent + self.grant + self.policy + self.server + self.catalog
    }

    fn total(&self) -> f64 {
        self.status() + self.configmap + self.cm_deleted
    }

    fn describe(&self) -> String {
        format!(
            "{} (status: Agent {}, Grant {}, Policy {}, MCPServer {}, catalog {}; ConfigMap {}{}{})",
            self.total(),
            self.agent,
            self.grant,
            self.policy,
            self.server,
            self.catalog,
            self.configmap,
            if self.cm_deleted > 0.0 {
                format!(", deleted {}", self.cm_deleted)
            } else {
                String::new()
            },
            if self.failed > 0.0 {
                format!("; {} failed", self.failed)
            } else {
                String::new()
            },
        )
    }
}

/// The API server's own count of write requests by resource, and the time it spent
/// serving them, from `apiserver_request_total` and `apiserver_request_duration_seconds`.
#[derive(Default)]
struct ApiStats {
    writes: BTreeMap<String, f64>,
    seconds: f64,
    served: f64,
}

fn write_key(labels: &str) -> Option<String> {
    let verb = Samples::label(labels, "verb");
    if !matches!(verb, "POST" | "PUT" | "PATCH" | "APPLY" | "DELETE") {
        return None;
    }
    let resource = Samples::label(labels, "resource");
    if resource == "leases" {
        return None; // the API server's own identity lease
    }
    let sub = Samples::label(labels, "subresource");
    Some(if sub.is_empty() {
        format!("{resource} {verb}")
    } else {
        format!("{resource}/{sub} {verb}")
    })
}

/// None without kubectl.
fn apiserver_writes() -> Option<ApiStats> {
    let out = std::process::Command::new("kubectl")
        .args(["get", "--raw", "/metrics"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let m = Samples::parse(&String::from_utf8_lossy(&out.stdout));
    let mut st = ApiStats::default();
    for (name, labels, v) in &m.0 {
        let Some(key) = write_key(labels) else {
            continue;
        };
        match name.as_str() {
            "apiserver_request_total" => *st.writes.entry(key).or_insert(0.0) += v,
            "apiserver_request_duration_seconds_sum" => st.seconds += v,
            "apiserver_request_duration_seconds_count" => st.served += v,
            _ => {}
        }
    }
    Some(st)
}

/// Write requests between two snapshots: (total, by resource, mean time served).
fn apiserver_diff(
    before: &Option<ApiStats>,
    after: &Option<ApiStats>,
) -> Option<(f64, String, Duration)> {
    let (b, a) = (before.as_ref()?, after.as_ref()?);
    let mut parts = Vec::new();
    let mut total = 0.0;
    for (k, v) in &a.writes {
        let d = v - b.writes.get(k).copied().unwrap_or(0.0);
        if d > 0.0 {
            total += d;
            parts.push(format!("{k} {d}"));
        }
    }
    let served = a.served - b.served;
    let mean = if served > 0.0 {
        Duration::from_secs_f64((a.seconds - b.seconds) / served)
    } else {
        Duration::ZERO
    };
    Some((total, parts.join(", "), mean))
}

// ---------------------------------------------------------------------------------
// applying

fn api_for(client: &Client, ns: &str, doc: &Value) -> Api<DynamicObject> {
    let (group, version) = doc["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .expect("apiVersion group/version");
    let kind = doc["kind"].as_str().expect("kind");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn apply_one(client: &Client, ns: &str, mut doc: Value) -> Result<(), String> {
    doc["metadata"]["namespace"] = Value::String(ns.to_string());
    let name = doc["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api = api_for(client, ns, &doc);
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let mut tries = 0;
    loop {
        match api.patch(&name, &pp, &Patch::Apply(&doc)).await {
            Ok(_) => return Ok(()),
            // Throttled or a blip under load: try again a few times.
            Err(kube::Error::Api(s)) if (s.code == 429 || s.code >= 500) && tries < 5 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(200 * tries)).await;
            }
            Err(e) => return Err(format!("apply {} {name}: {e}", doc["kind"])),
        }
    }
}

/// Server-side apply every document, `concurrency` at a time: (wall time, documents).
async fn apply_estate(client: &Client, ns: &str, e: &Estate, concurrency: usize) -> Duration {
    let start = Instant::now();
    let results: Vec<Result<(), String>> = stream::iter(e.docs.iter().cloned())
        .map(|d| apply_one(client, ns, d))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let elapsed = start.elapsed();
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failed.is_empty(), "apply failed: {failed:?}");
    elapsed
}

async fn create_namespace(client: &Client, ns: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let obj: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap();
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {
            panic!("namespace {ns} exists already: use a fresh control plane or --namespace")
        }
        Err(e) => panic!("create namespace {ns}: {e}"),
    }
}

// ---------------------------------------------------------------------------------
// the operator process

fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn mib(kib: Option<u64>) -> f64 {
    kib.unwrap_or(0) as f64 / 1024.0
}

fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields 14 and 15 of stat (utime, stime) are 12 and 13 after the ")".
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

async fn wait_ready(op: &Operator, deadline: Duration) -> Instant {
    let end = Instant::now() + deadline;
    loop {
        if op.is_ready().await {
            return Instant::now();
        }
        assert!(Instant::now() < end, "the operator never became ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Poll the operator's write counters until they stay flat for `flat`: returns the
/// instant of the last change seen and the metrics then.
async fn wait_quiet(op: &Operator, flat: Duration, deadline: Duration) -> (Instant, Samples) {
    let start = Instant::now();
    let mut m = Samples::parse(&op.metrics_text().await);
    let mut last = Writes::of(&m).total();
    let mut changed = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        m = Samples::parse(&op.metrics_text().await);
        let now = Writes::of(&m).total();
        if now != last {
            last = now;
            changed = Instant::now();
        } else if changed.elapsed() >= flat || start.elapsed() >= deadline {
            return (changed, m);
        }
    }
}

fn log_path(ns: &str) -> PathBuf {
    std::env::var_os("MCPGOV_E2E_LOGS")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("operator-{ns}.log"))
}

/// `elapsed_ms` of every `crawled` line of the operator's log.
fn crawl_times_from_log(ns: &str) -> Vec<u64> {
    let log = std::fs::read_to_string(log_path(ns)).unwrap_or_default();
    let mut v: Vec<u64> = log
        .lines()
        .filter(|l| l.contains(" crawled "))
        .filter_map(|l| {
            let rest = l.split("elapsed_ms=").nth(1)?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    v.sort_unstable();
    v
}

/// A reconcile pass from the operator's `reconciled` debug lines: (start, end) in
/// seconds after `wall0`, agents, grants, servers.
struct Pass {
    start: f64,
    end: f64,
    agents: u64,
    grants: u64,
    servers: u64,
}

fn passes_from_log(ns: &str, wall0: SystemTime) -> Vec<Pass> {
    let log = std::fs::read_to_string(log_path(ns)).unwrap_or_default();
    let field = |l: &str, k: &str| -> Option<u64> {
        let rest = l.split(&format!(" {k}=")).nth(1)?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    log.lines()
        .filter(|l| l.contains(" reconciled "))
        .filter_map(|l| {
            let ts = rfc3339_ms(l.split_whitespace().next()?)?;
            let end = (ts - unix_ms(wall0)) as f64 / 1000.0;
            let elapsed = field(l, "elapsed_ms")? as f64 / 1000.0;
            Some(Pass {
                start: end - elapsed,
                end,
                agents: field(l, "agents")?,
                grants: field(l, "grants")?,
                servers: field(l, "servers")?,
            })
        })
        .collect()
}

fn describe_passes(passes: &[Pass], until: f64) -> String {
    let shown: Vec<String> = passes
        .iter()
        .filter(|p| p.end <= until + 0.5 && p.end - p.start >= 0.05)
        .map(|p| {
            format!(
                "{:.1}–{:.1} s ({:.1} s: {} agents, {} grants, {} servers)",
                p.start,
                p.end,
                p.end - p.start,
                p.agents,
                p.grants,
                p.servers
            )
        })
        .collect();
    shown.join("; ")
}

/// The operator's `RUST_LOG`: `MCPGOV_BENCH_RUST_LOG`, else info without rmcp's
/// per-session lines, with one debug line per reconcile pass.
fn rust_log() -> String {
    std::env::var("MCPGOV_BENCH_RUST_LOG")
        .unwrap_or_else(|_| "info,rmcp=warn,mcpgov::controller::plan=debug".into())
}

/// VmRSS of a process every 100 ms, with the time since the sampler started.
struct RssSampler {
    samples: Arc<Mutex<Vec<(Duration, u64)>>>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let out = samples.clone();
        tokio::spawn(async move {
            let t0 = Instant::now();
            while let Some(kib) = proc_status(pid, "VmRSS") {
                out.lock().unwrap().push((t0.elapsed(), kib));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        RssSampler { samples }
    }

    /// Write the samples (seconds, KiB) next to the operator's log.
    fn dump(&self, ns: &str) {
        let mut out = String::new();
        for (t, kib) in self.samples.lock().unwrap().iter() {
            let _ = writeln!(out, "{:.1}\t{kib}", t.as_secs_f64());
        }
        let _ = std::fs::write(log_path(ns).with_extension("rss.tsv"), out);
    }

    /// The highest VmRSS sampled in [from, to) and when.
    fn peak(&self, from: Duration, to: Duration) -> Option<(Duration, u64)> {
        self.samples
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .max_by_key(|(_, k)| *k)
            .copied()
    }
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

fn rfc3339_ms(s: &str) -> Option<i64> {
    let t: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time =
        serde_json::from_value(Value::String(s.to_string())).ok()?;
    Some(t.0.as_millisecond())
}

// ---------------------------------------------------------------------------------
// figures

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn pct(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // nearest rank
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

struct Row {
    what: String,
    figure: String,
    target: String,
    met: Option<bool>,
}

fn row(what: &str, figure: String, target: &str, met: Option<bool>) -> Row {
    Row {
        what: what.into(),
        figure,
        target: target.into(),
        met,
    }
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
    /// The 1-minute load average when the run started (`/proc/loadavg`): figures from a
    /// busy machine are slower, and the report says how busy it was.
    load_at_start: String,
}

impl Report {
    fn note(&mut self, s: String) {
        println!("  {s}");
        self.notes.push(s);
    }
}

// ---------------------------------------------------------------------------------

struct Converged {
    ready: Duration,
    crawled_visible: Duration,
    agents: Duration,
    everything: Duration,
    quiet: Duration,
    at_agents: Writes,
    at_quiet: Writes,
    metrics: Samples,
    apiserver: Option<(f64, String, Duration)>,
}

/// From `t0` (operator spawned, or first apply): readiness, crawl, convergence, quiet.
async fn converge(
    op: &Operator,
    shared: &Shared,
    e: &Arc<Estate>,
    t0: Instant,
    deadline: Duration,
    api_before: &Option<ApiStats>,
) -> Converged {
    let (ready, crawled, agents, everything) = {
        let (e1, e2, e3) = (e.clone(), e.clone(), e.clone());
        let crawled = shared.until("every MCPServer Crawled=True", deadline, move |s| {
            servers_crawled(s, &e1)
        });
        let agents = shared.until(
            "every Agent's final status and bundle",
            deadline,
            move |s| servers_crawled(s, &e2) && agents_final(s, &e2),
        );
        let everything = shared.until("every status", deadline, move |s| everything_final(s, &e3));
        let ready = wait_ready(op, Duration::from_secs(120));
        tokio::join!(ready, crawled, agents, everything)
    };
    let agents = agents.unwrap_or_else(|e| panic!("{e}"));
    let at_agents = Writes::of(&Samples::parse(&op.metrics_text().await));
    let crawled = crawled.unwrap_or_else(|e| panic!("{e}"));
    let everything = everything.unwrap_or_else(|e| panic!("{e}"));
    let (quiet, metrics) = wait_quiet(op, Duration::from_secs(5), Duration::from_secs(300)).await;
    let api_after = apiserver_writes();
    Converged {
        ready: ready - t0,
        crawled_visible: crawled - t0,
        agents: agents - t0,
        everything: everything.max(agents) - t0,
        quiet: quiet.max(everything) - t0,
        at_agents,
        at_quiet: Writes::of(&metrics),
        metrics,
        apiserver: apiserver_diff(api_before, &api_after),
    }
}

struct Change {
    agent: String,
    key: String,
    add: bool,
    apply: Duration,
    status: Duration,
    configmap: Duration,
    both: Duration,
}

async fn grant_changes(
    client: &Client,
    shared: &Shared,
    e: &Estate,
    ns: &str,
    n: usize,
    gap: Duration,
) -> (Vec<Change>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let servers: Vec<&String> = e.tools.keys().collect();
    for i in 0..n {
        let pair = i / 2;
        let add = i % 2 == 0;
        let agent = e.agents[(pair * 19 + 7) % e.agents.len()].clone();
        let grant_name = e.grant_of[&agent].clone();
        let mut doc = e.grants[&grant_name].clone();
        let mut tools: Vec<String> = doc["spec"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect();
        // The tool this pair adds (and then removes): deterministic, not yet granted.
        let server = servers[(pair * 7 + 3) % servers.len()];
        let list = &e.tools[server];
        let mut j = (pair * 13 + 5) % list.len();
        while tools.contains(&format!("{server}::{}", list[j])) {
            j = (j + 1) % list.len();
        }
        let tool = format!("{server}::{}", list[j]);
        let key = format!("{ns}/{tool}");
        if add {
            tools.push(tool.clone());
        }
        doc["spec"]["tools"] = serde_json::json!(tools);
        let base = shared.with(|s| s.agents.get(&agent).map(|a| a.tools).unwrap_or(0));
        let want = if add { base + 1 } else { base - 1 };
        let started = Instant::now();
        if let Err(err) = apply_one(client, ns, doc).await {
            errors.push(err);
            continue;
        }
        let applied = Instant::now();
        let (a2, k2) = (agent.clone(), key.clone());
        let r = shared
            .until(
                &format!("{agent}: {key} {}", if add { "added" } else { "removed" }),
                Duration::from_secs(60),
                move |s| {
                    let (Some(a), Some(cm)) = (s.agents.get(&a2), s.cms.get(&a2)) else {
                        return false;
                    };
                    a.tools == want
                        && a.sha.is_some()
                        && cm.sha == a.sha
                        && cm.keys.contains(&k2) == add
                },
            )
            .await;
        match r {
            Ok(done) => {
                let (st, cm) = shared.with(|s| {
                    (
                        s.agents[&agent].updated.unwrap_or(done),
                        s.cms[&agent].updated.unwrap_or(done),
                    )
                });
                out.push(Change {
                    agent,
                    key,
                    add,
                    apply: applied - started,
                    status: st.saturating_duration_since(applied),
                    configmap: cm.saturating_duration_since(applied),
                    both: done - applied,
                });
            }
            Err(err) => errors.push(err),
        }
        tokio::time::sleep(gap).await;
    }
    (out, errors)
}

struct Restart {
    ready: Duration,
    first_pass: Duration,
    quiet: Duration,
    writes: Writes,
    hwm: Option<u64>,
}

async fn restart(ns: &str, resync: u64, op_args: &[&str]) -> Restart {
    let t0 = Instant::now();
    let op = Operator::spawn(ns, resync, op_args, &rust_log());
    let ready = wait_ready(&op, Duration::from_secs(120)).await;
    let first_pass = loop {
        let m = Samples::parse(&op.metrics_text().await);
        if m.sum("mcpgov_evaluation_duration_seconds_count", &[]) >= 1.0 {
            break Instant::now();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no pass after the restart"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (quiet, m) = wait_quiet(&op, Duration::from_secs(5), Duration::from_secs(300)).await;
    let r = Restart {
        ready: ready - t0,
        first_pass: first_pass - t0,
        quiet: quiet.max(first_pass) - t0,
        writes: Writes::of(&m),
        hwm: proc_status(op.pid(), "VmHWM"),
    };
    op.stop();
    r
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = parse_args();
    let estate = Arc::new(load_estate(&args.estate));
    let client = client().await;
    let ns = args.namespace.clone();
    let mut report = Report {
        load_at_start: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .unwrap_or_else(|| "unknown".into()),
        ..Report::default()
    };
    let op_args: Vec<&str> = std::iter::once("--allow-loopback")
        .chain(args.operator_args.iter().map(String::as_str))
        .collect();
    println!(
        "estate {}: {} MCPServers, {} Agents, {} Policies, {} Grants ({} documents)",
        estate.size,
        estate.servers.len(),
        estate.agents.len(),
        estate.policies,
        estate.grants.len(),
        estate.docs.len()
    );

    // 1. the estate, applied with no operator running
    create_namespace(&client, &ns).await;
    let shared = watch_namespace(&client, &ns).await;
    let apply_time = apply_estate(&client, &ns, &estate, args.apply_concurrency).await;
    let n_docs = estate.docs.len();
    {
        let e = estate.clone();
        shared
            .until(
                "the watches to see the estate",
                Duration::from_secs(120),
                move |s| {
                    s.servers.len() == e.servers.len()
                        && s.agents.len() == e.agents.len()
                        && s.grants.len() == e.grants.len()
                        && s.policies.len() == e.policies
                },
            )
            .await
            .unwrap();
    }
    println!(
        "applied {n_docs} objects in {} ({:.0} objects/s, {} at once)",
        secs(apply_time),
        n_docs as f64 / apply_time.as_secs_f64(),
        args.apply_concurrency
    );

    // 2. the operator starts against the applied estate
    let api_before = apiserver_writes();
    let t0 = Instant::now();
    let wall0 = SystemTime::now();
    let op = Operator::spawn(&ns, args.resync, &op_args, &rust_log());
    let pid = op.pid();
    let sampler = RssSampler::start(pid);
    let c = converge(&op, &shared, &estate, t0, args.deadline, &api_before).await;
    let cpu_converge = cpu_seconds(pid);
    // When the crawler finished each server (status.lastSuccessfulCrawlTime), relative
    // to the spawn: the crawl itself, before the index task writes it.
    let crawl_done: Vec<i64> = shared.with(|s| {
        s.servers
            .values()
            .filter_map(|v| rfc3339_ms(v.last_success.as_deref()?))
            .map(|t| t - unix_ms(wall0))
            .collect()
    });
    let crawl_last = crawl_done.iter().max().copied().unwrap_or(0);
    let crawl_first = crawl_done.iter().min().copied().unwrap_or(0);
    let log_times = crawl_times_from_log(&ns);
    let m = &c.metrics;
    let crawl_count = m.sum("mcpgov_crawl_duration_seconds_count", &[]);
    let crawl_sum = m.sum("mcpgov_crawl_duration_seconds_sum", &[]);
    let passes = m.sum("mcpgov_evaluation_duration_seconds_count", &[]);
    let pass_sum = m.sum("mcpgov_evaluation_duration_seconds_sum", &[]);
    let writes = c.at_agents;
    let window = c.agents.as_secs_f64();
    println!("operator start -> convergence (estate applied before the start):");
    println!("  ready (every watch listed)        {}", secs(c.ready));
    println!(
        "  crawler done (last catalog)       {:.2} s (first {:.2} s)",
        crawl_last as f64 / 1000.0,
        crawl_first as f64 / 1000.0
    );
    println!(
        "  every MCPServer Crawled=True      {}",
        secs(c.crawled_visible)
    );
    println!("  every Agent status + bundle       {}", secs(c.agents));
    println!("  + every Grant and Policy status   {}", secs(c.everything));
    println!("  quiet (write counters flat 5 s)   {}", secs(c.quiet));
    println!(
        "  writes until convergence          {}: {:.0}/s over {}",
        writes.describe(),
        writes.total() / window,
        secs(c.agents)
    );
    println!(
        "  writes until quiet                {}",
        c.at_quiet.describe()
    );
    if let Some((n, detail, mean)) = &c.apiserver {
        println!(
            "  API server write requests         {n}, {} each on average ({detail})",
            ms(*mean)
        );
    }
    println!(
        "  reconcile passes                  {passes} ({:.2} s in total)",
        pass_sum
    );

    report.rows.push(row(
        "apply the estate (concurrent server-side apply)",
        format!(
            "{} for {n_docs} objects ({:.0}/s, {} at once)",
            secs(apply_time),
            n_docs as f64 / apply_time.as_secs_f64(),
            args.apply_concurrency
        ),
        "—",
        None,
    ));
    report.rows.push(row(
        "operator start → ready (every watch listed)",
        secs(c.ready),
        "—",
        None,
    ));
    report.rows.push(row(
        "operator start → every MCPServer crawled and every Agent has status + bundle",
        secs(c.agents),
        "< 60 s",
        Some(c.agents < Duration::from_secs(60)),
    ));
    report.rows.push(row(
        "… and every Grant and Policy status current",
        secs(c.everything),
        "—",
        None,
    ));
    report.rows.push(row(
        "writes until then (status + ConfigMaps, operator metrics)",
        format!(
            "{} = {:.0} writes/s",
            writes.total(),
            writes.total() / window
        ),
        "report",
        None,
    ));
    report.note(format!(
        "Writes until convergence: {}; until quiet ({}): {}.",
        writes.describe(),
        secs(c.quiet),
        c.at_quiet.describe()
    ));
    if let Some((n, detail, mean)) = &c.apiserver {
        report.note(format!(
            "The API server counted {n} write requests from the operator's start to quiet \
             (apiserver_request_total, leases excluded; Events included), served in {:.1} ms \
             on average (apiserver_request_duration_seconds): {detail}.",
            mean.as_secs_f64() * 1000.0
        ));
    }
    report.note(format!(
        "Reconcile passes until quiet: {passes}, {pass_sum:.2} s in total \
         (mcpgov_evaluation_duration_seconds); operator CPU time until quiet: {:.1} s.",
        cpu_converge.unwrap_or(0.0)
    ));
    let timeline = describe_passes(&passes_from_log(&ns, wall0), c.quiet.as_secs_f64());
    if !timeline.is_empty() {
        report.note(format!(
            "Passes after the start (from the operator's log; ≥ 50 ms): {timeline}."
        ));
    }

    // crawl figures
    let crawl_ok = crawl_last > 0 && crawl_last < 5000;
    report.rows.push(row(
        "crawl of every server: operator start → last catalog fetched",
        format!(
            "{:.2} s ({} servers, {} tools)",
            crawl_last as f64 / 1000.0,
            estate.servers.len(),
            estate.tools.values().map(Vec::len).sum::<usize>()
        ),
        "< 5 s",
        Some(crawl_ok),
    ));
    report.rows.push(row(
        "… and visible as Crawled=True in the API",
        secs(c.crawled_visible),
        "—",
        None,
    ));
    let q = |p: f64| {
        log_times
            .get(((p * log_times.len() as f64).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0)
    };
    report.rows.push(row(
        "one crawl (handshake + tools/resources/templates/prompts lists)",
        format!(
            "p50 {} ms, p99 {} ms, max {} ms; mean {:.0} ms over {crawl_count} crawls",
            q(0.5),
            q(0.99),
            log_times.last().copied().unwrap_or(0),
            if crawl_count > 0.0 {
                crawl_sum / crawl_count * 1000.0
            } else {
                0.0
            }
        ),
        "—",
        None,
    ));
    report.note(format!(
        "Crawl histogram (mcpgov_crawl_duration_seconds): count {crawl_count}, sum {:.2} s, \
         p50 ≤ {} s, p99 ≤ {} s (bucket bounds); the exact times above are the `crawled` \
         log lines' elapsed_ms. First catalog fetched {:.2} s after the start.",
        crawl_sum,
        m.quantile("mcpgov_crawl_duration_seconds", 0.5)
            .map_or("-".into(), |v| v.to_string()),
        m.quantile("mcpgov_crawl_duration_seconds", 0.99)
            .map_or("-".into(), |v| v.to_string()),
        crawl_first as f64 / 1000.0
    ));

    // 3. Grant changes
    let before_changes = Writes::of(&Samples::parse(&op.metrics_text().await));
    let (changes, errors) = grant_changes(
        &client,
        &shared,
        &estate,
        &ns,
        args.changes,
        args.change_gap,
    )
    .await;
    let after_changes = Writes::of(&Samples::parse(&op.metrics_text().await));
    let mut both: Vec<Duration> = changes.iter().map(|c| c.both).collect();
    both.sort();
    let mut status: Vec<Duration> = changes.iter().map(|c| c.status).collect();
    status.sort();
    let mut cms: Vec<Duration> = changes.iter().map(|c| c.configmap).collect();
    cms.sort();
    let mut applies: Vec<Duration> = changes.iter().map(|c| c.apply).collect();
    applies.sort();
    let (p50, p99, max) = (pct(&both, 0.5), pct(&both, 0.99), pct(&both, 1.0));
    println!(
        "{} Grant changes ({} failed): status + ConfigMap visible p50 {} p99 {} max {}",
        changes.len(),
        errors.len(),
        ms(p50),
        ms(p99),
        ms(max)
    );
    for err in &errors {
        println!("  ! {err}");
    }
    report.rows.push(row(
        &format!(
            "one Grant change → Agent status and ConfigMap visible ({} changes)",
            changes.len()
        ),
        format!("p50 {}, p99 {}, max {}", ms(p50), ms(p99), ms(max)),
        "p50 < 1 s, p99 < 3 s",
        Some(
            errors.is_empty()
                && changes.len() == args.changes
                && p50 < Duration::from_secs(1)
                && p99 < Duration::from_secs(3),
        ),
    ));
    report.note(format!(
        "Grant changes: each adds one tool to an Agent's Grant or removes it again \
         (server-side apply, {} between changes); timed from the apply returning (itself \
         p50 {}) until the watch shows the Agent's status with the new tool count and a \
         bundle sha256 equal to its ConfigMap's, whose bundle.json contains (or lacks) the \
         tool. Status alone: p50 {}, p99 {}; ConfigMap alone: p50 {}, p99 {}. Writes for \
         the {} changes: {}.{}",
        ms(args.change_gap),
        ms(pct(&applies, 0.5)),
        ms(pct(&status, 0.5)),
        ms(pct(&status, 0.99)),
        ms(pct(&cms, 0.5)),
        ms(pct(&cms, 0.99)),
        changes.len(),
        after_changes.minus(before_changes).describe(),
        if errors.is_empty() {
            String::new()
        } else {
            format!(" Failed: {}", errors.join("; "))
        }
    ));
    if let Some(slow) = changes.iter().max_by_key(|c| c.both) {
        report.note(format!(
            "Slowest change: {} {} for {} ({}).",
            if slow.add { "add" } else { "remove" },
            slow.key,
            slow.agent,
            ms(slow.both)
        ));
    }

    // 4. a quiet window holding a full resync pass
    let _ = wait_quiet(&op, Duration::from_secs(3), Duration::from_secs(120)).await;
    let m0 = Samples::parse(&op.metrics_text().await);
    let api0 = apiserver_writes();
    let resync0 = m0.sum("mcpgov_agent_evaluations_total", &["trigger=\"resync\""]);
    let passes0 = m0.sum("mcpgov_evaluation_duration_seconds_count", &[]);
    let skipped0 = m0.sum("mcpgov_status_writes_total", &["result=\"skipped\""]);
    let w0 = Instant::now();
    let end = w0 + Duration::from_secs(args.resync * 2 + 120);
    let m1 = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let m = Samples::parse(&op.metrics_text().await);
        let resync = m.sum("mcpgov_agent_evaluations_total", &["trigger=\"resync\""]);
        let passes = m.sum("mcpgov_evaluation_duration_seconds_count", &[]);
        if (resync > resync0 && passes > passes0) || Instant::now() > end {
            tokio::time::sleep(Duration::from_secs(2)).await;
            break Samples::parse(&op.metrics_text().await);
        }
    };
    let api1 = apiserver_writes();
    let resyncs = m1.sum("mcpgov_agent_evaluations_total", &["trigger=\"resync\""]) - resync0;
    let noop = Writes::of(&m1).minus(Writes::of(&m0));
    let skipped = m1.sum("mcpgov_status_writes_total", &["result=\"skipped\""]) - skipped0;
    let api_noop = apiserver_diff(&api0, &api1);
    println!(
        "no-op window {} with {resyncs} resync pass(es): {} writes ({skipped} statuses compared and skipped)",
        secs(w0.elapsed()),
        noop.total()
    );
    let noop_ok = resyncs >= 1.0 && noop.total() == 0.0 && noop.failed == 0.0;
    report.rows.push(row(
        "writes on a no-op resync",
        format!(
            "{} ({} pass(es) over {}; {skipped} statuses compared, unchanged)",
            noop.total(),
            resyncs,
            secs(w0.elapsed())
        ),
        "0",
        Some(noop_ok),
    ));
    if let Some((n, detail, _)) = &api_noop {
        report.note(format!(
            "No-op window: the API server counted {n} write requests{}{detail} \
             (`--resync-seconds {}`).",
            if detail.is_empty() { "" } else { ": " },
            args.resync
        ));
    }

    // 5. memory
    let hwm = proc_status(pid, "VmHWM");
    let rss = proc_status(pid, "VmRSS");
    println!(
        "operator peak RSS {:.0} MiB (now {:.0} MiB)",
        mib(hwm),
        mib(rss)
    );
    report.rows.push(row(
        "operator peak RSS (VmHWM, at the end)",
        format!("{:.0} MiB (VmRSS {:.0} MiB)", mib(hwm), mib(rss)),
        "< 300 MiB",
        Some(hwm.is_some_and(|h| h < 300 * 1024)),
    ));
    let at_ready = sampler.peak(Duration::ZERO, c.ready + Duration::from_millis(200));
    sampler.dump(&ns);
    let conv_peak = sampler.peak(Duration::ZERO, c.quiet + Duration::from_secs(1));
    let late_peak = sampler.peak(c.quiet + Duration::from_secs(1), Duration::MAX);
    let at = |p: Option<(Duration, u64)>| {
        p.map_or("-".into(), |(t, k)| {
            format!("{:.0} MiB at {:.1} s", k as f64 / 1024.0, t.as_secs_f64())
        })
    };
    report.note(format!(
        "Operator memory (VmRSS sampled every 100 ms from the start): {} once every watch \
         had listed, highest until quiet {}, afterwards (Grant changes, resync) {}. CPU time \
         over the whole run: {:.1} s.",
        at(at_ready),
        at(conv_peak),
        at(late_peak),
        cpu_seconds(pid).unwrap_or(0.0)
    ));
    op.stop();

    // 5b. a restart on the converged estate: catalogs come from status, then re-crawls
    let restart = restart(&ns, args.resync, &op_args).await;
    println!(
        "restart: ready {}, first full pass done {}, quiet {}; writes {}; peak RSS {:.0} MiB",
        secs(restart.ready),
        secs(restart.first_pass),
        secs(restart.quiet),
        restart.writes.describe(),
        mib(restart.hwm)
    );
    let status_writes = restart.writes.total() - restart.writes.catalog - restart.writes.server;
    report.rows.push(row(
        "operator restart on the converged estate → first full pass done",
        format!(
            "{} (ready {}); {} Agent/Grant/Policy/ConfigMap writes",
            secs(restart.first_pass),
            secs(restart.ready),
            status_writes
        ),
        "—",
        None,
    ));
    report.note(format!(
        "Restart: a new operator process on the converged estate (catalogs from status, \
         every server re-crawled at once): quiet after {}, writes {} (the crawler's \
         catalog status records each new crawl's time, so it is rewritten; the rest must \
         not be); peak RSS {:.0} MiB.",
        secs(restart.quiet),
        restart.writes.describe(),
        mib(restart.hwm)
    ));

    // 6. optional: the operator already running, the estate applied to it
    if args.with_apply {
        let ns2 = format!("{ns}-b");
        create_namespace(&client, &ns2).await;
        let shared2 = watch_namespace(&client, &ns2).await;
        let op2 = Operator::spawn(&ns2, args.resync, &op_args, &rust_log());
        wait_ready(&op2, Duration::from_secs(120)).await;
        let api_before = apiserver_writes();
        let t0 = Instant::now();
        let wall0 = SystemTime::now();
        let applying = apply_estate(&client, &ns2, &estate, args.apply_concurrency);
        let converging = converge(&op2, &shared2, &estate, t0, args.deadline, &api_before);
        let (apply2, c2) = tokio::join!(applying, converging);
        let w2 = c2.at_agents;
        println!(
            "with the operator running: apply {} → every Agent status + bundle {} (+ Grants, Policies {})",
            secs(apply2),
            secs(c2.agents),
            secs(c2.everything)
        );
        report.rows.push(row(
            "first apply → every MCPServer crawled and every Agent has status + bundle (operator already running)",
            format!("{} (the apply itself {})", secs(c2.agents), secs(apply2)),
            "< 60 s",
            Some(c2.agents < Duration::from_secs(60)),
        ));
        report.note(format!(
            "With the operator running while the estate is applied: writes until \
             convergence {} ({:.0}/s), until quiet ({}) {}; peak RSS {:.0} MiB.",
            w2.describe(),
            w2.total() / c2.agents.as_secs_f64(),
            secs(c2.quiet),
            c2.at_quiet.describe(),
            mib(proc_status(op2.pid(), "VmHWM"))
        ));
        let timeline = describe_passes(&passes_from_log(&ns2, wall0), c2.quiet.as_secs_f64());
        if !timeline.is_empty() {
            report.note(format!(
                "Its passes after the first apply (≥ 50 ms): {timeline}."
            ));
        }
        op2.stop();
    }

    let md = markdown(&args, &estate, &report);
    println!();
    println!("{md}");
    if let Some(out) = &args.out {
        std::fs::write(out, &md).expect("write the report");
        println!("written to {}", out.display());
    }
}

/// Today's date (UTC), for the report.
fn today() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn markdown(args: &Args, e: &Estate, r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Operator figures on the real control plane\n");
    let _ = writeln!(
        s,
        "Estate `{}` from `bench/gen_estate.py` (seed 42): {} MCPServers × {} tools, {} \
         Agents, {} Deny Policies, {} Grants; served on loopback over streamable HTTP by \
         `bench/bench_server.py --http` (one Python process). A real kube-apiserver and \
         etcd (`e2e/start-control-plane.sh`: etcd on tmpfs without fsync, so API writes \
         are at their cheapest), the release `mcpgov operator` as a local process \
         (`--allow-loopback --resync-seconds {}{}`), 2 shared cores (1-minute load average \
         {} at the start). Measured {}{}.\n",
        e.size,
        e.servers.len(),
        e.tools.values().next().map_or(0, Vec::len),
        e.agents.len(),
        e.policies,
        e.grants.len(),
        args.resync,
        if args.operator_args.is_empty() {
            String::new()
        } else {
            format!(" {}", args.operator_args.join(" "))
        },
        r.load_at_start,
        today(),
        if args.revision.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", args.revision)
        }
    );
    if !args.command.is_empty() {
        let _ = writeln!(s, "Reproduce:\n\n```sh\n{}\n```\n", args.command);
    }
    let _ = writeln!(
        s,
        "The start point is the operator's spawn, with the estate applied before it \
         (the apply is timed separately){}.\n",
        if args.with_apply {
            "; the last rows apply the estate to a second namespace whose operator is \
             already running, timed from the first apply"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "| measure | figure | target | met |");
    let _ = writeln!(s, "|---|---|---|---|");
    for row in &r.rows {
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            row.what, row.figure, row.target, met
        );
    }
    let _ = writeln!(s);
    for n in &r.notes {
        let _ = writeln!(s, "- {n}");
    }
    s
}
