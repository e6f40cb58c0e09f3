//! The index API the operator relies on: applying one object at a time gives the same
//! answers as building from a snapshot, and a change moves only the agents it reports.

mod common;
use common::*;
use mcpgov_engine::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Every agent's evaluation and bundle, as comparable text.
fn answers(e: &Engine) -> BTreeMap<ObjKey, String> {
    let ev = e.evaluator(now());
    e.agents()
        .map(|a| {
            let eval = ev.evaluate_agent(&a.key, None).unwrap();
            let bundle = ev.bundle_of(&eval).unwrap();
            let text = format!(
                "{}\n{}",
                serde_json::to_string(&eval).unwrap(),
                String::from_utf8(bundle.bytes).unwrap()
            );
            (a.key.clone(), text)
        })
        .collect()
}

#[test]
fn impact_names_the_agents_a_change_can_move() {
    let mut e = engine(vec![
        server("a", "s").tools(&["t"]).share(&["b"]).build(),
        server("c", "other").tools(&["t"]).build(),
        agent("a", "x", Profile::Strict),
        agent("b", "y", Profile::Strict),
        agent("c", "z", Profile::Strict),
        grant("a", "gx", "x", &["s::t"]).build(),
        grant("b", "gy", "y", &["a/s::t"]).build(),
        grant("c", "gz", "z", &["other::t"]).build(),
    ]);
    let agents = |i: Impact| {
        i.agents
            .into_iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
    };
    // A server change moves the agents whose Grant selectors can name its tools.
    let i = e.apply(server("a", "s").tools(&["t", "u"]).share(&["b"]).build());
    assert_eq!(agents(i), ["a/x", "b/y"]);
    // A Policy moves the agents whose granted tools it reaches, in any namespace.
    let i = e.apply(deny("a", "p").tool("s::t").build());
    assert_eq!(agents(i), ["a/x", "b/y"]);
    // A Policy that reaches no granted tool moves nobody.
    let i = e.apply(deny("a", "p2").resource("x:1").build());
    assert!(i.agents.is_empty());
    // A platform Policy governs every namespace.
    let i = e.apply(deny("mcpgov-system", "p").tool("*/*::t").build());
    assert_eq!(agents(i), ["a/x", "b/y", "c/z"]);
    // A Grant reaches its agent, before and after a change of agent.
    let i = e.apply(grant("c", "gz", "w", &["other::t"]).build());
    assert_eq!(agents(i), ["c/w", "c/z"]);
    // Re-applying an identical object changes nothing.
    let g = e.generation();
    let i = e.apply(grant("c", "gz", "w", &["other::t"]).build());
    assert!(i.agents.is_empty() && !i.changed);
    assert_eq!(e.generation(), g);
    let i = e.delete(Kind::Agent, &key("a/x"));
    assert_eq!(agents(i), ["a/x"]);
    assert!(e.delete(Kind::Agent, &key("a/x")).agents.is_empty());
}

#[derive(Clone, Debug)]
enum Op {
    Apply(Object),
    Delete(Kind, ObjKey),
}

const NS: [&str; 3] = ["a", "b", "mcpgov-system"];
const TOOLS: [&str; 3] = ["t1", "t2", "t3"];
const URIS: [&str; 5] = ["x:/1", "x:/2", "x:/*", "x:/**", "y:/1"];
const SHARES: &[&[&str]] = &[&[], &["a"], &["*"]];
// Bare names that a server's dataAccess or a Policy's literal binding can remember
// after the tool drifts ("t3", "gone") exercise the bare-name rule of issue 16.
const SELECTORS: [&str; 9] = [
    "s1::t1", "s1::*", "s2::t2", "a/s1::t3", "b/s2::*", "t1", "s1::gone", "t3", "gone",
];

fn object() -> impl Strategy<Value = Object> {
    let ns = prop::sample::select(&NS[..]);
    prop_oneof![
        (
            ns.clone(),
            prop::sample::select(&["s1", "s2"][..]),
            prop::sample::subsequence(&TOOLS[..], 0..=3),
            prop::collection::vec(
                (
                    prop::sample::select(&TOOLS[..]),
                    prop::sample::select(&URIS[..]),
                    any::<bool>()
                ),
                0..3
            ),
            prop::sample::select(SHARES),
        )
            .prop_map(|(ns, name, tools, access, share)| {
                let mut s = server(ns, name).tools(&tools).share(share);
                for (t, u, w) in access {
                    s = if w { s.writes(t, u) } else { s.reads(t, u) };
                }
                s.build()
            }),
        (
            ns.clone(),
            prop::sample::select(&["p1", "p2"][..]),
            prop::sample::select(&URIS[..]),
            prop::option::of(prop::sample::select(&SELECTORS[..])),
            any::<bool>()
        )
            .prop_map(|(ns, name, uri, tool, is_deny)| {
                let mut p = if is_deny {
                    deny(ns, name)
                } else {
                    allow(ns, name)
                }
                .resource(uri);
                if let Some(t) = tool {
                    p = p.tool(t);
                }
                p.exceptions_from(&["a"]).build()
            }),
        (ns.clone(), prop::sample::select(&["x", "y"][..])).prop_map(|(ns, name)| agent(
            ns,
            name,
            Profile::Review
        )),
        (
            ns,
            prop::sample::select(&["g1", "g2"][..]),
            prop::sample::select(&["x", "y"][..]),
            prop::sample::subsequence(&SELECTORS[..], 1..=3),
            any::<bool>()
        )
            .prop_map(|(ns, name, agent, tools, except)| {
                let mut g = grant(ns, name, agent, &tools);
                if except {
                    g = g.exception("p1", None, None, None);
                }
                g.build()
            }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => object().prop_map(Op::Apply),
        1 => object().prop_map(|o| Op::Delete(o.kind(), o.key().clone())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Applying ops one by one equals a fresh build of what is left, and every agent
    /// an op did not name in its impact answers exactly as before.
    #[test]
    fn incremental_equals_snapshot_and_impact_is_sound(ops in prop::collection::vec(op(), 1..25)) {
        let mut live = engine(vec![]);
        let mut objects: BTreeMap<(Kind, ObjKey), Object> = BTreeMap::new();
        for op in ops {
            let before = answers(&live);
            let impact = match op {
                Op::Apply(o) => {
                    objects.insert((o.kind(), o.key().clone()), o.clone());
                    live.apply(o)
                }
                Op::Delete(k, key) => {
                    objects.remove(&(k, key.clone()));
                    live.delete(k, &key)
                }
            };
            let after = answers(&live);
            for (agent, text) in &after {
                if !impact.agents.contains(agent) {
                    prop_assert_eq!(before.get(agent), Some(text), "agent {} moved unreported", agent);
                }
            }
        }
        let rebuilt = engine(objects.into_values().collect());
        prop_assert_eq!(answers(&live), answers(&rebuilt));
    }
}
