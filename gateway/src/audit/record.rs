//! One audit line: what the gateway decided ([`DecisionRecord`]), how it becomes a bounded
//! JSON object, how that object is sealed into the chain, and how a line read back is
//! checked. The writer and the verifier share [`check_line`], so they can never disagree
//! on what a good line is.

use mcpgov_core::canonical::{sha256_hex, to_canonical_json};
use serde_json::{Map, Value};

use super::key::ArgKey;

/// `prev` of the first record of a chain: no record comes before it.
pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The `v` field: bumped when the meaning of a field changes.
pub const FORMAT_VERSION: u64 = 1;

/// No line written or read is longer than this (without its newline). The per-field
/// budgets below keep a record far under it; a longer line on disk is a break.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// What the gateway decided for one MCP request. The gateway's own type
/// (`decision.rs`) has this shape; the audit only needs these fields.
#[derive(Debug, Clone)]
pub struct DecisionRecord {
    pub time: jiff::Timestamp,
    /// `namespace/name` of the Agent.
    pub agent: String,
    /// sha256 of the bundle the decision was made under; `None` when no valid bundle
    /// was ever loaded (every `tools/*` request is then denied).
    pub bundle_sha: Option<String>,
    /// JSON-RPC method, e.g. `tools/call`.
    pub method: String,
    /// `namespace/server` of the route the request came in on.
    pub server: String,
    pub tool: Option<String>,
    pub decision: Decision,
    /// False in warn mode: the call went through whatever `decision` says.
    pub enforced: bool,
    pub reasons: Vec<String>,
    /// The contract digest the bundle approved, and the one the server serves now.
    pub bundle_contract_digest: Option<String>,
    pub live_contract_digest: Option<String>,
    pub arg_names: Vec<String>,
    /// The raw arguments: never written, only their keyed digest.
    pub arguments: Option<Value>,
    pub session_id: Option<String>,
    /// Canonical resource URIs a per-call guard decided on (the blocked one, or the
    /// ones a passing call names); empty for tools without a guard.
    pub resources: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

pub(crate) const KIND_DECISION: &str = "decision";
pub(crate) const KIND_CHAIN_BREAK: &str = "chainBreak";

// Budgets in bytes of escaped JSON (a control character costs six), so the worst
// record is bounded whatever the agent or an upstream server put in a name.
const SHORT: usize = 128;
const AGENT: usize = 320;
const NAME: usize = 256;
const REASON: usize = 512;
const MAX_REASONS: usize = 16;
const ARG_NAME: usize = 128;
const MAX_ARG_NAMES: usize = 64;
const RESOURCE: usize = 1024;
const MAX_RESOURCES: usize = 8;

/// The unsealed fields of a decision line: every untrusted string clipped, every list
/// capped with a count of what was left out, the arguments reduced to a keyed digest.
pub(crate) fn decision_fields(d: &DecisionRecord, key: &ArgKey) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("kind".into(), KIND_DECISION.into());
    m.insert("time".into(), d.time.to_string().into());
    m.insert("agent".into(), clip(&d.agent, AGENT).into());
    if let Some(sha) = &d.bundle_sha {
        m.insert("bundleSha".into(), clip(sha, SHORT).into());
    }
    m.insert("method".into(), clip(&d.method, SHORT).into());
    m.insert("server".into(), clip(&d.server, NAME).into());
    if let Some(t) = &d.tool {
        m.insert("tool".into(), clip(t, NAME).into());
    }
    m.insert("decision".into(), d.decision.as_str().into());
    m.insert("enforced".into(), d.enforced.into());
    insert_list(&mut m, "reasons", &d.reasons, MAX_REASONS, REASON);
    if let Some(c) = &d.bundle_contract_digest {
        m.insert("bundleContractDigest".into(), clip(c, SHORT).into());
    }
    if let Some(c) = &d.live_contract_digest {
        m.insert("liveContractDigest".into(), clip(c, SHORT).into());
    }
    insert_list(&mut m, "argNames", &d.arg_names, MAX_ARG_NAMES, ARG_NAME);
    if let Some(args) = &d.arguments {
        m.insert("argDigest".into(), key.digest(args).into());
        m.insert("argKeyId".into(), key.id().into());
    }
    if let Some(s) = &d.session_id {
        m.insert("sessionId".into(), clip(s, NAME).into());
    }
    // Only guarded calls have resources: other records keep their exact shape.
    if !d.resources.is_empty() {
        insert_list(&mut m, "resources", &d.resources, MAX_RESOURCES, RESOURCE);
    }
    m
}

/// The unsealed fields of the record the writer leaves when it reopens a file whose
/// tail it cannot continue: what it saw, so the break is on the record, not silent.
pub(crate) fn chain_break_fields(
    time: jiff::Timestamp,
    reason: &str,
    last_good: Option<(u64, &str)>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("kind".into(), KIND_CHAIN_BREAK.into());
    m.insert("time".into(), time.to_string().into());
    m.insert("reason".into(), clip(reason, REASON).into());
    if let Some((seq, hash)) = last_good {
        m.insert("lastGoodSeq".into(), seq.into());
        m.insert("lastGoodHash".into(), hash.into());
    }
    m
}

fn insert_list(m: &mut Map<String, Value>, key: &str, items: &[String], max: usize, each: usize) {
    let kept: Vec<Value> = items
        .iter()
        .take(max)
        .map(|s| clip(s, each).into())
        .collect();
    m.insert(key.into(), Value::Array(kept));
    if items.len() > max {
        m.insert(format!("{key}Omitted"), (items.len() - max).into());
    }
}

/// `s` cut so its escaped JSON form fits `budget` bytes; a cut string says how much
/// it lost, so a clipped name is never mistaken for the real one.
pub(crate) fn clip(s: &str, budget: usize) -> String {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += escaped_len(c);
        if used > budget {
            return format!("{}…[+{} bytes]", &s[..i], s.len() - i);
        }
    }
    s.to_string()
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Seals fields into the chain: adds `v`, `seq`, `prev`, then `hash` = sha256 of the
/// canonical JSON of all of that. Returns the line (canonical JSON of the whole record,
/// newline-terminated) and its hash.
pub(crate) fn seal(mut fields: Map<String, Value>, seq: u64, prev: &str) -> (Vec<u8>, String) {
    fields.insert("v".into(), FORMAT_VERSION.into());
    fields.insert("seq".into(), seq.into());
    fields.insert("prev".into(), prev.into());
    fields.remove("hash");
    let mut record = Value::Object(fields);
    let hash = sha256_hex(&to_canonical_json(&record));
    if let Value::Object(m) = &mut record {
        m.insert("hash".into(), hash.clone().into());
    }
    let mut line = to_canonical_json(&record);
    line.push(b'\n');
    (line, hash)
}

/// What the chain needs from a line that checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    pub seq: u64,
    pub prev: String,
    pub hash: String,
    pub kind: String,
    pub last_good_hash: Option<String>,
}

/// Checks one line (without its newline) on its own: JSON object, hash matches the
/// content, exactly the canonical bytes (no reformatting, no duplicate keys), known
/// version and kind. Linking to the line before is the caller's job.
pub(crate) fn check_line(line: &[u8]) -> Result<Checked, String> {
    if line.len() > MAX_LINE_BYTES {
        return Err(format!("line longer than {MAX_LINE_BYTES} bytes"));
    }
    let mut value: Value = serde_json::from_slice(line)
        .map_err(|e| format!("not a JSON record (truncated or edited): {e}"))?;
    let canonical_whole = to_canonical_json(&value);
    let Value::Object(map) = &mut value else {
        return Err("not a JSON object".into());
    };
    let Some(Value::String(hash)) = map.remove("hash") else {
        return Err("no \"hash\" string".into());
    };
    let recomputed = sha256_hex(&to_canonical_json(&*map));
    if recomputed != hash {
        return Err(format!(
            "hash mismatch: the record was edited (stored {hash}, content hashes to {recomputed})"
        ));
    }
    if canonical_whole != line {
        return Err("not byte-for-byte canonical JSON (reformatted or duplicate keys)".into());
    }
    if map.get("v").and_then(Value::as_u64) != Some(FORMAT_VERSION) {
        return Err(format!(
            "unknown format version (expected v {FORMAT_VERSION})"
        ));
    }
    let seq = map
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or("no integer \"seq\"")?;
    let prev = map
        .get("prev")
        .and_then(Value::as_str)
        .ok_or("no \"prev\" string")?
        .to_string();
    let kind = match map.get("kind").and_then(Value::as_str) {
        Some(k @ (KIND_DECISION | KIND_CHAIN_BREAK)) => k.to_string(),
        _ => return Err("unknown or missing \"kind\"".into()),
    };
    let last_good_hash = map
        .get("lastGoodHash")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Checked {
        seq,
        prev,
        hash,
        kind,
        last_good_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> ArgKey {
        ArgKey::from_bytes(&[7u8; 32]).unwrap()
    }

    pub(crate) fn sample() -> DecisionRecord {
        DecisionRecord {
            time: "2026-12-01T10:00:00Z".parse().unwrap(),
            agent: "team-a/researcher".into(),
            bundle_sha: Some("sha256:abc".into()),
            server: "team-a/files".into(),
            method: "tools/call".into(),
            tool: Some("github__create_issue".into()),
            decision: Decision::Deny,
            enforced: true,
            reasons: vec!["rejected: writes outside the grant".into()],
            bundle_contract_digest: Some("sha256:b".into()),
            live_contract_digest: Some("sha256:l".into()),
            arg_names: vec!["repo".into(), "title".into()],
            arguments: Some(json!({"repo": "acme/secret-plans", "title": "hunter2"})),
            session_id: Some("s-1".into()),
            resources: Vec::new(),
        }
    }

    #[test]
    fn a_sealed_line_is_canonical_and_checks_out() {
        let (line, hash) = seal(decision_fields(&sample(), &key()), 4, GENESIS);
        assert_eq!(line.last(), Some(&b'\n'));
        let body = &line[..line.len() - 1];
        let c = check_line(body).unwrap();
        assert_eq!((c.seq, c.prev.as_str(), c.hash), (4, GENESIS, hash));
        // The exact bytes are pinned: a change in field names, canonical form or
        // hashing breaks every log already written and must be deliberate.
        let text = std::str::from_utf8(body).unwrap();
        assert!(
            text.starts_with(r#"{"agent":"team-a/researcher","argDigest":"hmac-sha256:"#),
            "{text}"
        );
        assert!(text.contains(r#""argNames":["repo","title"],"#), "{text}");
        assert!(!text.contains("secret-plans") && !text.contains("hunter2"));
    }

    #[test]
    fn canonical_bytes_are_stable() {
        let fields = chain_break_fields(
            "2026-12-01T10:00:00Z".parse().unwrap(),
            "tail unreadable",
            Some((3, "sha256:x")),
        );
        let (line, hash) = seal(fields, 4, "sha256:x");
        // Recomputed independently with Python json.dumps(sort_keys, compact) + hashlib.
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            concat!(
                r#"{"hash":"sha256:9f886d703f1b3252b39bc68efa15f41b55c38993f91105f1c8e5b758c9a65269","#,
                r#""kind":"chainBreak","lastGoodHash":"sha256:x","lastGoodSeq":3,"prev":"sha256:x","#,
                r#""reason":"tail unreadable","seq":4,"time":"2026-12-01T10:00:00Z","v":1}"#,
                "\n"
            )
        );
        assert_eq!(hash.len(), 71);
    }

    #[test]
    fn every_kind_of_damage_to_a_line_is_named() {
        let (line, _) = seal(decision_fields(&sample(), &key()), 0, GENESIS);
        let body = std::str::from_utf8(&line[..line.len() - 1]).unwrap();
        let edited = body.replace("\"deny\"", "\"allow\"");
        assert!(
            check_line(edited.as_bytes())
                .unwrap_err()
                .contains("hash mismatch")
        );
        let spaced = body.replacen(",", ", ", 1);
        assert!(
            check_line(spaced.as_bytes())
                .unwrap_err()
                .contains("canonical")
        );
        let dup = body.replacen("{", r#"{"agent":"x","#, 1);
        assert!(
            check_line(dup.as_bytes())
                .unwrap_err()
                .contains("canonical")
        );
        let cut = &body[..body.len() / 2];
        assert!(
            check_line(cut.as_bytes())
                .unwrap_err()
                .contains("not a JSON")
        );
        let huge = vec![b' '; MAX_LINE_BYTES + 1];
        assert!(check_line(&huge).unwrap_err().contains("longer"));
    }

    #[test]
    fn untrusted_strings_are_clipped_so_the_worst_record_fits_a_line() {
        let evil = "\u{1}".repeat(100_000);
        let mut d = sample();
        d.agent = evil.clone();
        d.bundle_sha = Some(evil.clone());
        d.method = evil.clone();
        d.server = evil.clone();
        d.tool = Some(evil.clone());
        d.reasons = vec![evil.clone(); 1000];
        d.bundle_contract_digest = Some(evil.clone());
        d.live_contract_digest = Some(evil.clone());
        d.arg_names = vec![evil.clone(); 1000];
        d.session_id = Some(evil);
        let (line, _) = seal(decision_fields(&d, &key()), u64::MAX >> 11, GENESIS);
        assert!(line.len() < MAX_LINE_BYTES / 2, "{} bytes", line.len());
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["argNamesOmitted"], 1000 - MAX_ARG_NAMES);
        assert_eq!(v["reasonsOmitted"], 1000 - MAX_REASONS);
        assert!(v["agent"].as_str().unwrap().ends_with("bytes]"));
    }

    #[test]
    fn clip_cuts_on_a_char_boundary_within_budget() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc…[+1 bytes]");
        assert_eq!(clip("ééé", 4), "éé…[+2 bytes]");
    }
}
