use super::*;
use crate::bundle::{GuardArgument, GuardExcept, GuardGoverned};
use proptest::prelude::*;
use serde_json::json;

fn guard(except: Vec<GuardExcept>) -> CompiledGuard {
    CompiledGuard::compile(&BundleGuard {
        arguments: vec![GuardArgument {
            declared: vec!["file:///srv/**".into()],
            pointer: "/path".into(),
            template: "file://{path}".into(),
        }],
        governed: vec![GuardGoverned {
            except,
            pattern: "file:///**/.env".into(),
            policy: "gov/no-dotenv".into(),
        }],
    })
    .unwrap()
}

fn reason(g: &CompiledGuard, path: &str) -> Option<BlockReason> {
    g.check(&json!({ "path": path }), 0).err().map(|b| b.reason)
}

#[test]
fn bindings_parse_and_refuse() {
    for (p, t) in [
        ("/path", "file://{path}"),
        ("/opts/p", "file:///srv/{p}"),
        ("/p", "file://{p}"),
        ("/url", "{url}"),
        ("/id", "urn:doc:{id}"),
        ("/a~1b", "https://api.example/items/{id}.json"),
    ] {
        ArgumentBinding::parse(p, t).unwrap_or_else(|e| panic!("{p} {t}: {e}"));
    }
    for (p, t) in [
        ("path", "file://{path}"),
        ("/", "file://{path}"),
        ("/a~2", "file://{path}"),
        ("/p", "file://"),
        ("/p", "file://{a}{b}"),
        ("/p", "file://}p{"),
        ("/p", "file://{}"),
        ("/p", "file://{a b}"),
        ("/p", "https://{host}/x"),
        ("/p", "https://{host}"),
        ("/p", "https://h/x{p}"),
        ("/p", "{p}/x"),
        ("/p", "file://{p}?q"),
        ("/p", "file:///srv/*/{p}"),
        ("/p", "no-scheme/{p}"),
    ] {
        assert!(ArgumentBinding::parse(p, t).is_err(), "{p} {t}");
    }
    assert_eq!(pointer_of_name("a/b~c"), "/a~1b~0c");
}

#[test]
fn allowed_paths_pass_with_their_uris() {
    let g = guard(vec![]);
    let r = g.check(&json!({"path": "/srv/data/a.txt"}), 0).unwrap();
    assert_eq!(r[0].argument, "/path");
    assert_eq!(
        r[0].uris,
        ["file:///srv/data/a.txt", "file:///srv/data/a.txt/"]
    );
    for ok in [
        "/srv/data/notes.md",
        "/srv/./data/x",
        "/srv/data/../other/x",
        "/srv/café.txt",
        "/srv/my file.txt",
        "/srv/a%7Eb",
        "/srv/.envrc",
        "/srv/x.env",
    ] {
        assert_eq!(reason(&g, ok), None, "{ok}");
    }
}

#[test]
fn governed_traversal_and_tricks_block() {
    use BlockReason::*;
    let g = guard(vec![]);
    for (path, want) in [
        ("/srv/.env", DenyViolation),
        ("/srv/app/.env", DenyViolation),
        ("/srv/app/.env/", DenyViolation),
        ("/srv/app/x/../.env", DenyViolation),
        ("/srv//app//.env", DenyViolation),
        ("/srv/app/.%65nv", DenyViolation),
        ("/srv/app/%2e%65nv", DenyViolation),
        ("/srv/ok#/../../.env", UndeclaredResource),
        ("/srv/a/ok#/../../.env", DenyViolation),
        ("/srv/ok?/../.env", DenyViolation),
        ("/etc/passwd", UndeclaredResource),
        ("/srv/../etc/passwd", UndeclaredResource),
        ("/srv/%2e%2e/etc/passwd", UndeclaredResource),
        ("/srv/%2E%2E/etc/passwd", UndeclaredResource),
        ("/srvx/a", UndeclaredResource),
        // Found by the property below: the decoded reading climbs out, the literal one
        // stays inside; every reading must be declared.
        ("/srv/%2e%2e", UndeclaredResource),
        ("/srv/%252e%252e/etc/passwd", UnresolvedArgument),
        ("/srv/..%2f..%2fetc/passwd", UnresolvedArgument),
        ("/srv/..%5c..%5cetc", UnresolvedArgument),
        ("/srv\\..\\etc\\passwd", UnresolvedArgument),
        ("/srv/%", UnresolvedArgument),
        ("/srv/%zz", UnresolvedArgument),
        ("/srv/%00", UnresolvedArgument),
        ("/srv/%C3%A9", UnresolvedArgument),
        ("/srv/\u{ff0e}\u{ff0e}/etc/passwd", UnresolvedArgument),
        ("/srv/\u{2025}/etc/passwd", UnresolvedArgument),
        ("/srv/.e\u{200b}nv", UnresolvedArgument),
        ("/srv/\u{202e}vne.", UnresolvedArgument),
        ("/srv/.e\u{301}nv", UnresolvedArgument),
        ("/srv/a\tb", UnresolvedArgument),
        ("/srv/a\nb", UnresolvedArgument),
        ("/srv/*", UnresolvedArgument),
        ("srv/data/x", UnresolvedArgument),
        ("~/.env", UnresolvedArgument),
        ("../.env", UnresolvedArgument),
        ("", UnresolvedArgument),
    ] {
        assert_eq!(reason(&g, path), Some(want), "{path:?}");
    }
    let long = format!("/srv/{}", "a".repeat(MAX_ARGUMENT_BYTES));
    assert_eq!(reason(&g, &long), Some(UnresolvedArgument));
    for args in [
        json!({}),
        json!({"path": 1}),
        json!({"path": null}),
        json!({"path": ["/srv/a"]}),
        json!("x"),
    ] {
        let b = g.check(&args, 0).unwrap_err();
        assert_eq!(b.reason, UnresolvedArgument, "{args}");
    }
    // The block names the Policy, the pattern and the URI.
    let b = g.check(&json!({"path": "/srv/a/../.env"}), 0).unwrap_err();
    assert_eq!(b.policy.as_deref(), Some("gov/no-dotenv"));
    assert_eq!(b.uri.as_deref(), Some("file:///srv/.env"));
    assert_eq!(b.pattern.as_deref(), Some("file:///**/.env"));
}

#[test]
fn the_root_of_the_declared_tree_reads_with_its_slash() {
    let g = guard(vec![]);
    assert_eq!(reason(&g, "/srv"), None);
    assert_eq!(reason(&g, "/srv/"), None);
    assert_eq!(reason(&g, "/srvx"), Some(BlockReason::UndeclaredResource));
}

#[test]
fn exceptions_excuse_until_they_expire() {
    let g = guard(vec![GuardExcept {
        expires: Some("1970-01-01T00:01:40Z".into()),
        grant: "team/g".into(),
        pattern: Some("file:///srv/app/**".into()),
    }]);
    let args = json!({"path": "/srv/app/.env"});
    assert!(g.check(&args, 99).is_ok());
    assert_eq!(
        g.check(&args, 100).unwrap_err().reason,
        BlockReason::DenyViolation
    );
    // Outside the exception's resource: still governed.
    assert!(g.check(&json!({"path": "/srv/other/.env"}), 0).is_err());
    let all = guard(vec![GuardExcept {
        expires: None,
        grant: "team/g".into(),
        pattern: None,
    }]);
    assert!(
        all.check(&json!({"path": "/srv/other/.env"}), i64::MAX)
            .is_ok()
    );
}

#[test]
fn uri_arguments_are_read_as_uris() {
    let g = CompiledGuard::compile(&BundleGuard {
        arguments: vec![GuardArgument {
            declared: vec!["https://api.example/public/**".into()],
            pointer: "/url".into(),
            template: "{url}".into(),
        }],
        governed: vec![GuardGoverned {
            except: vec![],
            pattern: "https://api.example/public/admin/**".into(),
            policy: "gov/admin".into(),
        }],
    })
    .unwrap();
    let r = |u: &str| g.check(&json!({ "url": u }), 0).err().map(|b| b.reason);
    assert_eq!(r("https://api.example/public/x"), None);
    assert_eq!(r("HTTPS://API.EXAMPLE:443/public/x"), None);
    assert_eq!(
        r("https://api.example/public/%61dmin/x"),
        Some(BlockReason::DenyViolation)
    );
    assert_eq!(
        r("https://API.example/public/x/../admin/y"),
        Some(BlockReason::DenyViolation)
    );
    assert_eq!(
        r("https://evil.example/public/x"),
        Some(BlockReason::UndeclaredResource)
    );
    assert_eq!(
        r("https://api.example@evil.example/public/x"),
        Some(BlockReason::UndeclaredResource)
    );
    assert_eq!(
        r("https://api.example/public//admin/x"),
        Some(BlockReason::UnresolvedArgument)
    );
    assert_eq!(r("/public/x"), Some(BlockReason::UnresolvedArgument));
}

#[test]
fn guards_that_cannot_compile_are_refused() {
    let base = BundleGuard {
        arguments: vec![GuardArgument {
            declared: vec!["file:///srv/**".into()],
            pointer: "/path".into(),
            template: "file://{path}".into(),
        }],
        governed: vec![],
    };
    assert!(CompiledGuard::compile(&base).is_ok());
    let mut b = base.clone();
    b.arguments.clear();
    assert!(CompiledGuard::compile(&b).is_err());
    let mut b = base.clone();
    b.arguments[0].declared.clear();
    assert!(CompiledGuard::compile(&b).is_err());
    let mut b = base.clone();
    b.arguments[0].declared = vec!["FILE:///srv/**".into()];
    assert!(CompiledGuard::compile(&b).is_err(), "not canonical");
    let mut b = base.clone();
    b.arguments[0].template = "{a}{b}".into();
    assert!(CompiledGuard::compile(&b).is_err());
    let mut b = base;
    b.governed.push(GuardGoverned {
        except: vec![GuardExcept {
            expires: Some("soon".into()),
            grant: "g/g".into(),
            pattern: None,
        }],
        pattern: "file:///**/.env".into(),
        policy: "p/p".into(),
    });
    assert!(CompiledGuard::compile(&b).is_err());
}

/// How a server may read a path value: literally (POSIX), or after decoding escapes any
/// number of times, turning backslashes into separators and normalising Unicode.
/// Returns the resolved absolute path's segments, or `None` for a relative path.
fn server_reading(v: &str, decode: bool) -> Option<Vec<String>> {
    let mut s = v.to_string();
    if decode {
        for _ in 0..4 {
            let bytes = s.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%'
                    && i + 2 < bytes.len()
                    && let Ok(d) = u8::from_str_radix(&s[i + 1..i + 3], 16)
                {
                    out.push(d);
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            s = String::from_utf8_lossy(&out).into_owned();
        }
        s = s.replace('\\', "/").nfkc().collect::<String>();
        s.retain(|c| !matches!(get_general_category(c), GeneralCategory::Format));
    }
    if !s.starts_with('/') {
        return None;
    }
    let mut segs: Vec<String> = Vec::new();
    for seg in s.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                segs.pop();
            }
            x => segs.push(x.to_string()),
        }
    }
    Some(segs)
}

fn pieces() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "/", "//", ".", "..", "../", "/..", "srv", "data", ".env", "env", ".e", "nv", "%2e",
            "%2E", "%65", "%252e", "%2f", "%2F", "%5c", "%25", "%", "\\", "\u{ff0e}", "\u{2024}",
            "\u{200b}", "\u{301}", "e\u{301}", "é", "?", "#", " ", "~", "*", "a", ":", ";", "%00",
            "\u{ff0f}", "[", "]",
        ]),
        0..12,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// A call the guard lets through reads, under every way a server may read the
    /// value, a path under /srv whose last segment is not `.env`.
    #[test]
    fn a_passing_path_is_safe_under_every_reading(tail in pieces(), rooted in any::<bool>()) {
        let v = if rooted { format!("/srv/{tail}") } else { tail.clone() };
        let g = guard(vec![]);
        if g.check(&json!({ "path": v }), 0).is_ok() {
            for decode in [false, true] {
                let segs = server_reading(&v, decode)
                    .unwrap_or_else(|| panic!("{v:?} passed but is relative"));
                prop_assert!(segs.first().is_some_and(|s| s == "srv"), "{:?} escapes /srv ({})", v, decode);
                prop_assert!(segs.last().is_none_or(|s| s != ".env"), "{:?} reads .env ({})", v, decode);
            }
        }
    }

    /// Resolution never panics and is deterministic on arbitrary text.
    #[test]
    fn resolution_is_total(v in "\\PC{0,40}") {
        let g = guard(vec![]);
        let a = g.check(&json!({ "path": v }), 0);
        prop_assert_eq!(a, g.check(&json!({ "path": v }), 0));
    }
}
