//! The key of the argument digest. Arguments are often guessable (a repository name, a
//! ticket number), so a plain hash of them could be reversed by trying candidates; an
//! HMAC under a key the reader of the log does not hold cannot.

use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use mcpgov_core::canonical::to_canonical_json;
use serde_json::Value;
use sha2::Sha256;

/// The secret under which argument digests are computed. Never printed.
#[derive(Clone)]
pub struct ArgKey {
    key: Vec<u8>,
    id: String,
}

#[derive(Debug)]
pub enum KeyError {
    Read(std::io::Error),
    TooShort(usize),
    TooLong,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Read(e) => write!(f, "cannot read the audit argument key: {e}"),
            KeyError::TooShort(n) => write!(
                f,
                "the audit argument key has {n} bytes; it needs at least {}",
                ArgKey::MIN_BYTES
            ),
            KeyError::TooLong => write!(
                f,
                "the audit argument key file is larger than {} bytes",
                ArgKey::MAX_FILE_BYTES
            ),
        }
    }
}

impl std::error::Error for KeyError {}

impl std::fmt::Debug for ArgKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ArgKey({})", self.id)
    }
}

const KEY_ID_LABEL: &[u8] = b"mcpgov-gateway audit key id";

impl ArgKey {
    /// 32 bytes: `openssl rand -hex 32` (64 characters) or 32 raw random bytes.
    pub const MIN_BYTES: usize = 32;
    pub const MAX_FILE_BYTES: u64 = 4096;

    pub fn from_bytes(key: &[u8]) -> Result<Self, KeyError> {
        if key.len() < Self::MIN_BYTES {
            return Err(KeyError::TooShort(key.len()));
        }
        let mut k = ArgKey {
            key: key.to_vec(),
            id: String::new(),
        };
        // An identifier that names the key without revealing it: a MAC of a fixed label.
        k.id = format!("k:{}", &hex(&k.mac(KEY_ID_LABEL))[..16]);
        Ok(k)
    }

    /// Reads the key from a mounted Secret file. Trailing ASCII whitespace is dropped
    /// (`kubectl create secret --from-file` keeps an editor's final newline).
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(KeyError::Read)?;
        let mut bytes = Vec::new();
        file.take(Self::MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(KeyError::Read)?;
        if bytes.len() as u64 > Self::MAX_FILE_BYTES {
            return Err(KeyError::TooLong);
        }
        while bytes.last().is_some_and(u8::is_ascii_whitespace) {
            bytes.pop();
        }
        Self::from_bytes(&bytes)
    }

    /// `k:` and 16 hex digits: which key made a digest, so digests from two keys are
    /// never compared as if they could match.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `hmac-sha256:<hex>` of the canonical JSON of the arguments.
    pub fn digest(&self, arguments: &Value) -> String {
        format!(
            "hmac-sha256:{}",
            hex(&self.mac(&to_canonical_json(arguments)))
        )
    }

    fn mac(&self, bytes: &[u8]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(bytes);
        mac.finalize().into_bytes().to_vec()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digest_is_hmac_sha256_of_the_canonical_arguments() {
        // RFC 4231 test case 2 pins the primitive; the key is shorter than we accept,
        // so it goes through the private constructor path.
        let k = ArgKey {
            key: b"Jefe".to_vec(),
            id: String::new(),
        };
        assert_eq!(
            hex(&k.mac(b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let k = ArgKey::from_bytes(&[1u8; 32]).unwrap();
        // Key order and whitespace do not change the digest: it is over canonical bytes.
        let a: Value = serde_json::from_str(r#"{"b": 2, "a": [1, "x"]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":[1,"x"],"b":2}"#).unwrap();
        assert_eq!(k.digest(&a), k.digest(&b));
        assert_eq!(
            k.digest(&a),
            format!("hmac-sha256:{}", hex(&k.mac(br#"{"a":[1,"x"],"b":2}"#)))
        );
    }

    #[test]
    fn another_key_gives_another_digest_and_id() {
        let args = json!({"path": "/etc/passwd"});
        let k1 = ArgKey::from_bytes(&[1u8; 32]).unwrap();
        let k2 = ArgKey::from_bytes(&[2u8; 32]).unwrap();
        assert_ne!(k1.digest(&args), k2.digest(&args));
        assert_ne!(k1.id(), k2.id());
        assert_eq!(k1.id().len(), 18);
        assert!(!format!("{k1:?}").contains("0101"));
    }

    #[test]
    fn key_file_is_bounded_trimmed_and_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("key");
        std::fs::write(&p, format!("{}\n", "ab".repeat(32))).unwrap();
        let from_file = ArgKey::from_file(&p).unwrap();
        assert_eq!(
            from_file.id(),
            ArgKey::from_bytes("ab".repeat(32).as_bytes()).unwrap().id()
        );
        std::fs::write(&p, "short\n").unwrap();
        assert!(matches!(ArgKey::from_file(&p), Err(KeyError::TooShort(5))));
        std::fs::write(&p, vec![b'x'; 5000]).unwrap();
        assert!(matches!(ArgKey::from_file(&p), Err(KeyError::TooLong)));
        assert!(matches!(
            ArgKey::from_file(&dir.path().join("missing")),
            Err(KeyError::Read(_))
        ));
    }
}
