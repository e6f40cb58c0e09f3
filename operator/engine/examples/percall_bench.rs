//! Per-call enforcement figures (issue 13, "Performance"; bench/GATEWAY-RESULTS.md and
//! docs/performance.md): the per-call decision with argument resolution against a guard
//! holding 100 governed patterns (p50/p99 over a mix of passing and blocked calls), and
//! the bundle size for an agent with 200 argument-bound tools.
//!
//! `cargo run --release -p mcpgov-engine --example percall_bench` (the figures in the
//! docs come from a release build; `-- --quick` for a smoke run; `-- --append-md FILE`
//! replaces the "Per-call enforcement" section at the end of FILE with this run's, as
//! bench/gateway-bench.sh does for bench/GATEWAY-RESULTS.md).

use mcpgov_core::bundle::{BundleGuard, GuardArgument, GuardExcept, GuardGoverned, parse};
use mcpgov_core::percall::CompiledGuard;
use mcpgov_engine::*;
use serde_json::json;
use std::time::Instant;

fn prov(e: &str) -> Provenance {
    Provenance {
        source: Source::OperatorAsserted,
        confidence: Confidence::High,
        evidence: Some(e.to_string()),
    }
}

/// A guard with 100 governed patterns (a few shapes: a file name anywhere, a subtree,
/// a per-team secret), some with an exception beside them.
fn guard_100() -> BundleGuard {
    let governed = (0..100)
        .map(|i| GuardGoverned {
            except: if i % 10 == 0 {
                vec![GuardExcept {
                    expires: None,
                    grant: "team/g".into(),
                    pattern: Some(format!("file:///srv/team-{i}/fixtures/**")),
                }]
            } else {
                vec![]
            },
            pattern: match i % 3 {
                0 => format!("file:///**/secret-{i}.env"),
                1 => format!("file:///srv/team-{i}/private/**"),
                _ => format!("file:///srv/*/keys-{i}/*.pem"),
            },
            policy: format!("gov/p-{i:03}"),
        })
        .collect();
    BundleGuard {
        arguments: vec![GuardArgument {
            declared: vec!["file:///srv/**".into()],
            pointer: "/path".into(),
            template: "file://{path}".into(),
        }],
        governed,
    }
}

/// One agent granted 200 tools, each with an argument-bound dataAccess, and `policies`
/// (1 to 3) PerCall Deny Policies that every one of them reaches.
fn estate(policies: usize) -> Vec<Object> {
    let tools: Vec<CatalogTool> = (0..200)
        .map(|i| CatalogTool {
            name: format!("read_{i:03}"),
            contract_digest: Some(format!("sha256:{:064x}", i)),
            ..Default::default()
        })
        .collect();
    let data_access = (0..200)
        .map(|i| DataAccess {
            tool: format!("read_{i:03}"),
            resource: format!("file:///srv/area-{i:03}/**"),
            mode: Mode::Reads,
            provenance: prov("src.rs::read"),
            argument: Some(ArgumentRef {
                pointer: "/path".into(),
                template: "file://{path}".into(),
            }),
        })
        .collect();
    let mut out = vec![
        Object::Server(Server {
            key: ObjKey::new("team", "files"),
            endpoint: Endpoint {
                url: "http://files.team:8080/mcp".into(),
                ..Default::default()
            },
            data_access,
            sharing: Sharing::None,
            contracts: Default::default(),
            catalog: Some(Catalog {
                tools,
                resources: vec![],
            }),
        }),
        Object::Agent(Agent {
            key: ObjKey::new("team", "bot"),
            profile: Profile::Strict,
            description: None,
        }),
        Object::Grant(Grant {
            key: ObjKey::new("team", "g"),
            agent: "bot".into(),
            tools: vec!["files::*".into()],
            expected_exceptions: vec![],
            provenance: prov("T-1"),
        }),
    ];
    for (i, uri) in [
        "file:///**/.env",
        "file:///**/*.pem",
        "file:///srv/*/private/**",
    ]
    .iter()
    .take(policies)
    .enumerate()
    {
        out.push(Object::Policy(Policy {
            key: ObjKey::new("mcpgov-system", format!("p-{i}")),
            effect: Effect::Deny,
            description: None,
            resources: vec![ResourceBinding {
                uri: uri.to_string(),
                provenance: prov("SEC"),
            }],
            tools: vec![],
            exception_namespaces: None,
            enforcement: Enforcement::PerCall,
        }));
    }
    out
}

const SECTION: &str = "## Per-call enforcement";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let append = args
        .iter()
        .position(|a| a == "--append-md")
        .and_then(|i| args.get(i + 1));
    let mut lines: Vec<String> = Vec::new();
    let g = CompiledGuard::compile(&guard_100()).expect("compiles");
    let calls = [
        json!({"path": "/srv/team-7/docs/readme.md"}),
        json!({"path": "/srv/team-4/private/notes.txt"}),
        json!({"path": "/srv/team-3/x/../y/secret-3.env"}),
        json!({"path": "/srv/a/keys-5/id.pem"}),
        json!({"path": "/srv/team-10/fixtures/secret-30.env"}),
        json!({"path": "/srv/%2e%2e/etc/passwd"}),
        json!({"path": "/etc/passwd"}),
        json!({"path": "/srv/deep/a/b/c/d/e/f/g/h/i/j/k/report-2026-12-01.csv"}),
    ];
    // The answers first: the figures are for a guard that decides right.
    let want = [true, false, false, false, false, false, false, true];
    for (c, w) in calls.iter().zip(want) {
        assert_eq!(g.check(c, 0).is_ok(), w, "{c}");
    }
    let rounds = if quick { 2_000 } else { 200_000 };
    let mut ns: Vec<u64> = Vec::with_capacity(rounds * calls.len());
    for _ in 0..rounds {
        for c in &calls {
            let t = Instant::now();
            std::hint::black_box(g.check(std::hint::black_box(c), 0).is_ok());
            ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    ns.sort_unstable();
    let q = |p: f64| ns[((ns.len() as f64 * p) as usize).min(ns.len() - 1)] as f64 / 1000.0;
    lines.push(format!(
        "| per-call decision with argument resolution, guard of 100 governed patterns, in process ({} calls, 8 shapes: passing, governed, traversal, encoded, undeclared) | p50 {:.2} µs, p99 {:.2} µs (p99.9 {:.2} µs, max {:.2} µs) | p99 < 50 µs | {} |",
        ns.len(),
        q(0.50),
        q(0.99),
        q(0.999),
        q(1.0),
        if q(0.99) < 50.0 { "yes" } else { "no" }
    ));

    for policies in [1, 3] {
        let e = Engine::from_snapshot(EngineConfig::default(), estate(policies));
        let now: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        let t = Instant::now();
        let b = e
            .evaluator(now)
            .bundle(&ObjKey::new("team", "bot"))
            .expect("fits");
        let compile = t.elapsed();
        let doc = parse(&b.bytes).expect("reads back");
        let guarded = doc.tools.iter().filter(|t| t.guard.is_some()).count();
        assert_eq!(guarded, 200);
        assert!(doc.tools.iter().all(|t| t.decision == "eligible"));
        // What the guards themselves add (the deny paths were there before them).
        let guard_bytes: usize = doc
            .tools
            .iter()
            .filter_map(|t| t.guard.as_ref())
            .map(|g| serde_json::to_vec(g).unwrap().len() + r#","guard":"#.len())
            .sum();
        lines.push(format!(
            "| bundle of an agent with 200 argument-bound tools, each reaching {policies} PerCall Polic{} | {} bytes ({:.1}% of the 1 MiB ConfigMap limit); guards {} bytes, the rest deny paths and tool entries; compiled in {:.1} ms | far below 1 MiB | {} |",
            if policies == 1 { "y" } else { "ies" },
            b.bytes.len(),
            100.0 * b.bytes.len() as f64 / (1024.0 * 1024.0),
            guard_bytes,
            compile.as_secs_f64() * 1000.0,
            if b.bytes.len() < 512 * 1024 { "yes" } else { "no" }
        ));
    }
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let section = format!(
        "{SECTION}\n\n`cargo run --release -p mcpgov-engine --example percall_bench` ({build} build, \
         run by bench/gateway-bench.sh).\n\n| measure | figure | target | met |\n|---|---|---|---|\n{}\n",
        lines.join("\n")
    );
    print!("{section}");
    if let Some(path) = append {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let kept = old.find(SECTION).map_or(old.as_str(), |i| &old[..i]);
        let sep = if kept.is_empty() || kept.ends_with("\n\n") {
            ""
        } else {
            "\n"
        };
        std::fs::write(path, format!("{kept}{sep}{section}")).expect("write the results");
    }
}
