//! Peak memory of the engine through a full resync, held the way the operator holds it:
//! `cargo run --release -p mcpgov-engine --example peak_memory -- large [--hold-bundles]`.
//!
//! Builds the estate's engine, then reconciles every agent as
//! `operator/src/controller/reconcile.rs` does: one evaluator for the pass; per agent,
//! evaluate, keep a summary (tool count, reached Policies, violations per Policy),
//! compile the bundle from that evaluation and keep its digest; the evaluation and the
//! bundle are dropped before the next agent. The generated objects stay alive, standing
//! in for the operator's own copies of the watched objects.
//!
//! `--hold-bundles` also keeps every bundle's bytes, as the operator's watch cache of
//! bundle ConfigMaps does once they are published.
//!
//! Prints VmHWM (peak resident set) and VmRSS from /proc/self/status (Linux) after each
//! step; the last line is `peak_memory size=<size> hold_bundles=<bool> vmhwm_kib=<n>`.

use mcpgov_engine::estate::{Size, generate};
use mcpgov_engine::index::parse_object_ref;
use mcpgov_engine::{Engine, EngineConfig, ObjKey};
use std::collections::{BTreeMap, BTreeSet};

/// A `/proc/self/status` field in KiB (`None` off Linux).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn report(step: &str) {
    let mib = |f| {
        status_kib(f).map_or_else(
            || "unavailable".to_string(),
            |k| format!("{:.1} MiB", k as f64 / 1024.0),
        )
    };
    println!(
        "{step:<48} VmRSS {:>12}   VmHWM {:>12}",
        mib("VmRSS"),
        mib("VmHWM")
    );
}

/// What the operator keeps per agent (`AgentSummary` plus the bundle status).
#[allow(dead_code)] // held for its memory, never read
struct Kept {
    tools: usize,
    reached: BTreeSet<ObjKey>,
    violations: BTreeMap<ObjKey, usize>,
    sha256: String,
    bytes: Option<Vec<u8>>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut name = "large".to_string();
    let mut hold_bundles = false;
    for a in args.by_ref() {
        match a.as_str() {
            "--hold-bundles" => hold_bundles = true,
            other => name = other.to_string(),
        }
    }
    let size = Size::named(&name).expect("small, medium or large");
    report("start");
    let objects = generate(size, 42);
    report(&format!("generated ({} objects)", objects.len()));
    let engine = Engine::from_snapshot(EngineConfig::default(), objects.iter().cloned());
    report("engine built");

    let ev = engine.evaluator(jiff::Timestamp::now());
    let mut kept: BTreeMap<ObjKey, Kept> = BTreeMap::new();
    let mut bundle_bytes = 0usize;
    for agent in engine.agents() {
        let eval = ev.evaluate_agent(&agent.key, None).expect("agent exists");
        let mut violations = BTreeMap::new();
        for (_, p) in eval.violations() {
            *violations
                .entry(parse_object_ref(&p.policy, ""))
                .or_default() += 1;
        }
        let bundle = ev.bundle_of(&eval).expect("bundle compiles");
        bundle_bytes += bundle.bytes.len();
        kept.insert(
            agent.key.clone(),
            Kept {
                tools: eval.tools.len(),
                reached: eval.reached_policies.clone(),
                violations,
                sha256: bundle.sha256.clone(),
                bytes: hold_bundles.then(|| bundle.bytes.clone()),
            },
        );
    }
    report(&format!(
        "all {} agents reconciled ({:.1} MB of bundles)",
        kept.len(),
        bundle_bytes as f64 / 1e6
    ));
    std::hint::black_box((&objects, &engine, &kept));
    match status_kib("VmHWM") {
        Some(k) => println!("peak_memory size={name} hold_bundles={hold_bundles} vmhwm_kib={k}"),
        None => {
            println!("peak_memory size={name} hold_bundles={hold_bundles} vmhwm_kib=unavailable")
        }
    }
}
