//! Canonical JSON: object keys sorted, no insignificant whitespace. Sorting is done
//! here rather than trusted to serde_json's map type, whose order a feature of another
//! crate in the build can change.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON bytes of any serialisable value.
pub fn to_canonical_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let v = serde_json::to_value(value).expect("engine values always serialise");
    let mut out = Vec::new();
    write_value(&v, &mut out);
    out
}

fn write_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(k.clone()), out);
                out.push(b':');
                write_value(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(v: &Value, out: &mut Vec<u8>) {
    serde_json::to_writer(out, v).expect("writing to a Vec cannot fail");
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

impl std::io::Write for DigestWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
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

    #[test]
    fn sorts_keys_at_every_depth_and_drops_whitespace() {
        let v = json!({"b": 1, "a": {"z": [1, {"y": 2, "x": "é\n"}], "c": null}});
        let s = String::from_utf8(to_canonical_json(&v)).unwrap();
        assert_eq!(s, r#"{"a":{"c":null,"z":[1,{"x":"é\n","y":2}]},"b":1}"#);
    }

    #[test]
    fn a_digest_written_in_pieces_is_the_digest_of_the_whole() {
        use std::io::Write;
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
