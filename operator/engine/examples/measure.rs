//! Quick timings of the engine on a generated estate:
//! `cargo run --release -p mcpgov-engine --example measure -- large [runs]`.
//! Each step runs `runs` times (default 5) and the fastest is printed, wall and
//! on-CPU, so that a busy shared machine shows up as wall > cpu instead of skewing
//! the figure. The criterion benches (`benches/engine.rs`) are the reference, and
//! `examples/peak_memory.rs` measures memory.

use mcpgov_engine::estate::{Size, generate};
use mcpgov_engine::{Engine, EngineConfig, Object};
use std::time::{Duration, Instant};

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Run `f` `runs` times; print the fastest wall time and the on-CPU time of that run.
fn time<T>(label: &str, runs: usize, mut f: impl FnMut() -> T) -> T {
    let mut best: Option<(Duration, Duration, T)> = None;
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_ns());
        let out = f();
        let wall = t.elapsed();
        let cpu = Duration::from_nanos(cpu_ns().saturating_sub(c));
        if best.as_ref().is_none_or(|b| wall < b.0) {
            best = Some((wall, cpu, out));
        }
    }
    let (wall, cpu, out) = best.expect("runs > 0");
    println!("{label}: {wall:.1?} (cpu {cpu:.1?}, best of {runs})");
    out
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "medium".into());
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let size = Size::named(&name).expect("small, medium or large");
    let objects = generate(size, 42);
    println!("estate {name}: {} objects", objects.len());
    let mut engine = time("build", runs, || {
        Engine::from_snapshot(EngineConfig::default(), objects.clone())
    });
    let now = jiff::Timestamp::now();
    let all_with_bundles = |engine: &Engine| {
        let ev = engine.evaluator(now);
        let (mut tools, mut paths, mut bytes) = (0, 0, 0);
        for a in engine.agents() {
            let e = ev.evaluate_agent(&a.key, None).unwrap();
            tools += e.tools.len();
            paths += e.tools.iter().map(|t| t.deny_paths.len()).sum::<usize>();
            bytes += ev.bundle_of(&e).unwrap().bytes.len();
        }
        (tools, paths, bytes)
    };
    // The first pass after a build computes every tool's reach (the engine keeps it).
    time("evaluate all agents + bundles, first pass", 1, || {
        all_with_bundles(&engine)
    });
    time("evaluate all agents (no bundles)", runs, || {
        let ev = engine.evaluator(now);
        engine
            .agents()
            .map(|a| ev.evaluate_agent(&a.key, None).unwrap().tools.len())
            .sum::<usize>()
    });
    let (tools, paths, bytes) = time("evaluate all agents + bundles", runs, || {
        all_with_bundles(&engine)
    });
    println!("  ({tools} decisions, {paths} deny paths, {bytes} bundle bytes)");

    // One Grant and one Policy change, each alternating between two versions so that
    // every run is a real change; the impacted agents are re-evaluated with bundles.
    let Some(Object::Grant(grant)) = objects.iter().rev().find(|o| matches!(o, Object::Grant(_)))
    else {
        panic!("the estate has Grants")
    };
    let mut changed = grant.clone();
    changed.tools.push("srv-000::read_0003".into());
    let grants = [changed, grant.clone()];
    let Some(Object::Policy(policy)) = objects
        .iter()
        .find(|o| matches!(o, Object::Policy(p) if p.key.namespace != "mcpgov-system"))
    else {
        panic!("the estate has Policies")
    };
    let mut moved = policy.clone();
    moved.resources[0].uri = "file:///data/srv-001/obj-0001".into();
    let policies = [moved, policy.clone()];
    for (label, versions) in [
        ("one grant change", grants.map(Object::Grant)),
        ("one policy change", policies.map(Object::Policy)),
    ] {
        let mut i = 0;
        let agents = time(label, runs * 2, || {
            let impact = engine.apply(versions[i % 2].clone());
            i += 1;
            let ev = engine.evaluator(now);
            for a in &impact.agents {
                let e = ev.evaluate_agent(a, None).unwrap();
                ev.bundle_of(&e).unwrap();
            }
            impact.agents.len()
        });
        println!("  ({agents} agent(s) re-evaluated)");
    }
}
