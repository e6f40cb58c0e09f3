//! Harness for end-to-end tests against the real control plane that
//! `e2e/start-control-plane.sh` runs (KUBECONFIG points at it). Each test gets its own
//! namespace and its own operator process watching only that namespace, and waits on
//! conditions with a deadline instead of sleeping.

pub mod gateway;
pub mod kubectl_docs;
pub mod projector;
pub use projector::{Projection, Projector};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Resource};
use serde_json::Value;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const DEADLINE: Duration = Duration::from_secs(60);

pub async fn client() -> Client {
    Client::try_default()
        .await
        .expect("KUBECONFIG must point at the e2e control plane (scripts/test.sh starts it)")
}

/// The `mcpgov` binary built for this run.
pub fn mcpgov_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MCPGOV_BIN") {
        return p.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../target"));
    target.join("debug/mcpgov")
}

/// A fresh namespace named after the test.
pub async fn namespace(client: &Client, test: &str) -> String {
    let name = format!("e2e-{test}-{:06x}", rand::random::<u32>() & 0xffffff);
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
    name
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// An operator process scoped to one namespace; killed on drop.
pub struct Operator {
    child: Child,
    pub port: u16,
    pub namespace: String,
}

impl Operator {
    /// Start with crawling off (catalogs come from `mcpgov catalog apply`) and wait
    /// until `/readyz` answers 200.
    pub async fn start(namespace: &str, resync_seconds: u64) -> Operator {
        Self::start_with(namespace, resync_seconds, &["--crawl-concurrency", "0"]).await
    }

    /// Start one of several replicas competing for a Lease in `namespace` (crawling off).
    pub async fn start_elected(namespace: &str, lease_seconds: u64) -> Operator {
        let lease = lease_seconds.to_string();
        Self::start_with(
            namespace,
            300,
            &[
                "--crawl-concurrency",
                "0",
                "--leader-election",
                "--lease-namespace",
                namespace,
                "--lease-duration-seconds",
                &lease,
            ],
        )
        .await
    }

    /// Start with the crawler on, allowed to reach MCP servers on loopback.
    pub async fn start_crawling(namespace: &str, resync_seconds: u64) -> Operator {
        Self::start_with(namespace, resync_seconds, &["--allow-loopback"]).await
    }

    /// Start with these flags and wait until `/readyz` answers 200.
    pub async fn start_with(namespace: &str, resync_seconds: u64, extra: &[&str]) -> Operator {
        let op = Self::spawn(namespace, resync_seconds, extra, "info,mcpgov=debug");
        op.wait_ready().await;
        op
    }

    /// Spawn the process and return at once, without waiting for `/readyz` (benchmarks
    /// time the start themselves). `rust_log` is its `RUST_LOG`; logs go to
    /// `$MCPGOV_E2E_LOGS/operator-<namespace>.log`.
    pub fn spawn(namespace: &str, resync_seconds: u64, extra: &[&str], rust_log: &str) -> Operator {
        Self::spawn_scoped(Some(namespace), namespace, resync_seconds, extra, rust_log)
    }

    /// An operator over every namespace (crawling off), with `governance` as its
    /// governance namespace. Only for a test binary of its own: it writes status in
    /// every namespace, so it must not run beside other tests' operators.
    pub async fn start_all_namespaces(governance: &str) -> Operator {
        Self::start_all_namespaces_with(governance, &[]).await
    }

    /// [`Operator::start_all_namespaces`] with more flags.
    pub async fn start_all_namespaces_with(governance: &str, extra: &[&str]) -> Operator {
        let mut flags = vec!["--crawl-concurrency", "0"];
        flags.extend_from_slice(extra);
        let op = Self::spawn_scoped(None, governance, 300, &flags, "info,mcpgov=debug");
        op.wait_ready().await;
        op
    }

    fn spawn_scoped(
        scope: Option<&str>,
        namespace: &str,
        resync_seconds: u64,
        extra: &[&str],
        rust_log: &str,
    ) -> Operator {
        let port = free_port();
        let mut cmd = Command::new(mcpgov_bin());
        cmd.arg("operator");
        if let Some(scope) = scope {
            cmd.args(["--namespace", scope]);
        }
        let child = cmd
            .args(["--governance-namespace", namespace])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--resync-seconds", &resync_seconds.to_string()])
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(namespace))
            .spawn()
            .expect("spawn mcpgov operator");
        Operator {
            child,
            port,
            namespace: namespace.to_string(),
        }
    }

    /// The process id (for `/proc/PID/status`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether `/readyz` answers 200 now.
    pub async fn is_ready(&self) -> bool {
        self.get("/readyz")
            .await
            .is_some_and(|(code, _)| code == 200)
    }

    /// The whole `/metrics` page.
    pub async fn metrics_text(&self) -> String {
        self.get("/metrics").await.expect("metrics answer").1
    }

    pub async fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            if self
                .get("/readyz")
                .await
                .is_some_and(|(code, _)| code == 200)
            {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "operator for {} never became ready",
                self.namespace
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A plain HTTP/1.0 GET on loopback: (status code, body).
    async fn get(&self, path: &str) -> Option<(u16, String)> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .ok()?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.ok()?;
        let code = buf.split_whitespace().nth(1)?.parse().ok()?;
        let body = buf
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Some((code, body))
    }

    /// Sum of a metric's samples whose labels contain every `label="value"` given.
    pub async fn metric(&self, name: &str, labels: &[&str]) -> f64 {
        let (_, body) = self.get("/metrics").await.expect("metrics answer");
        body.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter(|l| labels.iter().all(|want| l.contains(want)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Wait until `metric` reaches at least `value`.
    pub async fn wait_metric(&self, name: &str, labels: &[&str], value: f64) {
        let start = Instant::now();
        while self.metric(name, labels).await < value {
            assert!(
                start.elapsed() < DEADLINE,
                "{name}{labels:?} never reached {value}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process's memory from `/proc/PID/status`, in KiB: resident now (`VmRSS`) and the
/// highest it has been (`VmHWM`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

pub fn proc_memory(pid: u32) -> Option<Memory> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        s.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some(Memory {
        rss_kib: field("VmRSS")?,
        hwm_kib: field("VmHWM")?,
    })
}

/// The operator's log file (`$MCPGOV_E2E_LOGS/operator-<namespace>.log`).
pub fn log_path(namespace: &str) -> PathBuf {
    std::env::var_os("MCPGOV_E2E_LOGS")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("operator-{namespace}.log"))
}

fn log_file(namespace: &str) -> Stdio {
    let path = log_path(namespace);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::File::create(path)
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

fn api_for(client: &Client, ns: &str, obj: &Value) -> (Api<DynamicObject>, String) {
    let api_version = obj["apiVersion"].as_str().expect("apiVersion");
    let kind = obj["kind"].as_str().expect("kind");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let name = obj["metadata"]["name"].as_str().expect("name").to_string();
    (Api::namespaced_with(client.clone(), ns, &ar), name)
}

/// Server-side apply every document of `yaml` into `ns` (as a user would, field
/// manager `e2e`). Returns the API error of the first document refused.
pub async fn apply(client: &Client, ns: &str, yaml: &str) -> Result<(), kube::Error> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("test YAML parses");
    for mut doc in docs.into_iter().filter(|d| !d.is_null()) {
        doc["metadata"]["namespace"] = Value::String(ns.to_string());
        let (api, name) = api_for(client, ns, &doc);
        api.patch(
            &name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&doc),
        )
        .await?;
    }
    Ok(())
}

pub async fn delete(client: &Client, ns: &str, api_version_kind: (&str, &str), name: &str) {
    let obj = serde_json::json!({"apiVersion": api_version_kind.0, "kind": api_version_kind.1, "metadata": {"name": name}});
    let (api, _) = api_for(client, ns, &obj);
    api.delete(name, &Default::default()).await.expect("delete");
}

/// Poll `get` until `pred` holds on what it returns, or fail after the deadline with
/// the last value seen.
pub async fn wait_for<K, F>(api: &Api<K>, name: &str, what: &str, pred: F) -> K
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&K) -> bool,
{
    let start = Instant::now();
    loop {
        let got = api.get_opt(name).await.expect("get");
        if let Some(obj) = &got
            && pred(obj)
        {
            return obj.clone();
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}; last seen: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `status.conditions[type]` as (status, reason).
pub fn condition(
    status: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
    type_: &str,
) -> Option<(String, String)> {
    status?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// A real MCP server (from npm or PyPI, see e2e/mcp-servers/) on 127.0.0.1, stopped on
/// drop.
pub struct McpServer {
    kind: String,
    instance: String,
    args: Vec<String>,
    pub port: u16,
    pub url: String,
    pub sse_url: Option<String>,
    /// The directory a filesystem-* server serves (its MCP_FS_ROOT).
    pub fs_root: Option<String>,
}

fn mcp_scripts() -> PathBuf {
    crate_dir().join("mcp-servers")
}

/// This crate's directory: cargo's runtime variable first, since a build shared by
/// several checkouts (one target dir) can carry another checkout's compile-time path.
pub(crate) fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn mcp_state() -> PathBuf {
    std::env::var_os("MCPGOV_MCP_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/mcpgov-mcp"))
}

impl McpServer {
    /// `kind` is a server name of e2e/mcp-servers/start.sh (everything-http,
    /// everything-sse, filesystem-http, filesystem-sse, memory-http, memory-sse,
    /// testserver); `args` go to the server (testserver switches).
    pub fn start(kind: &str, args: &[&str]) -> McpServer {
        let mut s = McpServer {
            kind: kind.to_string(),
            instance: format!("{:06x}", rand::random::<u32>() & 0xffffff),
            args: args.iter().map(|a| a.to_string()).collect(),
            port: 0,
            url: String::new(),
            sse_url: None,
            fs_root: None,
        };
        s.launch();
        s
    }

    fn id(&self) -> String {
        format!("{}@{}", self.kind, self.instance)
    }

    fn launch(&mut self) {
        let out = Command::new("bash")
            .arg(mcp_scripts().join("start.sh"))
            .arg(self.id())
            .arg(self.port.to_string())
            .args(&self.args)
            .output()
            .expect("run start.sh");
        assert!(
            out.status.success(),
            "starting {} failed: {}",
            self.kind,
            String::from_utf8_lossy(&out.stderr)
        );
        let file = mcp_state().join(format!("{}_{}.env", self.kind, self.instance));
        let env = std::fs::read_to_string(file).expect("start.sh writes ID.env");
        let var = |name: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .map(|v| v.trim_matches(|c| c == '"' || c == '\'').to_string())
        };
        self.url = var("MCP_URL").expect("MCP_URL");
        self.sse_url = var("MCP_SSE_URL");
        self.fs_root = var("MCP_FS_ROOT");
        self.port = var("MCP_PORT")
            .and_then(|p| p.parse().ok())
            .expect("MCP_PORT");
    }

    /// Start again on the same port after `stop`.
    pub fn restart(&mut self) {
        self.launch();
    }

    pub fn stop(&self) {
        let _ = Command::new("bash")
            .arg(mcp_scripts().join("stop.sh"))
            .arg(self.id())
            .output();
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The four kinds' `status.conditions`, for waiting on one of them.
pub trait Conditioned {
    fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition];
}

macro_rules! conditioned {
    ($($ty:ty),*) => {$(
        impl Conditioned for $ty {
            fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
                self.status.as_ref().map_or(&[], |s| s.conditions.as_slice())
            }
        }
    )*};
}
conditioned!(
    mcpgov::crd::MCPServer,
    mcpgov::crd::Agent,
    mcpgov::crd::Policy,
    mcpgov::crd::Grant
);

/// Wait until condition `type_` of `name` has `status` ("True" / "False").
pub async fn wait_condition<K>(api: &Api<K>, name: &str, type_: &str, status: &str) -> K
where
    K: Resource + Conditioned + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(api, name, &format!("{type_}={status}"), |o| {
        condition(Some(o.conditions()), type_).is_some_and(|c| c.0 == status)
    })
    .await
}
