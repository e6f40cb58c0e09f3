//! RFC 8785's own examples (its Appendix B number samples and the §3.2 examples, kept as
//! data under `tests/fixtures/rfc8785`), through both canonicalisers: the one over parsed
//! values and the streaming one the contract digest uses.

use mcpgov_core::canonical::{to_canonical_json, write_number};
use mcpgov_core::streaming::{Unbounded, canonical};
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rfc8785")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Both canonicalisers over `text`, which must agree.
fn both(text: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let by_value = String::from_utf8(to_canonical_json(&v)).unwrap();
    let mut out = Vec::new();
    canonical(text, 1, &Unbounded, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), by_value, "{text}");
    by_value
}

#[test]
fn appendix_b_number_samples() {
    let table = String::from_utf8(fixture("numbers.csv")).unwrap();
    let mut rows = 0;
    for line in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (hex, want) = line.split_once(',').unwrap();
        let f = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        rows += 1;
        let mut out = Vec::new();
        if !f.is_finite() {
            assert!(write_number(f, &mut out).is_err(), "{hex}");
            continue;
        }
        write_number(f, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want, "{hex}");
        // Read back from its own text (and from Rust's longest form), the same number
        // is written again: the parse is correctly rounded.
        assert_eq!(both(want), want, "{hex}");
        assert_eq!(both(&format!("{f:e}")), want, "{hex}");
    }
    assert_eq!(rows, 26);
}

#[test]
fn sorting_example_with_non_bmp_names() {
    let input = String::from_utf8(fixture("sorting.input.json")).unwrap();
    let want = String::from_utf8(fixture("sorting.output.json")).unwrap();
    assert_eq!(both(&input), want);
}

#[test]
fn structures_example_numbers_strings_literals() {
    let input = String::from_utf8(fixture("structures.input.json")).unwrap();
    let want = String::from_utf8(fixture("structures.output.json")).unwrap();
    assert_eq!(both(&input), want);
}
