//! Criterion benchmarks of the engine on a generated estate (`estate::generate`, seed
//! 42): build, evaluate every agent with bundles, re-evaluate after one Grant, Policy or
//! MCPServer change, URI glob overlap, one large bundle.
//!
//! `MCPGOV_BENCH_SIZE` picks the estate (`small`, `medium`, `large`; default `large`).
//! Every benchmark id is `<group>/<size>` (`glob_overlap/hard` is size-independent).
//! `bench/engine-bench.sh [size]` runs this in release and writes the summary table
//! against the targets to `bench/ENGINE-RESULTS.md`.
//!
//! Quick run of one group: `MCPGOV_BENCH_SIZE=medium cargo bench -p mcpgov-engine
//! --bench engine -- grant_change`.

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use mcpgov_engine::estate::{Size, generate};
use mcpgov_engine::index::compile_uri;
use mcpgov_engine::{Engine, EngineConfig, Evaluator, Grant, ObjKey, Object, Policy, Server};
use std::hint::black_box;
use std::time::Duration;

const SEED: u64 = 42;

fn size_name() -> String {
    std::env::var("MCPGOV_BENCH_SIZE").unwrap_or_else(|_| "large".into())
}

/// A fixed instant: the generated estate has no expiring exceptions, and a fixed one
/// keeps runs comparable.
fn now() -> jiff::Timestamp {
    "2026-01-01T00:00:00Z".parse().expect("valid timestamp")
}

struct Estate {
    name: String,
    objects: Vec<Object>,
}

fn estate() -> Estate {
    let name = size_name();
    let size = Size::named(&name)
        .unwrap_or_else(|| panic!("MCPGOV_BENCH_SIZE={name}: expected small, medium or large"));
    Estate {
        objects: generate(size, SEED),
        name,
    }
}

fn build(objects: &[Object]) -> Engine {
    Engine::from_snapshot(EngineConfig::default(), objects.iter().cloned())
}

/// What the operator does for one agent in a reconcile pass: evaluate it, compile its
/// bundle from that evaluation; both are dropped before the next agent.
fn reconcile_agent(ev: &Evaluator<'_>, agent: &ObjKey) {
    let eval = ev.evaluate_agent(agent, None).expect("agent exists");
    let bundle = ev.bundle_of(&eval).expect("bundle compiles");
    black_box((&eval, &bundle));
}

/// Apply one changed object and re-evaluate (with bundles) every agent it can affect,
/// under a fresh evaluator, as one reconcile pass after a watch event does.
fn apply_and_reconcile(engine: &mut Engine, object: Object) -> usize {
    let impact = engine.apply(object);
    debug_assert!(impact.changed);
    let ev = engine.evaluator(now());
    for a in &impact.agents {
        reconcile_agent(&ev, a);
    }
    impact.agents.len()
}

/// Two versions of one object that differ: applying them in turn is a real change every
/// time. Checked once (and the affected agents reported) before measuring.
fn alternate(c: &mut Criterion, group: &str, e: &Estate, versions: [Object; 2], what: &str) {
    // The engine starts at versions[0] (the estate's own); every apply below flips it.
    let mut engine = build(&e.objects);
    for v in [&versions[1], &versions[0]] {
        let impact = engine.apply(v.clone());
        assert!(impact.changed, "{group}: the two versions must differ");
    }
    let agents = [
        apply_and_reconcile(&mut engine, versions[1].clone()),
        apply_and_reconcile(&mut engine, versions[0].clone()),
    ];
    eprintln!(
        "setup {group}/{}: {what}; agents re-evaluated: {agents:?}",
        e.name
    );
    let mut g = c.benchmark_group(group);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6));
    let mut i = 0usize;
    g.bench_function(e.name.as_str(), |b| {
        b.iter_batched(
            || {
                i += 1;
                versions[i % 2].clone()
            },
            |object| apply_and_reconcile(&mut engine, object),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn bench_build(c: &mut Criterion) {
    let e = estate();
    eprintln!("setup build/{}: {} objects", e.name, e.objects.len());
    let mut g = c.benchmark_group("build");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    g.bench_function(e.name.as_str(), |b| {
        b.iter_batched(
            || e.objects.clone(),
            |objects| Engine::from_snapshot(EngineConfig::default(), objects),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn bench_evaluate_all(c: &mut Criterion) {
    let e = estate();
    let engine = build(&e.objects);
    let agents: Vec<ObjKey> = engine.agents().map(|a| a.key.clone()).collect();
    let ev = engine.evaluator(now());
    let (mut decisions, mut bytes) = (0, 0);
    for a in &agents {
        let eval = ev.evaluate_agent(a, None).expect("agent exists");
        decisions += eval.tools.len();
        bytes += ev.bundle_of(&eval).expect("bundle compiles").bytes.len();
    }
    eprintln!(
        "setup evaluate_all/{}: {} agents, {decisions} tool decisions, {bytes} bundle bytes",
        e.name,
        agents.len()
    );
    let mut g = c.benchmark_group("evaluate_all");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15));
    g.bench_function(e.name.as_str(), |b| {
        b.iter(|| {
            // A full resync: a fresh evaluator (the engine keeps per-tool reach), every agent.
            let ev = engine.evaluator(now());
            for a in &agents {
                reconcile_agent(&ev, a);
            }
        })
    });
    g.finish();
}

fn bench_grant_change(c: &mut Criterion) {
    let e = estate();
    // The last Grant of the estate, with one more tool of the server it already names.
    let Some(Object::Grant(before)) = e
        .objects
        .iter()
        .rev()
        .find(|o| matches!(o, Object::Grant(_)))
        .cloned()
    else {
        unreachable!("the estate has Grants")
    };
    let server = before.tools[0]
        .split_once("::")
        .map(|(s, _)| s.to_string())
        .expect("selectors are server::tool");
    let after = Grant {
        tools: [before.tools.clone(), vec![format!("{server}::read_0007")]].concat(),
        ..before.clone()
    };
    let what = format!("Grant {} += {server}::read_0007", before.key);
    alternate(
        c,
        "grant_change",
        &e,
        [Object::Grant(before), Object::Grant(after)],
        &what,
    );
}

/// One Policy's resources, alternating between two versions (the first URI moves to
/// another object of the same server). `platform`: a Policy of the governance namespace
/// (governs every namespace); otherwise a team namespace's.
fn policy_versions(e: &Estate, platform: bool) -> (String, [Object; 2]) {
    let governance = EngineConfig::default().governance_namespace;
    let Some(Object::Policy(before)) = e
        .objects
        .iter()
        .find(|o| {
            matches!(o, Object::Policy(p)
                if (p.key.namespace == governance) == platform && !p.resources.is_empty())
        })
        .cloned()
    else {
        unreachable!("the estate has both kinds of Policy")
    };
    let uri = &before.resources[0].uri;
    // file:///data/srv-NNN/obj-...: point it at another object of the same server.
    let folder = uri.rsplit_once('/').map(|(f, _)| f).expect("a path URI");
    let moved = format!("{folder}/obj-0001");
    let moved = if moved == *uri {
        format!("{folder}/obj-0002")
    } else {
        moved
    };
    let mut after: Policy = before.clone();
    after.resources[0].uri = moved.clone();
    let what = format!("Policy {} resource {uri} -> {moved}", before.key);
    (what, [Object::Policy(before), Object::Policy(after)])
}

fn bench_policy_change(c: &mut Criterion) {
    let e = estate();
    let (what, versions) = policy_versions(&e, false);
    alternate(c, "policy_change", &e, versions, &what);
}

fn bench_policy_change_platform(c: &mut Criterion) {
    let e = estate();
    let (what, versions) = policy_versions(&e, true);
    alternate(c, "policy_change_platform", &e, versions, &what);
}

fn bench_server_recrawl(c: &mut Criterion) {
    let e = estate();
    // The first server; the re-crawl drops one granted-looking tool and rewords another.
    let Some(Object::Server(before)) = e
        .objects
        .iter()
        .find(|o| matches!(o, Object::Server(_)))
        .cloned()
    else {
        unreachable!("the estate has servers")
    };
    let mut after: Server = before.clone();
    let catalog = after
        .catalog
        .as_mut()
        .expect("generated servers are crawled");
    let gone = catalog.tools.remove(3).name;
    let reworded = &mut catalog.tools[4];
    reworded.description = Some(format!("{} (re-crawled)", reworded.name));
    let what = format!(
        "MCPServer {} re-crawled: {gone} gone, {} reworded",
        before.key, reworded.name
    );
    alternate(
        c,
        "server_recrawl",
        &e,
        [Object::Server(before), Object::Server(after)],
        &what,
    );
}

/// Hand-picked hard pairs: `**`-heavy, many segments, overlapping and not.
const HARD_PAIRS: &[(&str, &str)] = &[
    ("file:///data/**", "file:///data/srv-001/obj-000*"),
    ("file:///**/a/**/b/**/c/**", "file:///x/**/y/**/a/b/c/z"),
    ("file:///**/a/**/b/**/c/**", "file:///**/c/**/b/**/a/**"),
    ("file:///**/**/**/**/x", "file:///a/**/b/**/c/**/d/**/y"),
    (
        "https://h.example/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/*",
        "https://h.example/**/p/*",
    ),
    (
        "https://h.example/a/*/c/*/e/*/g/*/i/*/k/*/m/*/o/*",
        "https://h.example/*/b/*/d/*/f/*/h/*/j/*/l/*/n/*/p",
    ),
    (
        "https://h.example/**/*-report-*.csv",
        "https://h.example/finance/**/q*-report-202*.csv",
    ),
    ("s3://bucket/**/logs/**/*.gz", "s3://bucket/*/*/*/*/*/*.txt"),
    (
        "postgres://db.example/prod/**/users*",
        "postgres://db.example/prod/public/**/*",
    ),
    ("file:///a*b*c*d*e*f*g", "file:///*g*f*e*d*c*b*a*"),
];

fn bench_glob_overlap(c: &mut Criterion) {
    let e = estate();
    let compile = |s: &str| compile_uri(s).unwrap_or_else(|m| panic!("{m}"));
    let hard: Vec<_> = HARD_PAIRS
        .iter()
        .map(|(a, b)| (compile(a), compile(b)))
        .collect();
    // From the estate: every globbed Policy resource against every globbed data access
    // of the same server (the pairs the engine's reach and checks compare).
    let mut access = Vec::new();
    let mut resources = Vec::new();
    for o in &e.objects {
        match o {
            Object::Server(s) => access.extend(
                s.data_access
                    .iter()
                    .filter(|d| d.resource.contains('*'))
                    .map(|d| d.resource.clone()),
            ),
            Object::Policy(p) => resources.extend(
                p.resources
                    .iter()
                    .filter(|r| r.uri.contains('*'))
                    .map(|r| r.uri.clone()),
            ),
            _ => {}
        }
    }
    access.sort();
    access.dedup();
    let folder = |u: &str| u.rsplit_once('/').map(|(f, _)| f.to_string());
    let estate_pairs: Vec<_> = resources
        .iter()
        .flat_map(|r| {
            access
                .iter()
                .filter(|a| folder(a) == folder(r))
                .map(|a| (compile(a), compile(r)))
                .collect::<Vec<_>>()
        })
        .collect();
    let overlapping = |pairs: &[(mcpgov_engine::glob::UriPattern, _)]| {
        pairs.iter().filter(|(a, b)| a.overlaps(b)).count()
    };
    eprintln!(
        "setup glob_overlap: {} hard pairs ({} overlap), {} estate pairs ({} overlap)",
        hard.len(),
        overlapping(&hard),
        estate_pairs.len(),
        overlapping(&estate_pairs),
    );
    let mut g = c.benchmark_group("glob_overlap");
    g.sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    // Each iteration: the overlap witness and both inclusions of every pair.
    let all = |pairs: &[(
        mcpgov_engine::glob::UriPattern,
        mcpgov_engine::glob::UriPattern,
    )]| {
        for (a, b) in pairs {
            black_box(a.overlap(b));
            black_box(a.includes(b));
            black_box(b.includes(a));
        }
    };
    g.bench_function("hard", |b| b.iter(|| all(&hard)));
    if !estate_pairs.is_empty() {
        g.bench_function(e.name.as_str(), |b| b.iter(|| all(&estate_pairs)));
    }
    g.finish();
}

fn bench_bundle_json(c: &mut Criterion) {
    let e = estate();
    let engine = build(&e.objects);
    let ev = engine.evaluator(now());
    // The agent with the most tool decisions: the largest bundle.
    let eval = engine
        .agents()
        .map(|a| ev.evaluate_agent(&a.key, None).expect("agent exists"))
        .max_by_key(|e| e.tools.len())
        .expect("the estate has agents");
    let bytes = ev.bundle_of(&eval).expect("bundle compiles").bytes.len();
    eprintln!(
        "setup bundle_json/{}: agent {} ({} tools, {bytes} bundle bytes)",
        e.name,
        eval.agent,
        eval.tools.len()
    );
    let mut g = c.benchmark_group("bundle_json");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function(e.name.as_str(), |b| b.iter(|| ev.bundle_of(&eval)));
    g.finish();
}

criterion_group!(
    benches,
    bench_build,
    bench_evaluate_all,
    bench_grant_change,
    bench_policy_change,
    bench_policy_change_platform,
    bench_server_recrawl,
    bench_glob_overlap,
    bench_bundle_json,
);
criterion_main!(benches);
