//! The real `mcpgov-gateway` binary for end-to-end tests, and an rmcp client session to
//! drive it. The gateway reads a directory the projector keeps (the kubelet's ConfigMap
//! volume); its log goes to `$MCPGOV_E2E_LOGS/gateway-<namespace>-<label>.log` and its
//! decision records to `...audit.jsonl` next to it, where a failed run leaves them.

use crate::{DEADLINE, crate_dir, free_port};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, RoleClient, RunningService,
    serve_client_with_lifecycle,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// `$MCPGOV_GATEWAY_BIN`, else `debug/mcpgov-gateway` of the cargo target dir.
pub fn gateway_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MCPGOV_GATEWAY_BIN") {
        return p.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../target"));
    target.join("debug/mcpgov-gateway")
}

fn logs_dir() -> PathBuf {
    std::env::var_os("MCPGOV_E2E_LOGS")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// A gateway process for one Agent; killed on drop.
pub struct Gateway {
    child: Child,
    pub port: u16,
    pub ops_port: u16,
    /// Its decision records (JSON lines).
    pub audit: PathBuf,
    /// Its own log (stderr).
    pub log: PathBuf,
    http: reqwest::Client,
}

impl Gateway {
    /// Start it on `bundle_dir` for Agent `namespace/agent` and wait until both its
    /// ports accept connections. `label` tells several gateways of one test apart in
    /// the log names (the same label again continues the same audit file, as a
    /// restarted container does); `extra` are more flags (`--mode warn`, ...).
    pub async fn start(
        bundle_dir: &Path,
        namespace: &str,
        agent: &str,
        label: &str,
        extra: &[&str],
    ) -> Gateway {
        let bin = gateway_bin();
        assert!(
            bin.is_file(),
            "{} is missing: cargo build -p mcpgov-gateway (scripts/test.sh does)",
            bin.display()
        );
        let dir = logs_dir();
        let _ = std::fs::create_dir_all(&dir);
        let stem = format!("gateway-{namespace}-{label}");
        let audit = dir.join(format!("{stem}.audit.jsonl"));
        let log = dir.join(format!("{stem}.log"));
        let (port, ops_port) = (free_port(), free_port());
        let child = Command::new(&bin)
            .arg("--bundle-dir")
            .arg(bundle_dir)
            .args(["--agent-name", agent, "--agent-namespace", namespace])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--ops-listen", &format!("127.0.0.1:{ops_port}")])
            // No upstream here needs credentials: an empty directory of the test's.
            .arg("--credentials-dir")
            .arg(dir.join(format!("{stem}.credentials")))
            // Behind inotify: a short poll, so a missed event costs little.
            .args(["--poll-ms", "200"])
            // The hash-chained audit log, checked with `audit verify` by `finish`.
            .arg("--audit-file")
            .arg(&audit)
            .args(extra)
            .env("RUST_LOG", "info,mcpgov_gateway=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // Appended to: a restarted gateway of the same label keeps the first one's.
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .expect("open the gateway log"),
            ))
            .spawn()
            .expect("spawn mcpgov-gateway");
        let _ = rustls::crypto::ring::default_provider().install_default();
        let gw = Gateway {
            child,
            port,
            ops_port,
            audit,
            log,
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
        };
        let start = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
            || tokio::net::TcpStream::connect(("127.0.0.1", ops_port))
                .await
                .is_err()
        {
            assert!(
                start.elapsed() < DEADLINE,
                "gateway never listened on {port} and {ops_port}; log in {}",
                gw.log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        gw
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The streamable-HTTP URL of one upstream server (`namespace/server`).
    pub fn route(&self, server_key: &str) -> String {
        format!("http://127.0.0.1:{}/mcp/{server_key}", self.port)
    }

    /// GET on the ops port: (status, body).
    pub async fn ops(&self, path: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("http://127.0.0.1:{}{path}", self.ops_port))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}; log in {}", self.log.display()));
        (r.status().as_u16(), r.text().await.unwrap_or_default())
    }

    /// Wait until `/readyz` answers `status` with a body containing `contains`;
    /// returns the body.
    pub async fn wait_ready(&self, status: u16, contains: &str) -> String {
        let start = Instant::now();
        loop {
            let (s, body) = self.ops("/readyz").await;
            if s == status && body.contains(contains) {
                return body;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "readyz never answered {status} with {contains:?}; last {s} {body:?}; log in {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sum of a metric's samples whose labels contain every `label="value"` given.
    pub async fn metric(&self, name: &str, labels: &[&str]) -> f64 {
        let (_, body) = self.ops("/metrics").await;
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| l.split(['{', ' ']).next() == Some(name))
            .filter(|l| labels.iter().all(|want| l.contains(want)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Wait until `metric(name, labels)` equals `value`.
    pub async fn wait_metric(&self, name: &str, labels: &[&str], value: f64) {
        let start = Instant::now();
        loop {
            let got = self.metric(name, labels).await;
            if got == value {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{name}{labels:?} never became {value} (last {got}); log in {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every decision record written so far.
    pub fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line {l:?}: {e}")))
            .collect()
    }

    /// Wait for a decision record that `pred` accepts and return it (each record is
    /// written before the answer it decides; polling also covers a pass-through).
    pub async fn wait_record(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(r) = self.records().into_iter().rfind(&pred) {
                return r;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no decision record {what} in {}",
                self.audit.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One raw JSON-RPC request outside any session (what a client gets before it
    /// could even initialize): (HTTP status, the answer parsed from JSON or SSE).
    pub async fn raw(&self, server_key: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(self.route(server_key))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await
            .expect("POST to the gateway");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        let json = serde_json::from_str(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
        });
        (status, json.unwrap_or(Value::String(text)))
    }

    /// Stop the gateway and check its audit log with `mcpgov-gateway audit verify
    /// --from-genesis --strict`: one unbroken chain from seq 0 holding every line.
    /// Returns the log's lines.
    pub fn finish(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let lines: Vec<String> = std::fs::read_to_string(&self.audit)
            .expect("the audit file")
            .lines()
            .map(str::to_string)
            .collect();
        let (code, out) = verify_audit(&[&self.audit], &["--from-genesis", "--strict"]);
        assert_eq!(
            code,
            Some(0),
            "audit verify {}: {out}",
            self.audit.display()
        );
        assert!(
            out.starts_with(&format!("ok: {} records", lines.len())),
            "{out}"
        );
        lines
    }
}

/// Run `mcpgov-gateway audit verify FLAGS FILES`: (exit code, stdout + stderr).
pub fn verify_audit(files: &[&Path], flags: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(gateway_bin())
        .args(["audit", "verify"])
        .args(flags)
        .args(files)
        .output()
        .expect("run mcpgov-gateway audit verify");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Counts `notifications/tools/list_changed` as they arrive.
struct Handler {
    info: ClientConfig,
    list_changed: mpsc::UnboundedSender<()>,
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

/// An rmcp client session (streamable HTTP, `initialize` handshake) on one route.
pub struct Session {
    running: RunningService<RoleClient, Handler>,
    list_changed: mpsc::UnboundedReceiver<()>,
    url: String,
}

impl Session {
    pub async fn connect(url: &str) -> Session {
        Self::connect_with(url, None).await
    }

    /// Connect sending `Authorization: Bearer TOKEN` with every request.
    pub async fn connect_with(url: &str, token: Option<&str>) -> Session {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url)
            .reinit_on_expired_session(false)
            .control_request_timeout(Duration::from_secs(20));
        if let Some(t) = token {
            config = config.auth_header(t);
        }
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = Handler {
            info: InitializeRequestParams::new(
                ClientCapabilities::default(),
                Implementation::new("mcpgov-e2e", env!("CARGO_PKG_VERSION")),
            )
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE),
            list_changed: tx,
        };
        let handshake =
            serve_client_with_lifecycle(handler, transport, ClientLifecycleMode::Initialize);
        let Ok(handshake) = tokio::time::timeout(DEADLINE, handshake).await else {
            panic!("no initialize answer from {url} within {DEADLINE:?}")
        };
        let running = handshake.unwrap_or_else(|e| panic!("initialize through {url}: {e}"));
        Session {
            running,
            list_changed: rx,
            url: url.to_string(),
        }
    }

    /// Every tool listed (all pages), sorted by name.
    pub async fn names(&self) -> Vec<String> {
        let tools = tokio::time::timeout(DEADLINE, self.running.list_all_tools())
            .await
            .unwrap_or_else(|_| panic!("tools/list on {} took over {DEADLINE:?}", self.url))
            .unwrap_or_else(|e| panic!("tools/list on {}: {e}", self.url));
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        names
    }

    /// `tools/call`; the result as JSON (`isError`, `content`, `structuredContent`).
    pub async fn call(&self, tool: &str, args: Value) -> Value {
        let Value::Object(arguments) = args else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let result = tokio::time::timeout(DEADLINE, self.running.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("tools/call {tool} took over {DEADLINE:?}"))
            .unwrap_or_else(|e| panic!("tools/call {tool} on {}: {e}", self.url));
        serde_json::to_value(result).expect("a result serialises")
    }

    /// Wait up to `within` for a `notifications/tools/list_changed`.
    pub async fn list_changed(&mut self, within: Duration) -> bool {
        matches!(
            tokio::time::timeout(within, self.list_changed.recv()).await,
            Ok(Some(()))
        )
    }

    /// Forget notifications received so far.
    pub fn drain_list_changed(&mut self) {
        while self.list_changed.try_recv().is_ok() {}
    }

    pub async fn close(self) {
        let _ = self.running.cancel().await;
    }
}

/// The text of a tool result's content blocks, joined.
pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A denial's reason (`structuredContent.reason`), or "" for a result that is not one.
pub fn denial(result: &Value) -> &str {
    if result["isError"] != Value::Bool(true) {
        return "";
    }
    result["structuredContent"]["reason"].as_str().unwrap_or("")
}
