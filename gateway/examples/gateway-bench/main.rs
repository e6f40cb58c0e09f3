//! The gateway's figures (issue 11, "Performance"), for `bench/gateway-bench.sh`.
//!
//! ```text
//! gateway-bench --gateway PATH [--quick] [--rounds 3] [--calls 2000] [--lists 200]
//!               [--swaps 20] [--sessions 200] [--load-secs 5] [--throughput-secs 5]
//!               [--concurrency 32] [--gateway-cpu 1] [--client-cpu 0] [--no-pin]
//!               [--out-json FILE] [--out-md FILE] [--command CMD] [--revision REV]
//! ```
//!
//! One run on loopback: an upstream MCP server with 100 tools (`upstream.rs`, a child
//! process of this binary), the release gateway in front of it (a child process with its
//! defaults, not pinned), and this process as the client. Measured:
//!
//! 1. the decision in process: bundle lookup, live contract check and argument
//!    validation, the gateway's own functions on the same bundle and tools;
//! 2. `tools/call` and `tools/list` (100 tools), direct and through the gateway,
//!    interleaved call by call (the order alternates), in rounds;
//! 3. a kubelet-style `..data` swap that flips one tool's decision, timed until a call
//!    sees the new decision;
//! 4. throughput at `--concurrency` sessions through a second gateway started under
//!    `taskset -c <--gateway-cpu>` (its runtime then has one worker), the client and the
//!    upstream moved to `--client-cpu` meanwhile; with the gateway's CPU time (calls per
//!    CPU-second of the gateway is its one-core capacity, also when the core is shared);
//! 5. RSS: after start with the bundle loaded, idle after traffic, and under
//!    `--sessions` concurrent sessions each with a standalone GET stream open and calls
//!    in flight.
//!
//! Each run also reports the gateway's run-queue wait (`/proc/<pid>/task/*/schedstat`):
//! on a shared machine it says how much of a p99 is other work.
//!
//! `--quick` runs each part briefly (a smoke test: it fails on any wrong answer, never on
//! a figure) and writes nothing unless asked.

mod client;
mod stats;
mod upstream;

use client::{Session, is_error};
use jiff::Timestamp;
use mcpgov_gateway::audit::{ArgKey, AuditLog, AuditOptions, Output};
use mcpgov_gateway::bundle::{Expect, load_bytes};
use mcpgov_gateway::contracts::{Contracts, check_arguments, live_tool};
use mcpgov_gateway::decision::{AuditSink, ChainSink, Decision, DecisionRecord, argument_names};
use mcpgov_gateway::policy::{bundle_allows, contract_matches};
use serde_json::{Value, json};
use stats::{cpu_time, load1, median, mib, pct, rss_kib, sched, us};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const AGENT: &str = "bot";
const NS: &str = "team";
const SERVER: &str = "team/bench";
/// The tool whose decision the bundle swaps flip.
const FLIPPED: usize = 0;

static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn cpus() -> usize {
    CPUS.get().copied().unwrap_or(0)
}

struct Args {
    gateway: PathBuf,
    quick: bool,
    rounds: usize,
    calls: usize,
    lists: usize,
    swaps: usize,
    sessions: usize,
    load_secs: f64,
    throughput_secs: f64,
    concurrency: usize,
    gateway_cpu: usize,
    client_cpu: usize,
    pin: bool,
    out_json: Option<PathBuf>,
    out_md: Option<PathBuf>,
    command: String,
    revision: String,
}

fn usage() -> ! {
    eprintln!(
        "usage: gateway-bench --gateway PATH [--quick] [--rounds N] [--calls N] [--lists N] \
         [--swaps N] [--sessions N] [--load-secs S] [--throughput-secs S] [--concurrency N] \
         [--gateway-cpu N] [--client-cpu N] [--no-pin] [--out-json FILE] [--out-md FILE] \
         [--command CMD] [--revision REV]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        gateway: PathBuf::new(),
        quick: false,
        rounds: 3,
        calls: 2000,
        lists: 200,
        swaps: 20,
        sessions: 200,
        load_secs: 5.0,
        throughput_secs: 5.0,
        concurrency: 32,
        gateway_cpu: 1,
        client_cpu: 0,
        pin: true,
        out_json: None,
        out_md: None,
        command: String::new(),
        revision: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        macro_rules! num {
            () => {
                value().parse().unwrap_or_else(|_| usage())
            };
        }
        match arg.as_str() {
            "--gateway" => a.gateway = value().into(),
            "--quick" => {
                a.quick = true;
                a.rounds = 1;
                a.calls = 200;
                a.lists = 20;
                a.swaps = 3;
                a.sessions = 20;
                a.load_secs = 0.5;
                a.throughput_secs = 0.5;
                a.concurrency = 4;
                a.pin = false;
            }
            "--rounds" => a.rounds = num!(),
            "--calls" => a.calls = num!(),
            "--lists" => a.lists = num!(),
            "--swaps" => a.swaps = num!(),
            "--sessions" => a.sessions = num!(),
            "--load-secs" => a.load_secs = num!(),
            "--throughput-secs" => a.throughput_secs = num!(),
            "--concurrency" => a.concurrency = num!(),
            "--gateway-cpu" => a.gateway_cpu = num!(),
            "--client-cpu" => a.client_cpu = num!(),
            "--no-pin" => a.pin = false,
            "--out-json" => a.out_json = Some(value().into()),
            "--out-md" => a.out_md = Some(value().into()),
            "--command" => a.command = value(),
            "--revision" => a.revision = value(),
            "--serve-upstream" => serve_upstream(),
            _ => usage(),
        }
    }
    if a.gateway.as_os_str().is_empty() || a.rounds == 0 || a.calls == 0 || a.lists == 0 {
        usage()
    }
    a
}

/// The child process mode: serve the upstream on a free loopback port, print it.
fn serve_upstream() -> ! {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let r = rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("READY {}", l.local_addr()?.port());
        upstream::serve(l).await
    });
    eprintln!("upstream stopped: {r:?}");
    std::process::exit(1)
}

fn log(msg: impl AsRef<str>) {
    eprintln!("[gateway-bench] {}", msg.as_ref());
}

/// `taskset -a -c -p CPUS PID`: every thread of a running process.
fn pin_all(pid: u32, cpus: &str) -> Result<(), String> {
    let ok = Command::new("taskset")
        .args(["-a", "-c", "-p", cpus, &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(())
        .ok_or_else(|| format!("taskset -p {cpus} {pid} failed (--no-pin runs without)"))
}

/// The gateway binary with its defaults, killed on drop.
struct Gateway {
    child: Killed,
    ops: String,
    url: String,
    audit: PathBuf,
}

impl Gateway {
    /// Started under `taskset -c CPU` when `cpu` is given; ready (bundle loaded) on return.
    async fn start(
        a: &Args,
        http: &reqwest::Client,
        bundle_dir: &Path,
        work: &Path,
        cpu: Option<usize>,
    ) -> Result<Gateway, String> {
        let mut cmd = match cpu {
            Some(c) => {
                let mut t = Command::new("taskset");
                t.arg("-c").arg(c.to_string()).arg(&a.gateway);
                t
            }
            None => Command::new(&a.gateway),
        };
        let (p, o) = (free_port(), free_port());
        let audit = work.join(format!("audit-{p}.jsonl"));
        let file = |p: &Path| std::fs::File::create(p).map_err(|e| e.to_string());
        let child = cmd
            .args(["--bundle-dir", bundle_dir.to_str().expect("utf-8 path")])
            .args(["--agent-name", AGENT, "--agent-namespace", NS])
            .args(["--listen", &format!("127.0.0.1:{p}")])
            .args(["--ops-listen", &format!("127.0.0.1:{o}")])
            .args([
                "--credentials-dir",
                work.join("creds").to_str().expect("utf-8 path"),
            ])
            .stdout(Stdio::from(file(&audit)?))
            .stderr(Stdio::from(file(&work.join(format!("gateway-{p}.log")))?))
            .spawn()
            .map_err(|e| format!("start the gateway {}: {e}", a.gateway.display()))?;
        let mut child = Killed(child);
        let ops = format!("http://127.0.0.1:{o}");
        wait_ready(http, &ops, &mut child.0).await?;
        Ok(Gateway {
            child,
            ops,
            url: format!("http://127.0.0.1:{p}/mcp/{SERVER}"),
            audit,
        })
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------------------
// the bundle and its volume

fn bundle(upstream_url: &str, flipped_rejected: bool) -> Vec<u8> {
    let tools: Vec<Value> = upstream::tools()
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let (name, live) = live_tool(raw).expect("a tool with a name");
            let rejected = flipped_rejected && i == FLIPPED;
            json!({
                "contractDigest": live.digest,
                "decision": if rejected { "rejected" } else { "eligible" },
                "denyPaths": if rejected { vec![json!({"classification": "Violation", "policy": "team/bench-swap"})] } else { vec![] },
                "key": format!("{SERVER}::{name}"), "name": name,
                "reasons": if rejected { vec!["DenyViolation"] } else { vec![] },
                "riskScore": 1, "server": SERVER,
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "agent": {"name": AGENT, "namespace": NS},
        "catalogDigest": format!("sha256:{}", "0".repeat(64)),
        "defaultDecision": "deny",
        "governanceDigest": format!("sha256:{}", "0".repeat(64)),
        "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
        "servers": [{"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": upstream_url}, "key": SERVER}],
        "tools": tools,
    }))
    .expect("a bundle serialises")
}

/// A directory laid out as the kubelet lays out a ConfigMap volume.
struct Volume {
    dir: PathBuf,
    generation: u32,
}

impl Volume {
    /// The kubelet's atomic writer: a new timestamped directory, a `..data_tmp` link to
    /// it renamed over `..data`, then the old directory removed. Returns the instant of
    /// the rename (the moment the new content is visible).
    fn publish(&mut self, bytes: &[u8]) -> Instant {
        let d = &self.dir;
        let old = std::fs::read_link(d.join("..data")).ok();
        self.generation += 1;
        let now = Timestamp::now().strftime("%Y_%m_%d_%H_%M_%S");
        let gen_dir = format!("..{now}.{:06}", self.generation);
        std::fs::create_dir(d.join(&gen_dir)).expect("mkdir");
        std::fs::write(d.join(&gen_dir).join("bundle.json"), bytes).expect("write");
        std::os::unix::fs::symlink(&gen_dir, d.join("..data_tmp")).expect("symlink");
        let at = Instant::now();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).expect("rename");
        if std::fs::symlink_metadata(d.join("bundle.json")).is_err() {
            std::os::unix::fs::symlink("..data/bundle.json", d.join("bundle.json"))
                .expect("symlink");
        }
        if let Some(old) = old {
            let _ = std::fs::remove_dir_all(d.join(old));
        }
        at
    }
}

// ---------------------------------------------------------------------------------
// 1. the decision in process

struct DecisionFigures {
    decision: Vec<f64>,
    with_record: Vec<f64>,
    /// The work of filtering one 100-tool `tools/list` answer.
    list: Vec<f64>,
    /// The 100 contract digests computed afresh (`live_tool`, what a first list costs).
    digests: Vec<f64>,
}

fn decision_in_process(bytes: &[u8], iters: usize) -> DecisionFigures {
    let expect = Expect {
        agent_name: AGENT.into(),
        agent_namespace: NS.into(),
    };
    let b = load_bytes(bytes, None, &expect).expect("the bench bundle is valid");
    let contracts = Contracts::new(Duration::from_secs(3600));
    contracts.replace(
        SERVER,
        upstream::tools().iter().filter_map(live_tool).collect(),
    );
    let names: Vec<String> = (0..upstream::TOOLS).map(upstream::tool_name).collect();
    let requests: Vec<Vec<u8>> = (0..upstream::TOOLS)
        .map(|i| {
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": names[i], "arguments": {"text": "hello", "n": i}}}))
            .expect("serialises")
        })
        .collect();
    // The decision proper: policy, live contract, arguments (validators compiled once per
    // contract, as in the gateway: the first round warms them).
    let decide = |name: &str, args: &Value| {
        let p = bundle_allows(Some(&b), SERVER, name, Timestamp::now()).expect("eligible");
        let live = contracts
            .get(SERVER, name)
            .flatten()
            .expect("a live contract");
        contract_matches(p, Some(&live.digest)).expect("the approved contract");
        let checker = contracts.checker(SERVER, &live);
        check_arguments(&checker, args).expect("valid arguments");
        p.tool.contract_digest.clone()
    };
    let args: Vec<Value> = (0..upstream::TOOLS)
        .map(|i| json!({"text": "hello", "n": i}))
        .collect();
    for i in 0..upstream::TOOLS {
        decide(&names[i], &args[i]);
    }
    let mut decision = Vec::with_capacity(iters);
    for k in 0..iters {
        let i = k % upstream::TOOLS;
        let t = Instant::now();
        std::hint::black_box(decide(&names[i], &args[i]));
        decision.push(us(t.elapsed()));
    }
    // The same with what surrounds it per call: parse the request, decide, append the
    // decision to a hash-chained audit file (seal, keyed argument digest, write), and
    // re-serialise the decided message to forward.
    let audit_path =
        std::env::temp_dir().join(format!("gateway-bench-audit-{}.log", std::process::id()));
    let mut opts = AuditOptions::new(Output::File(audit_path.clone()));
    opts.max_bytes = 0;
    let sink = ChainSink::new(
        AuditLog::open(opts, ArgKey::from_bytes(&[7; 32]).expect("a key")).expect("audit file"),
    );
    let mut with_record = Vec::with_capacity(iters);
    for k in 0..iters {
        let i = k % upstream::TOOLS;
        let t = Instant::now();
        let msg: Value = serde_json::from_slice(&requests[i]).expect("json");
        let name = msg.pointer("/params/name").and_then(Value::as_str).unwrap();
        let a = msg.pointer("/params/arguments").cloned();
        let digest = decide(name, a.as_ref().unwrap());
        let rec = DecisionRecord {
            time: Timestamp::now(),
            agent: format!("{NS}/{AGENT}"),
            bundle_sha: Some(b.sha.clone()),
            method: "tools/call".into(),
            server: SERVER.into(),
            tool: Some(name.to_string()),
            decision: Decision::Allow,
            enforced: true,
            reasons: vec!["Eligible".into()],
            bundle_contract_digest: digest.clone(),
            live_contract_digest: digest,
            arg_names: argument_names(a.as_ref()),
            arguments: a,
            session_id: Some("0123456789abcdef".into()),
            resources: Vec::new(),
        };
        std::hint::black_box(sink.record(&rec).expect("recorded"));
        std::hint::black_box(serde_json::to_vec(&msg).expect("forwarded"));
        with_record.push(us(t.elapsed()));
    }
    drop(sink);
    let _ = std::fs::remove_file(&audit_path);
    // What the gateway does to a `tools/list` answer: parse it, digest and decide every
    // tool, write it out again.
    let answer =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": upstream::tools()}}).to_string();
    let mut list = Vec::new();
    for _ in 0..(iters / 1000).max(20) {
        let t = Instant::now();
        let mut v: Value = serde_json::from_str(&answer).expect("json");
        let tools = v
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
            .expect("tools");
        let mut seen = Vec::with_capacity(tools.len());
        let mut kept = Vec::with_capacity(tools.len());
        for raw in tools.drain(..) {
            // As the gateway does it: digests remembered by the entry's text.
            let (name, live) = contracts.live_tool(&raw).expect("a tool");
            let p = bundle_allows(Some(&b), SERVER, &name, Timestamp::now()).expect("eligible");
            contract_matches(p, Some(&live.digest)).expect("the approved contract");
            seen.push((name, live));
            kept.push(raw);
        }
        *tools = kept;
        std::hint::black_box(v.to_string());
        std::hint::black_box(seen);
        list.push(us(t.elapsed()));
    }
    let raw_tools = upstream::tools();
    let mut digests = Vec::new();
    for _ in 0..(iters / 1000).max(20) {
        let t = Instant::now();
        for raw in &raw_tools {
            std::hint::black_box(live_tool(raw));
        }
        digests.push(us(t.elapsed()));
    }
    DecisionFigures {
        decision,
        with_record,
        list,
        digests,
    }
}

// ---------------------------------------------------------------------------------
// 2. direct versus through the gateway

#[derive(Default)]
struct Paired {
    direct: Vec<f64>,
    via: Vec<f64>,
}

impl Paired {
    fn added(&self, p: f64) -> f64 {
        pct(&self.via, p) - pct(&self.direct, p)
    }
}

async fn timed<T>(
    f: impl std::future::Future<Output = Result<T, String>>,
) -> Result<(T, f64), String> {
    let t = Instant::now();
    let v = f.await?;
    Ok((v, us(t.elapsed())))
}

/// `n` calls each way, interleaved: call i goes direct then via, call i+1 via then direct.
async fn calls(direct: &mut Session, via: &mut Session, n: usize) -> Result<Paired, String> {
    let mut out = Paired::default();
    for k in 0..n {
        let tool = upstream::tool_name(1 + k % (upstream::TOOLS - 1));
        let n = (k % 1000) as u64;
        for via_first in [k % 2 == 1, k % 2 == 0] {
            let (s, into) = if via_first {
                (&mut *via, &mut out.via)
            } else {
                (&mut *direct, &mut out.direct)
            };
            let (answer, t) = timed(s.call(&tool, "hello", n)).await?;
            if is_error(&answer) {
                return Err(format!("{tool} denied or failed: {answer}"));
            }
            into.push(t);
        }
    }
    Ok(out)
}

async fn lists(direct: &mut Session, via: &mut Session, n: usize) -> Result<Paired, String> {
    let mut out = Paired::default();
    for k in 0..n {
        for via_first in [k % 2 == 1, k % 2 == 0] {
            let (s, into) = if via_first {
                (&mut *via, &mut out.via)
            } else {
                (&mut *direct, &mut out.direct)
            };
            let (names, t) = timed(s.list()).await?;
            if names.len() != upstream::TOOLS {
                return Err(format!("tools/list showed {} tools", names.len()));
            }
            into.push(t);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// 3. from the `..data` swap to the new decision

async fn swaps(
    vol: &mut Volume,
    via: &mut Session,
    bundles: &[Vec<u8>; 2],
    n: usize,
) -> Result<Vec<f64>, String> {
    let tool = upstream::tool_name(FLIPPED);
    let mut out = Vec::new();
    for k in 0..n {
        // Odd swaps reject the tool, even swaps make it eligible again.
        let reject = k % 2 == 0;
        let at = vol.publish(&bundles[usize::from(reject)]);
        let deadline = at + Duration::from_secs(10);
        loop {
            let answer = via.call(&tool, "swap", 0).await?;
            if is_error(&answer) == reject {
                if reject
                    && answer.pointer("/result/structuredContent/reason")
                        != Some(&json!("Rejected"))
                {
                    return Err(format!("unexpected denial: {answer}"));
                }
                out.push(at.elapsed().as_secs_f64() * 1e3);
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("swap {k}: no new decision after 10 s"));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// 4. and 5. load: throughput, RSS under many sessions

struct Load {
    calls: u64,
    secs: f64,
    gateway_cpu: f64,
    upstream_cpu: f64,
    bench_cpu: f64,
    rss_peak_kib: u64,
}

/// `sessions` sessions through `url`, each calling in a loop for `secs`; with `streams`,
/// each also holds its standalone GET stream open. RSS of `watch` sampled every 20 ms.
async fn load(
    http: &reqwest::Client,
    url: &str,
    sessions: usize,
    streams: bool,
    secs: f64,
    pids: (u32, u32),
) -> Result<Load, String> {
    let mut open = Vec::with_capacity(sessions);
    let mut held = Vec::new();
    for _ in 0..sessions {
        let s = Session::open(http, url).await?;
        if streams {
            held.push(s.open_stream().await?);
        }
        open.push(s);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (g0, u0, b0) = (
        cpu_time(pids.0).unwrap_or_default(),
        cpu_time(pids.1).unwrap_or_default(),
        cpu_time(std::process::id()).unwrap_or_default(),
    );
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (i, mut s) in open.into_iter().enumerate() {
        let (stop, count) = (stop.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            let mut k = i;
            while !stop.load(Ordering::Relaxed) {
                let tool = upstream::tool_name(1 + k % (upstream::TOOLS - 1));
                let a = s.call(&tool, "load", (k % 1000) as u64).await?;
                if is_error(&a) {
                    return Err(format!("denied under load: {a}"));
                }
                count.fetch_add(1, Ordering::Relaxed);
                k += 1;
            }
            Ok::<_, String>(s)
        }));
    }
    let mut peak = 0;
    while start.elapsed().as_secs_f64() < secs {
        if let Some((rss, _)) = rss_kib(pids.0) {
            peak = peak.max(rss);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut done = Vec::new();
    for t in tasks {
        done.push(t.await.map_err(|e| e.to_string())??);
    }
    let secs = start.elapsed().as_secs_f64();
    let calls = count.load(Ordering::Relaxed);
    let (g1, u1, b1) = (
        cpu_time(pids.0).unwrap_or_default(),
        cpu_time(pids.1).unwrap_or_default(),
        cpu_time(std::process::id()).unwrap_or_default(),
    );
    if let Some((rss, _)) = rss_kib(pids.0) {
        peak = peak.max(rss);
    }
    drop(held);
    for s in done {
        s.close().await;
    }
    Ok(Load {
        calls,
        secs,
        gateway_cpu: (g1 - g0).as_secs_f64(),
        upstream_cpu: (u1 - u0).as_secs_f64(),
        bench_cpu: (b1 - b0).as_secs_f64(),
        rss_peak_kib: peak,
    })
}

// ---------------------------------------------------------------------------------
// the run

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn wait_ready(http: &reqwest::Client, ops: &str, child: &mut Child) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = http.get(format!("{ops}/readyz")).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("the gateway exited: {st}"));
        }
        if Instant::now() > deadline {
            return Err("the gateway never became ready".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn gateway_metric(http: &reqwest::Client, ops: &str, name: &str) -> Option<f64> {
    let text = http
        .get(format!("{ops}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
}

fn main() {
    let args = parse_args();
    // Before pinning narrows what the process sees.
    let _ = CPUS.set(std::thread::available_parallelism().map_or(0, |n| n.get()));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    match rt.block_on(run(&args)) {
        Ok(()) => {}
        Err(e) => {
            log(format!("FAILED: {e}"));
            std::process::exit(1);
        }
    }
}

async fn run(a: &Args) -> Result<(), String> {
    let load_start = load1();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;

    // The upstream, in a child process next to this one.
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut up = Command::new(&me)
        .arg("--serve-upstream")
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start the upstream: {e}"))?;
    let mut line = String::new();
    std::io::BufReader::new(up.stdout.take().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let up = Killed(up);
    let port: u16 = line
        .strip_prefix("READY ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| format!("upstream said {line:?}"))?;
    let upstream_url = format!("http://127.0.0.1:{port}/mcp");
    let bundles = [bundle(&upstream_url, false), bundle(&upstream_url, true)];

    log("1/5 the decision in process");
    let iters = if a.quick { 2_000 } else { 200_000 };
    let dec = decision_in_process(&bundles[0], iters);

    // The gateway on its own core, its bundle on a kubelet-style volume.
    let vol_dir = work.path().join("bundle");
    std::fs::create_dir(&vol_dir).map_err(|e| e.to_string())?;
    let mut vol = Volume {
        dir: vol_dir.clone(),
        generation: 0,
    };
    vol.publish(&bundles[0]);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .map_err(|e| e.to_string())?;
    let gw = Gateway::start(a, &http, &vol_dir, work.path(), None).await?;
    let (gw_pid, up_pid) = (gw.child.0.id(), up.0.id());
    let (ops, via_url) = (gw.ops.clone(), gw.url.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_start = rss_kib(gw_pid).ok_or("no RSS for the gateway")?.0;

    log("2/5 tools/call and tools/list, direct and through the gateway");
    let mut direct = Session::open(&http, &upstream_url).await?;
    let mut via = Session::open(&http, &via_url).await?;
    // Warm up both paths (connections, the gateway's live view and validators).
    lists(&mut direct, &mut via, 5).await?;
    calls(&mut direct, &mut via, a.calls.min(200)).await?;
    let mut call_rounds = Vec::new();
    let mut list_rounds = Vec::new();
    let (run0, wait0) = sched(gw_pid);
    for _ in 0..a.rounds {
        call_rounds.push(calls(&mut direct, &mut via, a.calls).await?);
        list_rounds.push(lists(&mut direct, &mut via, a.lists).await?);
    }
    let (run1, wait1) = sched(gw_pid);
    let contention = (run1 - run0, wait1 - wait0);
    let decision_mean_us = match (
        gateway_metric(&http, &ops, "mcpgov_gateway_added_latency_seconds_sum").await,
        gateway_metric(&http, &ops, "mcpgov_gateway_added_latency_seconds_count").await,
    ) {
        (Some(s), Some(c)) if c > 0.0 => Some(s / c * 1e6),
        _ => None,
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = rss_kib(gw_pid).ok_or("no RSS for the gateway")?.0;

    log("3/5 ..data swaps");
    let swap_ms = swaps(&mut vol, &mut via, &bundles, a.swaps).await?;
    if a.swaps % 2 == 1 {
        // Leave every tool eligible for the load phases.
        vol.publish(&bundles[0]);
        swaps_settle(&mut via).await?;
    }

    log("4/5 throughput");
    // One gateway pinned to one core (its runtime then has one worker); the client and
    // the upstream pinned to another so that they do not take the gateway's core.
    let tp_gw = if a.pin {
        Some(Gateway::start(a, &http, &vol_dir, work.path(), Some(a.gateway_cpu)).await?)
    } else {
        None
    };
    let (tp_pid, tp_url) = match &tp_gw {
        Some(g) => (g.child.0.id(), g.url.clone()),
        None => (gw_pid, via_url.clone()),
    };
    let all_cpus = format!("0-{}", cpus().max(1) - 1);
    if a.pin {
        pin_all(std::process::id(), &a.client_cpu.to_string())?;
        pin_all(up_pid, &a.client_cpu.to_string())?;
    }
    let mut tput = Vec::new();
    let (run0, wait0) = sched(tp_pid);
    for _ in 0..a.rounds {
        tput.push(
            load(
                &http,
                &tp_url,
                a.concurrency,
                false,
                a.throughput_secs,
                (tp_pid, up_pid),
            )
            .await?,
        );
    }
    let (run1, wait1) = sched(tp_pid);
    let tp_contention = (run1 - run0, wait1 - wait0);
    let tput_direct = load(
        &http,
        &upstream_url,
        a.concurrency,
        false,
        a.throughput_secs,
        (up_pid, up_pid),
    )
    .await?;
    if a.pin {
        pin_all(std::process::id(), &all_cpus)?;
        pin_all(up_pid, &all_cpus)?;
    }
    drop(tp_gw);

    log(format!("5/5 {} sessions", a.sessions));
    let many = load(
        &http,
        &via_url,
        a.sessions,
        true,
        a.load_secs,
        (gw_pid, up_pid),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rss_after, hwm) = rss_kib(gw_pid).ok_or("no RSS for the gateway")?;
    direct.close().await;
    via.close().await;
    let load_end = load1();

    let audit_lines = std::fs::read_to_string(&gw.audit)
        .map(|s| s.lines().count())
        .unwrap_or(0);
    if audit_lines == 0 {
        return Err("the gateway recorded no decision".into());
    }

    let report = Report {
        a,
        load: (load_start, load_end),
        dec,
        decision_mean_us,
        call_rounds,
        list_rounds,
        swap_ms,
        tput,
        tput_direct,
        many,
        rss: (rss_start, rss_idle, rss_after, hwm),
        contention,
        tp_contention,
        audit_lines,
    };
    let j = report.json();
    let md = report.markdown();
    println!("{md}");
    if let Some(p) = &a.out_json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(&j).expect("serialises") + "\n",
        )
        .map_err(|e| e.to_string())?;
        log(format!("written: {}", p.display()));
    }
    if let Some(p) = &a.out_md {
        std::fs::write(p, md).map_err(|e| e.to_string())?;
        log(format!("written: {}", p.display()));
    }
    Ok(())
}

async fn swaps_settle(via: &mut Session) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_error(&via.call(&upstream::tool_name(FLIPPED), "x", 0).await?) {
        if Instant::now() > deadline {
            return Err("the last swap never took".into());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// the report

struct Report<'a> {
    a: &'a Args,
    load: (f64, f64),
    dec: DecisionFigures,
    decision_mean_us: Option<f64>,
    call_rounds: Vec<Paired>,
    list_rounds: Vec<Paired>,
    swap_ms: Vec<f64>,
    tput: Vec<Load>,
    tput_direct: Load,
    many: Load,
    /// KiB: after start, idle after traffic, after the session load, VmHWM.
    rss: (u64, u64, u64, u64),
    /// The gateway's time on a CPU and waiting for one, during phase 2 / throughput.
    contention: (Duration, Duration),
    tp_contention: (Duration, Duration),
    audit_lines: usize,
}

fn all(rounds: &[Paired]) -> Paired {
    Paired {
        direct: rounds.iter().flat_map(|r| r.direct.clone()).collect(),
        via: rounds.iter().flat_map(|r| r.via.clone()).collect(),
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "yes" } else { "**no**" }
}

impl Report<'_> {
    fn calls_per_s(l: &Load) -> f64 {
        l.calls as f64 / l.secs
    }

    fn json(&self) -> Value {
        let paired = |rounds: &[Paired]| {
            let per: Vec<Value> = rounds
                .iter()
                .map(|r| {
                    json!({
                        "direct_p50_us": pct(&r.direct, 50.0), "direct_p99_us": pct(&r.direct, 99.0),
                        "via_p50_us": pct(&r.via, 50.0), "via_p99_us": pct(&r.via, 99.0),
                        "added_p50_us": r.added(50.0), "added_p99_us": r.added(99.0),
                    })
                })
                .collect();
            let t = all(rounds);
            json!({
                "n_per_round": rounds.first().map(|r| r.via.len()),
                "added_p50_us": t.added(50.0), "added_p99_us": t.added(99.0),
                "direct_p50_us": pct(&t.direct, 50.0), "direct_p99_us": pct(&t.direct, 99.0),
                "via_p50_us": pct(&t.via, 50.0), "via_p99_us": pct(&t.via, 99.0),
                "rounds": per,
            })
        };
        let load = |l: &Load| {
            json!({
                "calls": l.calls, "seconds": l.secs, "calls_per_s": Self::calls_per_s(l),
                "gateway_cpu_s": l.gateway_cpu, "upstream_cpu_s": l.upstream_cpu,
                "bench_cpu_s": l.bench_cpu,
                "calls_per_gateway_cpu_s": l.calls as f64 / l.gateway_cpu.max(1e-9),
                "gateway_rss_peak_mib": mib(l.rss_peak_kib),
            })
        };
        json!({
            "command": self.a.command,
            "revision": self.a.revision,
            "time": Timestamp::now().round(jiff::Unit::Second).map(|t| t.to_string()).unwrap_or_default(),
            "quick": self.a.quick,
            "machine": {"cpus": cpus(),
                        "load1_start": self.load.0, "load1_end": self.load.1,
                        "pinned": self.a.pin.then(|| json!({"gateway_cpu": self.a.gateway_cpu, "client_and_upstream_cpu": self.a.client_cpu}))},
            "targets": {"call_added_p50_us": 300, "call_added_p99_us": 1000, "decision_us": 50,
                        "list_added_us": 5000, "swap_to_decision_ms": 100,
                        "rss_idle_mib": 20, "rss_sessions_mib": 64},
            "decision_in_process": {
                "iterations": self.dec.decision.len(),
                "p50_us": pct(&self.dec.decision, 50.0), "p99_us": pct(&self.dec.decision, 99.0),
                "with_parse_and_record_p50_us": pct(&self.dec.with_record, 50.0),
                "with_parse_and_record_p99_us": pct(&self.dec.with_record, 99.0),
                "list_filter_100_p50_us": pct(&self.dec.list, 50.0),
                "list_filter_100_p99_us": pct(&self.dec.list, 99.0),
                "list_digests_100_uncached_p50_us": pct(&self.dec.digests, 50.0),
                "gateway_metric_mean_us": self.decision_mean_us,
            },
            "tools_call": paired(&self.call_rounds),
            "tools_list_100": paired(&self.list_rounds),
            "swap_to_decision_ms": {"n": self.swap_ms.len(), "p50": median(&self.swap_ms),
                                    "max": pct(&self.swap_ms, 100.0), "all": self.swap_ms},
            "throughput": {"concurrency": self.a.concurrency,
                           "rounds": self.tput.iter().map(load).collect::<Vec<_>>(),
                           "direct_reference": load(&self.tput_direct)},
            "sessions_load": {"sessions": self.a.sessions, "with_get_streams": true, "load": load(&self.many)},
            "rss_mib": {"after_start": mib(self.rss.0), "idle_after_traffic": mib(self.rss.1),
                        "under_sessions_peak": mib(self.many.rss_peak_kib),
                        "after_sessions_closed": mib(self.rss.2), "vmhwm": mib(self.rss.3)},
            "audit_lines": self.audit_lines,
            "gateway_sched": {
                "phase2_cpu_s": self.contention.0.as_secs_f64(),
                "phase2_runqueue_wait_s": self.contention.1.as_secs_f64(),
                "throughput_cpu_s": self.tp_contention.0.as_secs_f64(),
                "throughput_runqueue_wait_s": self.tp_contention.1.as_secs_f64(),
            },
        })
    }

    fn markdown(&self) -> String {
        let c = all(&self.call_rounds);
        let l = all(&self.list_rounds);
        let d = &self.dec;
        let rounds_of = |rounds: &[Paired], p: f64| {
            rounds
                .iter()
                .map(|r| format!("{:.0}", r.added(p)))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let tput_best = self.tput.iter().map(Self::calls_per_s).fold(0.0, f64::max);
        let per_cpu: Vec<f64> = self
            .tput
            .iter()
            .map(|t| t.calls as f64 / t.gateway_cpu.max(1e-9))
            .collect();
        let tput_rounds = self
            .tput
            .iter()
            .map(|t| {
                format!(
                    "{:.0} calls/s (gateway CPU {:.0}%, upstream {:.0}%, client {:.0}%)",
                    Self::calls_per_s(t),
                    100.0 * t.gateway_cpu / t.secs,
                    100.0 * t.upstream_cpu / t.secs,
                    100.0 * t.bench_cpu / t.secs
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let idle = mib(self.rss.0.max(self.rss.1));
        let under = mib(self.many.rss_peak_kib);
        let swap_p50 = median(&self.swap_ms);
        let swap_max = pct(&self.swap_ms, 100.0);
        let pinned = if self.a.pin {
            format!(
                "nothing pinned except for the throughput rounds, which use a second gateway pinned to CPU {} (taskset: its runtime has one worker) with the client and the upstream pinned to CPU {}",
                self.a.gateway_cpu, self.a.client_cpu
            )
        } else {
            "nothing pinned".into()
        };
        let requests: usize = self
            .call_rounds
            .iter()
            .chain(&self.list_rounds)
            .map(|r| r.via.len())
            .sum();
        let waited = |c: &(Duration, Duration)| {
            format!(
                "{:.1} s on a CPU, {:.1} s runnable but waiting for one",
                c.0.as_secs_f64(),
                c.1.as_secs_f64()
            )
        };
        let quick = if self.a.quick {
            "\n**Quick smoke run: too few samples to quote.**\n"
        } else {
            ""
        };
        let mut rows = vec![
            format!(
                "| `tools/call` added latency, p50 | {:.0} µs (via {:.0} − direct {:.0}); rounds {} | ≤ 300 µs | {} |",
                c.added(50.0),
                pct(&c.via, 50.0),
                pct(&c.direct, 50.0),
                rounds_of(&self.call_rounds, 50.0),
                met(c.added(50.0) <= 300.0)
            ),
            format!(
                "| `tools/call` added latency, p99 | {:.0} µs (via {:.0} − direct {:.0}); rounds {} | ≤ 1,000 µs | {} |",
                c.added(99.0),
                pct(&c.via, 99.0),
                pct(&c.direct, 99.0),
                rounds_of(&self.call_rounds, 99.0),
                met(c.added(99.0) <= 1000.0)
            ),
            format!(
                "| the decision (policy + contract + arguments), in process | p50 {:.1} µs, p99 {:.1} µs ({} iterations) | ≤ 50 µs | {} |",
                pct(&d.decision, 50.0),
                pct(&d.decision, 99.0),
                d.decision.len(),
                met(pct(&d.decision, 99.0) <= 50.0)
            ),
            format!(
                "| … with request parse, decision record and re-serialisation | p50 {:.1} µs, p99 {:.1} µs | — | |",
                pct(&d.with_record, 50.0),
                pct(&d.with_record, 99.0)
            ),
            format!(
                "| filtering a 100-tool `tools/list` answer, in process (parse, digest and decide each tool, write out) | p50 {:.0} µs, p99 {:.0} µs ({} lists); the 100 contract digests computed afresh (a first list) p50 {:.0} µs | — | |",
                pct(&d.list, 50.0),
                pct(&d.list, 99.0),
                d.list.len(),
                pct(&d.digests, 50.0)
            ),
        ];
        if let Some(m) = self.decision_mean_us {
            rows.push(format!(
                "| … in the gateway, request to forward (`mcpgov_gateway_added_latency_seconds`, mean over every request of phase 2) | {m:.1} µs | — | |"
            ));
        }
        rows.extend([
            format!(
                "| `tools/list` of 100 tools, added | p50 {:.0} µs, p99 {:.0} µs (via {:.0} − direct {:.0} at p50); rounds p50 {} | ≤ 5,000 µs | {} |",
                l.added(50.0), l.added(99.0), pct(&l.via, 50.0), pct(&l.direct, 50.0),
                rounds_of(&self.list_rounds, 50.0), met(l.added(99.0) <= 5000.0)
            ),
            format!(
                "| `..data` swap → new decision | p50 {swap_p50:.1} ms, max {swap_max:.1} ms ({} swaps) | ≤ 100 ms | {} |",
                self.swap_ms.len(), met(swap_max <= 100.0)
            ),
            format!(
                "| RSS idle | {:.1} MiB after start, {:.1} MiB idle after traffic | ≤ 20 MiB | {} |",
                mib(self.rss.0), mib(self.rss.1), met(idle <= 20.0)
            ),
            format!(
                "| RSS under {} sessions (each with its GET stream open, calls in flight) | peak {under:.1} MiB; {:.1} MiB 1 s after they closed; VmHWM {:.1} MiB | ≤ 64 MiB | {} |",
                self.a.sessions, mib(self.rss.2), mib(self.rss.3), met(under <= 64.0)
            ),
            format!(
                "| throughput through one gateway on one core, {} sessions | best {tput_best:.0} calls/s; {:.0} calls per gateway CPU-second (median of rounds) | report | |",
                self.a.concurrency, median(&per_cpu)
            ),
        ]);
        let date = Timestamp::now().strftime("%Y-%m-%d %H:%M UTC").to_string();
        format!(
            "# Gateway figures\n{quick}\nRun {date}{rev}: `{cmd}`. {cpus} cores shared with other work, load average {l0:.2} at the start and {l1:.2} at the end; {pinned}. Upstream: the bench's own streamable-HTTP MCP server with 100 tools (answers as one server-sent event, like the SDKs), on loopback. The gateway is the release binary with its defaults (enforce mode, decision records on stdout into a file: {audit} lines written).\n\n\
             | measure | figure | target | met |\n|---|---|---|---|\n{rows}\n\n\
             - Direct and via calls alternate call by call (the order flips each pair), {calls} pairs per round, {rounds} rounds; lists likewise, {lists} pairs per round. Added = percentile via − percentile direct (the same client code on both paths).\n\
             - Throughput rounds: {tput_rounds}. Direct to the upstream with the same client: {direct:.0} calls/s.\n\
             - Under {sessions} sessions: {many:.0} calls/s (gateway CPU {many_cpu:.0}%).\n\
             - Swaps: {swaps}.\n\
             - Contention (the gateway's threads, `/proc/<pid>/task/*/schedstat`): during the call and list rounds {phase2} ({per_req:.0} µs of waiting per request through it); during the throughput rounds {tp}.\n",
            rev = if self.a.revision.is_empty() {
                String::new()
            } else {
                format!(" at `{}`", self.a.revision)
            },
            cmd = if self.a.command.is_empty() {
                "gateway-bench"
            } else {
                &self.a.command
            },
            cpus = cpus(),
            l0 = self.load.0,
            l1 = self.load.1,
            audit = self.audit_lines,
            rows = rows.join("\n"),
            calls = self.a.calls,
            rounds = self.a.rounds,
            lists = self.a.lists,
            direct = Self::calls_per_s(&self.tput_direct),
            sessions = self.a.sessions,
            many = Self::calls_per_s(&self.many),
            many_cpu = 100.0 * self.many.gateway_cpu / self.many.secs,
            phase2 = waited(&self.contention),
            per_req = self.contention.1.as_secs_f64() * 1e6 / requests.max(1) as f64,
            tp = waited(&self.tp_contention),
            swaps = self
                .swap_ms
                .iter()
                .map(|m| format!("{m:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
                + " ms",
        )
    }
}
