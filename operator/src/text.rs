//! Text that came from input (a pull request's manifests, a file name, a server's
//! answer) made safe to print: shortened only on character boundaries, and with
//! control and bidirectional-format characters escaped so nothing from the input can
//! drive a terminal (ANSI escapes, carriage returns, reordered text).

use std::borrow::Cow;
use std::path::Path;

/// At most `max` characters of `s`, with `…` appended when something was cut. Cuts on a
/// `char` boundary: slicing a `str` by bytes panics inside a multi-byte character.
pub fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    if s.chars().nth(max).is_none() {
        return Cow::Borrowed(s);
    }
    let keep = s
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(s.len(), |(i, _)| i);
    Cow::Owned(format!("{}…", &s[..keep]))
}

/// Characters a terminal may act on rather than show: C0 and C1 controls (ESC, CSI,
/// CR, BEL…), DEL, and the invisible format characters that reorder or hide text.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `s` with every unsafe character written as `\u{..}`. Idempotent: the escape itself
/// is plain text, so text escaped twice reads the same.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_but(s, |_| false)
}

/// As [`escape`], but line breaks stay: for multi-line diagnostics whose lines were
/// built by us.
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    escape_but(s, |c| c == '\n')
}

fn escape_but(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) && !keep(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A value from the input for a message: shortened to `max` characters, quoted, and
/// escaped (quotes and backslashes too, as Rust's `{:?}` does).
pub fn quote(s: &str, max: usize) -> String {
    escape(&format!("{:?}", truncate(s, max))).into_owned()
}

/// A path for a message: file names in a pull request are input too.
pub fn path(p: &Path) -> String {
    escape(&p.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundaries() {
        let s = "xé".repeat(100);
        for max in 0..205 {
            let t = truncate(&s, max);
            let n = t.chars().count();
            assert!(n <= max.max(1), "{max}: {n}");
        }
        assert_eq!(truncate("héllo", 5), "héllo");
        assert_eq!(truncate("héllo", 4), "hél…");
        assert_eq!(truncate("日本語テキスト", 3), "日本…");
        assert_eq!(truncate("", 0), "");
    }

    #[test]
    fn escapes_terminal_controls_and_is_idempotent() {
        let raw = "a\u{1b}[31mred\r\u{9b}2J\u{7f}\u{202e}x\ty\nz";
        let e = escape(raw);
        assert!(!e.chars().any(unsafe_char), "{e}");
        assert_eq!(
            e,
            "a\\u{1b}[31mred\\u{d}\\u{9b}2J\\u{7f}\\u{202e}x\\u{9}y\\u{a}z"
        );
        assert_eq!(escape(&e), e);
        assert_eq!(escape_lines("a\nb\u{1b}"), "a\nb\\u{1b}");
        assert!(matches!(escape("plain ünïcode ✓"), Cow::Borrowed(_)));
        assert_eq!(
            quote("\u{1b}]0;title\u{7}", 60),
            "\"\\u{1b}]0;title\\u{7}\""
        );
    }
}
