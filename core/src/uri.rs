//! Canonical form of resource URIs and URI glob patterns.
//!
//! Owns the single normalisation applied to every resource URI (and every
//! URI pattern, which is canonicalised by the same function) before any
//! comparison or glob matching. It implements RFC 3986 syntax-based
//! normalisation (case, percent-encoding, dot-segments) plus a few
//! scheme-based rules (default ports, empty http path, `file://localhost`),
//! and drops the parts that never take part in access decisions (userinfo,
//! fragment).
//!
//! Order of operations inside each component: percent-normalisation first
//! (unreserved escapes decoded, other escapes upper-cased), *then*
//! dot-segment removal, as RFC 3986 §6.2.2 prescribes. Consequently
//! `%2E%2E` is a real `..` segment and is resolved, while `%2F` is not a
//! separator (it is not unreserved, so it stays encoded). This order is what
//! makes the function idempotent: the output contains no escape that decodes
//! to something the second pass would treat differently.
//!
//! `*` is an ordinary character here, so glob patterns pass through with
//! their stars untouched (only the scheme may not contain one).

use std::fmt;

/// Why a string could not be canonicalised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UriError {
    /// The input is the empty string.
    Empty,
    /// The input contains whitespace or a control character.
    InvalidCharacter(char),
    /// No `scheme:` prefix.
    NoScheme,
    /// The text before the first `:` is not `[A-Za-z][A-Za-z0-9+.-]*`.
    InvalidScheme,
    /// A `%` not followed by two hexadecimal digits.
    InvalidPercentEncoding,
    /// Malformed host (unbalanced IPv6 brackets, stray `[`/`]`).
    InvalidHost,
    /// The port is neither decimal (0..=65535) nor a glob.
    InvalidPort,
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriError::Empty => f.write_str("empty URI"),
            UriError::InvalidCharacter(c) => {
                write!(f, "URI contains whitespace or control character {c:?}")
            }
            UriError::NoScheme => f.write_str("URI has no scheme"),
            UriError::InvalidScheme => f.write_str("URI scheme is not valid"),
            UriError::InvalidPercentEncoding => {
                f.write_str("`%` not followed by two hexadecimal digits")
            }
            UriError::InvalidHost => f.write_str("URI host is malformed"),
            UriError::InvalidPort => f.write_str("URI port is not valid"),
        }
    }
}

impl std::error::Error for UriError {}

/// Returns the canonical form of `input`, a URI or URI glob pattern.
///
/// The result is idempotent: `canonicalize(&canonicalize(x)?) == canonicalize(x)`.
pub fn canonicalize(input: &str) -> Result<String, UriError> {
    if input.is_empty() {
        return Err(UriError::Empty);
    }
    // Nothing is trimmed: surrounding whitespace is as suspicious as inner.
    if let Some(c) = input.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(UriError::InvalidCharacter(c));
    }

    let (scheme, rest) = split_scheme(input)?;
    let scheme = scheme.to_ascii_lowercase();

    // The fragment is client-side only; it never selects a different resource.
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let (hier, query) = match rest.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (rest, None),
    };

    let mut out = String::with_capacity(input.len());
    out.push_str(&scheme);
    out.push(':');

    let has_authority;
    let path = if let Some(after) = hier.strip_prefix("//") {
        has_authority = true;
        let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        out.push_str("//");
        push_authority(&mut out, &scheme, authority)?;
        path
    } else {
        has_authority = false;
        hier
    };

    let mut norm_path = String::with_capacity(path.len());
    push_percent_normalized(&mut norm_path, path, false)?;
    if norm_path.starts_with('/') {
        let resolved = remove_dot_segments(&norm_path);
        if !has_authority && resolved.starts_with("//") {
            // Without this, `a:/..//x` would re-parse as authority `x`
            // (RFC 3986 §5.3 prescribes the same `/.` guard).
            out.push_str("/.");
        }
        out.push_str(&resolved);
    } else if norm_path.is_empty() && has_authority && has_root_path_default(&scheme) {
        out.push('/');
    } else {
        // Opaque (`urn:x:y`) or empty path: no segments to resolve.
        out.push_str(&norm_path);
    }

    if let Some(q) = query {
        out.push('?');
        push_percent_normalized(&mut out, q, false)?;
    }
    Ok(out)
}

/// Splits `scheme:rest`, validating the scheme syntax.
fn split_scheme(input: &str) -> Result<(&str, &str), UriError> {
    let colon = input.find(':').ok_or(UriError::NoScheme)?;
    let scheme = &input[..colon];
    // A `/`, `?` or `#` before the first colon means the colon belongs to a
    // later component: the string is a relative reference, not a URI.
    if scheme.contains(['/', '?', '#']) {
        return Err(UriError::NoScheme);
    }
    let mut bytes = scheme.bytes();
    let valid = bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid {
        return Err(UriError::InvalidScheme);
    }
    Ok((scheme, &input[colon + 1..]))
}

fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "ws" => Some("80"),
        "https" | "wss" => Some("443"),
        "ftp" => Some("21"),
        _ => None,
    }
}

/// Schemes whose empty path is equivalent to `/` (RFC 9110 §4.2.3, RFC 6455 §3).
fn has_root_path_default(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss")
}

/// Appends the canonical `host[:port]` of `authority` (userinfo dropped).
fn push_authority(out: &mut String, scheme: &str, authority: &str) -> Result<(), UriError> {
    // Credentials must never influence (or leak into) a policy decision.
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);

    let (host, port) = if hostport.starts_with('[') {
        let close = hostport.find(']').ok_or(UriError::InvalidHost)?;
        let (host, tail) = hostport.split_at(close + 1);
        match tail {
            "" => (host, None),
            _ => match tail.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(UriError::InvalidHost),
            },
        }
    } else {
        // First colon: a second one ends up in the port and is rejected there,
        // rather than silently producing a host that re-parses differently.
        match hostport.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        }
    };
    let bracketed = host.starts_with('[');
    let inner = if bracketed {
        &host[1..host.len() - 1]
    } else {
        host
    };
    if inner.contains(['[', ']']) {
        return Err(UriError::InvalidHost);
    }

    let mut norm_host = String::with_capacity(host.len());
    push_percent_normalized(&mut norm_host, host, true)?;
    // `localhost` is the default host of `file:` (RFC 8089 §2).
    if !(scheme == "file" && norm_host == "localhost") {
        out.push_str(&norm_host);
    }

    if let Some(port) = port {
        let port = normalize_port(port)?;
        if !port.is_empty() && default_port(scheme) != Some(port) {
            out.push(':');
            out.push_str(port);
        }
    }
    Ok(())
}

/// Strips leading zeros of a decimal port; a port containing `*` is a glob
/// and is kept verbatim. Returns "" for an empty port.
fn normalize_port(port: &str) -> Result<&str, UriError> {
    if port.contains('*') {
        return if port.bytes().all(|b| b.is_ascii_digit() || b == b'*') {
            Ok(port)
        } else {
            Err(UriError::InvalidPort)
        };
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UriError::InvalidPort);
    }
    if port.is_empty() {
        return Ok(port);
    }
    let trimmed = port.trim_start_matches('0');
    let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
    if trimmed.len() > 5 || trimmed.parse::<u32>().map_or(true, |p| p > 65_535) {
        return Err(UriError::InvalidPort);
    }
    Ok(trimmed)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `part` with escapes of unreserved characters decoded and all other
/// escapes upper-cased. With `lower`, ASCII letters (literal or decoded) are
/// lower-cased too, but never the hex digits of a kept escape.
fn push_percent_normalized(out: &mut String, part: &str, lower: bool) -> Result<(), UriError> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = part.as_bytes();
    let mut run_start = 0;
    let mut i = 0;
    let push_run = |out: &mut String, run: &str| {
        if lower {
            out.extend(run.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            out.push_str(run);
        }
    };
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        // `%` is ASCII, so these slice boundaries are char boundaries.
        push_run(out, &part[run_start..i]);
        let hi = bytes.get(i + 1).copied().and_then(hex_value);
        let lo = bytes.get(i + 2).copied().and_then(hex_value);
        let (Some(hi), Some(lo)) = (hi, lo) else {
            return Err(UriError::InvalidPercentEncoding);
        };
        let value = (hi << 4) | lo;
        if is_unreserved(value) {
            let c = char::from(value);
            out.push(if lower { c.to_ascii_lowercase() } else { c });
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(hi)]));
            out.push(char::from(HEX[usize::from(lo)]));
        }
        i += 3;
        run_start = i;
    }
    push_run(out, &part[run_start..]);
    Ok(())
}

/// RFC 3986 §5.2.4 for an absolute path (starting with `/`), done per
/// segment: `.` is dropped, `..` drops the previous segment, and a final
/// `.`/`..` leaves a trailing slash.
fn remove_dot_segments(path: &str) -> String {
    debug_assert!(path.starts_with('/'));
    let segments: Vec<&str> = path[1..].split('/').collect();
    let last = segments.len() - 1;
    let mut kept: Vec<&str> = Vec::with_capacity(segments.len());
    for (k, seg) in segments.into_iter().enumerate() {
        match seg {
            "." => {}
            ".." => {
                kept.pop();
            }
            _ => {
                kept.push(seg);
                continue;
            }
        }
        if k == last {
            kept.push("");
        }
    }
    let mut out = String::with_capacity(path.len());
    for seg in kept {
        out.push('/');
        out.push_str(seg);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn canon(s: &str) -> String {
        canonicalize(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn rejects_empty_whitespace_and_control() {
        assert_eq!(canonicalize(""), Err(UriError::Empty));
        assert_eq!(
            canonicalize(" http://a/"),
            Err(UriError::InvalidCharacter(' '))
        );
        assert_eq!(
            canonicalize("http://a/ "),
            Err(UriError::InvalidCharacter(' '))
        );
        assert_eq!(
            canonicalize("http://a/b c"),
            Err(UriError::InvalidCharacter(' '))
        );
        assert_eq!(
            canonicalize("http://a/\tb"),
            Err(UriError::InvalidCharacter('\t'))
        );
        assert_eq!(
            canonicalize("http://a/\u{7f}"),
            Err(UriError::InvalidCharacter('\u{7f}'))
        );
        assert_eq!(
            canonicalize("http://a/\u{a0}"),
            Err(UriError::InvalidCharacter('\u{a0}'))
        );
    }

    #[test]
    fn scheme_required_valid_and_lowercased() {
        assert_eq!(canonicalize("no-scheme"), Err(UriError::NoScheme));
        assert_eq!(canonicalize("/abs/path:x"), Err(UriError::NoScheme));
        assert_eq!(canonicalize("://x"), Err(UriError::InvalidScheme));
        assert_eq!(canonicalize("1http://x"), Err(UriError::InvalidScheme));
        assert_eq!(canonicalize("ht_tp://x"), Err(UriError::InvalidScheme));
        assert_eq!(canonicalize("*://x/"), Err(UriError::InvalidScheme));
        assert_eq!(canon("HTTP://a/"), "http://a/");
        assert_eq!(canon("Git+SSH://a/b"), "git+ssh://a/b");
        assert_eq!(canon("x-Y.z:Opaque"), "x-y.z:Opaque");
    }

    #[test]
    fn userinfo_removed() {
        assert_eq!(canon("https://user:pw@Host/x"), "https://host/x");
        assert_eq!(canon("https://a@b@host/x"), "https://host/x");
        assert_eq!(canon("ftp://@host/x"), "ftp://host/x");
    }

    #[test]
    fn host_lowercased_ipv6_kept() {
        assert_eq!(canon("http://EXAMPLE.Com/Path"), "http://example.com/Path");
        assert_eq!(canon("http://[FE80::1]:8080/"), "http://[fe80::1]:8080/");
        assert_eq!(canon("http://[::1]:80/"), "http://[::1]/");
        assert_eq!(canon("http://[::1]/"), "http://[::1]/");
        assert_eq!(canonicalize("http://[::1/"), Err(UriError::InvalidHost));
        assert_eq!(canonicalize("http://[::1]x/"), Err(UriError::InvalidHost));
        assert_eq!(canonicalize("http://a]b/"), Err(UriError::InvalidHost));
    }

    #[test]
    fn default_and_empty_ports_dropped() {
        assert_eq!(canon("http://a:80/"), "http://a/");
        assert_eq!(canon("https://a:443/"), "https://a/");
        assert_eq!(canon("ws://a:80/"), "ws://a/");
        assert_eq!(canon("wss://a:443/"), "wss://a/");
        assert_eq!(canon("ftp://a:21/"), "ftp://a/");
        assert_eq!(canon("http://a:443/"), "http://a:443/");
        assert_eq!(canon("https://a:80/"), "https://a:80/");
        assert_eq!(canon("http://a:/"), "http://a/");
        assert_eq!(canon("foo://a:/"), "foo://a/");
        assert_eq!(canon("foo://a:80/"), "foo://a:80/");
        assert_eq!(canon("http://a:0080/"), "http://a/");
        assert_eq!(canon("http://a:08080/"), "http://a:8080/");
        assert_eq!(canon("http://a:*/"), "http://a:*/");
        assert_eq!(canonicalize("http://a:x/"), Err(UriError::InvalidPort));
        assert_eq!(canonicalize("http://a:b:80/"), Err(UriError::InvalidPort));
        assert_eq!(canonicalize("http://a:65536/"), Err(UriError::InvalidPort));
    }

    #[test]
    fn fragment_removed_query_kept() {
        assert_eq!(canon("http://a/b?x=1#frag"), "http://a/b?x=1");
        assert_eq!(canon("http://a/b#frag?no"), "http://a/b");
        assert_eq!(canon("http://a/b?Q=/../%7e%2f"), "http://a/b?Q=/../~%2F");
        assert_eq!(canon("urn:x:y#z"), "urn:x:y");
        assert_eq!(canon("http://a/b?"), "http://a/b?");
    }

    #[test]
    fn dot_segments_resolved_in_hierarchical_paths() {
        assert_eq!(canon("http://a/b/c/./../../g"), "http://a/g");
        assert_eq!(canon("http://a/mid/content=5/../6"), "http://a/mid/6");
        assert_eq!(canon("http://a/.."), "http://a/");
        assert_eq!(canon("http://a/../../x"), "http://a/x");
        assert_eq!(canon("http://a/b/."), "http://a/b/");
        assert_eq!(canon("http://a/b/.."), "http://a/");
        assert_eq!(canon("http://a/b//../c"), "http://a/b/c");
        assert_eq!(canon("http://a/b/.x/..y"), "http://a/b/.x/..y");
        assert_eq!(canon("file:/a/./b/../c"), "file:/a/c");
        // A rootless path that would turn into an authority is guarded.
        assert_eq!(canon("a:/..//x"), "a:/.//x");
        assert_eq!(canon("a:/.//x"), "a:/.//x");
    }

    #[test]
    fn opaque_paths_kept() {
        assert_eq!(canon("memory:claude:toolgraph"), "memory:claude:toolgraph");
        assert_eq!(canon("urn:x:y"), "urn:x:y");
        assert_eq!(canon("urn:a/./b/../c"), "urn:a/./b/../c");
        assert_eq!(canon("MAILTO:Joe@Example.COM"), "mailto:Joe@Example.COM");
        assert_eq!(canon("urn:%7e%3a"), "urn:~%3A");
    }

    #[test]
    fn percent_encoding_normalised() {
        assert_eq!(canon("http://a/%41%62%2d%2E%5F%7E"), "http://a/Ab-._~");
        assert_eq!(canon("http://a/%2f%3a%c3%a9"), "http://a/%2F%3A%C3%A9");
        assert_eq!(canon("http://%41%42.com/"), "http://ab.com/");
        assert_eq!(canon("http://a%c3%a9.com/"), "http://a%C3%A9.com/");
        assert_eq!(canon("http://a/%25"), "http://a/%25");
        assert_eq!(
            canonicalize("http://a/%"),
            Err(UriError::InvalidPercentEncoding)
        );
        assert_eq!(
            canonicalize("http://a/%4"),
            Err(UriError::InvalidPercentEncoding)
        );
        assert_eq!(
            canonicalize("http://a/%zz"),
            Err(UriError::InvalidPercentEncoding)
        );
        assert_eq!(
            canonicalize("http://a/?%g0"),
            Err(UriError::InvalidPercentEncoding)
        );
        assert_eq!(
            canonicalize("http://a%/"),
            Err(UriError::InvalidPercentEncoding)
        );
    }

    #[test]
    fn percent_decoding_happens_before_dot_segment_removal() {
        assert_eq!(canon("http://a/b/%2E%2E/c"), "http://a/c");
        assert_eq!(canon("http://a/b/%2e/c"), "http://a/b/c");
        assert_eq!(canon("http://a/b/.%2E/c"), "http://a/c");
        // An encoded slash is data, not a separator.
        assert_eq!(canon("http://a/b%2F../c"), "http://a/b%2F../c");
    }

    #[test]
    fn http_empty_path_becomes_root() {
        assert_eq!(canon("http://a"), "http://a/");
        assert_eq!(canon("HTTPS://A:443"), "https://a/");
        assert_eq!(canon("https://a?q"), "https://a/?q");
        assert_eq!(canon("https://a#f"), "https://a/");
        assert_eq!(canon("foo://a"), "foo://a");
        assert_eq!(canon("http:rel"), "http:rel");
    }

    #[test]
    fn file_uris() {
        assert_eq!(canon("file:///x/y"), "file:///x/y");
        assert_eq!(canon("file://localhost/x"), "file:///x");
        assert_eq!(canon("FILE://LocalHost/x"), "file:///x");
        assert_eq!(canon("file://server/x"), "file://server/x");
        assert_eq!(canon("file://localhost"), "file://");
        assert_eq!(canon("file://"), "file://");
    }

    #[test]
    fn stars_pass_through() {
        assert_eq!(
            canon("FILE:///Workspace/**/*.ENV"),
            "file:///Workspace/**/*.ENV"
        );
        assert_eq!(
            canon("HTTPS://*.Example.COM:443/a/./b/../*"),
            "https://*.example.com/a/*"
        );
        assert_eq!(canon("urn:*:x*"), "urn:*:x*");
        assert_eq!(canon("http://a/b?*=*"), "http://a/b?*=*");
        assert_eq!(canon("http://*/**"), "http://*/**");
    }

    #[test]
    fn errors_display() {
        for e in [
            UriError::Empty,
            UriError::InvalidCharacter('\n'),
            UriError::NoScheme,
            UriError::InvalidScheme,
            UriError::InvalidPercentEncoding,
            UriError::InvalidHost,
            UriError::InvalidPort,
        ] {
            let _: &dyn std::error::Error = &e;
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn idempotent_on_examples() {
        for s in [
            "http://a/b/c/./../../g",
            "a:/..//x",
            "FILE://localhost",
            "HTTPS://*.Example.COM:443/a/./b/../*",
            "http://[FE80::1]:0/%7e%aa?%bb#c",
            "x:",
            "x://",
            "x:///",
        ] {
            let once = canon(s);
            assert_eq!(canon(&once), once, "{s:?}");
        }
    }

    // ---- property tests ----

    fn random_case(s: &str, mask: u64) -> String {
        s.chars()
            .enumerate()
            .map(|(i, c)| {
                if (mask >> (i % 64)) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    }

    /// A plain (already canonical) URI and a noisy but equivalent spelling.
    fn equivalent_pair() -> impl Strategy<Value = (String, String)> {
        let scheme = prop::sample::select(vec!["http", "https", "ws", "ftp", "x-app"]);
        let host = "[a-z][a-z0-9.*-]{0,8}";
        let segment = prop::sample::select(vec!["a", "B", "x_y", "*", "**", "%2F", "é", "~z", "-"]);
        let segments = prop::collection::vec(segment, 0..5);
        let query = prop::option::of("[a-z=&*/]{0,6}");
        let noise = (
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            prop::collection::vec((any::<bool>(), any::<bool>(), any::<u64>()), 5),
        );
        (scheme, host, segments, query, noise).prop_map(
            |(scheme, host, segments, query, (mask, userinfo, port, fragment, seg_noise))| {
                let mut plain = format!("{scheme}://{host}");
                let mut noisy = format!(
                    "{}://{}{}{}",
                    random_case(scheme, mask),
                    if userinfo { "us%20er:p@ss@" } else { "" },
                    random_case(&host, mask.rotate_left(7)),
                    match (port, default_port(scheme)) {
                        (true, Some(p)) => format!(":{p}"),
                        (true, None) => ":".to_string(),
                        (false, _) => String::new(),
                    },
                );
                if segments.is_empty() && has_root_path_default(scheme) {
                    plain.push('/');
                }
                for (seg, (dot, detour, escape_mask)) in segments.iter().zip(seg_noise) {
                    plain.push('/');
                    plain.push_str(seg);
                    if dot {
                        noisy.push_str("/.");
                    }
                    if detour {
                        noisy.push_str("/zz");
                        noisy.push_str("/%2e%2E");
                    }
                    noisy.push('/');
                    // Escape some unreserved characters, in random hex case.
                    // (never inside an existing `%XX` triplet).
                    let escapable = !seg.contains('%');
                    for (i, c) in seg.chars().enumerate() {
                        let bit = escape_mask >> (2 * i % 64);
                        if escapable && c.is_ascii() && is_unreserved(c as u8) && bit & 1 == 1 {
                            let esc = format!("%{:02X}", c as u8);
                            noisy.push_str(&if bit & 2 == 2 {
                                esc.to_ascii_lowercase()
                            } else {
                                esc
                            });
                        } else {
                            noisy.push(c);
                        }
                    }
                }
                if let Some(q) = query {
                    plain.push('?');
                    plain.push_str(&q);
                    noisy.push('?');
                    noisy.push_str(&q);
                }
                if fragment {
                    noisy.push_str("#Frag/../x");
                }
                (plain, noisy)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn idempotent_on_noise(s in r"[a-zA-Z][a-zA-Z+.]{0,3}:[a-zA-Z0-9%:/@?#.*~\[\]-]{0,24}") {
            if let Ok(once) = canonicalize(&s) {
                prop_assert_eq!(canonicalize(&once), Ok(once.clone()), "input {:?}", s);
            }
        }

        #[test]
        fn idempotent_on_uri_shapes(s in r"(?i)(https?|file|urn|ftp|ws):(//([a-z]{1,3}@)?(\[[0-9a-f:]{1,6}\]|[a-z0-9.*%]{0,6})(:[0-9]{0,5})?)?(/(\.|\.\.|%2e|%2E%2e|[a-z*%0-9]{1,4})?){0,6}(\?[a-z/.%0-9]{0,4})?(#[a-z]{0,3})?") {
            if let Ok(once) = canonicalize(&s) {
                prop_assert_eq!(canonicalize(&once), Ok(once.clone()), "input {:?}", s);
            }
        }

        #[test]
        fn equivalent_spellings_agree((plain, noisy) in equivalent_pair()) {
            let want = canonicalize(&plain);
            prop_assert_eq!(want.as_ref(), Ok(&plain), "plain form should be canonical");
            prop_assert_eq!(canonicalize(&noisy), want, "noisy {:?}", noisy);
        }
    }
}
