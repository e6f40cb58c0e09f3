//! The SSRF guard: which addresses the crawler may connect to, and the HTTP client that
//! enforces it.
//!
//! Names are checked after DNS resolution, inside reqwest's resolver, so the check runs
//! on every new connection (a name that re-resolves to a refused address is caught on
//! the next connect, not trusted from an earlier one). reqwest never asks the resolver
//! about literal IPs, so those are checked before any connection. Redirects are followed
//! only within the same origin, and proxies from the environment are ignored, as a proxy
//! would resolve the name where the guard cannot see it.

use super::NetPolicy;
use super::error::{Carried, CrawlError};
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Same-origin redirects followed at most; more is a server misconfiguration.
const MAX_REDIRECTS: usize = 5;

/// Why `ip` may not be connected to under `net`, or `None` when it may.
pub fn address_refusal(ip: IpAddr, net: &NetPolicy) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_refusal(v4, net),
        // An IPv4-mapped address reaches the IPv4 host, so it gets the IPv4 rules.
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_refusal(v4, net),
            None => v6_refusal(v6, net),
        },
    }
}

fn v4_refusal(ip: Ipv4Addr, net: &NetPolicy) -> Option<&'static str> {
    let [a, b, _, _] = ip.octets();
    // Metadata first: these must stay refused whatever the policy allows.
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        return Some("cloud metadata");
    }
    if a == 0 {
        // 0.0.0.0/8: "this host"; a connect to 0.0.0.0 reaches the local machine.
        return Some("unspecified");
    }
    if ip.is_link_local() {
        return Some("link-local");
    }
    if ip.is_multicast() || ip.is_broadcast() {
        return Some("multicast");
    }
    if ip.is_loopback() {
        return (!net.allow_loopback).then_some("loopback");
    }
    let private = a == 10 || (a == 172 && (16..=31).contains(&b)) || (a == 192 && b == 168);
    if private && !net.allow_private {
        return Some("private");
    }
    None
}

fn v6_refusal(ip: Ipv6Addr, net: &NetPolicy) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return Some("cloud metadata");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if first & 0xffc0 == 0xfe80 {
        return Some("link-local");
    }
    if ip.is_multicast() {
        return Some("multicast");
    }
    if ip.is_loopback() {
        return (!net.allow_loopback).then_some("loopback");
    }
    if first & 0xfe00 == 0xfc00 && !net.allow_private {
        return Some("private");
    }
    None
}

fn refused(ip: IpAddr, why: &'static str) -> CrawlError {
    CrawlError::Refused {
        address: ip.to_string(),
        why,
    }
}

/// Parse the target URL and check a literal IP host, which bypasses the resolver.
pub(crate) fn check_url(url: &str, net: &NetPolicy) -> Result<Url, CrawlError> {
    let parsed = Url::parse(url).map_err(|e| CrawlError::Connect(format!("invalid URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(CrawlError::Connect(format!(
            "unsupported URL scheme {}",
            parsed.scheme()
        )));
    }
    // Credentials in a URL end up in logs and errors; they belong in a Secret header.
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(CrawlError::Connect(
            "the URL carries credentials; configure them as a header from a Secret".into(),
        ));
    }
    let Some(host) = parsed.host_str() else {
        return Err(CrawlError::Connect("the URL has no host".into()));
    };
    // The URL parser has normalised IPv4 forms (decimal, octal) to dotted quads.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let Ok(ip) = bare.parse::<IpAddr>() else {
        return Ok(parsed);
    };
    match address_refusal(ip, net) {
        Some(why) => Err(refused(ip, why)),
        None => Ok(parsed),
    }
}

/// Resolves with the system resolver, then drops refused addresses; fails with the first
/// refused address when none is left.
struct GuardedResolver {
    net: NetPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let net = self.net.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // getaddrinfo blocks; the port is replaced by reqwest.
            let found: Vec<SocketAddr> =
                tokio::task::spawn_blocking(move || (host.as_str(), 0).to_socket_addrs())
                    .await
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)??
                    .collect();
            let (allowed, refusals): (Vec<SocketAddr>, Vec<SocketAddr>) = found
                .into_iter()
                .partition(|a| address_refusal(a.ip(), &net).is_none());
            if allowed.is_empty() {
                return Err(match refusals.first() {
                    Some(a) => Box::new(Carried(refused(
                        a.ip(),
                        address_refusal(a.ip(), &net).unwrap_or("refused"),
                    ))) as Box<dyn std::error::Error + Send + Sync>,
                    None => "the name resolved to no address".into(),
                });
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// Follow 307/308 within the origin; refuse another origin. 301/302/303 would turn a
/// JSON-RPC POST into a GET, so they are returned (and reported as HTTP errors).
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.stop();
        };
        if !same_origin(first, attempt.url()) {
            let to = attempt.url().to_string();
            return attempt.error(Carried(CrawlError::Redirect { to }));
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(Carried(CrawlError::Protocol(format!(
                "more than {MAX_REDIRECTS} redirects"
            ))));
        }
        match attempt.status().as_u16() {
            307 | 308 => attempt.follow(),
            _ => attempt.stop(),
        }
    })
}

/// Check that `endpoint` is within the origin of `base`; used for the SSE endpoint event.
pub(crate) fn check_same_origin(base: &Url, endpoint: &Url) -> Result<(), CrawlError> {
    if same_origin(base, endpoint) {
        Ok(())
    } else {
        Err(CrawlError::Redirect {
            to: endpoint.to_string(),
        })
    }
}

/// The configured headers, values marked sensitive so no Debug output shows them.
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, CrawlError> {
    // Set by the transports themselves; a copy from configuration would corrupt them.
    const RESERVED: &[&str] = &[
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| CrawlError::Protocol(format!("invalid header name {name:?}")))?;
        if RESERVED.contains(&n.as_str()) || n.as_str().starts_with("mcp-") {
            return Err(CrawlError::Protocol(format!(
                "header {name} is set by the MCP transport and cannot be configured"
            )));
        }
        // The error names the header only: the value is a secret.
        let mut v = HeaderValue::from_str(value)
            .map_err(|_| CrawlError::Protocol(format!("header {name} has an invalid value")))?;
        v.set_sensitive(true);
        map.append(n, v);
    }
    Ok(map)
}

/// reqwest is built without a bundled crypto provider: install ring, which kube already
/// uses, unless the process installed one first.
fn ensure_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The HTTP client for one crawl: guarded resolver, same-origin redirects, no proxy,
/// configured headers on every request, connects bounded by the request timeout.
pub(crate) fn http_client(
    headers: &[(String, String)],
    net: &NetPolicy,
    connect_timeout: Duration,
) -> Result<reqwest::Client, CrawlError> {
    ensure_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { net: net.clone() }))
        .redirect(redirect_policy())
        .default_headers(header_map(headers)?)
        .user_agent(concat!("mcpgov-crawler/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(connect_timeout)
        // One crawl, one server: nothing to gain from keeping sockets around afterwards.
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| CrawlError::Connect(format!("cannot build the HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: NetPolicy = NetPolicy {
        allow_loopback: false,
        allow_private: false,
    };
    const OPEN: NetPolicy = NetPolicy {
        allow_loopback: true,
        allow_private: true,
    };

    fn why(s: &str, net: &NetPolicy) -> Option<&'static str> {
        address_refusal(s.parse().unwrap(), net)
    }

    #[test]
    fn always_refused_whatever_the_policy() {
        for (addr, reason) in [
            ("169.254.169.254", "cloud metadata"),
            ("100.100.100.200", "cloud metadata"),
            ("fd00:ec2::254", "cloud metadata"),
            ("169.254.1.2", "link-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "multicast"),
            ("ff02::1", "multicast"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("::ffff:169.254.0.1", "link-local"),
            ("::ffff:0.0.0.0", "unspecified"),
        ] {
            assert_eq!(why(addr, &OPEN), Some(reason), "{addr}");
            assert_eq!(why(addr, &STRICT), Some(reason), "{addr}");
        }
    }

    #[test]
    fn loopback_only_when_allowed() {
        for addr in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(why(addr, &STRICT), Some("loopback"), "{addr}");
            assert_eq!(why(addr, &OPEN), None, "{addr}");
        }
        assert_eq!(why("127.0.0.1", &NetPolicy::default()), Some("loopback"));
    }

    #[test]
    fn private_only_when_allowed() {
        for addr in [
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:10.1.2.3",
            "::ffff:192.168.0.1",
        ] {
            assert_eq!(why(addr, &STRICT), Some("private"), "{addr}");
            assert_eq!(why(addr, &OPEN), None, "{addr}");
            assert_eq!(why(addr, &NetPolicy::default()), None, "{addr}");
        }
    }

    #[test]
    fn public_and_near_miss_addresses_pass() {
        for addr in [
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "192.169.0.1",
            "169.253.255.255",
            "100.100.100.201",
            "11.0.0.1",
            "2001:db8::1",
            "fe00::1",
            "fec0::1",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(why(addr, &STRICT), None, "{addr}");
        }
        // Only the metadata address itself is special in its private range.
        assert_eq!(why("fd00:ec2::253", &OPEN), None);
    }

    #[test]
    fn literal_ip_urls_are_checked_before_connecting() {
        let net = NetPolicy::default();
        assert_eq!(
            check_url("http://169.254.169.254/latest/meta-data", &net),
            Err(CrawlError::Refused {
                address: "169.254.169.254".into(),
                why: "cloud metadata"
            })
        );
        // Decimal and bracketed forms normalise to the same literal.
        assert!(matches!(
            check_url("http://2130706433:8080/mcp", &net),
            Err(CrawlError::Refused {
                why: "loopback",
                ..
            })
        ));
        assert!(matches!(
            check_url("http://[::ffff:7f00:1]/mcp", &net),
            Err(CrawlError::Refused {
                why: "loopback",
                ..
            })
        ));
        assert!(check_url("http://10.0.0.5:8080/mcp", &net).is_ok());
        assert!(check_url("https://mcp.example.com/mcp", &net).is_ok());
        assert!(matches!(
            check_url("file:///etc/passwd", &net),
            Err(CrawlError::Connect(_))
        ));
        let e = check_url("https://user:pw123@mcp.example.com/mcp", &net).unwrap_err();
        assert!(!e.to_string().contains("pw123"), "{e}");
    }

    #[tokio::test]
    async fn resolver_refuses_names_of_refused_addresses() {
        let r = GuardedResolver {
            net: NetPolicy::default(),
        };
        let err = r.resolve("localhost".parse().unwrap()).await.err().unwrap();
        let carried = err.downcast_ref::<Carried>().expect("a carried refusal");
        assert!(matches!(
            carried.0,
            CrawlError::Refused {
                why: "loopback",
                ..
            }
        ));
        let r = GuardedResolver { net: OPEN };
        let addrs: Vec<_> = r
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }

    #[test]
    fn header_values_never_show_and_reserved_names_are_refused() {
        let map = header_map(&[("Authorization".into(), "Bearer s3cret".into())]).unwrap();
        assert!(!format!("{map:?}").contains("s3cret"));
        let err = header_map(&[("Mcp-Session-Id".into(), "x".into())]).unwrap_err();
        assert_eq!(err.reason(), "ProtocolError");
        let err = header_map(&[("X-Key".into(), "bad\nvalue s3cret".into())]).unwrap_err();
        assert!(!err.to_string().contains("s3cret"));
    }
}
