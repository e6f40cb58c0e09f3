//! Fuzzing the path `mcpgov check` takes (issue 10). Each input is written to a file
//! and read by `InputArgs::load`, evaluated by `check::findings` and, when it passes,
//! printed by `check::table` and as PolicyReports, exactly as the binary does. No input
//! may panic or overflow the stack: each ends in findings or a clean input error, and
//! nothing printed carries a raw control character. Bounded so `cargo test` runs it in
//! seconds; `MCPGOV_FUZZ_CASES` scales every run (e.g. 50 for a long local soak). Each run
//! prints how many inputs it fed (`cargo test -p mcpgov --lib cli::fuzz -- --nocapture`).

use super::Failure;
use super::check;
use super::input::{InputArgs, ReadArgs};
use crate::manifest::{DEFAULT_MAX_FILE_BYTES, KINDS};
use mcpgov_engine::Summary;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The file one fuzz run rewrites for each input (removed at its end).
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcpgov-fuzz-{}-{name}.yaml", std::process::id()))
}

/// Characters that must never reach a terminal raw (line breaks aside, which the
/// multi-line messages use themselves).
fn raw_control(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| c != '\n' && crate::text::escape(&c.to_string()).len() > c.len_utf8())
}

/// One input through `check`; panics (a proptest failure) on anything but a clean end.
/// True when it was evaluated (not refused as input).
fn check_file(path: &Path) -> bool {
    let args = InputArgs {
        paths: vec![path.to_path_buf()],
        catalog: Vec::new(),
        namespace: Some("default".into()),
        governance_namespace: "mcpgov-system".into(),
        now: Some("2026-11-29T00:00:00Z".into()),
        read: ReadArgs {
            max_file_size: DEFAULT_MAX_FILE_BYTES,
        },
        live: Default::default(),
    };
    let outcome = args.load().and_then(|input| check::findings(&input));
    match outcome {
        Ok(findings) => {
            let table = check::table(&findings, &Summary::of(&findings));
            assert_eq!(
                raw_control(&table),
                None,
                "raw control in the table:\n{table}"
            );
            policy_reports(&findings);
            true
        }
        Err(Failure::Input(msg)) => {
            assert!(!msg.is_empty());
            assert_eq!(raw_control(&msg), None, "raw control in: {msg}");
            false
        }
        Err(Failure::Gate(msg)) => panic!("check loads no gate: {msg}"),
    }
}

/// `-o policyreport`'s reports of the findings: every finding in one, within the
/// bounds, and YAML that reads back as written with no raw control character (a tab
/// may stand in a block scalar).
fn policy_reports(findings: &[mcpgov_engine::Finding]) {
    let options = crate::reports::Options::new(crate::reports::Api::PolicyReport);
    let built = crate::reports::build(findings, &options);
    assert_eq!(built.unplaced, 0);
    let total: usize = built.reports.iter().map(|r| r.summary.total()).sum();
    assert_eq!(total, findings.len());
    for r in &built.reports {
        assert!(r.results.len() <= options.bounds.max_results);
    }
    let list = crate::reports::List::of(built.reports);
    let yaml = serde_saphyr::to_string(&list).expect("reports serialise");
    assert_eq!(
        yaml.chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t'),
        None,
        "raw control in the reports:\n{yaml}"
    );
    let back: crate::reports::List = serde_saphyr::from_str(&yaml).expect("reports read back");
    assert_eq!(back, list);
}

/// Run `cases` inputs of `strategy` through `check`; returns how many ran.
fn fuzz<S>(name: &str, cases: u32, strategy: S) -> u32
where
    S: Strategy,
    S::Value: AsRef<[u8]>,
{
    let scale: u32 = std::env::var("MCPGOV_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let cases = cases.saturating_mul(scale.max(1));
    let file = scratch(name);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let ran = std::cell::Cell::new(0u32);
    let evaluated = std::cell::Cell::new(0u32);
    let result = runner.run(&strategy, |input| {
        ran.set(ran.get() + 1);
        std::fs::write(&file, input.as_ref()).unwrap();
        if check_file(&file) {
            evaluated.set(evaluated.get() + 1);
        }
        Ok(())
    });
    let _ = std::fs::remove_file(&file);
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
    let ran = ran.get();
    eprintln!(
        "fuzz {name}: {ran} inputs through check in {} ms ({} evaluated, the rest refused as input)",
        started.elapsed().as_millis(),
        evaluated.get()
    );
    ran
}

/// Any text, control characters and all.
fn any_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(|v| v.into_iter().collect())
}

/// A value from `good`; when `hostile`, also from `bad` or anything at all.
fn pick(
    hostile: bool,
    good: &'static [&'static str],
    bad: &'static [&'static str],
) -> BoxedStrategy<String> {
    let good = prop::sample::select(good).prop_map(String::from);
    if !hostile {
        return good.boxed();
    }
    prop_oneof![
        3 => good,
        1 => prop::sample::select(bad).prop_map(String::from),
        1 => any_text(24),
    ]
    .boxed()
}

/// Text without whitespace or controls, any script: what a URI pattern admits.
fn uri_text() -> impl Strategy<Value = String> {
    "[^\\s\\p{Cc}]{0,12}"
}

fn name(h: bool) -> BoxedStrategy<String> {
    pick(
        h,
        &["srv", "fs", "git", "bot", "ci-bot", "p", "g", "a.b"],
        &["a..b", "Bot", "*", "x-", ""],
    )
}

fn namespace(h: bool) -> BoxedStrategy<Option<String>> {
    prop::option::weighted(
        0.8,
        pick(
            h,
            &["team-a", "team-b", "mcpgov-system", "ci"],
            &["Team A/../x", "a.b", ""],
        ),
    )
    .boxed()
}

fn tool(h: bool) -> BoxedStrategy<String> {
    let literal = pick(
        h,
        &[
            "srv::read",
            "srv::*",
            "*::*",
            "fs::write_file",
            "team-b/srv::x",
            "read",
            "a*b",
            "git::git_show",
            "*",
            "srv::é",
            "git::*show",
            "team-a/*::*",
            "x::y*z*",
        ],
        &["**::**", "srv::", "::x", "a b"],
    );
    prop_oneof![3 => literal, 1 => uri_text().prop_map(|t| format!("srv::{t}x"))].boxed()
}

fn uri(h: bool) -> BoxedStrategy<String> {
    prop_oneof![
        3 => pick(
            h,
            &[
                "file:///srv/**", "file:///**/.env", "https://*/**", "postgres://db/customers/*",
                "file://host/a/../b", "git://srv/app/history", "mailto:x", "file:", "file:///srv/app/**/.env",
                "file:///%2e%2e/x", "HTTPS://Host:8080/a?q#f", "urn:é:*",
            ],
            &["file:///***", "no-scheme", "file:///a b"],
        ),
        1 => uri_text().prop_map(|t| format!("file:///{t}")),
    ]
    .boxed()
}

fn provenance(h: bool) -> BoxedStrategy<Value> {
    (
        pick(
            h,
            &["Crawled", "OperatorAsserted", "Inferred"],
            &["crawled"],
        ),
        pick(h, &["High", "Medium", "Low"], &["Certain"]),
        prop::option::of(any_text(40)),
    )
        .prop_map(|(s, c, e)| json!({"source": s, "confidence": c, "evidence": e}))
        .prop_map(drop_nulls)
        .boxed()
}

/// Absent rather than null, as an author writes it.
fn drop_nulls(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.retain(|_, x| !x.is_null());
    }
    v
}

/// Any JSON value: deep, wide, odd numbers, any text.
fn any_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any_text(12).prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any_text(8), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A spec of `kind`: valid unless `h`, so the engine gets to evaluate it; free text
/// (descriptions, evidence, reasons) is any text either way.
fn spec(kind: &'static str, h: bool) -> BoxedStrategy<Value> {
    match kind {
        "MCPServer" => (
            pick(h, &["http://srv.ci.svc:8080/mcp", "https://x/mcp"], &["ftp://x"]),
            prop::collection::vec((tool(h), uri(h), pick(h, &["Reads", "Writes"], &["Both"]), provenance(h)), 0..4),
            prop::option::of(prop::collection::vec(pick(h, &["team-a", "team-b", "ci", "*"], &["A"]), 0..3)),
        )
            .prop_map(|(url, access, sharing)| {
                let access: Vec<Value> = access
                    .into_iter()
                    .map(|(t, r, m, p)| json!({"tool": t, "resource": r, "mode": m, "provenance": p}))
                    .collect();
                let mut s = json!({"endpoint": {"url": url}, "dataAccess": access});
                if let Some(ns) = sharing {
                    s["sharing"] = json!({"namespaces": ns});
                }
                s
            })
            .boxed(),
        "Policy" => (
            pick(h, &["Deny", "Allow"], &["Block"]),
            prop::collection::vec((uri(h), provenance(h)), 0..3),
            prop::collection::vec((tool(h), provenance(h)), 0..3),
            prop::option::of(prop::collection::vec(pick(h, &["ci", "team-a", "*"], &["A B"]), 0..3)),
            prop::option::of(any_text(30)),
        )
            .prop_map(|(effect, mut resources, tools, allowed, description)| {
                if resources.is_empty() && tools.is_empty() {
                    resources.push(("file:///**".into(), json!({})));
                }
                let resources: Vec<Value> =
                    resources.into_iter().map(|(u, p)| json!({"uri": u, "provenance": p})).collect();
                let tools: Vec<Value> =
                    tools.into_iter().map(|(t, p)| json!({"tool": t, "provenance": p})).collect();
                let mut s = json!({"effect": effect, "description": description,
                    "governs": {"resources": resources, "tools": tools}});
                if let Some(a) = allowed {
                    s["exceptions"] = json!({"allowedNamespaces": a});
                }
                drop_nulls(s)
            })
            .boxed(),
        "Agent" => (pick(h, &["Strict", "Review", "Explore"], &["strict"]), prop::option::of(any_text(30)))
            .prop_map(|(p, d)| drop_nulls(json!({"profile": p, "description": d})))
            .boxed(),
        _ => (
            name(h),
            prop::collection::vec(tool(h), 1..4),
            prop::collection::vec(
                (
                    name(h),
                    prop::option::of(tool(h)),
                    prop::option::of(uri(h)),
                    any_text(20).prop_map(|r| format!("r{r}")),
                    prop::option::of(pick(h, &["2027-01-01T00:00:00Z", "2020-01-01T00:00:00Z"], &["soon"])),
                ),
                0..3,
            ),
        )
            .prop_map(|(agent, tools, exceptions)| {
                let exceptions: Vec<Value> = exceptions
                    .into_iter()
                    .map(|(policy, tool, resource, reason, expires)| {
                        drop_nulls(json!({"policy": policy, "tool": tool, "resource": resource,
                               "reason": reason, "expires": expires}))
                    })
                    .collect();
                json!({"agent": agent, "tools": tools, "expectedExceptions": exceptions})
            })
            .boxed(),
    }
}

/// A crawled catalog for an MCPServer's status.
fn status() -> BoxedStrategy<Value> {
    prop::collection::vec(
        (
            prop_oneof![
                prop::sample::select(&["read", "write_file", "git_show", "x", "é"][..]).prop_map(String::from),
                any_text(12),
            ],
            prop::option::of(any_text(30)),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
        ),
        0..5,
    )
    .prop_map(|tools| {
        let tools: Vec<Value> = tools
            .into_iter()
            .map(|(n, d, ro, de)| {
                drop_nulls(json!({"name": n, "description": d,
                       "annotations": drop_nulls(json!({"readOnlyHint": ro, "destructiveHint": de}))}))
            })
            .collect();
        json!({"lastSuccessfulCrawlTime": "2026-11-01T00:00:00Z", "tools": tools})
    })
    .boxed()
}

/// One document of our kinds: valid unless `h`; when `h`, sometimes with the wrong
/// apiVersion or kind, wrapped in a List, or with any value as its spec.
fn document(h: bool) -> BoxedStrategy<Value> {
    let kind = prop::sample::select(&KINDS[..]);
    let api = pick(
        h,
        &["mcpgov.io/v1alpha1"],
        &[
            "MCPGOV.io/v1alpha1",
            "mcpgov.io/v9",
            "v1",
            "apps/v1",
            "mcpgov.io",
        ],
    );
    (kind, api, name(h), namespace(h), any::<u8>())
        .prop_flat_map(move |(kind, api, name, ns, twist)| {
            let body = if h && twist < 24 {
                any_value()
            } else {
                spec(kind, h)
            };
            (
                body,
                prop::option::weighted(0.3, status()),
                Just((kind, api, name, ns, twist)),
            )
        })
        .prop_map(move |(spec, status, (kind, api, name, ns, twist))| {
            let mut meta = json!({"name": name});
            if let Some(ns) = ns {
                meta["namespace"] = json!(ns);
            }
            let mut doc = json!({"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec});
            if kind == "MCPServer"
                && let Some(s) = status
            {
                doc["status"] = s;
            }
            match twist {
                0..=3 if h => {
                    if let Some(m) = doc.as_object_mut() {
                        m.remove("apiVersion");
                    }
                }
                4..=7 if h => doc["kind"] = json!("Widget"),
                8..=15 => doc = json!({"apiVersion": "v1", "kind": "List", "items": [doc]}),
                _ => {}
            }
            doc
        })
        .boxed()
}

/// A stream of documents as JSON or YAML, as a file in a pull request would hold it:
/// two in three valid (the engine evaluates them), one in three hostile.
fn stream() -> impl Strategy<Value = String> {
    let docs = prop_oneof![
        2 => prop::collection::vec(document(false), 1..8),
        1 => prop::collection::vec(document(true), 1..6),
    ];
    (docs, any::<bool>()).prop_map(|(docs, as_json)| {
        docs.iter()
            .map(|d| {
                if as_json {
                    serde_json::to_string(d).unwrap()
                } else {
                    serde_saphyr::to_string(d).unwrap()
                }
            })
            .collect::<Vec<_>>()
            .join("\n---\n")
    })
}

/// YAML-ish text: fragments of our documents, YAML syntax and hostile bytes.
fn yamlish() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&str] = &[
        "apiVersion: mcpgov.io/v1alpha1\n",
        "kind: Agent\n",
        "kind: List\nitems:\n",
        "metadata: {name: a, namespace: t}\n",
        "spec:\n",
        "  profile: Strict\n",
        "---\n",
        "{",
        "}",
        "[",
        "]",
        ": ",
        "- ",
        "\n  ",
        "&a ",
        "*a",
        "!!binary ",
        "!!str ",
        "\"",
        "'",
        "é",
        "日本",
        "🦀",
        "\u{1b}[31m",
        "\u{202e}",
        "1e999",
        "-0",
        "0x1F",
        "18446744073709551616",
        "null",
        "~",
        "<<: *a\n",
        "? ",
        "|\n",
        ">-\n",
        "\t",
        "# c\n",
        "%YAML 1.2\n",
        "\0",
        "\r\n",
        "\u{feff}",
        "{\"kind\":\"Agent\",\"kind\":\"Grant\"}",
        ",",
        "\\",
        "...\n",
    ];
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(TOKENS).prop_map(|t| t.as_bytes().to_vec()),
            1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
            1 => prop::collection::vec(any::<u8>(), 0..4),
        ],
        0..80,
    )
    .prop_map(|parts| parts.concat())
}

#[test]
fn fuzz_check_over_arbitrary_bytes() {
    fuzz("bytes", 1500, prop::collection::vec(any::<u8>(), 0..600));
}

#[test]
fn fuzz_check_over_yamlish_text() {
    fuzz("yamlish", 2000, yamlish());
}

#[test]
fn fuzz_check_over_documents_of_our_kinds() {
    fuzz("documents", 1200, stream());
}

/// Nesting far past the parsers' limits, in every style: an error, never a stack
/// overflow (which no test harness could catch: the process would abort).
#[test]
fn deep_nesting_and_huge_numbers_end_cleanly() {
    let started = Instant::now();
    let mut inputs = Vec::new();
    for depth in [16, 63, 64, 65, 127, 128, 129, 1_000, 100_000] {
        let wrap = |open: &str, close: &str, inner: &str| {
            format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
        };
        let head = r#"{"apiVersion":"mcpgov.io/v1alpha1","kind":"MCPServer","metadata":{"name":"s"},"spec":{"endpoint":{"url":"http://s/mcp"}},"status":{"tools":[{"name":"t","inputSchema":"#;
        inputs.push(wrap("[", "]", "1"));
        inputs.push(wrap("{\"a\":", "}", "1"));
        inputs.push(format!("{head}{}}}]}}}}", wrap("{\"a\":", "}", "1")));
        inputs.push(format!("spec: {}", wrap("[", "]", "")));
        inputs.push(format!("spec: {}", wrap("{a: ", "}", "1")));
        let block: String = (0..depth.min(5_000))
            .map(|i| format!("{}- \n", "  ".repeat(i)))
            .collect();
        inputs.push(block);
        let maps: String = (0..depth.min(5_000))
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect();
        inputs.push(maps);
        inputs.push(format!("{}x", "- ".repeat(depth)));
    }
    for n in [
        "1e400",
        "-1e400",
        "1e-400",
        "18446744073709551616",
        "-9223372036854775809",
        ".nan",
        "-.inf",
    ] {
        inputs.push(format!(
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: s}}\nspec: {{endpoint: {{url: 'http://s/mcp', timeoutSeconds: {n}}}, crawl: {{maxBytes: {n}}}}}\n"
        ));
        inputs.push(format!(
            r#"{{"apiVersion":"mcpgov.io/v1alpha1","kind":"MCPServer","metadata":{{"name":"s"}},"spec":{{"endpoint":{{"url":"http://s/mcp","timeoutSeconds":{n}}}}}}}"#
        ));
    }
    inputs.push(format!("x: {}", "9".repeat(100_000)));
    let file = scratch("deep");
    for input in &inputs {
        std::fs::write(&file, input).unwrap();
        let _ = check_file(&file);
    }
    let _ = std::fs::remove_file(&file);
    eprintln!(
        "fuzz deep: {} inputs through check in {} ms",
        inputs.len(),
        started.elapsed().as_millis()
    );
}
