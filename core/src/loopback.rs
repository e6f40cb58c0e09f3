//! DNS rebinding protection for loopback listeners (`mcpgov serve --listen`, the gateway
//! on loopback): a web page whose name resolves to 127.0.0.1 reaches them with its own
//! name in `Host` and `Origin`. One rule for both listeners, so they cannot drift apart.

/// `localhost`, `127.0.0.1` or `[::1]`, with a numeric port or none.
pub fn loopback_authority(a: &str) -> bool {
    let host = match a.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((h, port)) if port.is_empty() || port.starts_with(':') => h,
            _ => return false,
        },
        None => match a.split_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            Some(_) => return false,
            None => a,
        },
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

/// The first header that names anything but a loopback name, with its value: `Host`,
/// then every `Origin` (a second one cannot hide behind a good first one). A missing
/// `Origin` is a non-browser client: fine.
pub fn foreign_header<'a>(
    host: Option<&'a [u8]>,
    origins: impl IntoIterator<Item = &'a [u8]>,
) -> Option<(&'static str, &'a [u8])> {
    if let Some(v) = host
        && !std::str::from_utf8(v).is_ok_and(loopback_authority)
    {
        return Some(("Host", v));
    }
    origins.into_iter().find_map(|v| {
        let ok = std::str::from_utf8(v).is_ok_and(|o| {
            o.strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"))
                .is_some_and(loopback_authority)
        });
        (!ok).then_some(("Origin", v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn foreign(host: Option<&str>, origins: &[&str]) -> Option<&'static str> {
        foreign_header(
            host.map(str::as_bytes),
            origins.iter().map(|o| o.as_bytes()),
        )
        .map(|(name, _)| name)
    }

    #[test]
    fn loopback_names_pass_and_everything_else_is_refused() {
        for ok in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:9",
            "[::1]",
        ] {
            assert_eq!(foreign(Some(ok), &[]), None, "{ok}");
        }
        assert_eq!(
            foreign(Some("127.0.0.1:1"), &["http://localhost:3000"]),
            None
        );
        assert_eq!(foreign(None, &["https://[::1]"]), None);
        assert_eq!(foreign(None, &[]), None);
        for bad in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "localhost.evil.example:80",
            "localhost:80@evil",
            "localhost:evil",
            "[::1]evil",
            "10.0.0.1:8480",
        ] {
            assert_eq!(foreign(Some(bad), &[]), Some("Host"), "{bad}");
        }
        for bad in [
            "http://evil.example",
            "null",
            "file://",
            "http://127.0.0.1.nip.io",
        ] {
            assert_eq!(foreign(Some("127.0.0.1"), &[bad]), Some("Origin"), "{bad}");
        }
        assert_eq!(
            foreign(
                Some("127.0.0.1"),
                &["http://localhost", "http://evil.example"]
            ),
            Some("Origin"),
            "a second Origin cannot hide behind a good first one"
        );
    }
}
