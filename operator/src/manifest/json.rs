//! JSON documents read strictly: `serde_json::Value` keeps the last of two equal keys
//! without a word, while the YAML parser (and the API server's strict decoding)
//! refuses them. A reviewer reads the first `"profile"`; the gate must not evaluate the
//! second. serde_json's recursion limit (128 levels) still bounds the nesting.

use crate::text;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Why a document starting with `{` was not read as JSON.
pub enum JsonError {
    /// Not JSON (YAML flow style, comments, a syntax error): let the YAML parser judge.
    NotJson,
    /// Valid JSON that mcpgov refuses (a duplicate key); the message says where.
    Refused(String),
}

/// One JSON document, refusing duplicate keys at any depth.
pub fn parse(doc: &str) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_str(doc);
    let value = de
        .deserialize_any(Strict)
        .and_then(|v| de.end().map(|()| v));
    value.map_err(|e| match e.classify() {
        // Our visitor's only error; syntax and EOF errors are the YAML parser's to report.
        serde_json::error::Category::Data => JsonError::Refused(e.to_string()),
        _ => JsonError::NotJson,
    })
}

/// Builds a `Value` as serde_json does, but fails on the second occurrence of a key.
struct Strict;

impl<'de> de::Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Strict).map(StrictValue)
    }
}

struct StrictValue(Value);

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {}",
                    text::quote(&key, 60)
                )));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(doc: &str) -> String {
        match parse(doc) {
            Err(JsonError::Refused(m)) => m,
            Err(JsonError::NotJson) => panic!("{doc}: read as not JSON"),
            Ok(v) => panic!("{doc}: accepted as {v}"),
        }
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let doc = r#"{"a":[1,-2,3.5,true,null,"x",{"b":{}}],"c":18446744073709551615}"#;
        let strict = parse(doc).ok().unwrap();
        assert_eq!(strict, serde_json::from_str::<Value>(doc).unwrap());
    }

    #[test]
    fn refuses_duplicate_keys_at_any_depth_naming_key_and_place() {
        let m = refused(r#"{"kind":"Agent","kind":"Grant"}"#);
        assert!(
            m.contains("duplicate key \"kind\"") && m.contains("line 1"),
            "{m}"
        );
        let m = refused("{\"a\":[{\"b\":{\"c\":1,\n\"c\":2}}]}");
        assert!(m.contains("\"c\"") && m.contains("line 2"), "{m}");
        let m = refused("{\"\\u001b[31m\":1,\"\\u001b[31m\":2}");
        assert!(!m.contains('\u{1b}'), "{m}");
    }

    #[test]
    fn leaves_non_json_and_deep_nesting_to_the_caller() {
        for doc in ["{a: 1}", "{\"a\": 1} # c", "{\"a\": 1", "{\"a\": 1}}"] {
            assert!(matches!(parse(doc), Err(JsonError::NotJson)), "{doc}");
        }
        // Past serde_json's recursion limit: an error, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(parse(&deep), Err(JsonError::NotJson)));
    }
}
