use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn caller(user: &str) -> Option<Arc<Caller>> {
    Some(Arc::new(Caller {
        user: user.into(),
        visibility: Visibility::All,
    }))
}

#[test]
fn a_review_expires_after_the_ttl() {
    let t0 = Instant::now();
    let mut c = Cache::new(4, Duration::from_secs(30));
    c.insert(token_key("t"), caller("a"), t0, None);
    assert_eq!(
        c.get(&token_key("t"), t0 + Duration::from_secs(29)),
        Some(caller("a"))
    );
    assert_eq!(c.get(&token_key("t"), t0 + Duration::from_secs(30)), None);
    // A refusal is remembered the same way (and is not a caller).
    c.insert(token_key("bad"), None, t0, None);
    assert_eq!(c.get(&token_key("bad"), t0), Some(None));
}

#[test]
fn a_review_ends_with_its_token() {
    let t0 = Instant::now();
    let mut c = Cache::new(4, Duration::from_secs(30));
    c.insert(
        token_key("t"),
        caller("a"),
        t0,
        Some(t0 + Duration::from_secs(5)),
    );
    assert!(
        c.get(&token_key("t"), t0 + Duration::from_secs(4))
            .is_some()
    );
    assert_eq!(c.get(&token_key("t"), t0 + Duration::from_secs(5)), None);
    // A far expiry does not lengthen the TTL.
    c.insert(
        token_key("u"),
        caller("b"),
        t0,
        Some(t0 + Duration::from_secs(3600)),
    );
    assert_eq!(c.get(&token_key("u"), t0 + Duration::from_secs(31)), None);
}

#[test]
fn the_cache_is_bounded_and_drops_the_first_to_expire() {
    let t0 = Instant::now();
    let mut c = Cache::new(3, Duration::from_secs(30));
    for (i, t) in ["a", "b", "c"].iter().enumerate() {
        c.insert(
            token_key(t),
            caller(t),
            t0 + Duration::from_secs(i as u64),
            None,
        );
    }
    c.insert(
        token_key("d"),
        caller("d"),
        t0 + Duration::from_secs(3),
        None,
    );
    assert_eq!(c.len(), 3);
    let now = t0 + Duration::from_secs(4);
    assert_eq!(c.get(&token_key("a"), now), None, "the oldest went");
    for t in ["b", "c", "d"] {
        assert_eq!(c.get(&token_key(t), now), Some(caller(t)));
    }
    // Expired entries go first, however many.
    c.insert(
        token_key("e"),
        caller("e"),
        t0 + Duration::from_secs(40),
        None,
    );
    assert_eq!(c.len(), 1);
}

#[test]
fn the_cache_holds_digests_never_tokens() {
    let mut c = Cache::new(4, Duration::from_secs(30));
    let token = "eyJhbGciOiJSUzI1NiJ9.secret-token-body.signature";
    c.insert(token_key(token), caller("a"), Instant::now(), None);
    let key = c.entries.keys().next().unwrap();
    assert!(key.starts_with("sha256:"), "{key}");
    assert!(!key.contains("secret-token-body"));
    assert_ne!(
        token_key(token),
        token_key("eyJhbGciOiJSUzI1NiJ9.other.signature")
    );
}

#[test]
fn the_expiry_of_a_jwt_is_read_and_anything_else_gives_none() {
    // {"exp":1700000000,"sub":"x"}
    let payload = "eyJleHAiOjE3MDAwMDAwMDAsInN1YiI6IngifQ";
    assert_eq!(jwt_expiry(&format!("h.{payload}.s")), Some(1_700_000_000));
    for bad in [
        "",
        "opaque-token",
        "a.b",
        "h.!!!.s",
        "h.e30.s",
        &format!("h.{}.s", "A".repeat(20_000)),
    ] {
        assert_eq!(jwt_expiry(bad), None, "{bad:.40}");
    }
}

/// A fake API server: users by token, readable namespaces by user, counting calls.
struct Fake {
    tokens: Vec<(&'static str, &'static str)>,
    everywhere: Vec<&'static str>,
    reads: Vec<(&'static str, &'static str)>,
    calls: AtomicUsize,
    fail: bool,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            tokens: vec![("tok-a", "alice"), ("tok-b", "bob"), ("tok-root", "root")],
            everywhere: vec!["root"],
            reads: vec![("alice", "team-a"), ("bob", "team-b")],
            calls: AtomicUsize::new(0),
            fail: false,
        }
    }
}

impl Reviews for Fake {
    async fn token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err("API server down".into());
        }
        Ok(self
            .tokens
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, u)| UserInfo {
                username: Some(u.to_string()),
                ..Default::default()
            }))
    }
    async fn may_get_agents(&self, user: &UserInfo, ns: Option<&str>) -> Result<bool, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let u = user.username.as_deref().unwrap_or_default();
        Ok(match ns {
            None => self.everywhere.contains(&u),
            Some(ns) => self.reads.iter().any(|(r, n)| *r == u && *n == ns),
        })
    }
}

fn namespaces() -> BTreeSet<String> {
    ["team-a", "team-b", "mcpgov-system"]
        .map(String::from)
        .into()
}

#[tokio::test]
async fn callers_read_the_namespaces_they_may_get_agents_in() {
    let auth = Authenticator::new(Fake::new());
    let a = auth.caller("tok-a", namespaces).await.unwrap();
    assert_eq!(a.user, "alice");
    assert_eq!(
        a.visibility,
        Visibility::Namespaces(["team-a".to_string()].into())
    );
    let root = auth.caller("tok-root", namespaces).await.unwrap();
    assert_eq!(root.visibility, Visibility::All);
    assert_eq!(
        auth.caller("nope", namespaces).await.unwrap_err(),
        Refused::Unauthenticated
    );
}

#[tokio::test]
async fn a_cached_review_asks_the_api_server_nothing() {
    let auth = Authenticator::new(Fake::new());
    auth.caller("tok-b", namespaces).await.unwrap();
    let after_first = auth.reviews.calls.load(Ordering::SeqCst);
    assert_eq!(
        after_first,
        1 + 1 + 3,
        "token, cluster-wide, one per namespace"
    );
    let again = auth
        .caller("tok-b", || panic!("namespaces are not listed on a hit"))
        .await;
    assert_eq!(again.unwrap().user, "bob");
    assert!(auth.caller("bad", namespaces).await.is_err());
    assert!(auth.caller("bad", namespaces).await.is_err());
    assert_eq!(auth.reviews.calls.load(Ordering::SeqCst), after_first + 1);
}

#[tokio::test]
async fn an_unreachable_api_server_refuses_and_is_not_cached() {
    let mut fake = Fake::new();
    fake.fail = true;
    let auth = Authenticator::new(fake);
    for _ in 0..2 {
        assert!(matches!(
            auth.caller("tok-a", namespaces).await,
            Err(Refused::Unavailable(_))
        ));
    }
    assert_eq!(auth.reviews.calls.load(Ordering::SeqCst), 2);
    assert!(auth.lock().is_empty());
}

#[tokio::test]
async fn a_flood_of_bad_tokens_does_not_evict_a_reviewed_caller() {
    let auth = Authenticator::new(Fake::new());
    auth.caller("tok-a", namespaces).await.unwrap();
    let reviewed = auth.reviews.calls.load(Ordering::SeqCst);
    // More refusals than either cache holds, each a new token: one review each.
    let flood = CACHE_ENTRIES + 10;
    for i in 0..flood {
        let bad = format!("bad-{i}");
        assert_eq!(
            auth.caller(&bad, namespaces).await.unwrap_err(),
            Refused::Unauthenticated
        );
    }
    assert_eq!(auth.reviews.calls.load(Ordering::SeqCst), reviewed + flood);
    assert!(lock(&auth.refused).len() <= CACHE_ENTRIES);
    // The caller is still cached: no review.
    let a = auth
        .caller("tok-a", || panic!("a cached caller lists no namespaces"))
        .await
        .unwrap();
    assert_eq!(a.user, "alice");
    assert_eq!(auth.reviews.calls.load(Ordering::SeqCst), reviewed + flood);
}
