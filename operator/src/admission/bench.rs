//! The admission benchmark (docs/performance.md): review latency on the large
//! generated estate, the warning computation included. In-process: parse, Deny, and the
//! consequences on the mirror; TLS and HTTP are not in the figure.
//! `cargo test --release -p mcpgov --lib admission::bench -- --ignored --nocapture`

use super::consequences::compute;
use super::mirror::{Change, State, apply};
use super::*;
use mcpgov_engine::Engine;
use mcpgov_engine::estate::{Rng, Size, generate};
use std::time::Instant;

const REVIEWS: usize = 400;

#[test]
#[ignore = "a benchmark: run in release with --ignored"]
fn admission_review_latency_on_the_large_estate() {
    let objects = generate(Size::LARGE, 42);
    let grants = mcpgov_engine::estate::grants(&objects);
    let mut state = State::new(Engine::new(Default::default()));
    let t = Instant::now();
    for o in objects {
        apply(&mut state, Change::Apply(Box::new(o)));
    }
    let build = t.elapsed();
    let ctx = Ctx {
        client: None,
        governance_namespace: "mcpgov-system".into(),
        mirror: None,
        what_ifs: Arc::new(tokio::sync::Semaphore::new(1)),
    };
    let mut rng = Rng::new(7);
    let now = jiff::Timestamp::now();
    let (mut times, mut warned, mut warnings) = (Vec::new(), 0, 0);
    for i in 0..REVIEWS {
        // A new Grant for an agent: its own tools plus another agent's (same namespace),
        // so many reviews create violations to warn about.
        let g = &grants[rng.below(grants.len())];
        let others: Vec<&mcpgov_engine::Grant> = grants
            .iter()
            .filter(|o| o.key.namespace == g.key.namespace && o.agent != g.agent)
            .collect();
        let mut tools = g.tools.clone();
        if !others.is_empty() {
            tools.extend(others[rng.below(others.len())].tools.iter().cloned());
        }
        let body = serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": format!("u{i}"),
                "kind": {"group": "mcpgov.io", "version": "v1alpha1", "kind": "Grant"},
                "namespace": g.key.namespace, "name": format!("bench-{i}"),
                "operation": "CREATE",
                "object": {
                    "apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
                    "metadata": {"name": format!("bench-{i}"), "namespace": g.key.namespace},
                    "spec": {"agent": g.agent, "tools": tools},
                },
            }
        }))
        .unwrap();
        let t = Instant::now();
        let (out, candidate) = review(&ctx, &body, now).unwrap();
        assert!(out.response.allowed, "{:?}", out.response.status);
        let c = candidate.expect("an admitted Grant is weighed");
        let Weigh::Apply(object) = c.change else {
            panic!("a Grant is applied")
        };
        let c = compute(&mut state, object, &c.namespace, now);
        times.push(t.elapsed());
        warned += usize::from(!c.warnings.is_empty());
        warnings += c.warnings.len();
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "admission bench (large estate: {} grants; mirror built in {:.0?}): {REVIEWS} Grant reviews, \
         p50 {:.2?}, p99 {:.2?}, max {:.2?}; {warned} with warnings ({warnings} warnings)",
        grants.len(),
        build,
        pct(0.50),
        pct(0.99),
        times[times.len() - 1],
    );
    assert!(warned > 0, "the bench must exercise the warning path");
}
