//! Canonical JSON (RFC 8785) written straight from untrusted JSON text, without building
//! the value: objects are sorted through a table of 8-byte offsets, arrays are never
//! held, nesting is bounded by [`MAX_DEPTH`], and a [`Budget`] is ticked for every value
//! and member so a caller can stop the work (the crawler's deadline). A schema costs at
//! most about 1.6 times its own size while it is written, and nothing afterwards.
//!
//! The bytes are exactly those [`crate::canonical::to_canonical_json`] gives for the
//! parsed value (a property test holds the two together).

use crate::canonical::{utf16_cmp_utf8, write_number, write_string};
use serde::Deserialize;
use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::io::Write;

/// Nesting a value may have (objects and arrays); deeper is refused.
pub const MAX_DEPTH: usize = 64;

/// Work a canonicalisation may do: ticked once per value and object member; an error
/// stops it with that message.
pub trait Budget {
    fn tick(&self) -> Result<(), String>;
}

/// No limit but the input's size.
pub struct Unbounded;

impl Budget for Unbounded {
    fn tick(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Write the canonical JSON of the first JSON value in `raw` (valid JSON) to `out`.
/// `depth` is the nesting of that value itself (1 for a schema inside a tool).
pub fn canonical(
    raw: &str,
    depth: usize,
    budget: &dyn Budget,
    out: &mut dyn Write,
) -> Result<(), String> {
    budget.tick()?;
    let raw = raw.trim_start();
    match raw.as_bytes().first() {
        Some(b'{') | Some(b'[') if depth > MAX_DEPTH => {
            Err(format!("nested deeper than {MAX_DEPTH} levels"))
        }
        Some(b'{') => canonical_object(raw, depth, budget, out),
        Some(b'[') => {
            let mut err = None;
            let r = serde_json::Deserializer::from_str(raw).deserialize_seq(ArrayWriter {
                depth,
                budget,
                out: &mut *out,
                err: &mut err,
            });
            if let Some(e) = err {
                return Err(e);
            }
            r.map_err(|e| e.to_string())
        }
        Some(b'"') => {
            if let Some(token) = verbatim_string(raw) {
                return out.write_all(token.as_bytes()).map_err(|e| e.to_string());
            }
            let mut de = serde_json::Deserializer::from_str(raw);
            let s = Cow::<str>::deserialize(&mut de).map_err(|e| e.to_string())?;
            write_string(&s, out).map_err(|e| e.to_string())
        }
        Some(b'-' | b'0'..=b'9') => {
            let len = raw
                .bytes()
                .position(|c| !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .unwrap_or(raw.len());
            let token = &raw[..len];
            if let Some(token) = verbatim_integer(token) {
                return out.write_all(token.as_bytes()).map_err(|e| e.to_string());
            }
            // Checked as JSON first (Rust's float parser takes forms JSON does not: `1.`,
            // `.5`, `+1`); then read to the nearest double, a finite one.
            serde_json::from_str::<IgnoredAny>(token).map_err(|e| e.to_string())?;
            let f: f64 = token.parse().map_err(|_| format!("bad number {token}"))?;
            if !f.is_finite() {
                return Err(format!("the number {token} is out of range"));
            }
            write_number(f, out).map_err(|e| e.to_string())
        }
        _ => {
            for lit in ["true", "false", "null"] {
                if raw.starts_with(lit) {
                    return out.write_all(lit.as_bytes()).map_err(|e| e.to_string());
                }
            }
            Err(format!(
                "not a JSON value at {:?}",
                raw.chars().take(16).collect::<String>()
            ))
        }
    }
}

/// A string token at the start of `raw` that is already canonical: no escape, no raw
/// control character (invalid JSON, refused by the parser instead).
fn verbatim_string(raw: &str) -> Option<&str> {
    let b = raw.as_bytes();
    let end = 1 + b[1..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (b[end] == b'"').then(|| &raw[..=end])
}

/// An integer token written the same as a double in ECMAScript form: at most 15 digits
/// (below 2^53, so exact), no leading zero, not `-0`.
fn verbatim_integer(token: &str) -> Option<&str> {
    let digits = token.strip_prefix('-').unwrap_or(token);
    let plain = (1..=15).contains(&digits.len()) && digits.bytes().all(|c| c.is_ascii_digit());
    let leading_zero = digits.len() > 1 && digits.starts_with('0');
    let minus_zero = token.starts_with('-') && digits == "0";
    (plain && !leading_zero && !minus_zero).then_some(token)
}

struct ArrayWriter<'o> {
    depth: usize,
    budget: &'o dyn Budget,
    out: &'o mut dyn Write,
    err: &'o mut Option<String>,
}

impl<'de> Visitor<'de> for ArrayWriter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let _ = self.out.write_all(b"[");
        let mut first = true;
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if !first {
                let _ = self.out.write_all(b",");
            }
            first = false;
            if let Err(e) = canonical(item.get(), self.depth + 1, self.budget, self.out) {
                *self.err = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        let _ = self.out.write_all(b"]");
        Ok(())
    }
}

/// One member of an object being sorted, 8 bytes whatever its size: where its key
/// starts (in the object's bytes, just after the opening quote; or, with `OWNED`, in a
/// side buffer of decoded keys that had escapes) and where its value starts.
#[derive(Clone, Copy)]
struct Member {
    key: u32,
    value: u32,
}

const OWNED: u32 = 1 << 31;

fn canonical_object(
    raw: &str,
    depth: usize,
    budget: &dyn Budget,
    out: &mut dyn Write,
) -> Result<(), String> {
    if raw.len() >= OWNED as usize {
        return Err("an object of 2 GiB or more".into());
    }
    // Count first, so the table is allocated once at its exact size.
    let count = serde_json::Deserializer::from_str(raw)
        .deserialize_map(Counter)
        .map_err(|e| e.to_string())?;
    let mut members: Vec<Member> = Vec::with_capacity(count);
    // Decoded keys that had escapes, each after its length (4 bytes, little-endian).
    let mut owned: Vec<u8> = Vec::new();
    serde_json::Deserializer::from_str(raw)
        .deserialize_map(Collector {
            base: raw,
            members: &mut members,
            owned: &mut owned,
        })
        .map_err(|e| e.to_string())?;
    let key = |m: &Member| -> &[u8] {
        let at = (m.key & !OWNED) as usize;
        if m.key & OWNED != 0 {
            let len = u32::from_le_bytes([owned[at], owned[at + 1], owned[at + 2], owned[at + 3]]);
            &owned[at + 4..at + 4 + len as usize]
        } else {
            // A borrowed key has no escape: it ends at the next quote.
            let rest = &raw.as_bytes()[at..];
            &rest[..rest.iter().position(|&c| c == b'"').unwrap_or(rest.len())]
        }
    };
    // Keys in UTF-16 order (compared on their UTF-8 bytes); for a repeated key the last
    // one counts (as for serde_json's maps and most parsers), so equal keys are kept in
    // document order and all but the last skipped.
    members.sort_unstable_by(|a, b| utf16_cmp_utf8(key(a), key(b)).then(a.value.cmp(&b.value)));
    let _ = out.write_all(b"{");
    let mut first = true;
    for (i, m) in members.iter().enumerate() {
        budget.tick()?;
        if members.get(i + 1).is_some_and(|next| key(next) == key(m)) {
            // Overridden, but still checked: a document the value writer refuses (a
            // number out of range here) is refused here too.
            canonical(
                &raw[m.value as usize..],
                depth + 1,
                budget,
                &mut std::io::sink(),
            )?;
            continue;
        }
        if !first {
            let _ = out.write_all(b",");
        }
        first = false;
        // Cut from a `&str` at quotes (ASCII), or decoded: always UTF-8.
        let k = std::str::from_utf8(key(m)).map_err(|e| e.to_string())?;
        write_string(k, out).map_err(|e| e.to_string())?;
        let _ = out.write_all(b":");
        canonical(&raw[m.value as usize..], depth + 1, budget, out)?;
    }
    let _ = out.write_all(b"}");
    Ok(())
}

struct Counter;

impl<'de> Visitor<'de> for Counter {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(n)
    }
}

struct Collector<'c, 'de> {
    base: &'de str,
    members: &'c mut Vec<Member>,
    owned: &'c mut Vec<u8>,
}

fn offset(base: &str, part: &str) -> u32 {
    (part.as_ptr() as usize - base.as_ptr() as usize) as u32
}

impl<'de> Visitor<'de> for Collector<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(k) = map.next_key::<Cow<'de, str>>()? {
            let value: &'de RawValue = map.next_value()?;
            let key = match k {
                Cow::Borrowed(k) => offset(self.base, k),
                Cow::Owned(k) => {
                    let at = self.owned.len() as u32 | OWNED;
                    self.owned
                        .extend_from_slice(&(k.len() as u32).to_le_bytes());
                    self.owned.extend_from_slice(k.as_bytes());
                    at
                }
            };
            self.members.push(Member {
                key,
                value: offset(self.base, value.get()),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::to_canonical_json;
    use serde_json::Value;
    use std::cell::Cell;

    fn canon(v: &str) -> Result<String, String> {
        let mut out = Vec::new();
        canonical(v, 1, &Unbounded, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn reference(v: &str) -> String {
        let v: Value = serde_json::from_str(v).unwrap();
        String::from_utf8(to_canonical_json(&v)).unwrap()
    }

    #[test]
    fn streaming_canonical_json_is_the_values() {
        for v in [
            r#"{}"#,
            r#"[]"#,
            r#"{"b": 1, "a": {"z": [1, {"y": 2, "x": "é\n"}], "c": null}}"#,
            r#"{"a": 1, "a": 2, "b": [true, false, null], "a": 3}"#,
            r#"{"\u0062": 1, "a\"b": 2, "b": 3, "": {}, "\ud83d\ude00": "\u00e9"}"#,
            r#"{"\ufb33": 1, "😀": 2, "\ue000": 3, "\ud83d\ude01": 4}"#,
            r#"[1.0, 1e2, -0, 0.1, 18446744073709551615, 18446744073709551616, -9223372036854775808, 1.5e300, 3]"#,
            r#"[1e21, 1e-7, 123456789012345678901, 9007199254740993, 0.000001, 1E+2, -0.0, 5e-324]"#,
            r#"  { "k" :  [ { "z" : 1 , "y" : [ ] } ] , "j" : "\t\u0001\u001f\u007f\u2028" }  "#,
            r#"{"enum": ["b", "a"], "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}"#,
        ] {
            assert_eq!(canon(v).unwrap(), reference(v), "{v}");
        }
    }

    /// Random values (keys from a tiny alphabet, so duplicates, escapes and non-BMP keys
    /// are common; numbers of every shape), compact and pretty-printed: the streaming
    /// writer agrees with the value writer.
    #[test]
    fn canonical_json_matches_the_value_writer_on_generated_values() {
        use rand::Rng;
        fn text(rng: &mut impl Rng) -> String {
            let alphabet = [
                'a', 'b', 'c', '"', '\\', '\n', 'é', '\u{1}', '😀', '\u{fb33}', '\u{e000}',
            ];
            (0..rng.random_range(0..4))
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect()
        }
        fn value(rng: &mut impl Rng, depth: u32) -> String {
            let pick = if depth > 4 {
                rng.random_range(0..7)
            } else {
                rng.random_range(0..9)
            };
            match pick {
                0 => "null".into(),
                1 => rng.random::<bool>().to_string(),
                2 => rng.random::<i64>().to_string(),
                3 => format!(
                    "{}e{}",
                    rng.random_range(-999..999),
                    rng.random_range(-30..30)
                ),
                4 => format!("{:?}", rng.random::<f64>() * 1e6),
                5 => format!("{:e}", f64::from_bits(rng.random::<u64>() >> 2)),
                6 => serde_json::to_string(&text(rng)).unwrap(),
                7 => {
                    let items: Vec<String> = (0..rng.random_range(0..5))
                        .map(|_| value(rng, depth + 1))
                        .collect();
                    format!("[ {} ]", items.join(" , "))
                }
                _ => {
                    let members: Vec<String> = (0..rng.random_range(0..6))
                        .map(|_| {
                            format!(
                                "{}:{}",
                                serde_json::to_string(&text(rng)).unwrap(),
                                value(rng, depth + 1)
                            )
                        })
                        .collect();
                    format!("{{\n {} }}", members.join(",\n "))
                }
            }
        }
        let mut rng = rand::rng();
        for _ in 0..3000 {
            let v = value(&mut rng, 0);
            assert_eq!(canon(&v).unwrap(), reference(&v), "{v}");
        }
    }

    #[test]
    fn scalars_are_written_as_the_value_writer_writes_them() {
        for v in [
            "0",
            "7",
            "-7",
            "123456789012345",
            "1234567890123456",
            "123456789012345678",
            "1234567890123456789",
            "-0",
            "0.5",
            "1e3",
            "-1E-2",
            "1.0",
            "100e-2",
            "true",
            "false",
            "null",
            r#""plain""#,
            r#""esc\u0041""#,
            r#""\/""#,
            r#""""#,
            r#""é😀""#,
        ] {
            assert_eq!(canon(v).unwrap(), reference(v), "{v}");
        }
    }

    #[test]
    fn numbers_a_double_cannot_hold_and_bad_tokens_are_refused() {
        for bad in [
            "1e400",
            "-1e400",
            "1.",
            "01",
            "+1",
            "-",
            "1e",
            "tru",
            "\"\\ud800\"",
            // In a member a later one overrides: refused all the same.
            r#"{"a": 1e400, "a": 1}"#,
            r#"{"a": [[1e400]], "a": 1}"#,
        ] {
            assert!(canon(bad).is_err(), "{bad}");
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(canon(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(canon(&deep).unwrap_err().contains("nested deeper than 64"));
        // Far deeper than any parser's recursion limit: still just refused.
        let deeper = format!(r#"{{"a":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert!(canon(&deeper).unwrap_err().contains("nested deeper"));
    }

    /// A budget that runs out stops the work with its message.
    #[test]
    fn the_budget_stops_the_work() {
        struct Ticks(Cell<u32>);
        impl Budget for Ticks {
            fn tick(&self) -> Result<(), String> {
                let left = self.0.get().checked_sub(1).ok_or("out of budget")?;
                self.0.set(left);
                Ok(())
            }
        }
        let zeros = format!("[{}]", vec!["0"; 1000].join(","));
        let mut sink = Vec::new();
        let e = canonical(&zeros, 1, &Ticks(Cell::new(100)), &mut sink).unwrap_err();
        assert_eq!(e, "out of budget");
        assert!(canonical(&zeros, 1, &Ticks(Cell::new(1001)), &mut sink).is_ok());
    }
}
