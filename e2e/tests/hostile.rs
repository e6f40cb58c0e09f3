//! Hostile MCP servers (issue 10), with the operator on the real API server: a huge
//! `tools/list` page is refused while it is read, with the operator's memory bounded by
//! its caps (and given back); what a server says reaches status bounded and escaped; a
//! malformed answer is reported for what it is.

use kube::Api;
use mcpgov::crawler::{crawl_memory_bound, untrusted};
use mcpgov::crd::MCPServer;
use mcpgov_e2e::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const MIB: u64 = 1024 * 1024;

fn crawled(s: &MCPServer) -> Option<(String, String, String)> {
    let c = s
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Crawled")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Wait until `name` is `Crawled=False` with `reason`; its condition message.
async fn failed_with(servers: &Api<MCPServer>, name: &str, reason: &str) -> String {
    let s = wait_for(
        servers,
        name,
        &format!("{name}: Crawled=False {reason}"),
        |s| crawled(s).is_some_and(|c| c.0 == "False" && c.1 == reason),
    )
    .await;
    crawled(&s).unwrap().2
}

fn server(name: &str, url: &str, crawl: &str) -> String {
    format!(
        r#"---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: {name}}}
spec:
  endpoint: {{url: "{url}", timeoutSeconds: 30}}
  crawl: {{{crawl}}}
"#
    )
}

/// VmRSS sampled every 10 ms while the crawls run: the highest seen.
struct Sampler {
    peak_kib: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let peak_kib = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak_kib.clone(), stop.clone());
        tokio::spawn(async move {
            while !s.load(Ordering::SeqCst) {
                if let Some(m) = proc_memory(pid) {
                    p.fetch_max(m.rss_kib, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Sampler { peak_kib, stop }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.peak_kib.load(Ordering::SeqCst)
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Regression (issue 10, §2): one 15 MB `tools/list` page of 400,000 minimal tools took
/// the operator from 65 MB to 751 MB (it kept 687 MB), and three such servers at the
/// schema's maximum caps to 3 GB: `maxTools` was checked only once the page had been
/// parsed. Four hostile crawls run at once here — the reviewed page at the default caps,
/// and three at the schema's maxima (a 7.4 MB page of 200,000 tools as a JSON body and
/// as one SSE event, and the 15 MB page as one SSE event) — and the operator's peak
/// stays within what `crawl_memory_bound` allows for them, each crawl failing with the
/// cap it reached. Then the servers go, and the memory is given back.
#[tokio::test(flavor = "multi_thread")]
async fn a_huge_tool_list_is_refused_while_it_is_read_within_bounded_memory() {
    let client = client().await;
    let ns = namespace(&client, "hostile-memory").await;
    let huge = ["--hostile", "huge-list", "--no-sse", "--json-response"];
    let big = ["--hostile-tools", "200000"];
    let review = McpServer::start("testserver", &huge);
    let max_json = McpServer::start("testserver", &[&huge[..], &big[..]].concat());
    let max_sse = McpServer::start(
        "testserver",
        &[&huge[..], &big[..], &["--hostile-sse"]].concat(),
    );
    let huge_sse = McpServer::start("testserver", &[&huge[..], &["--hostile-sse"]].concat());
    let op = Operator::start_crawling(&ns, 300).await;
    let pid = op.pid();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = proc_memory(pid).expect("the operator's /proc status");
    let sampler = Sampler::start(pid);

    let (max_bytes, max_tools) = (8 * MIB as usize, 20_000);
    let maxima = format!("maxBytes: {max_bytes}, maxTools: {max_tools}");
    let yaml = [
        server("review", &review.url, "intervalSeconds: 300"),
        server("max-json", &max_json.url, &maxima),
        server("max-sse", &max_sse.url, &maxima),
        server("huge-sse", &huge_sse.url, &maxima),
    ]
    .concat();
    apply(&client, &ns, &yaml).await.unwrap();
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    let mut messages = Vec::new();
    for name in ["review", "max-json", "max-sse", "huge-sse"] {
        messages.push((name, failed_with(&servers, name, "OverCap").await));
    }
    // Let the retries (after 2 s of backoff) run once more under the sampler.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let during = proc_memory(pid).unwrap();
    let sampled_peak = sampler.finish();

    // The servers go away: nothing is crawled any more, and memory is given back.
    for name in ["review", "max-json", "max-sse", "huge-sse"] {
        delete(&client, &ns, ("mcpgov.io/v1alpha1", "MCPServer"), name).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = proc_memory(pid).unwrap();

    let bound =
        crawl_memory_bound(4 * MIB as usize, 10_000) + 3 * crawl_memory_bound(max_bytes, max_tools);
    // Besides the crawls the operator writes status and logs failures meanwhile.
    let slack = 16 * MIB as usize;
    let growth_kib = during.hwm_kib.saturating_sub(before.rss_kib);
    println!(
        "operator RSS: before {:.1} MiB; during: peak VmHWM {:.1} MiB (sampled VmRSS peak \
         {:.1} MiB), growth {:.1} MiB, bound {:.1} MiB (4 crawls) + {:.1} MiB slack; \
         after (idle, 5 s after the servers were deleted) VmRSS {:.1} MiB",
        mib(before.rss_kib),
        mib(during.hwm_kib),
        mib(sampled_peak),
        mib(growth_kib),
        bound as f64 / MIB as f64,
        slack as f64 / MIB as f64,
        mib(after.rss_kib),
    );
    for (name, msg) in &messages {
        println!("{name}: {msg}");
    }
    let expected = [
        ("review", "maxBytes (4194304 bytes)"),
        ("max-json", "maxTools (20000)"),
        ("max-sse", "maxTools (20000)"),
        ("huge-sse", "maxBytes (8388608 bytes)"),
    ];
    for ((name, msg), (_, cap)) in messages.iter().zip(expected) {
        assert!(msg.contains(cap), "{name}: {msg}");
    }
    assert!(
        growth_kib * 1024 <= (bound + slack) as u64,
        "the crawls took {:.1} MiB, over their bound of {:.1} MiB",
        mib(growth_kib),
        (bound + slack) as f64 / MIB as f64
    );
    // Given back: the idle operator ends near where it started, far below the peak.
    assert!(
        after.rss_kib <= before.rss_kib + 32 * 1024,
        "{:.1} MiB kept after the crawls",
        mib(after.rss_kib.saturating_sub(before.rss_kib))
    );
    op.stop();
}

/// Regression (issue 10, §7 and §8): a 2 MB JSON-RPC error message full of escape bytes
/// was copied into `lastError` and the condition message, so the status write was
/// refused (413) and `Crawled=False` never appeared; each failure logged 2 MB. Now the
/// condition appears, with a bounded, escaped message (reason `RpcError`), and the log
/// carries neither escapes nor the 2 MB. A catalog whose titles and descriptions carry
/// escapes (and a `serverInfo.name` with them) reaches status escaped and bounded, and
/// deeply nested JSON is a `ProtocolError`, not "cannot reach the server".
#[tokio::test(flavor = "multi_thread")]
async fn what_hostile_servers_say_reaches_status_bounded_and_escaped() {
    let client = client().await;
    let ns = namespace(&client, "hostile-text").await;
    let evil_name = "evil\u{1b}[31m\u{7}\rname";
    let error = McpServer::start("testserver", &["--hostile", "huge-error", "--no-sse"]);
    let escapes = McpServer::start(
        "testserver",
        &["--hostile", "escapes", "--no-sse", "--name", evil_name],
    );
    let deep = McpServer::start("testserver", &["--hostile", "deep-json", "--no-sse"]);
    let op = Operator::start_crawling(&ns, 300).await;
    let yaml = [
        server("error", &error.url, "intervalSeconds: 300"),
        server("escapes", &escapes.url, "intervalSeconds: 300"),
        server("deep", &deep.url, "intervalSeconds: 300"),
    ]
    .concat();
    apply(&client, &ns, &yaml).await.unwrap();
    let servers: Api<MCPServer> = Api::namespaced(client.clone(), &ns);
    let shown = |s: &str, max: usize| {
        assert!(s.len() <= max, "{} bytes: {s}", s.len());
        assert!(
            !s.chars().any(|c| c.is_control() || untrusted::is_unsafe(c)),
            "{s:?}"
        );
    };

    let msg = failed_with(&servers, "error", "RpcError").await;
    let error_message_len = msg.len();
    shown(&msg, 2048);
    assert!(msg.contains("error -32603: \\u{1b}[31mRED"), "{msg}");
    let st = servers.get("error").await.unwrap().status.unwrap();
    shown(st.last_error.as_deref().unwrap(), 2048);

    let s = wait_condition(&servers, "escapes", "Crawled", "True").await;
    let st = s.status.unwrap();
    let info = st.server_info.unwrap();
    shown(&info.name, 256);
    assert!(info.name.starts_with("evil\\u{1b}[31m"), "{}", info.name);
    // 60 tools with 4 KiB descriptions: over the full-entry budget, names and digests.
    assert_eq!(st.truncated, Some(true));
    assert_eq!(st.tool_count, Some(60));
    assert!(st.tools.iter().all(|t| t.description.is_none()));
    let whole = serde_json::to_string(&st.tools).unwrap();
    assert!(!whole.contains('\u{1b}'));

    let msg = failed_with(&servers, "deep", "ProtocolError").await;
    assert!(msg.contains("nested deeper than 64 levels"), "{msg}");

    // The operator's log: no escape byte, no line anywhere near the 2 MB message.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let log = std::fs::read(log_path(&ns)).unwrap();
    assert!(!log.contains(&0x1b), "an escape byte reached the log");
    let longest = log
        .split(|&b| b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 8 * 1024, "a log line of {longest} bytes");
    println!(
        "the 2 MB error's condition message: {error_message_len} bytes; longest log line: \
         {longest} bytes"
    );
    op.stop();
}
