//! Quick timings of the engine on a generated estate: `cargo run --release -p
//! mcpgov-engine --example measure -- large`.

use mcpgov_engine::estate::{Size, generate};
use mcpgov_engine::{Engine, EngineConfig, Object};
use std::time::Instant;

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "medium".into());
    let size = Size::named(&name).expect("small, medium or large");
    let objects = generate(size, 42);
    let t = Instant::now();
    let engine = Engine::from_snapshot(EngineConfig::default(), objects.clone());
    println!("build: {:?} ({} objects)", t.elapsed(), objects.len());
    let now = jiff::Timestamp::now();
    let t = Instant::now();
    let ev = engine.evaluator(now);
    let known = engine.known_tools();
    for id in &known {
        ev.reach(id);
    }
    println!(
        "  (reach of all {} known tools: {:?})",
        known.len(),
        t.elapsed()
    );
    let evals: Vec<_> = engine
        .agents()
        .map(|a| ev.evaluate_agent(&a.key, None).unwrap())
        .collect();
    println!("evaluate all agents (no bundles): {:?}", t.elapsed());
    let t = Instant::now();
    for e in &evals {
        ev.bundle_of(e).unwrap();
    }
    println!("bundles only: {:?}", t.elapsed());
    let t = Instant::now();
    let ev = engine.evaluator(now);
    let mut tools = 0;
    let mut bytes = 0;
    for a in engine.agents() {
        let e = ev.evaluate_agent(&a.key, None).unwrap();
        tools += e.tools.len();
        bytes += ev.bundle_of(&e).unwrap().bytes.len();
    }
    println!(
        "evaluate all agents + bundles: {:?} ({tools} decisions, {bytes} bundle bytes)",
        t.elapsed()
    );
    let mut engine = engine;
    let grant = objects
        .iter()
        .rev()
        .find(|o| matches!(o, Object::Grant(_)))
        .unwrap()
        .clone();
    let Object::Grant(mut g) = grant else {
        unreachable!()
    };
    g.tools.push("srv-000::read_0003".into());
    let t = Instant::now();
    let impact = engine.apply(Object::Grant(g));
    let ev = engine.evaluator(now);
    for a in &impact.agents {
        let e = ev.evaluate_agent(a, None).unwrap();
        ev.bundle_of(&e).unwrap();
    }
    println!(
        "one grant change: {:?} ({} agent(s))",
        t.elapsed(),
        impact.agents.len()
    );
    let policy = objects
        .iter()
        .find(|o| matches!(o, Object::Policy(p) if p.key.namespace != "mcpgov-system"))
        .unwrap()
        .clone();
    let Object::Policy(mut p) = policy else {
        unreachable!()
    };
    p.resources[0].uri = "file:///data/srv-001/obj-0001".into();
    let t = Instant::now();
    let impact = engine.apply(Object::Policy(p));
    println!(
        "  (apply and impact of the policy change: {:?})",
        t.elapsed()
    );
    let ev = engine.evaluator(now);
    for a in &impact.agents {
        let e = ev.evaluate_agent(a, None).unwrap();
        ev.bundle_of(&e).unwrap();
    }
    println!(
        "one policy change: {:?} ({} agent(s))",
        t.elapsed(),
        impact.agents.len()
    );
}
