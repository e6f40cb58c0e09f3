//! Which Secrets the crawler may read, and where their values may be sent.
//!
//! Anyone who may create an MCPServer could otherwise point it at their own URL with a
//! header from any Secret of the namespace and receive the value, using the operator's
//! own `get` on Secrets (a confused deputy). So a Secret is used only when it opts in,
//! as Argo CD's repository Secrets do, and names where it may go:
//!
//! - label `mcpgov.io/credentials: "true"` — the opt-in;
//! - annotation `mcpgov.io/allowed-hosts` — comma-separated hosts (`host` or
//!   `host:port`, case-insensitive) the value may be sent to;
//! - annotation `mcpgov.io/allowed-servers` — comma-separated MCPServer names of the
//!   Secret's namespace that may use it.
//!
//! At least one of the two annotations must be present, and every one present must
//! match. Anything else is `Crawled=False` with reason `SecretNotAllowed`, and nothing
//! is sent. See docs/security.md.

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

pub use crate::names::{ALLOWED_HOSTS, ALLOWED_SERVERS, CREDENTIALS_LABEL};

/// Why a Secret may not be used for a request; the text goes into status (it names
/// only the Secret and the rule, never a value).
pub fn check(secret: &Secret, server: &str, url: &str) -> Result<(), String> {
    let name = secret.name_any();
    if secret.labels().get(CREDENTIALS_LABEL).map(String::as_str) != Some("true") {
        return Err(format!(
            "Secret {name} is not labelled {CREDENTIALS_LABEL}: \"true\"; the operator uses only Secrets that opt in"
        ));
    }
    let hosts = secret.annotations().get(ALLOWED_HOSTS);
    let servers = secret.annotations().get(ALLOWED_SERVERS);
    if hosts.is_none() && servers.is_none() {
        return Err(format!(
            "Secret {name} names neither {ALLOWED_HOSTS} nor {ALLOWED_SERVERS}; it must say where it may be sent"
        ));
    }
    if let Some(list) = servers
        && !items(list).any(|s| s == server)
    {
        return Err(format!(
            "Secret {name} may be used by MCPServers [{}] only, not {server}",
            items(list).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(list) = hosts {
        let (host, port) = host_of(url).ok_or_else(|| format!("URL of {server} has no host"))?;
        let allowed = items(list).any(|h| host_matches(h, &host, port));
        if !allowed {
            return Err(format!(
                "Secret {name} may be sent to [{}] only, not to {host}:{port}",
                items(list).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(())
}

fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The URL's host (lower-case, brackets kept for IPv6) and effective port.
fn host_of(url: &str) -> Option<(String, u16)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some((host, parsed.port_or_known_default()?))
}

/// `allowed` is `host` (any port) or `host:port`.
fn host_matches(allowed: &str, host: &str, port: u16) -> bool {
    let allowed = allowed.to_ascii_lowercase();
    if allowed == host {
        return true;
    }
    match allowed.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !h.ends_with(':') => {
            h == host && p.parse::<u16>().is_ok_and(|p| p == port)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn secret(labelled: bool, annotations: &[(&str, &str)]) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some("token".into());
        if labelled {
            s.metadata.labels = Some(BTreeMap::from([(CREDENTIALS_LABEL.into(), "true".into())]));
        }
        s.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        s
    }

    const URL: &str = "https://api.example.com/mcp";

    #[test]
    fn a_secret_must_opt_in_and_say_where_it_goes() {
        let e = check(
            &secret(false, &[(ALLOWED_HOSTS, "api.example.com")]),
            "a",
            URL,
        );
        assert!(e.unwrap_err().contains("not labelled"));
        let e = check(&secret(true, &[]), "a", URL);
        assert!(e.unwrap_err().contains("neither"));
        // A label with another value is no opt-in.
        let mut s = secret(true, &[(ALLOWED_SERVERS, "a")]);
        s.metadata.labels = Some(BTreeMap::from([(CREDENTIALS_LABEL.into(), "yes".into())]));
        assert!(check(&s, "a", URL).is_err());
    }

    #[test]
    fn a_secret_goes_only_to_its_hosts_and_servers() {
        let hosts = secret(true, &[(ALLOWED_HOSTS, "API.example.com, other:8443")]);
        assert_eq!(check(&hosts, "any", URL), Ok(()));
        assert_eq!(check(&hosts, "any", "https://other:8443/mcp"), Ok(()));
        assert!(check(&hosts, "any", "https://other:9443/mcp").is_err());
        assert!(check(&hosts, "any", "https://attacker.example/mcp").is_err());
        // A look-alike host is not the host.
        assert!(check(&hosts, "any", "https://api.example.com.evil/mcp").is_err());
        assert!(check(&hosts, "any", "https://user@evil/x").is_err());

        let servers = secret(true, &[(ALLOWED_SERVERS, "a,b")]);
        assert_eq!(check(&servers, "b", "http://anywhere/"), Ok(()));
        let e = check(&servers, "c", URL).unwrap_err();
        assert!(e.contains("[a, b] only, not c"), "{e}");

        // Both present: both must hold.
        let both = secret(
            true,
            &[(ALLOWED_SERVERS, "a"), (ALLOWED_HOSTS, "api.example.com")],
        );
        assert_eq!(check(&both, "a", URL), Ok(()));
        assert!(check(&both, "a", "https://evil/").is_err());
        assert!(check(&both, "b", URL).is_err());

        let v6 = secret(true, &[(ALLOWED_HOSTS, "[::1]:8080")]);
        assert_eq!(check(&v6, "a", "http://[::1]:8080/mcp"), Ok(()));
    }
}
