//! Who calls the operator's MCP listener and what they may read (docs/mcp-server.md,
//! "Tenancy"): the bearer token is checked with a TokenReview, and the caller reads the
//! namespaces where a SubjectAccessReview lets them `get` agents.mcpgov.io (one
//! cluster-wide review first: allowed there means every namespace). Reviews are cached
//! briefly by the token's sha256, never by the token itself, and never logged.

use crate::questions::Visibility;
use futures::StreamExt;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a review answers for the same token.
pub const CACHE_TTL: Duration = Duration::from_secs(30);
/// Tokens remembered at once; beyond, the entry expiring first goes.
pub const CACHE_ENTRIES: usize = 1024;
/// Longest bearer token read (service-account JWTs are ~1 KiB; OIDC ones a few).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// SubjectAccessReviews in flight for one caller.
const CONCURRENT_REVIEWS: usize = 8;

/// An authenticated caller: who, and which namespaces they read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub visibility: Visibility,
}

/// The API server's side of the checks (the real one, or a fake in unit tests).
pub trait Reviews: Send + Sync + 'static {
    /// The user a token belongs to; `None` when it is not valid (bad, expired, revoked,
    /// another audience).
    fn token(&self, token: &str) -> impl Future<Output = Result<Option<UserInfo>, String>> + Send;
    /// Whether `user` may get agents in `namespace` (`None`: in every namespace).
    fn may_get_agents(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
    ) -> impl Future<Output = Result<bool, String>> + Send;
}

/// TokenReview and SubjectAccessReview through the operator's client.
pub struct Kube {
    pub client: kube::Client,
    /// Audiences a token must be for; empty: the API server's own.
    pub audiences: Vec<String>,
}

impl Reviews for Kube {
    async fn token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: (!self.audiences.is_empty()).then(|| self.audiences.clone()),
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let out = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("TokenReview: {e}"))?;
        let Some(status) = out.status else {
            return Ok(None);
        };
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        // An authenticator that ignores audiences must not let another audience in.
        if !self.audiences.is_empty() {
            let granted = status.audiences.unwrap_or_default();
            if !granted.iter().any(|a| self.audiences.contains(a)) {
                return Ok(None);
            }
        }
        Ok(status.user.filter(|u| u.username.is_some()))
    }

    async fn may_get_agents(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
    ) -> Result<bool, String> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    namespace: namespace.map(str::to_string),
                    verb: Some("get".into()),
                    group: Some(crate::crd::common::GROUP.into()),
                    resource: Some("agents".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let out = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        Ok(out
            .status
            .is_some_and(|s| s.allowed && s.denied != Some(true)))
    }
}

/// Why a request gets no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No valid token: HTTP 401.
    Unauthenticated,
    /// The API server could not be asked: HTTP 503 (fail closed, not cached).
    Unavailable(String),
}

/// The reviews with their caches.
pub struct Authenticator<R> {
    reviews: R,
    cache: Mutex<Cache>,
    /// Refusals, kept apart: anyone can send new bad tokens, and in one cache each
    /// would evict a reviewed caller (the one closest to expiry), who then costs the
    /// API server a review again.
    refused: Mutex<Cache>,
}

impl<R: Reviews> Authenticator<R> {
    pub fn new(reviews: R) -> Authenticator<R> {
        Authenticator {
            reviews,
            cache: Mutex::new(Cache::new(CACHE_ENTRIES, CACHE_TTL)),
            refused: Mutex::new(Cache::new(CACHE_ENTRIES, CACHE_TTL)),
        }
    }

    /// The caller a token stands for, reviewing it against `namespaces` (those the live
    /// index holds) unless a review of it is cached.
    pub async fn caller(
        &self,
        token: &str,
        namespaces: impl FnOnce() -> BTreeSet<String>,
    ) -> Result<Arc<Caller>, Refused> {
        let key = token_key(token);
        let now = Instant::now();
        if let Some(hit) = self.lock().get(&key, now) {
            return hit.ok_or(Refused::Unauthenticated);
        }
        if lock(&self.refused).get(&key, now).is_some() {
            return Err(Refused::Unauthenticated);
        }
        let result = self.review(token, namespaces).await?;
        let cap = jwt_expiry(token).map(|exp| {
            let left = exp.saturating_sub(unix_now());
            now + Duration::from_secs(left)
        });
        let cache = if result.is_some() {
            &self.cache
        } else {
            &self.refused
        };
        lock(cache).insert(key, result.clone(), now, cap);
        result.ok_or(Refused::Unauthenticated)
    }

    async fn review(
        &self,
        token: &str,
        namespaces: impl FnOnce() -> BTreeSet<String>,
    ) -> Result<Option<Arc<Caller>>, Refused> {
        let Some(user) = self
            .reviews
            .token(token)
            .await
            .map_err(Refused::Unavailable)?
        else {
            return Ok(None);
        };
        let name = user.username.clone().unwrap_or_default();
        let everywhere = self
            .reviews
            .may_get_agents(&user, None)
            .await
            .map_err(Refused::Unavailable)?;
        let visibility = if everywhere {
            Visibility::All
        } else {
            let checks = futures::stream::iter(namespaces())
                .map(|ns| {
                    let user = &user;
                    async move {
                        let ok = self.reviews.may_get_agents(user, Some(&ns)).await?;
                        Ok::<_, String>(ok.then_some(ns))
                    }
                })
                .buffer_unordered(CONCURRENT_REVIEWS)
                .collect::<Vec<_>>()
                .await;
            let mut readable = BTreeSet::new();
            for c in checks {
                if let Some(ns) = c.map_err(Refused::Unavailable)? {
                    readable.insert(ns);
                }
            }
            Visibility::Namespaces(readable)
        };
        Ok(Some(Arc::new(Caller {
            user: name,
            visibility,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        lock(&self.cache)
    }
}

fn lock(cache: &Mutex<Cache>) -> std::sync::MutexGuard<'_, Cache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cache key of a token: its sha256 (the token itself is never kept).
pub fn token_key(token: &str) -> String {
    mcpgov_engine::canonical::sha256_hex(token.as_bytes())
}

/// Reviews by token digest: a caller (`Some`) or a refusal (`None`), each until it
/// expires; bounded in size.
pub struct Cache {
    entries: HashMap<String, (Instant, Option<Arc<Caller>>)>,
    max: usize,
    ttl: Duration,
}

impl Cache {
    pub fn new(max: usize, ttl: Duration) -> Cache {
        Cache {
            entries: HashMap::new(),
            max: max.max(1),
            ttl,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `Some(review)` while one is cached and fresh.
    pub fn get(&self, key: &str, now: Instant) -> Option<Option<Arc<Caller>>> {
        match self.entries.get(key) {
            Some((until, v)) if now < *until => Some(v.clone()),
            _ => None,
        }
    }

    /// Remember a review for the TTL, or until `cap` (the token's own expiry) if sooner.
    pub fn insert(
        &mut self,
        key: String,
        value: Option<Arc<Caller>>,
        now: Instant,
        cap: Option<Instant>,
    ) {
        let until = cap.map_or(now + self.ttl, |c| c.min(now + self.ttl));
        if !self.entries.contains_key(&key) && self.entries.len() >= self.max {
            self.entries.retain(|_, (u, _)| now < *u);
            if self.entries.len() >= self.max
                && let Some(first) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (u, _))| *u)
                    .map(|(k, _)| k.clone())
            {
                self.entries.remove(&first);
            }
        }
        self.entries.insert(key, (until, value));
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `exp` claim of a JWT, read without verifying anything: it only shortens how
/// long a review is cached (the TokenReview is what decides).
pub fn jwt_expiry(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    let bytes = base64url(payload)?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_u64()
}

/// Unpadded base64url, as JWTs use it.
fn base64url(s: &str) -> Option<Vec<u8>> {
    if s.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            b'=' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
