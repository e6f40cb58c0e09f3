//! Each question on the shipped examples and on a generated estate of several
//! namespaces: the answer, its graph identity, its limits, and what a caller who may
//! read only some namespaces is told.

use super::*;
use mcpgov_engine::estate::{Size, generate, namespace};
use mcpgov_engine::{Classification, Decision, EngineConfig, Reason, VerdictKind};
use std::path::PathBuf;

const NOW: &str = "2026-11-29T00:00:00Z";

/// An example read as `mcpgov query -f examples/NAME` reads it.
fn example(name: &str) -> Engine {
    #[derive(clap::Parser)]
    struct Args {
        #[command(flatten)]
        input: crate::cli::InputArgs,
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    let args = <Args as clap::Parser>::parse_from([
        "t".as_ref(),
        "-f".as_ref(),
        dir.as_os_str(),
        "--now".as_ref(),
        NOW.as_ref(),
    ]);
    match args.input.load() {
        Ok(loaded) => loaded.engine,
        Err(_) => panic!("examples/{name} loads"),
    }
}

fn generated() -> Engine {
    Engine::from_snapshot(EngineConfig::default(), generate(Size::MEDIUM, 3))
}

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

fn only(namespaces: &[&str]) -> Visibility {
    Visibility::Namespaces(namespaces.iter().map(|s| s.to_string()).collect())
}

/// Run `f` with a snapshot of `engine` in home namespace `ns`.
fn with<R>(engine: &Engine, ns: &str, f: impl FnOnce(&Snapshot) -> R) -> R {
    let eval = engine.evaluator(now());
    let s = Snapshot {
        eval: &eval,
        graph: GraphId::of_inputs(engine, false),
        namespace: ns,
        published: None,
    };
    f(&s)
}

fn ca(agent: &str, tool: &str) -> CheckAccessInput {
    CheckAccessInput {
        agent: agent.into(),
        tool: tool.into(),
    }
}

#[test]
fn check_access_is_the_engine_verdict_with_the_graph_that_gave_it() {
    let e = example("cross-server");
    with(&e, "default", |s| {
        let a = check_access(s, &Visibility::All, ca("ci-bot", "git_show")).unwrap();
        assert_eq!(
            a.answer,
            s.eval
                .check_access(&ObjKey::new("ci", "ci-bot"), "git_show")
        );
        assert_eq!(a.answer.verdict, VerdictKind::Deny);
        assert_eq!(a.graph, GraphId::of_inputs(&e, false));
        assert!(a.graph.instance.starts_with("offline-"));
        assert_eq!(a.graph.generation, e.generation());
    });
}

#[test]
fn an_agent_the_caller_may_not_read_is_not_there() {
    let e = example("cross-server");
    with(&e, "default", |s| {
        let hidden = check_access(s, &only(&["team-x"]), ca("ci/ci-bot", "git_show")).unwrap();
        assert_eq!(hidden.answer.verdict, VerdictKind::AgentNotFound);
        assert!(hidden.answer.deny_paths.is_empty() && hidden.answer.granted_by.is_empty());
        // Told exactly as an agent that does not exist.
        let absent = check_access(s, &Visibility::All, ca("ci/ghost", "git_show")).unwrap();
        assert_eq!(absent.answer.verdict, VerdictKind::AgentNotFound);
        let mut told = hidden.answer.clone();
        told.agent = absent.answer.agent.clone();
        assert_eq!(told, absent.answer);
        assert_eq!(hidden.answer.agent, "ci/ci-bot");
        // A bare name is not resolved into a namespace the caller cannot read.
        let bare = check_access(s, &only(&["default"]), ca("ci-bot", "git_show")).unwrap();
        assert_eq!(bare.answer.agent, "default/ci-bot");

        for q in [
            "unsafe_tools",
            "explain",
            "eligible_tools",
            "bundle_identity",
        ] {
            let args = serde_json::json!({"agent": "ci/ci-bot", "tool": "git_show"});
            let mut args = args.as_object().unwrap().clone();
            if q != "explain" {
                args.remove("tool");
            }
            let hidden = (find(q).unwrap().answer)(s, &only(&["x"]), Value::Object(args.clone()));
            args.insert("agent".into(), "ci/ghost".into());
            let ghost = (find(q).unwrap().answer)(s, &Visibility::All, Value::Object(args));
            let (Err(Refusal::NotFound(h)), Err(Refusal::NotFound(g))) = (hidden, ghost) else {
                panic!("{q}: both refused as not found");
            };
            assert_eq!(h.replace("ci-bot", "ghost"), g, "{q}");
        }
    });
}

#[test]
fn unsafe_tools_lists_violations_and_with_all_the_exceptions() {
    let e = example("cross-server");
    with(&e, "default", |s| {
        let input = |all| UnsafeToolsInput {
            agent: "ci-bot".into(),
            all,
        };
        let v = unsafe_tools(s, &Visibility::All, input(false))
            .unwrap()
            .answer;
        assert_eq!(v.agent, "ci/ci-bot");
        assert_eq!(v.rows.len(), 1);
        assert_eq!(v.rows[0].tool, "ci/git::git_show");
        assert_eq!(v.rows[0].path.classification, Classification::Violation);
        let all = unsafe_tools(s, &Visibility::All, input(true))
            .unwrap()
            .answer;
        assert!(all.rows.len() >= v.rows.len());
        let err = unsafe_tools(
            s,
            &Visibility::All,
            UnsafeToolsInput {
                agent: "ghost".into(),
                all: false,
            },
        )
        .unwrap_err();
        assert_eq!(
            err,
            Refusal::NotFound("AGENT_NOT_FOUND: no Agent default/ghost".into())
        );
    });
}

#[test]
fn eligible_tools_decides_under_the_profile_asked_and_bounds_its_input() {
    let e = example("quickstart");
    with(&e, "default", |s| {
        let ask = |profile, tools: Vec<String>| {
            eligible_tools(
                s,
                &Visibility::All,
                EligibleToolsInput {
                    agent: "vibe-coder".into(),
                    tools,
                    profile,
                },
            )
        };
        let review = ask(Some(ProfileArg::Review), vec![]).unwrap().answer;
        assert_eq!(review.profile, mcpgov_engine::Profile::Review);
        let publish = review
            .tools
            .iter()
            .find(|t| t.tool.ends_with("publish_note"))
            .expect("granted");
        assert_eq!(publish.decision, Decision::Rejected);
        let explore = ask(Some(ProfileArg::Explore), vec![publish.tool.clone()])
            .unwrap()
            .answer;
        assert_eq!(explore.tools[0].decision, Decision::Eligible);

        let many = vec!["x".to_string(); MAX_CANDIDATES + 1];
        assert!(matches!(ask(None, many), Err(Refusal::Invalid(_))));
        let long = vec!["x".repeat(MAX_ARG_BYTES + 1)];
        assert!(matches!(ask(None, long), Err(Refusal::Invalid(_))));
    });
}

#[test]
fn explain_gives_the_decision_the_reasons_and_the_evidence_path() {
    let e = example("cross-server");
    with(&e, "default", |s| {
        let ask = |profile| {
            explain(
                s,
                &Visibility::All,
                ExplainInput {
                    agent: "ci-bot".into(),
                    tool: "git_show".into(),
                    profile,
                },
            )
            .unwrap()
            .answer
        };
        let strict = ask(None);
        assert_eq!(strict.profile, mcpgov_engine::Profile::Strict);
        assert_eq!(strict.decision, Decision::Rejected);
        assert_eq!(strict.rejected_by, vec![Reason::DenyViolation]);
        let path = &strict.access.deny_paths[0].path;
        assert_eq!(path.first().map(String::as_str), Some("agent:ci/ci-bot"));
        assert!(
            strict
                .text
                .starts_with("DENY: agent ci/ci-bot -> tool ci/git::git_show")
        );
        assert!(strict.text.contains(&path.join(" ")), "{}", strict.text);
        // Explore does not reject on a violation: eligible, same reasons.
        let explore = ask(Some(ProfileArg::Explore));
        assert_eq!(explore.decision, Decision::Eligible);
        assert!(explore.rejected_by.is_empty());
        assert_eq!(explore.reasons, strict.reasons);
    });
}

#[test]
fn blast_radius_of_a_policy_the_caller_may_not_read_is_not_found() {
    let e = example("multi-tenant");
    with(&e, "default", |s| {
        let ask = |vis: &Visibility| {
            blast_radius(
                s,
                vis,
                BlastRadiusInput {
                    target: "mcpgov-system/no-customer-pii".into(),
                    namespace: None,
                },
            )
            .unwrap()
            .answer
        };
        let all = ask(&Visibility::All);
        assert!(all.found && !all.impacted.is_empty(), "{all:?}");
        let team_b = ask(&only(&["team-b"]));
        assert!(!team_b.found && team_b.impacted.is_empty() && team_b.agents.is_empty());
        let bad_ns = blast_radius(
            s,
            &Visibility::All,
            BlastRadiusInput {
                target: "x".into(),
                namespace: Some("Not_A_Namespace".into()),
            },
        );
        assert!(matches!(bad_ns, Err(Refusal::Invalid(_))));
    });
}

#[test]
fn estate_rows_are_cut_to_the_namespaces_the_caller_may_read() {
    let e = generated();
    let mine = namespace(0);
    let vis = only(&[&mine]);
    with(&e, &mine, |s| {
        let all = drift(s, &Visibility::All, NoInput {}).unwrap().answer.rows;
        let cut = drift(s, &vis, NoInput {}).unwrap().answer.rows;
        assert!(!all.is_empty(), "the generated estate has drift");
        assert!(cut.len() < all.len(), "some drift is in other namespaces");
        for r in &cut {
            assert!(
                vis.can_read(&r.object.key.namespace) && vis.can_read_ref(&r.tool),
                "{r:?}"
            );
        }
        assert_eq!(
            cut,
            all.iter()
                .filter(|r| r.object.key.namespace == mine)
                .filter(|r| r.tool.starts_with(&format!("{mine}/")))
                .cloned()
                .collect::<Vec<_>>()
        );

        let br = blast_radius(
            s,
            &vis,
            BlastRadiusInput {
                target: "file:///**".into(),
                namespace: None,
            },
        )
        .unwrap()
        .answer;
        let every = blast_radius(
            s,
            &Visibility::All,
            BlastRadiusInput {
                target: "file:///**".into(),
                namespace: None,
            },
        )
        .unwrap()
        .answer;
        assert!(every.agents.len() > br.agents.len(), "{every:?}");
        let named = br
            .agents
            .iter()
            .chain(&br.policies)
            .chain(br.impacted.iter().map(|t| &t.tool))
            .chain(br.impacted.iter().flat_map(|t| &t.agents));
        for n in named {
            assert!(n.starts_with(&format!("{mine}/")), "{n} leaked");
        }
    });
}

#[test]
fn the_audit_report_needs_every_namespace() {
    let e = example("cross-server");
    with(&e, "default", |s| {
        let r = audit_report(s, &Visibility::All, NoInput {}).unwrap();
        assert_eq!(r.answer, s.eval.audit_report());
        let refused = audit_report(s, &only(&["ci"]), NoInput {}).unwrap_err();
        assert!(matches!(refused, Refusal::Forbidden(_)), "{refused:?}");
    });
}

struct Cluster(Published);

impl PublishedBundles for Cluster {
    fn published(&self, agent: &ObjKey) -> Option<Published> {
        (agent.to_string() == "ci/ci-bot").then(|| self.0.clone())
    }
}

#[test]
fn bundle_identity_is_the_compiled_bundle_and_what_was_published() {
    let e = example("cross-server");
    let eval = e.evaluator(now());
    let compiled = eval.bundle(&ObjKey::new("ci", "ci-bot")).unwrap();
    let published = |sha: &str| Published {
        config_map: "ci-bot-mcpgov-bundle".into(),
        sha256: sha.into(),
        revision: 4,
        instance: "abc".into(),
        generation: 9,
    };
    for (sha, fresh) in [(compiled.sha256.as_str(), true), ("sha256:00", false)] {
        let cluster = Cluster(published(sha));
        let s = Snapshot {
            eval: &eval,
            graph: GraphId::of_inputs(&e, false),
            namespace: "default",
            published: Some(&cluster),
        };
        let input = BundleIdentityInput {
            agent: "ci-bot".into(),
        };
        let b = bundle_identity(&s, &Visibility::All, input).unwrap().answer;
        assert_eq!(b.sha256, compiled.sha256);
        assert_eq!(b.bytes, compiled.bytes.len());
        assert_eq!(b.governance_digest, compiled.governance_digest);
        assert_eq!(b.published, Some(published(sha)));
        assert_eq!(b.up_to_date, Some(fresh));
    }
    with(&e, "default", |s| {
        let input = BundleIdentityInput {
            agent: "ci-bot".into(),
        };
        let b = bundle_identity(s, &Visibility::All, input).unwrap().answer;
        assert_eq!((b.published, b.up_to_date), (None, None));
    });
}

/// Through the registry: schemas are objects, answers validate against the declared
/// output schema, bad arguments are refused with the question's name.
#[test]
fn every_registered_answer_matches_its_output_schema() {
    let e = example("cross-server");
    let args: &[(&str, Value)] = &[
        (
            "check_access",
            serde_json::json!({"agent": "ci-bot", "tool": "git_show"}),
        ),
        (
            "check_access",
            serde_json::json!({"agent": "ghost", "tool": "x"}),
        ),
        (
            "explain",
            serde_json::json!({"agent": "ci-bot", "tool": "read_file"}),
        ),
        (
            "eligible_tools",
            serde_json::json!({"agent": "ci-bot", "profile": "review"}),
        ),
        (
            "unsafe_tools",
            serde_json::json!({"agent": "ci-bot", "all": true}),
        ),
        (
            "blast_radius",
            serde_json::json!({"target": "file:///srv/app/.env"}),
        ),
        (
            "blast_radius",
            serde_json::json!({"target": "ci/secrets-deny"}),
        ),
        ("drift", Value::Null),
        ("audit_report", serde_json::json!({})),
        ("bundle_identity", serde_json::json!({"agent": "ops-agent"})),
    ];
    let asked: BTreeSet<&str> = args.iter().map(|(n, _)| *n).collect();
    assert_eq!(asked.len(), QUESTIONS.len(), "every question is exercised");
    with(&e, "default", |s| {
        for q in QUESTIONS {
            assert_eq!((q.input_schema)()["type"], "object", "{}", q.name);
            assert_eq!((q.output_schema)()["type"], "object", "{}", q.name);
        }
        for (name, a) in args {
            let q = find(name).unwrap();
            let answer = (q.answer)(s, &Visibility::All, a.clone()).unwrap();
            let schema = Value::Object((q.output_schema)());
            let validator = jsonschema::validator_for(&schema).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&answer)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{name}: {errors:?}\n{answer}");
            assert!(answer["graph"]["instance"].is_string(), "{name}");

            // The same arguments plus one it does not know: refused, not ignored.
            let mut bad = a.as_object().cloned().unwrap_or_default();
            bad.insert("surprise".into(), Value::Bool(true));
            match (q.answer)(s, &Visibility::All, Value::Object(bad)) {
                Err(Refusal::Invalid(m)) => {
                    assert!(m.starts_with(name) && m.contains("surprise"), "{m}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        let wrong_type =
            (find("check_access").unwrap().answer)(s, &Visibility::All, serde_json::json!([1]));
        assert!(matches!(wrong_type, Err(Refusal::Invalid(_))));
        let bad_profile = (find("explain").unwrap().answer)(
            s,
            &Visibility::All,
            serde_json::json!({"agent": "ci-bot", "tool": "x", "profile": "lenient"}),
        );
        assert!(matches!(bad_profile, Err(Refusal::Invalid(_))));
    });
}

#[test]
fn references_name_their_namespace() {
    for (r, ns) in [
        ("ci/ci-bot", Some("ci")),
        ("ci/git::git_show", Some("ci")),
        ("Grant team-a/g", Some("team-a")),
        ("agent:team-a/bot", Some("team-a")),
        ("policy:mcpgov-system/p", Some("mcpgov-system")),
        ("file:///srv/app/**", None),
        ("postgres://db/x", None),
        ("bare", None),
    ] {
        assert_eq!(namespace_of(r), ns, "{r}");
    }
}
