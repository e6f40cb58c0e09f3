//! What the upstreams list live: per server, each tool's contract digest and input
//! schema, learnt from the lists clients fetch through the gateway or fetched by the
//! gateway itself, and forgotten on `notifications/tools/list_changed` or after a TTL.

use mcpgov_core::contract::tool_contract_digest;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Validators held at most (each is small; a hostile server could list many tools).
const MAX_VALIDATORS: usize = 4096;
/// Contract digests remembered at most (~100 bytes each), keyed by the sha256 of the
/// tool's serialised entry.
const MAX_DIGESTS: usize = 4096;
/// Tools remembered per server at most.
pub const MAX_TOOLS_PER_SERVER: usize = 10_000;

#[derive(Clone, Debug)]
pub struct LiveTool {
    pub digest: String,
    pub input_schema: Value,
}

struct ServerView {
    tools: HashMap<String, LiveTool>,
    at: Instant,
}

pub type Checker = Arc<Result<jsonschema::Validator, String>>;

pub struct Contracts {
    ttl: Duration,
    servers: Mutex<HashMap<String, ServerView>>,
    validators: Mutex<HashMap<(String, String), Checker>>,
    /// sha256 of a listed tool's JSON text → its contract digest: every `tools/list`
    /// answer repeats the same entries, and the digest (canonical JSON of the contract
    /// fields) is most of the cost of filtering one.
    digests: Mutex<HashMap<[u8; 32], String>>,
    /// One self-fetch of a server's list at a time.
    fetching: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A tool entry's name and contract digest, or why it has none.
pub fn live_tool(raw: &Value) -> Option<(String, LiveTool)> {
    live_tool_with(raw, |text| tool_contract_digest(text).ok())
}

fn live_tool_with(
    raw: &Value,
    digest_of: impl FnOnce(&str) -> Option<String>,
) -> Option<(String, LiveTool)> {
    let name = raw.get("name")?.as_str()?.to_string();
    let digest = digest_of(&serde_json::to_string(raw).ok()?)?;
    let input_schema = raw.get("inputSchema").cloned().unwrap_or(Value::Null);
    Some((
        name,
        LiveTool {
            digest,
            input_schema,
        },
    ))
}

impl Contracts {
    pub fn new(ttl: Duration) -> Self {
        Contracts {
            ttl,
            servers: Mutex::new(HashMap::new()),
            validators: Mutex::new(HashMap::new()),
            digests: Mutex::new(HashMap::new()),
            fetching: Mutex::new(HashMap::new()),
        }
    }

    /// [`live_tool`], the digest remembered by the exact text of the entry (the same
    /// bytes always have the same digest; a changed entry is another key).
    pub fn live_tool(&self, raw: &Value) -> Option<(String, LiveTool)> {
        live_tool_with(raw, |text| {
            let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
            if let Some(d) = self.digests.lock().expect("not poisoned").get(&key) {
                return Some(d.clone());
            }
            let d = tool_contract_digest(text).ok()?;
            let mut m = self.digests.lock().expect("not poisoned");
            if m.len() >= MAX_DIGESTS {
                m.clear();
            }
            m.insert(key, d.clone());
            Some(d)
        })
    }

    /// The live tool, if this server's view is fresh and lists it. `None`: no fresh view
    /// (the caller fetches one).
    pub fn get(&self, server: &str, tool: &str) -> Option<Option<LiveTool>> {
        let servers = self.servers.lock().expect("not poisoned");
        match servers.get(server) {
            Some(v) if v.at.elapsed() < self.ttl => Some(v.tools.get(tool).cloned()),
            _ => None,
        }
    }

    /// A page a client fetched: its tools update the view (a fresh view stays fresh).
    pub fn observe(&self, server: &str, tools: &[(String, LiveTool)]) {
        let mut servers = self.servers.lock().expect("not poisoned");
        if let Some(v) = servers
            .get_mut(server)
            .filter(|v| v.at.elapsed() < self.ttl)
        {
            for (n, t) in tools {
                if v.tools.len() < MAX_TOOLS_PER_SERVER || v.tools.contains_key(n) {
                    v.tools.insert(n.clone(), t.clone());
                }
            }
        }
    }

    /// A whole list, fetched by the gateway.
    pub fn replace(&self, server: &str, tools: HashMap<String, LiveTool>) {
        self.servers.lock().expect("not poisoned").insert(
            server.to_string(),
            ServerView {
                tools,
                at: Instant::now(),
            },
        );
    }

    /// `notifications/tools/list_changed` from the server.
    pub fn invalidate(&self, server: &str) {
        self.servers.lock().expect("not poisoned").remove(server);
    }

    pub fn fetch_lock(&self, server: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.fetching
            .lock()
            .expect("not poisoned")
            .entry(server.to_string())
            .or_default()
            .clone()
    }

    /// The argument checker for a tool's approved schema (compiled once per digest).
    pub fn checker(&self, server: &str, tool: &LiveTool) -> Checker {
        let key = (server.to_string(), tool.digest.clone());
        if let Some(c) = self.validators.lock().expect("not poisoned").get(&key) {
            return c.clone();
        }
        let c: Checker = Arc::new(compile(&tool.input_schema));
        let mut v = self.validators.lock().expect("not poisoned");
        if v.len() >= MAX_VALIDATORS {
            v.clear();
        }
        v.insert(key, c.clone());
        c
    }
}

/// A validator for an input schema: 2020-12 unless the schema names its draft; no
/// remote `$ref`; patterns on the linear-time regex engine (no catastrophic backtracking).
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    if !schema.is_object() {
        return Err("inputSchema is not an object".into());
    }
    let mut opts = jsonschema::options()
        .offline()
        .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(1 << 20));
    if schema.get("$schema").is_none() {
        opts = opts.with_draft(jsonschema::Draft::Draft202012);
    }
    opts.build(schema).map_err(|e| e.to_string())
}

/// The first few violations of `args` against a checker, as one line.
pub fn check_arguments(checker: &Checker, args: &Value) -> Result<(), String> {
    let v = checker
        .as_ref()
        .as_ref()
        .map_err(|e| format!("schema unusable: {e}"))?;
    let errs: Vec<String> = v
        .iter_errors(args)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            let msg: String = e.to_string().chars().take(200).collect();
            if at.is_empty() {
                msg
            } else {
                format!("{at}: {msg}")
            }
        })
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digest_is_the_crawlers() {
        let raw =
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "extra": 1});
        let (n, t) = live_tool(&raw).unwrap();
        assert_eq!(n, "t");
        assert_eq!(
            t.digest,
            tool_contract_digest(
                r#"{"inputSchema":{"type":"object"},"description":"d","name":"t"}"#
            )
            .unwrap()
        );
        assert!(live_tool(&json!({"description": "no name"})).is_none());
    }

    #[test]
    fn remembered_digests_are_the_digests_of_the_same_text() {
        let c = Contracts::new(Duration::from_secs(60));
        let raw = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}});
        let (_, want) = live_tool(&raw).unwrap();
        for _ in 0..2 {
            assert_eq!(c.live_tool(&raw).unwrap().1.digest, want.digest);
        }
        // A rug pull changes the text: never the remembered digest of the old one.
        let pulled = json!({"name": "t", "description": "d!", "inputSchema": {"type": "object"}});
        let (_, changed) = c.live_tool(&pulled).unwrap();
        assert_ne!(changed.digest, want.digest);
        assert_eq!(changed.digest, live_tool(&pulled).unwrap().1.digest);
        assert!(c.live_tool(&json!({"description": "no name"})).is_none());
        // Bounded: a server listing ever-new tools cannot grow it past the cap.
        for i in 0..MAX_DIGESTS + 10 {
            c.live_tool(&json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
                .unwrap();
        }
        assert!(c.digests.lock().unwrap().len() <= MAX_DIGESTS);
    }

    #[test]
    fn arguments_checked_against_2020_12() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer", "maximum": 3}}, "required": ["text"], "additionalProperties": false});
        let c: Checker = Arc::new(compile(&schema));
        assert!(check_arguments(&c, &json!({"text": "a", "n": 2})).is_ok());
        assert!(check_arguments(&c, &json!({"n": 2})).is_err());
        assert!(check_arguments(&c, &json!({"text": "a", "n": 9})).is_err());
        assert!(check_arguments(&c, &json!({"text": "a", "other": 1})).is_err());
        // 2020-12's prefixItems applies when no $schema is named.
        let t = json!({"type": "object", "properties": {"p": {"prefixItems": [{"type": "string"}], "items": false}}});
        let c: Checker = Arc::new(compile(&t));
        assert!(check_arguments(&c, &json!({"p": ["a"]})).is_ok());
        assert!(check_arguments(&c, &json!({"p": [1]})).is_err());
    }

    #[test]
    fn hostile_schemas_fail_closed() {
        // A remote $ref is never fetched.
        assert!(compile(&json!({"$ref": "http://127.0.0.1:9/schema.json"})).is_err());
        assert!(compile(&json!(true)).is_err());
        // A backtracking pattern runs in linear time (or is refused), never hangs.
        let c: Checker = Arc::new(compile(
            &json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}),
        ));
        let start = Instant::now();
        let _ = check_arguments(&c, &json!({"s": format!("{}!", "a".repeat(50_000))}));
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn view_expires_and_invalidates() {
        let c = Contracts::new(Duration::from_secs(60));
        assert!(c.get("s", "t").is_none());
        let (n, t) = live_tool(&json!({"name": "t", "inputSchema": {"type": "object"}})).unwrap();
        c.observe("s", &[(n.clone(), t.clone())]);
        assert!(
            c.get("s", "t").is_none(),
            "a page alone is not a whole view"
        );
        c.replace("s", HashMap::from([(n, t)]));
        assert!(c.get("s", "t").unwrap().is_some());
        assert!(c.get("s", "u").unwrap().is_none());
        c.invalidate("s");
        assert!(c.get("s", "t").is_none());
    }
}
