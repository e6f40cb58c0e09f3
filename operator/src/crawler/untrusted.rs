//! Text a server sent, made safe to show: bounded in bytes and with every character that
//! steers a terminal or a log reader escaped, before it reaches status, Events, logs,
//! metric labels or a terminal.
//!
//! Escaped, as `\u{..}`: C0 and C1 control characters and DEL (ANSI escape sequences
//! start with ESC, U+001B, or CSI, U+009B; a CR overwrites the line, a BEL rings), the
//! bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F,
//! U+061C: "Trojan Source" reordering) and the Unicode line and paragraph separators.
//! A single line ([`line()`]) escapes newlines and tabs too, so one value cannot forge a
//! second log line; free text ([`text`]) keeps them. Over the bound the value is cut on a
//! character boundary and ends with a marker saying how many bytes were left out.
//!
//! Identity strings (tool names, resource URIs) are not rewritten here: the crawler
//! refuses a catalog that carries control characters in them (see `page`), since an
//! escaped name would be a different name.

use std::fmt::Write as _;

/// Longest message of a crawl failure (conditions, `lastError`, logs, the CLI).
pub const MAX_MESSAGE: usize = 1024;

/// Whether `c` is escaped in free text (and so refused in identity strings).
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200e}' | '\u{200f}' | '\u{61c}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// `s` as one line of at most `max` bytes: newlines and tabs escaped as well.
pub fn line(s: &str, max: usize) -> String {
    clean(s, max, true)
}

/// `s` as free text of at most `max` bytes: newlines and tabs kept.
pub fn text(s: &str, max: usize) -> String {
    clean(s, max, false)
}

fn clean(s: &str, max: usize, one_line: bool) -> String {
    let escaped = |c: char| is_unsafe(c) || (one_line && (c == '\n' || c == '\t'));
    // `\u{..}` of a char below U+110000: at most 10 bytes.
    let width = |c: char| {
        if escaped(c) {
            format!("{:x}", c as u32).len() + 4
        } else {
            c.len_utf8()
        }
    };
    let needed: usize = s.chars().map(width).sum();
    if needed == s.len() && needed <= max {
        return s.to_owned();
    }
    let mut out = String::with_capacity(needed.min(max));
    let push = |out: &mut String, c: char| {
        if escaped(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    };
    if needed <= max {
        s.chars().for_each(|c| push(&mut out, c));
        return out;
    }
    // Cut: keep what fits before a marker naming the bytes left out (its number has
    // at most as many digits as the whole input's length).
    let marker_len = "…(+ bytes)".len() + s.len().to_string().len();
    let Some(budget) = max.checked_sub(marker_len) else {
        return if max >= "…".len() {
            "…".to_owned()
        } else {
            String::new()
        };
    };
    for (i, c) in s.char_indices() {
        if out.len() + width(c) > budget {
            let _ = write!(out, "…(+{} bytes)", s.len() - i);
            return out;
        }
        push(&mut out, c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_unchanged() {
        assert_eq!(line("hello, world: é ✓", 100), "hello, world: é ✓");
        assert_eq!(text("two\nlines\tand a tab", 100), "two\nlines\tand a tab");
    }

    #[test]
    fn escapes_steer_nothing() {
        let evil = "\u{1b}[31mRED\u{1b}[0m\u{7}\rfake\nlevel=error\u{9b}2J\u{202e}gnp.exe\u{2028}";
        let l = line(evil, 1000);
        assert_eq!(
            l,
            "\\u{1b}[31mRED\\u{1b}[0m\\u{7}\\u{d}fake\\u{a}level=error\\u{9b}2J\\u{202e}gnp.exe\\u{2028}"
        );
        assert!(!l.chars().any(|c| c.is_control() || is_unsafe(c)));
        let t = text(evil, 1000);
        assert!(t.contains("fake\nlevel=error"));
        assert!(!t.contains('\u{1b}') && !t.contains('\r'));
    }

    #[test]
    fn long_values_are_cut_with_a_marker_within_the_bound() {
        let big = "x".repeat(2 << 20);
        let l = line(&big, 1024);
        assert!(l.len() <= 1024, "{}", l.len());
        assert!(l.ends_with(" bytes)"), "{l}");
        assert!(l.starts_with("xxxx"));
        // Escapes count towards the bound, and a cut never splits a character.
        let evil = "é\u{1b}".repeat(100_000);
        for max in [0, 1, 3, 7, 20, 21, 40, 41, 100, 1023] {
            let l = line(&evil, max);
            assert!(l.len() <= max, "{max}: {} {l}", l.len());
            assert!(!l.contains('\u{1b}'));
            assert!(!l.contains("\\u{1") || l.contains("\\u{1b}"), "{l}");
        }
        // Exactly at the bound: no marker.
        assert_eq!(line(&"y".repeat(64), 64), "y".repeat(64));
    }
}
