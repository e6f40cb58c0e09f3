//! Canonical JSON per RFC 8785, the JSON Canonicalization Scheme (JCS), so that a digest
//! can be recomputed by any implementation in any language:
//!
//! - object members sorted by their names as UTF-16 code units (not UTF-8 bytes: the two
//!   orders differ for names with characters above U+FFFF);
//! - every number is an IEEE 754 double written as ECMAScript's Number-to-String does
//!   (`1.0` is `1`, `1e21` is `1e+21`, `-0` is `0`, integers above 2^53 lose their low
//!   digits exactly as a double does);
//! - strings escaped only where JSON must (`"`, `\`, controls below U+0020, the five with
//!   short forms as `\b \t \n \f \r`, the rest as `\u00xx` in lower-case hex); everything
//!   else, non-ASCII included, written as UTF-8;
//! - no insignificant whitespace.
//!
//! NaN and the infinities cannot reach the output: JSON text cannot spell them (the parser
//! refuses a number that overflows a double), and a Rust float that is not finite becomes
//! `null` when serialised (serde_json's rule), so a digest never depends on one.
//!
//! Sorting is done here rather than trusted to serde_json's map type, whose order a feature
//! of another crate in the build can change.

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::Formatter;
use sha2::{Digest, Sha256};
use std::cmp::Ordering;
use std::io::{self, Write};

/// Canonical JSON bytes of any serialisable value.
pub fn to_canonical_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let v = serde_json::to_value(value).expect("engine values always serialise");
    let mut out = Vec::new();
    write_value(&v, &mut out).expect("writing to a Vec cannot fail");
    out
}

/// Write the canonical JSON of a parsed value.
pub fn write_value<W: Write + ?Sized>(v: &Value, out: &mut W) -> io::Result<()> {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
            out.write_all(b"{")?;
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_string(k, out)?;
                out.write_all(b":")?;
                write_value(v, out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_value(item, out)?;
            }
            out.write_all(b"]")
        }
        Value::Null => out.write_all(b"null"),
        Value::Bool(b) => out.write_all(if *b { b"true" } else { b"false" }),
        // Every number is a double: `as_f64` rounds a 64-bit integer to the nearest one.
        Value::Number(n) => write_number(n.as_f64().unwrap_or(f64::NAN), out),
        Value::String(s) => write_string(s, out),
    }
}

/// Serialise `value` with RFC 8785 scalars (numbers, strings) straight to `out`, in the
/// order serde gives its members. Canonical only when every struct declares its fields in
/// sorted order of their JSON names and no map is inside; a writer that guarantees that
/// (the bundle compiler) skips building a [`Value`], and its tests re-canonicalise.
pub fn write_presorted<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Jcs);
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// Order of two member names under RFC 8785: by UTF-16 code units.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    utf16_cmp_utf8(a.as_bytes(), b.as_bytes())
}

/// [`utf16_cmp`] over the UTF-8 bytes of two strings, without decoding them. UTF-8 byte
/// order is code point order, which UTF-16 order follows except where a character from
/// U+E000 to U+FFFF (one unit, lead byte 0xEE or 0xEF) meets one above U+FFFF (a
/// surrogate pair, 0xD800 and up, lead byte 0xF0 to 0xF4): there the latter sorts first.
pub(crate) fn utf16_cmp_utf8(a: &[u8], b: &[u8]) -> Ordering {
    let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    // The character that differs starts at the same place in both (equal bytes before).
    let start = (0..=i).rev().find(|&j| a[j] & 0xC0 != 0x80).unwrap_or(0);
    let high_bmp = |c: u8| (0xEE..=0xEF).contains(&c);
    let astral = |c: u8| c >= 0xF0;
    match (a[start], b[start]) {
        (x, y) if high_bmp(x) && astral(y) => Ordering::Greater,
        (x, y) if astral(x) && high_bmp(y) => Ordering::Less,
        _ => a[i].cmp(&b[i]),
    }
}

/// A finite double in ECMAScript Number-to-String form (`-0` as `0`).
pub fn write_number<W: Write + ?Sized>(f: f64, out: &mut W) -> io::Result<()> {
    if !f.is_finite() {
        // Unreachable from JSON text or a serde value (see the module comment); refused
        // rather than written as something another implementation would not write.
        return Err(io::Error::other("a number that is not finite"));
    }
    if f == 0.0 {
        return out.write_all(b"0");
    }
    let mut buf = ryu_js::Buffer::new();
    out.write_all(buf.format_finite(f).as_bytes())
}

/// A string with RFC 8785 escaping.
pub fn write_string<W: Write + ?Sized>(s: &str, out: &mut W) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..0x20 => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ],
            _ => continue,
        };
        out.write_all(&bytes[start..i])?;
        out.write_all(short)?;
        start = i + 1;
    }
    out.write_all(&bytes[start..])?;
    out.write_all(b"\"")
}

/// serde_json's formatter with ECMAScript numbers: every integer goes through a double.
struct Jcs;

impl Formatter for Jcs {
    fn write_i8<W: Write + ?Sized>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_i16<W: Write + ?Sized>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_i32<W: Write + ?Sized>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_i64<W: Write + ?Sized>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        write_number(v as f64, w)
    }
    fn write_i128<W: Write + ?Sized>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        write_number(v as f64, w)
    }
    fn write_u8<W: Write + ?Sized>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_u16<W: Write + ?Sized>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_u32<W: Write + ?Sized>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_u64<W: Write + ?Sized>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        write_number(v as f64, w)
    }
    fn write_u128<W: Write + ?Sized>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        write_number(v as f64, w)
    }
    fn write_f32<W: Write + ?Sized>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        write_number(f64::from(v), w)
    }
    fn write_f64<W: Write + ?Sized>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        write_number(v, w)
    }
    fn write_number_str<W: Write + ?Sized>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        // Only with serde_json's arbitrary_precision: parse to the nearest double.
        let f: f64 = v.parse().map_err(io::Error::other)?;
        write_number(f, w)
    }
}

/// `sha256:<hex>` of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A writer that hashes what is written to it: canonical JSON produced piece by piece
/// (as the crawler does, straight from a server's bytes) gets the digest
/// [`sha256_hex`] would give the whole, without holding the whole.
#[derive(Default)]
pub struct DigestWriter {
    hasher: Sha256,
    len: usize,
}

impl DigestWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `sha256:<hex>` of everything written.
    pub fn finish(self) -> String {
        hex(&self.hasher.finalize())
    }
}

impl Write for DigestWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.hasher.update(buf);
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn hex(digest: &[u8]) -> String {
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in digest {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 15)] as char);
    }
    s
}

/// Digest of a value's JSON as serde writes it (fields in declaration order): a
/// cheap fingerprint of a model object (the model holds no maps, so the bytes are
/// fixed), used only as an input of other digests.
pub fn fingerprint<T: Serialize + ?Sized>(value: &T) -> String {
    sha256_hex(&serde_json::to_vec(value).expect("engine values always serialise"))
}

/// Digest of a value's canonical JSON.
pub fn digest_of<T: Serialize + ?Sized>(value: &T) -> String {
    sha256_hex(&to_canonical_json(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        let v: Value = serde_json::from_str(text).unwrap();
        String::from_utf8(to_canonical_json(&v)).unwrap()
    }

    #[test]
    fn sorts_keys_at_every_depth_and_drops_whitespace() {
        let v = json!({"b": 1, "a": {"z": [1, {"y": 2, "x": "é\n"}], "c": null}});
        let s = String::from_utf8(to_canonical_json(&v)).unwrap();
        assert_eq!(s, r#"{"a":{"c":null,"z":[1,{"x":"é\n","y":2}]},"b":1}"#);
    }

    #[test]
    fn numbers_are_doubles_in_ecmascript_form() {
        for (input, want) in [
            ("1.0", "1"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345678901", "123456789012345680000"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1E+2", "100"),
            ("9007199254740993", "9007199254740992"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9223372036854775808", "-9223372036854776000"),
            ("1.5e300", "1.5e+300"),
            ("5e-324", "5e-324"),
            ("0.1", "0.1"),
            ("-1.25", "-1.25"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
        // Typed integers and floats take the same path as parsed ones.
        assert_eq!(to_canonical_json(&1.0f64), b"1");
        assert_eq!(to_canonical_json(&u64::MAX), b"18446744073709552000");
        let mut out = Vec::new();
        write_presorted(&mut out, &(1.0f64, -0.0f64, 1e21f64, 7u8, u64::MAX)).unwrap();
        assert_eq!(out, b"[1,0,1e+21,7,18446744073709552000]");
        assert!(write_number(f64::NAN, &mut Vec::new()).is_err());
        assert!(write_number(f64::INFINITY, &mut Vec::new()).is_err());
    }

    /// The correctly rounded parse (serde_json's `float_roundtrip`): a decimal close to a
    /// half-way point between two doubles still lands on the nearest one.
    #[test]
    fn numbers_parse_to_the_nearest_double() {
        for text in [
            "2.2250738585072011e-308",
            "0.30000000000000004",
            "9007199254740993.0000000001",
            "1.7976931348623157e308",
            "7.038531e-26",
            "4.9406564584124654e-324",
        ] {
            let exact: f64 = text.parse().unwrap();
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(v.as_f64().unwrap().to_bits(), exact.to_bits(), "{text}");
        }
    }

    #[test]
    fn strings_escape_only_what_json_must() {
        for c in 0u32..0x80 {
            let c = char::from_u32(c).unwrap();
            let want = match c {
                '"' => "\\\"".to_string(),
                '\\' => "\\\\".to_string(),
                '\u{8}' => "\\b".to_string(),
                '\t' => "\\t".to_string(),
                '\n' => "\\n".to_string(),
                '\u{c}' => "\\f".to_string(),
                '\r' => "\\r".to_string(),
                c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            };
            let mut out = Vec::new();
            write_string(&c.to_string(), &mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("\"{want}\""),
                "{c:?}"
            );
            // The serde path (bundles) escapes the same way.
            let mut serde = Vec::new();
            write_presorted(&mut serde, &c.to_string()).unwrap();
            assert_eq!(
                String::from_utf8(serde).unwrap(),
                format!("\"{want}\""),
                "{c:?}"
            );
        }
        // Non-ASCII, including the separators JavaScript once refused in literals and
        // the characters around the surrogates, is written as it is.
        let s = "\u{7f}\u{80}é\u{2028}\u{2029}\u{d7ff}\u{e000}\u{fffd}\u{ffff}😀";
        let mut out = Vec::new();
        write_string(s, &mut out).unwrap();
        assert_eq!(out, format!("\"{s}\"").as_bytes());
    }

    #[test]
    fn member_names_sort_as_utf16_code_units() {
        // U+FB33 (one unit, 0xFB33) sorts after U+1F600 (0xD83D 0xDE00) in UTF-16, before
        // it in UTF-8 bytes.
        assert_eq!(canon(r#"{"\ufb33":1,"😀":2}"#), r#"{"😀":2,"דּ":1}"#);
        for (a, b, want) in [
            ("a", "b", Ordering::Less),
            ("ab", "a", Ordering::Greater),
            ("", "a", Ordering::Less),
            ("x\u{e000}", "x😀", Ordering::Greater),
            ("é", "e", Ordering::Greater),
            ("😀", "😁", Ordering::Less),
            ("same", "same", Ordering::Equal),
        ] {
            assert_eq!(utf16_cmp(a, b), want, "{a:?} {b:?}");
            let units = a.encode_utf16().cmp(b.encode_utf16());
            assert_eq!(units, want);
        }
        // Against the definition, over characters from every UTF-8 length and either
        // side of the surrogates, in pairs and with a shared prefix.
        let chars = [
            'a',
            '\u{7f}',
            '\u{80}',
            'é',
            '\u{7ff}',
            '\u{800}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{efff}',
            '\u{f000}',
            '\u{fb33}',
            '\u{ffff}',
            '\u{10000}',
            '😀',
            '\u{10ffff}',
        ];
        for x in chars {
            for y in chars {
                for (p, q) in [
                    (format!("{x}"), format!("{y}")),
                    (format!("k{x}z"), format!("k{y}")),
                    (format!("{x}{y}"), format!("{x}")),
                ] {
                    let want = p.encode_utf16().cmp(q.encode_utf16());
                    assert_eq!(utf16_cmp(&p, &q), want, "{p:?} {q:?}");
                }
            }
        }
    }

    #[test]
    fn a_digest_written_in_pieces_is_the_digest_of_the_whole() {
        let whole = to_canonical_json(&json!({"b": [1, 2], "a": "x"}));
        let mut w = DigestWriter::new();
        for piece in whole.chunks(3) {
            w.write_all(piece).unwrap();
        }
        assert_eq!(w.len(), whole.len());
        assert_eq!(w.finish(), sha256_hex(&whole));
    }

    #[test]
    fn digest_has_the_ecosystem_prefix() {
        let d = digest_of(&json!({}));
        assert_eq!(
            d,
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
