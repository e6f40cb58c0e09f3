//! Test parts: real MCP servers (e2e/mcp-servers/start.sh), a bundle directory written the
//! way the kubelet's atomic writer does it, the gateway binary, and a plain JSON-RPC client.
#![allow(dead_code)]

use futures::StreamExt;
use mcpgov_core::contract::tool_contract_digest;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const AGENT: &str = "bot";
pub const NS: &str = "team";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn mcp_state() -> PathBuf {
    std::env::var_os("MCPGOV_MCP_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("mcpgov-gateway-tests-mcp"))
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn unique() -> String {
    format!(
        "{}x{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A real MCP server from e2e/mcp-servers, stopped on drop.
pub struct Server {
    id: String,
    pub url: String,
}

impl Server {
    pub fn start(kind: &str, args: &[&str]) -> Server {
        let id = format!("{kind}@gw{}", unique());
        let out = Command::new("bash")
            .arg(repo().join("e2e/mcp-servers/start.sh"))
            .arg(&id)
            .arg("0")
            .args(args)
            .env("MCPGOV_MCP_STATE", mcp_state())
            .output()
            .expect("run start.sh");
        assert!(
            out.status.success(),
            "starting {kind} failed (are the MCP servers installed? bash e2e/mcp-servers/install.sh): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Server { id, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo().join("e2e/mcp-servers/stop.sh"))
            .arg(&self.id)
            .env("MCPGOV_MCP_STATE", mcp_state())
            .output();
    }
}

/// A directory laid out as a ConfigMap volume: `bundle.json -> ..data/bundle.json`,
/// `..data -> ..<generation>`, swapped by renaming a new `..data` link over the old one.
pub struct BundleDir {
    pub dir: tempfile::TempDir,
    generation: u32,
}

impl BundleDir {
    pub fn new() -> BundleDir {
        BundleDir {
            dir: tempfile::tempdir().unwrap(),
            generation: 0,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Publish new content exactly as the kubelet's atomic writer does.
    pub fn publish(&mut self, files: &[(&str, &[u8])]) {
        let d = self.dir.path();
        let old = std::fs::read_link(d.join("..data")).ok();
        self.generation += 1;
        let gen_dir = format!("..2026_12_01_00_00_00.{:04}", self.generation);
        std::fs::create_dir(d.join(&gen_dir)).unwrap();
        for (name, bytes) in files {
            std::fs::write(d.join(&gen_dir).join(name), bytes).unwrap();
        }
        std::os::unix::fs::symlink(&gen_dir, d.join("..data_tmp")).unwrap();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
        for (name, _) in files {
            let link = d.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(format!("..data/{name}"), &link).unwrap();
            }
        }
        if let Some(old) = old {
            std::fs::remove_dir_all(d.join(old)).unwrap();
        }
    }

    pub fn publish_bundle(&mut self, bundle: &Value) {
        self.publish(&[("bundle.json", &serde_json::to_vec(bundle).unwrap())]);
    }
}

/// One tool of a test bundle.
pub struct T<'a> {
    pub server: &'a str,
    pub name: &'a str,
    pub decision: &'a str,
    pub digest: Option<String>,
    pub until: Option<&'a str>,
    pub policy: Option<&'a str>,
}

impl<'a> T<'a> {
    pub fn eligible(server: &'a str, name: &'a str, digest: &str) -> Self {
        T {
            server,
            name,
            decision: "eligible",
            digest: Some(digest.to_string()),
            until: None,
            policy: None,
        }
    }

    pub fn rejected(server: &'a str, name: &'a str, digest: &str, policy: &'a str) -> Self {
        T {
            decision: "rejected",
            policy: Some(policy),
            ..T::eligible(server, name, digest)
        }
    }
}

pub fn bundle(servers: &[(&str, &str)], tools: &[T]) -> Value {
    let mut tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut v = json!({
                "contractDigest": t.digest, "decision": t.decision,
                "denyPaths": t.policy.map(|p| vec![json!({"classification": "Violation", "policy": p})]).unwrap_or_default(),
                "key": format!("{}::{}", t.server, t.name), "name": t.name,
                "reasons": if t.decision == "rejected" { vec!["DenyViolation"] } else { vec![] },
                "riskScore": 1, "server": t.server,
            });
            if let Some(u) = t.until {
                v["eligibleUntil"] = json!(u);
            }
            v
        })
        .collect();
    tools.sort_by(|a, b| a["key"].as_str().cmp(&b["key"].as_str()));
    json!({
        "agent": {"name": AGENT, "namespace": NS},
        "catalogDigest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "defaultDecision": "deny",
        "governanceDigest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
        "servers": servers.iter().map(|(k, u)| json!({"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": u}, "key": k})).collect::<Vec<_>>(),
        "tools": tools,
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The gateway binary, killed on drop. Its stdout (the decision records) goes to a file.
pub struct Gateway {
    child: Child,
    pub base: String,
    pub ops: String,
    pub audit: PathBuf,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Gateway {
    pub fn start(bundle_dir: &Path, extra: &[&str]) -> Gateway {
        Gateway::launch(bundle_dir, extra, None, None)
    }

    /// With a credentials directory of the test's, and/or stdout (the audit) elsewhere.
    pub fn launch(
        bundle_dir: &Path,
        extra: &[&str],
        creds: Option<&Path>,
        stdout: Option<Stdio>,
    ) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let (p, o) = (free_port(), free_port());
        let audit = dir.path().join("audit.jsonl");
        let log = dir.path().join("gateway.log");
        let child = Command::new(env!("CARGO_BIN_EXE_mcpgov-gateway"))
            .args(["--bundle-dir", bundle_dir.to_str().unwrap()])
            .args(["--agent-name", AGENT, "--agent-namespace", NS])
            .args([
                "--listen",
                &format!("127.0.0.1:{p}"),
                "--ops-listen",
                &format!("127.0.0.1:{o}"),
            ])
            .args([
                "--credentials-dir",
                creds
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| dir.path().join("creds"))
                    .to_str()
                    .unwrap(),
            ])
            .args(["--poll-ms", "200"])
            .args(extra)
            .env("RUST_LOG", "info,mcpgov_gateway=debug")
            .stdout(stdout.unwrap_or_else(|| Stdio::from(std::fs::File::create(&audit).unwrap())))
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .expect("start the gateway");
        let g = Gateway {
            child,
            base: format!("http://127.0.0.1:{p}"),
            ops: format!("http://127.0.0.1:{o}"),
            audit,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", p)).is_err()
            || std::net::TcpStream::connect(("127.0.0.1", o)).is_err()
        {
            assert!(
                Instant::now() < deadline,
                "gateway did not listen: {}",
                g.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        g
    }

    pub fn route(&self, server_key: &str) -> String {
        format!("{}/mcp/{server_key}", self.base)
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("every audit line is JSON"))
            .collect()
    }

    pub async fn get_ops(&self, path: &str) -> (u16, String) {
        let r = reqwest::get(format!("{}{path}", self.ops)).await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Wait until `/readyz` says `status`, or fail with the gateway's log.
    pub async fn wait_ready(&self, status: u16, contains: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (s, body) = self.get_ops("/readyz").await;
            if s == status && body.contains(contains) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "readyz {s} {body}; log:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain streamable-HTTP JSON-RPC client (one session).
pub struct Client {
    http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    pub token: Option<String>,
    next: u64,
}

impl Client {
    pub fn new(url: &str) -> Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Client {
            http: reqwest::Client::new(),
            url: url.to_string(),
            session: None,
            token: None,
            next: 1,
        }
    }

    pub async fn connect(url: &str) -> Client {
        Client::connect_with(url, None).await
    }

    pub async fn connect_with(url: &str, token: Option<&str>) -> Client {
        let mut c = Client::new(url);
        c.token = token.map(str::to_string);
        let (status, init) = c
            .raw(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "gateway-test", "version": "0"}}}),
            )
            .await;
        assert_eq!(status, 200, "initialize: {init}");
        assert!(init["result"]["protocolVersion"].is_string(), "{init}");
        c.notify("notifications/initialized").await;
        c
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string());
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        if let Some(t) = &self.token {
            r = r.header("authorization", format!("Bearer {t}"));
        }
        r
    }

    /// Send one request, keep the session id, read its answer (JSON or event stream).
    pub async fn raw(&mut self, body: Value) -> (u16, Value) {
        let resp = self.post(&body).send().await.expect("send");
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_string());
        }
        let status = resp.status().as_u16();
        if status != 200 {
            let text = resp.text().await.unwrap_or_default();
            return (status, serde_json::from_str(&text).unwrap_or(json!(text)));
        }
        let id = body["id"].clone();
        let v = mcpgov_gateway::upstream::read_response(resp, &id, 64 << 20)
            .await
            .expect("an answer");
        (status, v)
    }

    pub async fn notify(&mut self, method: &str) {
        let r = self
            .post(&json!({"jsonrpc": "2.0", "method": method}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{method}: {}", r.status());
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let (status, v) = self
            .raw(json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}))
            .await;
        assert_eq!(status, 200, "{method}: {v}");
        v
    }

    /// Every tool listed, following cursors.
    pub async fn tools(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..50 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let v = self.request("tools/list", params).await;
            all.extend(v["result"]["tools"].as_array().cloned().unwrap_or_default());
            match v["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return all,
            }
        }
        panic!("too many pages")
    }

    pub async fn names(&mut self) -> Vec<String> {
        let mut n: Vec<String> = self
            .tools()
            .await
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    }

    pub async fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
            .await
            .get("result")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Open the standalone GET stream; the returned receiver yields each event's data.
    pub async fn open_stream(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        let mut r = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        let resp = r.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "GET stream");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut split = mcpgov_gateway::sse::Splitter::new(1 << 20);
            let mut body = resp.bytes_stream();
            let mut out = Vec::new();
            while let Some(Ok(c)) = body.next().await {
                if split.push(&c, &mut out).is_err() {
                    return;
                }
                for ev in out.drain(..) {
                    if let Some(d) = mcpgov_gateway::sse::fields(&ev).data {
                        let _ = tx.send(d);
                    }
                }
            }
        });
        rx
    }

    pub async fn delete(&self) -> u16 {
        let mut r = self.http.delete(&self.url);
        if let Some(s) = &self.session {
            r = r.header("mcp-session-id", s);
        }
        r.send().await.unwrap().status().as_u16()
    }
}

/// Each listed tool's contract digest, straight from the server.
pub async fn digests(url: &str) -> std::collections::BTreeMap<String, String> {
    digests_with(url, None).await
}

pub async fn digests_with(
    url: &str,
    token: Option<&str>,
) -> std::collections::BTreeMap<String, String> {
    let mut c = Client::connect_with(url, token).await;
    c.tools()
        .await
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                tool_contract_digest(&t.to_string()).unwrap(),
            )
        })
        .collect()
}

/// An event whose data contains `needle`, if one comes in time.
pub async fn wait_event(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    needle: &str,
    within: Duration,
) -> Option<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(d)) if d.contains(needle) => return Some(d),
            Ok(Some(_)) => continue,
            _ => return None,
        }
    }
}

/// Wait for an event whose data contains `needle`.
pub async fn expect_event(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    needle: &str,
    within: Duration,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(d)) if d.contains(needle) => return d,
            Ok(Some(_)) => continue,
            _ => panic!("no event with {needle} within {within:?}"),
        }
    }
}

pub fn reason(result: &Value) -> &str {
    result["structuredContent"]["reason"].as_str().unwrap_or("")
}

/// Poll `f` until it holds.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !f().await {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
