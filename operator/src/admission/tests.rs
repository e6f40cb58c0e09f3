use super::*;
use serde_json::{Value, json};

fn ctx() -> Ctx {
    Ctx {
        client: None,
        governance_namespace: "mcpgov-system".into(),
        mirror: None,
        what_ifs: Arc::new(tokio::sync::Semaphore::new(1)),
    }
}

fn now() -> jiff::Timestamp {
    "2026-06-01T00:00:00Z".parse().unwrap()
}

fn review_of(kind: &str, group: &str, operation: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": group, "version": "v1alpha1", "kind": kind},
            "resource": {"group": group, "version": "v1alpha1", "resource": "grants"},
            "namespace": "ci",
            "name": "g",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
        }
    }))
    .unwrap()
}

fn grant(extra: Value) -> Value {
    let mut spec = json!({"agent": "ci-bot", "tools": ["git::git_show"]});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "mcpgov.io/v1alpha1",
        "kind": "Grant",
        "metadata": {"name": "g", "namespace": "ci"},
        "spec": spec,
    })
}

fn answer(body: &[u8]) -> Value {
    serde_json::to_value(review(&ctx(), body, now()).unwrap().0).unwrap()
}

#[test]
fn a_clean_grant_is_allowed_without_warnings() {
    let out = answer(&review_of("Grant", "mcpgov.io", "CREATE", grant(json!({}))));
    assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(out["kind"], "AdmissionReview");
    assert_eq!(out["response"]["uid"], "u-1");
    assert_eq!(out["response"]["allowed"], true);
    assert!(out["response"].get("warnings").is_none(), "{out}");
}

#[test]
fn a_uri_the_schema_admits_but_cannot_canonicalise_is_denied_with_the_compilers_words() {
    let ex = json!({"expectedExceptions": [{
        "policy": "secrets-deny", "resource": "file:///srv/%zz", "reason": "r"}]});
    let out = answer(&review_of("Grant", "mcpgov.io", "CREATE", grant(ex)));
    assert_eq!(out["response"]["allowed"], false, "{out}");
    assert_eq!(out["response"]["status"]["code"], 422);
    let m = out["response"]["status"]["message"].as_str().unwrap();
    // The same message `mcpgov check` prints for this object.
    let engine = mcpgov_engine::Engine::from_snapshot(
        Default::default(),
        [crate::manifest::load_str(
            &grant(json!({"expectedExceptions": [{
                "policy": "secrets-deny", "resource": "file:///srv/%zz", "reason": "r"}]}))
            .to_string(),
            std::path::Path::new("x"),
        )
        .unwrap()
        .objects[0]
            .resource
            .to_engine("ci")],
    );
    let f = engine.compile_findings_of(
        mcpgov_engine::Kind::Grant,
        &mcpgov_engine::ObjKey::new("ci", "g"),
    );
    assert_eq!(f.len(), 1);
    assert!(m.contains(&f[0].message), "{m} / {}", f[0].message);
    assert!(m.contains("Grant ci/g"), "{m}");
}

#[test]
fn too_many_wildcards_are_denied_as_the_offline_schema_says() {
    let glob = format!("file:///{}", "*/".repeat(17));
    let ex = json!({"expectedExceptions": [{"policy": "p", "resource": glob, "reason": "r"}]});
    let out = answer(&review_of("Grant", "mcpgov.io", "UPDATE", grant(ex)));
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let m = out["response"]["status"]["message"].as_str().unwrap();
    // The schema's pattern carries the limit; the offline validator says which field.
    assert!(m.contains("spec.expectedExceptions[0].resource"), "{m}");
    assert!(m.contains("does not match"), "{m}");
}

#[test]
fn an_already_expired_exception_is_denied_a_future_one_is_not() {
    let ex = |t: &str| json!({"expectedExceptions": [{"policy": "secrets-deny", "reason": "r", "expires": t}]});
    let out = answer(&review_of(
        "Grant",
        "mcpgov.io",
        "CREATE",
        grant(ex("2026-05-31T23:59:59Z")),
    ));
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let m = out["response"]["status"]["message"].as_str().unwrap();
    assert!(
        m.contains("expected exception to secrets-deny expired at 2026-05-31T23:59:59Z"),
        "{m}"
    );
    let out = answer(&review_of(
        "Grant",
        "mcpgov.io",
        "CREATE",
        grant(ex("2026-06-01T00:00:01Z")),
    ));
    assert_eq!(out["response"]["allowed"], true, "{out}");
}

#[test]
fn schema_problems_carry_the_offline_validators_messages() {
    let mut g = grant(json!({}));
    g["spec"]["bogus"] = json!(1);
    let out = answer(&review_of("Grant", "mcpgov.io", "CREATE", g.clone()));
    assert_eq!(out["response"]["allowed"], false);
    let m = out["response"]["status"]["message"].as_str().unwrap();
    let offline = crate::manifest::load_str(&g.to_string(), std::path::Path::new("x"))
        .unwrap_err()
        .0;
    assert!(m.contains(&offline[0].message), "{m}");
}

#[test]
fn an_agent_whose_default_bundle_name_is_too_long_is_denied() {
    let name = "a".repeat(240);
    let agent = json!({
        "apiVersion": "mcpgov.io/v1alpha1", "kind": "Agent",
        "metadata": {"name": name, "namespace": "ci"}, "spec": {}});
    let out = answer(&review_of("Agent", "mcpgov.io", "CREATE", agent));
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let m = out["response"]["status"]["message"].as_str().unwrap();
    assert!(m.contains("bundle ConfigMap name"), "{m}");
}

#[test]
fn another_kind_is_allowed_with_a_warning() {
    let out = answer(&review_of(
        "Policy",
        "kyverno.io",
        "CREATE",
        json!({"kind": "Policy"}),
    ));
    assert_eq!(out["response"]["allowed"], true);
    let w = out["response"]["warnings"][0].as_str().unwrap();
    assert!(w.contains("not an mcpgov.io kind"), "{w}");
}

#[test]
fn a_delete_is_allowed() {
    let out = answer(&review_of("Grant", "mcpgov.io", "DELETE", Value::Null));
    assert_eq!(out["response"]["allowed"], true);
}

#[test]
fn only_a_servers_delete_is_weighed_and_none_is_refused() {
    let body = review_of("MCPServer", "mcpgov.io", "DELETE", Value::Null);
    let (out, candidate) = review(&ctx(), &body, now()).unwrap();
    assert!(out.response.allowed);
    let c = candidate.expect("a server's deletion is weighed");
    assert!(matches!(c.change, Weigh::DeleteServer(ref k) if k.to_string() == "ci/g"));
    let body = review_of("Policy", "mcpgov.io", "DELETE", Value::Null);
    assert!(review(&ctx(), &body, now()).unwrap().1.is_none());
}

#[test]
fn garbage_and_other_envelopes_are_refused_not_crashed_on() {
    for body in [
        &b"not json"[..],
        br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}"#,
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
        br#"[1,2,3]"#,
    ] {
        assert!(review(&ctx(), body, now()).is_err());
    }
    // Nesting past serde_json's recursion limit is an error, not a stack overflow.
    let deep = format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"x","object":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(review(&ctx(), deep.as_bytes(), now()).is_err());
}

#[test]
fn many_problems_make_one_bounded_message() {
    let problems: Vec<String> = (0..50)
        .map(|i| format!("p{i} {}", "x".repeat(1000)))
        .collect();
    let m = deny::message(&problems);
    assert!(m.len() < deny::SHOWN * 620 + 100, "{}", m.len());
    assert!(m.ends_with("… and 40 more"), "{m}");
}

#[test]
fn a_generated_certificate_serves_tls_under_its_ca() {
    let m = cert::generate(&["127.0.0.1".into(), "mcpgov.x.svc".into()], now()).unwrap();
    assert!(m.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_ne!(m.ca_pem, m.cert_pem);
    tls::server_config(&m.cert_pem, &m.key_pem).unwrap();
    // A key that does not belong to the certificate is refused.
    let other = cert::generate(&["127.0.0.1".into()], now()).unwrap();
    assert!(tls::server_config(&m.cert_pem, &other.key_pem).is_err());
}

mod consequences_on_a_mirror {
    use super::super::consequences::compute;
    use super::super::mirror::{Change, State, apply};
    use mcpgov_engine::{Engine, Object};

    const ESTATE: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: git, namespace: ci}
spec:
  endpoint: {url: "http://git.ci.svc:8080/mcp"}
  dataAccess:
    - {tool: git_show, resource: "file:///srv/app/**", mode: Reads}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: secrets-deny, namespace: ci}
spec:
  effect: Deny
  governs: {resources: [{uri: "file:///srv/app/**"}]}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: ci-bot, namespace: ci}
spec: {}
"#;

    const GRANT: &str = r#"
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: ci-bot-git, namespace: ci}
spec: {agent: ci-bot, tools: ["git::git_show"]}
"#;

    fn objects(yaml: &str) -> Vec<Object> {
        crate::manifest::load_str(yaml, std::path::Path::new("t"))
            .unwrap()
            .objects
            .iter()
            .map(|l| l.resource.to_engine("ci"))
            .collect()
    }

    fn state(enforce: bool) -> State {
        let mut s = State::new(Engine::new(Default::default()));
        for o in objects(ESTATE) {
            apply(&mut s, Change::Apply(Box::new(o)));
        }
        if enforce {
            let key = mcpgov_engine::ObjKey::new("ci", "secrets-deny");
            apply(&mut s, Change::Enforce(key, true));
        }
        s
    }

    fn now() -> jiff::Timestamp {
        "2026-06-01T00:00:00Z".parse().unwrap()
    }

    fn findings(s: &State) -> String {
        serde_json::to_string(&s.engine.evaluator(now()).check()).unwrap()
    }

    #[test]
    fn a_grant_that_creates_a_violation_is_warned_about_and_the_mirror_is_put_back() {
        let mut s = state(false);
        let before = findings(&s);
        let c = compute(&mut s, objects(GRANT).remove(0), "ci", now());
        assert!(c.refusals.is_empty(), "{c:?}");
        assert_eq!(c.warnings.len(), 1, "{c:?}");
        let w = &c.warnings[0];
        assert!(
            w.contains("Grant ci/ci-bot-git makes ci/ci-bot violate ci/secrets-deny through"),
            "{w}"
        );
        assert!(w.contains("git_show"), "{w}");
        assert_eq!(findings(&s), before, "the mirror is as it was");
        assert!(
            s.engine
                .grant(&mcpgov_engine::ObjKey::new("ci", "ci-bot-git"))
                .is_none()
        );
    }

    #[test]
    fn from_another_namespace_the_violation_is_counted_not_named() {
        let mut s = state(false);
        let c = compute(&mut s, objects(GRANT).remove(0), "other", now());
        assert_eq!(c.warnings.len(), 1, "{c:?}");
        // The object itself is the requester's; the agent and Policy it reaches are not.
        assert!(!c.warnings[0].contains("ci-bot violate"), "{c:?}");
        assert!(!c.warnings[0].contains("secrets-deny"), "{c:?}");
        assert!(c.warnings[0].contains("1 more violation"), "{c:?}");
    }

    #[test]
    fn an_enforce_policy_refuses_until_an_exception_is_declared() {
        let mut s = state(true);
        let c = compute(&mut s, objects(GRANT).remove(0), "ci", now());
        assert_eq!(c.refusals.len(), 1, "{c:?}");
        assert!(c.refusals[0].contains("(admission: Enforce)"), "{c:?}");
        assert!(c.refusals[0].contains("git_show"), "{c:?}");
        let excused = format!(
            "{GRANT}  expectedExceptions: [{{policy: secrets-deny, reason: \"release audit\"}}]\n"
        )
        .replace(
            "spec: {agent: ci-bot, tools: [\"git::git_show\"]}",
            "spec:\n  agent: ci-bot\n  tools: [\"git::git_show\"]",
        );
        let c = compute(&mut s, objects(&excused).remove(0), "ci", now());
        assert!(c.refusals.is_empty() && c.warnings.is_empty(), "{c:?}");
    }

    #[test]
    fn a_policy_change_is_warned_about_never_refused() {
        let mut s = state(true);
        for o in objects(GRANT) {
            apply(&mut s, Change::Apply(Box::new(o)));
        }
        // Widen nothing, but narrow the Policy away and back: the way back creates the
        // violation again, from a Policy change.
        let narrowed = ESTATE
            .split("---")
            .nth(1)
            .unwrap()
            .replace("/srv/app/**", "/srv/other/**");
        apply(
            &mut s,
            Change::Apply(Box::new(objects(&narrowed).remove(0))),
        );
        let policy = objects(ESTATE.split("---").nth(1).unwrap()).remove(0);
        let c = compute(&mut s, policy, "ci", now());
        assert!(c.refusals.is_empty(), "{c:?}");
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("violate ci/secrets-deny")),
            "{c:?}"
        );
        assert!(
            c.warnings.iter().any(|w| w.contains("can move 1 agent")),
            "{c:?}"
        );
    }

    #[test]
    fn an_unchanged_object_has_no_consequences() {
        let mut s = state(true);
        let server = objects(ESTATE).remove(0);
        let c = compute(&mut s, server, "ci", now());
        assert_eq!(c, Default::default());
    }
}

mod drift_on_a_mirror {
    use super::super::consequences::compute;
    use super::super::mirror::{Change, State, apply};
    use mcpgov_engine::{Engine, Object};

    const D: &str = "sha256:5555555555555555555555555555555555555555555555555555555555555555";

    /// A crawled server in ci shared with web, and a Grant of its tool on each side.
    fn estate(server_spec: &str) -> String {
        format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: git, namespace: ci}}
spec:
  endpoint: {{url: "http://git.ci.svc:8080/mcp"}}
{server_spec}
status:
  lastSuccessfulCrawlTime: "2026-05-01T00:00:00Z"
  tools:
    - {{name: git_show, contractDigest: "{D}"}}
    - {{name: git_log, contractDigest: "{D}"}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: ci-bot, namespace: ci}}
spec: {{}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: ci-bot-git, namespace: ci}}
spec: {{agent: ci-bot, tools: ["git::git_show"]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: web-bot, namespace: web}}
spec: {{}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: web-bot-git, namespace: web}}
spec: {{agent: web-bot, tools: ["ci/git::git_log"]}}
"#
        )
    }

    const SHARED: &str = "  sharing: {namespaces: [web]}";

    fn objects(yaml: &str) -> Vec<Object> {
        crate::manifest::load_str(yaml, std::path::Path::new("t"))
            .unwrap()
            .objects
            .iter()
            .map(|l| l.resource.to_engine("ci"))
            .collect()
    }

    fn state() -> State {
        let mut s = State::new(Engine::new(Default::default()));
        for o in objects(&estate(SHARED)) {
            apply(&mut s, Change::Apply(Box::new(o)));
        }
        s
    }

    fn now() -> jiff::Timestamp {
        "2026-06-01T00:00:00Z".parse().unwrap()
    }

    fn findings(s: &State) -> String {
        serde_json::to_string(&s.engine.evaluator(now()).check()).unwrap()
    }

    /// The server as its author would apply it: the spec only, no status.
    fn server(spec: &str) -> Object {
        let yaml = estate(spec);
        let first = yaml.split("---").next().unwrap();
        let (spec_part, _) = first.split_once("status:").unwrap();
        objects(spec_part).remove(0)
    }

    fn drift_warnings(c: &super::super::consequences::Consequences) -> Vec<&String> {
        c.warnings.iter().filter(|w| w.contains("drift")).collect()
    }

    #[test]
    fn sharing_narrowed_counts_the_other_namespaces_grant_without_naming_it() {
        let mut s = state();
        let before = findings(&s);
        let c = compute(&mut s, server(""), "ci", now());
        let w = drift_warnings(&c);
        assert_eq!(w.len(), 1, "{c:?}");
        assert!(
            w[0].contains("MCPServer ci/git: its tools are granted by 1 Grant(s) that would drift"),
            "{w:?}"
        );
        assert!(w[0].contains("1 in other namespaces"), "{w:?}");
        assert!(
            !w[0].contains("web"),
            "another team's Grant is never named: {w:?}"
        );
        assert_eq!(findings(&s), before, "the mirror is put back");
    }

    #[test]
    fn pinning_contracts_names_the_own_grant_and_why() {
        let mut s = state();
        let spec = format!(
            "{SHARED}\n  contracts:\n    mode: Pinned\n    approved: [{{tool: git_log, digest: \"{D}\"}}]"
        );
        let c = compute(&mut s, server(&spec), "ci", now());
        let w = drift_warnings(&c);
        assert_eq!(w.len(), 1, "{c:?}");
        assert!(w[0].contains("by 1 Grant(s)"), "{w:?}");
        assert!(
            w[0].contains("ci/ci-bot-git (ci/git::git_show has no approved contract)"),
            "{w:?}"
        );
        // git_log is approved with the crawled digest: web's Grant keeps its tool.
        assert!(!w[0].contains("other namespaces"), "{w:?}");
        // An approval that names another digest: the contract "changed".
        let spec = format!(
            "  contracts:\n    mode: Pinned\n    approved:\n      - {{tool: git_show, digest: \"sha256:{}\"}}\n      - {{tool: git_log, digest: \"{D}\"}}",
            "0".repeat(64)
        );
        let c = compute(&mut s, server(&spec), "web", now());
        let w = drift_warnings(&c);
        assert_eq!(w.len(), 1, "{c:?}");
        // Seen from web: its own Grant (sharing gone) is named, ci's counted.
        assert!(w[0].contains("by 2 Grant(s)"), "{w:?}");
        assert!(
            w[0].contains("web/web-bot-git (MCPServer ci/git does not share"),
            "{w:?}"
        );
        assert!(w[0].contains("1 in other namespaces"), "{w:?}");
        assert!(!w[0].contains("ci-bot-git"), "{w:?}");
    }

    #[test]
    fn a_server_change_that_takes_nothing_away_says_nothing_of_drift() {
        let mut s = state();
        let spec = format!(
            "{SHARED}\n  dataAccess:\n    - {{tool: git_show, resource: \"file:///srv/**\", mode: Reads}}"
        );
        let c = compute(&mut s, server(&spec), "ci", now());
        assert!(drift_warnings(&c).is_empty(), "{c:?}");
    }

    fn grant(tools: &str) -> Object {
        objects(&format!(
            "apiVersion: mcpgov.io/v1alpha1\nkind: Grant\nmetadata: {{name: g2, namespace: ci}}\nspec: {{agent: ci-bot, tools: [{tools}]}}\n"
        ))
        .remove(0)
    }

    #[test]
    fn a_grant_naming_tools_that_do_not_exist_drifts_at_birth() {
        let mut s = state();
        let before = findings(&s);
        let c = compute(
            &mut s,
            grant(r#""git::git_show", "git::git_blame", "nosuch::x", "zzz_*""#),
            "ci",
            now(),
        );
        let w: Vec<&String> = c
            .warnings
            .iter()
            .filter(|w| w.contains("Grant ci/g2 names"))
            .collect();
        assert_eq!(w.len(), 3, "{c:?}");
        assert!(
            w[0].contains(r#"names "git::git_blame": ci/git::git_blame is not served"#),
            "{w:?}"
        );
        assert!(
            w[1].contains(r#"names "nosuch::x": ci/nosuch::x is not served"#),
            "{w:?}"
        );
        assert!(
            w[2].contains(r#""zzz_*" matches no tool its namespace can see"#),
            "{w:?}"
        );
        assert_eq!(findings(&s), before);
    }

    #[test]
    fn deleting_a_server_names_the_own_grants_it_leaves_drifting_and_counts_the_rest() {
        use super::super::consequences::compute_delete;
        let mut s = state();
        let before = findings(&s);
        let git = mcpgov_engine::ObjKey::new("ci", "git");
        let c = compute_delete(&mut s, &git, "ci", now());
        assert!(c.refusals.is_empty(), "{c:?}");
        assert_eq!(c.warnings.len(), 1, "{c:?}");
        let w = &c.warnings[0];
        assert!(
            w.starts_with("mcpgov: deleting MCPServer ci/git: its tools are granted by 2 Grant(s) that would drift: ci/ci-bot-git (ci/git::git_show is not served)"),
            "{w}"
        );
        assert!(
            w.contains("1 in other namespaces") && !w.contains("web"),
            "{w}"
        );
        assert_eq!(findings(&s), before, "the mirror is put back");
        // No such server: nothing to say.
        let c = compute_delete(
            &mut s,
            &mcpgov_engine::ObjKey::new("ci", "nope"),
            "ci",
            now(),
        );
        assert_eq!(c, Default::default());
    }

    #[test]
    fn deleting_a_server_before_its_first_crawl_still_takes_its_tools_away() {
        use super::super::consequences::compute_delete;
        let mut s = state();
        for o in objects(
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {name: fresh, namespace: ci}\nspec:\n  endpoint: {url: \"http://fresh.ci.svc/mcp\"}\n---\napiVersion: mcpgov.io/v1alpha1\nkind: Grant\nmetadata: {name: g3, namespace: ci}\nspec: {agent: ci-bot, tools: [\"fresh::anything\"]}\n",
        ) {
            apply(&mut s, Change::Apply(Box::new(o)));
        }
        let fresh = mcpgov_engine::ObjKey::new("ci", "fresh");
        let c = compute_delete(&mut s, &fresh, "ci", now());
        assert_eq!(c.warnings.len(), 1, "{c:?}");
        assert!(
            c.warnings[0].contains("ci/g3 (ci/fresh::anything is not served)"),
            "{c:?}"
        );
    }

    #[test]
    fn a_tool_of_a_server_not_crawled_yet_is_not_drift_at_birth() {
        let mut s = state();
        let uncrawled = objects(
            "apiVersion: mcpgov.io/v1alpha1\nkind: MCPServer\nmetadata: {name: fresh, namespace: ci}\nspec:\n  endpoint: {url: \"http://fresh.ci.svc/mcp\"}\n",
        )
        .remove(0);
        apply(&mut s, Change::Apply(Box::new(uncrawled)));
        let c = compute(&mut s, grant(r#""fresh::anything""#), "ci", now());
        assert!(c.warnings.is_empty(), "{c:?}");
    }
}

mod bundle_name_clash {
    use super::super::mirror::{Change, Mirror, State, apply};
    use super::*;
    use mcpgov_engine::{Engine, ObjKey};
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    fn agent(name: &str, config_map: Option<&str>) -> Value {
        let spec = match config_map {
            Some(c) => json!({"bundle": {"configMapName": c}}),
            None => json!({}),
        };
        json!({
            "apiVersion": "mcpgov.io/v1alpha1",
            "kind": "Agent",
            "metadata": {"name": name, "namespace": "ci"},
            "spec": spec,
        })
    }

    /// A ready mirror holding Agent ci/first with its bundle in ConfigMap `shared`.
    fn ctx_with_first() -> Ctx {
        let mut s = State::new(Engine::new(Default::default()));
        let first = ObjKey::new("ci", "first");
        apply(
            &mut s,
            Change::Apply(Box::new(mcpgov_engine::Object::Agent(
                mcpgov_engine::Agent {
                    key: first.clone(),
                    profile: Default::default(),
                    description: None,
                },
            ))),
        );
        apply(&mut s, Change::BundleName(first, "shared".into()));
        Ctx {
            mirror: Some(Mirror {
                state: Arc::new(Mutex::new(s)),
                ready: Arc::new(AtomicBool::new(true)),
                bundles: Default::default(),
            }),
            ..ctx()
        }
    }

    async fn answer_with(ctx: &Ctx, object: Value) -> review::Response {
        let body = review_of("Agent", "mcpgov.io", "CREATE", object);
        let (mut out, candidate) = review(ctx, &body, now()).unwrap();
        if let Some(c) = candidate {
            consider(ctx, &mut out.response, c, now()).await;
        }
        out.response
    }

    #[tokio::test]
    async fn another_agents_bundle_name_is_denied_with_the_checks_words() {
        let ctx = ctx_with_first();
        let r = answer_with(&ctx, agent("second", Some("shared"))).await;
        assert!(!r.allowed);
        let status = r.status.expect("a denial says why");
        assert_eq!(status.code, 422);
        assert_eq!(
            status.message,
            format!(
                "mcpgov: Agent ci/second: {}",
                clash::shared_message("shared", &ObjKey::new("ci", "first"))
            )
        );
        // The same Agent updated keeps its own name; another name passes.
        assert!(
            answer_with(&ctx, agent("first", Some("shared")))
                .await
                .allowed
        );
        assert!(answer_with(&ctx, agent("second", None)).await.allowed);
    }

    #[tokio::test]
    async fn a_default_name_clashes_as_a_set_one_does() {
        let ctx = ctx_with_first();
        // Agent `shared` would default to `shared-mcpgov-bundle`; make first hold it.
        {
            let m = ctx.mirror.as_ref().unwrap();
            let mut s = m.state.lock().unwrap();
            apply(
                &mut s,
                Change::BundleName(ObjKey::new("ci", "first"), "x-mcpgov-bundle".into()),
            );
        }
        let r = answer_with(&ctx, agent("x", None)).await;
        assert!(!r.allowed, "{r:?}");
        // A deleted Agent frees its name.
        {
            let m = ctx.mirror.as_ref().unwrap();
            let mut s = m.state.lock().unwrap();
            apply(
                &mut s,
                Change::Delete(mcpgov_engine::Kind::Agent, ObjKey::new("ci", "first")),
            );
        }
        assert!(answer_with(&ctx, agent("x", None)).await.allowed);
    }

    #[test]
    fn among_pairs_each_clashing_agent_with_another_never_across_namespaces() {
        let names = std::collections::BTreeMap::from([
            (ObjKey::new("ci", "a"), "n".to_string()),
            (ObjKey::new("ci", "b"), "n".to_string()),
            (ObjKey::new("ci", "c"), "m".to_string()),
            (ObjKey::new("web", "a"), "n".to_string()),
        ]);
        let got: Vec<String> = clash::among(&names)
            .into_iter()
            .map(|(a, m)| format!("{a}: {m}"))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("ci/a: ") && got[0].contains("Agent ci/b"));
        assert!(got[1].starts_with("ci/b: ") && got[1].contains("Agent ci/a"));
    }
}

mod renewal {
    use super::*;
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::client::danger::ServerCertVerifier;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    fn cfg() -> cert::CertConfig {
        cert::CertConfig {
            namespace: "mcpgov-system".into(),
            secret: "mcpgov-admission-tls".into(),
            hosts: vec!["127.0.0.1".into()],
            webhook_config: None,
        }
    }

    fn days(n: i64) -> jiff::SignedDuration {
        jiff::SignedDuration::from_hours(24 * n)
    }

    /// Whether a client trusting `bundle` (as the API server does) accepts `leaf_pem`.
    fn trusted(bundle: &str, leaf_pem: &str) -> bool {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let leaf = CertificateDer::from_pem_slice(leaf_pem.as_bytes()).unwrap();
        verifier
            .verify_server_cert(
                &leaf,
                &[],
                &ServerName::try_from("127.0.0.1").unwrap(),
                &[],
                UnixTime::now(),
            )
            .is_ok()
    }

    #[test]
    fn a_renewal_keeps_the_old_ca_in_the_bundle_so_neither_certificate_is_refused() {
        let now = jiff::Timestamp::now();
        // Made 340 days ago: valid 25 more days, due for renewal (30 days before).
        let made = now.checked_sub(days(340)).unwrap();
        let old = cert::generate(&cfg().hosts, made).unwrap();
        let old_secret = cert::secret_of(&cfg(), &old, made);
        assert!(
            cert::usable(&old_secret, &cfg().hosts, now).is_none(),
            "due"
        );
        let new = cert::renew(Some(&old_secret), &cfg().hosts, now).unwrap();
        assert_ne!(new.ca_pem, old.ca_pem);
        let bundle = new.ca_bundle();
        // During the overlap the API server trusts both the replicas that swapped and
        // those still serving the old certificate.
        assert!(trusted(&bundle, &new.cert_pem));
        assert!(trusted(&bundle, &old.cert_pem));
        // In one step (the new CA alone) the old certificate would be refused.
        assert!(!trusted(&new.ca_pem, &old.cert_pem));
        // The new Secret carries the old CA to every replica, as read back.
        let written = cert::secret_of(&cfg(), &new, now);
        let read = cert::usable(&written, &cfg().hosts, now).expect("fresh, usable");
        assert_eq!(read, new);
        assert_eq!(read.ca_bundle(), bundle);
    }

    #[test]
    fn the_old_ca_leaves_the_bundle_once_its_certificates_have_ended() {
        let now = jiff::Timestamp::now();
        let made = now.checked_sub(days(340)).unwrap();
        let old = cert::generate(&cfg().hosts, made).unwrap();
        let new = cert::renew(
            Some(&cert::secret_of(&cfg(), &old, made)),
            &cfg().hosts,
            now,
        )
        .unwrap();
        let written = cert::secret_of(&cfg(), &new, now);
        let later = now.checked_add(days(40)).unwrap();
        let read = cert::usable(&written, &cfg().hosts, later).unwrap();
        assert_eq!(read.previous, None);
        assert_eq!(read.ca_bundle(), new.ca_pem);
    }

    #[test]
    fn a_first_certificate_or_an_expired_one_has_no_previous_ca() {
        let now = jiff::Timestamp::now();
        assert_eq!(cert::renew(None, &cfg().hosts, now).unwrap().previous, None);
        let made = now.checked_sub(days(400)).unwrap();
        let dead = cert::generate(&cfg().hosts, made).unwrap();
        let secret = cert::secret_of(&cfg(), &dead, made);
        assert_eq!(
            cert::renew(Some(&secret), &cfg().hosts, now)
                .unwrap()
                .previous,
            None
        );
    }
}
