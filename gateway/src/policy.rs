//! The decisions themselves, pure: given a bundle snapshot, what the upstream lists live
//! and the clock, may this tool be shown, may this call go through, and why not.

use crate::bundle::{Loaded, ToolPolicy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// Why a tool is hidden or a call is denied. The first word of every record's `reasons`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No valid bundle was ever loaded: everything under `tools/*` is denied.
    NoBundle,
    /// The route names a server the bundle does not publish.
    UnknownServer,
    /// The bundle does not list the tool (its `defaultDecision` is deny).
    NotInBundle,
    /// The bundle's decision is `rejected` (its own reasons follow).
    Rejected,
    /// The tool's `eligibleUntil` has passed: the exception it relied on expired.
    DenyViolation,
    /// The bundle has no contract digest for the tool: nothing to pin it to.
    ContractUnpinned,
    /// The live tool is not the one the bundle decided on (description, schema, ...).
    ContractMismatch,
    /// The upstream does not list the tool (or its listing could not be read).
    NotListed,
    /// The arguments do not satisfy the tool's input schema.
    InvalidArguments,
    /// The tool's input schema cannot be used to check arguments.
    SchemaUnusable,
    /// A header Secret the server needs is not mounted into the gateway.
    CredentialsMissing,
    /// The request is not a well-formed `tools/call`.
    MalformedRequest,
    /// A listed tool has no name or cannot be digested.
    MalformedTool,
    /// The decision could not be recorded (and the gateway fails closed).
    AuditUnavailable,
    /// A per-call guard: the argument names a resource outside what the server declares.
    UndeclaredResource,
    /// A per-call guard: a bound argument is missing, not a string, or ambiguous.
    UnresolvedArgument,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoBundle => "NoBundle",
            Reason::UnknownServer => "UnknownServer",
            Reason::NotInBundle => "NotInBundle",
            Reason::Rejected => "Rejected",
            Reason::DenyViolation => "DenyViolation",
            Reason::ContractUnpinned => "ContractUnpinned",
            Reason::ContractMismatch => "ContractMismatch",
            Reason::NotListed => "NotListed",
            Reason::InvalidArguments => "InvalidArguments",
            Reason::SchemaUnusable => "SchemaUnusable",
            Reason::CredentialsMissing => "CredentialsMissing",
            Reason::MalformedRequest => "MalformedRequest",
            Reason::MalformedTool => "MalformedTool",
            Reason::AuditUnavailable => "AuditUnavailable",
            Reason::UndeclaredResource => "UndeclaredResource",
            Reason::UnresolvedArgument => "UnresolvedArgument",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Denial {
    pub reason: Reason,
    /// One line for a person.
    pub detail: String,
    /// The bundle's reasons for the tool, when it has an entry.
    pub bundle_reasons: Vec<String>,
    /// Policies on the tool's deny paths, when the bundle names any.
    pub policies: Vec<String>,
    /// The canonical resource URI a per-call guard decided on.
    pub uri: Option<String>,
}

impl Denial {
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Denial {
            reason,
            detail: detail.into(),
            bundle_reasons: Vec::new(),
            policies: Vec::new(),
            uri: None,
        }
    }

    pub fn reasons(&self) -> Vec<String> {
        let mut r = vec![self.reason.as_str().to_string()];
        r.extend(
            self.bundle_reasons
                .iter()
                .filter(|x| *x != self.reason.as_str())
                .cloned(),
        );
        r
    }

    /// The `tools/call` result a client gets instead of the upstream's: a tool error, not a
    /// transport error a client might take for an authentication failure.
    pub fn call_result(&self, tool: &str, bundle_sha: Option<&str>) -> Value {
        let text = format!(
            "mcpgov gateway blocked {tool}: {} ({})",
            self.reason.as_str(),
            self.detail
        );
        json!({
            "content": [{"type": "text", "text": text}],
            "isError": true,
            "structuredContent": {
                "reason": self.reason.as_str(),
                "reasons": self.reasons(),
                "detail": self.detail,
                "policy": self.policies.first(),
                "policies": self.policies,
                "uri": self.uri,
                "bundleSha": bundle_sha,
                "tool": tool,
            }
        })
    }
}

fn policies_of(p: &ToolPolicy) -> Vec<String> {
    let mut out: Vec<String> = p
        .tool
        .deny_paths
        .iter()
        .filter_map(|d| d.get("policy").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    out.dedup();
    out
}

/// What the bundle alone says about `server`'s `tool` at `now`.
pub fn bundle_allows<'a>(
    bundle: Option<&'a Loaded>,
    server: &str,
    tool: &str,
    now: Timestamp,
) -> Result<&'a ToolPolicy, Denial> {
    let Some(b) = bundle else {
        return Err(Denial::new(
            Reason::NoBundle,
            "no valid policy bundle has been loaded",
        ));
    };
    let Some(p) = b.tool(server, tool) else {
        return Err(Denial::new(
            Reason::NotInBundle,
            format!("{server}::{tool} is not in the agent's bundle"),
        ));
    };
    let with_bundle = |mut d: Denial| {
        d.bundle_reasons = p.tool.reasons.clone();
        d.policies = policies_of(p);
        d
    };
    if p.tool.decision != "eligible" {
        return Err(with_bundle(Denial::new(
            Reason::Rejected,
            format!("the bundle rejects {}", p.tool.key),
        )));
    }
    if let Some(until) = p.eligible_until.filter(|u| now >= *u) {
        return Err(with_bundle(Denial::new(
            Reason::DenyViolation,
            format!(
                "the exception that made {} eligible expired at {until}",
                p.tool.key
            ),
        )));
    }
    if p.tool.contract_digest.is_none() {
        return Err(with_bundle(Denial::new(
            Reason::ContractUnpinned,
            format!("the bundle has no contract digest for {}", p.tool.key),
        )));
    }
    Ok(p)
}

/// The live contract against the bundle's pin.
pub fn contract_matches(p: &ToolPolicy, live: Option<&str>) -> Result<(), Denial> {
    let want = p.tool.contract_digest.as_deref().unwrap_or_default();
    match live {
        None => Err(Denial::new(
            Reason::NotListed,
            format!("the server does not list {}", p.tool.key),
        )),
        Some(l) if l != want => Err(Denial {
            reason: Reason::ContractMismatch,
            detail: format!(
                "{} changed since it was approved: live {l}, approved {want}",
                p.tool.key
            ),
            bundle_reasons: Vec::new(),
            policies: Vec::new(),
            uri: None,
        }),
        Some(_) => Ok(()),
    }
}

/// The per-call guard of a tool, if the bundle gives it one: the URIs the call's
/// arguments name when it may go through (evidence for the audit record), or the
/// denial naming the argument, the URI and the Policy. Decided by core's
/// `CompiledGuard::check`, the code `mcpgov query check-call` runs.
pub fn guard_allows(
    p: &ToolPolicy,
    arguments: &Value,
    now: Timestamp,
) -> Result<Vec<String>, Denial> {
    let Some(g) = &p.guard else {
        return Ok(Vec::new());
    };
    match g.check(arguments, now.as_second()) {
        Ok(resolved) => Ok(resolved
            .into_iter()
            .flat_map(|r| r.uris.into_iter().take(1))
            .collect()),
        Err(b) => {
            let b = *b;
            use mcpgov_core::percall::BlockReason;
            let reason = match b.reason {
                BlockReason::DenyViolation => Reason::DenyViolation,
                BlockReason::UndeclaredResource => Reason::UndeclaredResource,
                BlockReason::UnresolvedArgument => Reason::UnresolvedArgument,
            };
            Err(Denial {
                reason,
                detail: format!("argument {}: {}", b.argument, b.detail),
                // The audit record's reasons name the Policy after the reason.
                bundle_reasons: b.policy.iter().map(|p| format!("Policy {p}")).collect(),
                policies: b.policy.into_iter().collect(),
                uri: b.uri,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Expect, load_bytes};

    fn expect() -> Expect {
        Expect {
            agent_name: "bot".into(),
            agent_namespace: "team".into(),
        }
    }

    fn bundle(tools: Value) -> Loaded {
        let doc = json!({
            "agent": {"name": "bot", "namespace": "team"},
            "catalogDigest": "sha256:00", "defaultDecision": "deny", "governanceDigest": "sha256:00",
            "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
            "servers": [{"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": "http://127.0.0.1:1/mcp"}, "key": "team/srv"}],
            "tools": tools,
        });
        load_bytes(&serde_json::to_vec(&doc).unwrap(), None, &expect()).unwrap()
    }

    fn tool(name: &str, decision: &str, extra: Value) -> Value {
        let mut t = json!({
            "contractDigest": format!("sha256:{name}"), "decision": decision, "denyPaths": [],
            "key": format!("team/srv::{name}"), "name": name, "reasons": [], "riskScore": 1, "server": "team/srv"
        });
        for (k, v) in extra.as_object().unwrap() {
            t[k] = v.clone();
        }
        t
    }

    fn now() -> Timestamp {
        "2026-12-01T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn no_bundle_denies() {
        let e = bundle_allows(None, "team/srv", "a", now()).err().unwrap();
        assert_eq!(e.reason, Reason::NoBundle);
    }

    #[test]
    fn unknown_tool_denied_eligible_allowed() {
        let b = bundle(json!([tool("a", "eligible", json!({}))]));
        assert!(bundle_allows(Some(&b), "team/srv", "a", now()).is_ok());
        let e = bundle_allows(Some(&b), "team/srv", "b", now())
            .err()
            .unwrap();
        assert_eq!(e.reason, Reason::NotInBundle);
        // Same tool name on another server is another tool.
        let e = bundle_allows(Some(&b), "team/other", "a", now())
            .err()
            .unwrap();
        assert_eq!(e.reason, Reason::NotInBundle);
    }

    #[test]
    fn rejected_carries_bundle_reasons_and_policy() {
        let b = bundle(json!([tool(
            "w",
            "rejected",
            json!({
                "reasons": ["DenyViolation"],
                "denyPaths": [{"policy": "team/no-writes", "classification": "Violation"}]
            })
        )]));
        let e = bundle_allows(Some(&b), "team/srv", "w", now())
            .err()
            .unwrap();
        assert_eq!(e.reason, Reason::Rejected);
        assert_eq!(e.reasons(), vec!["Rejected", "DenyViolation"]);
        let r = e.call_result("w", Some("sha256:x"));
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["policy"], "team/no-writes");
        assert_eq!(r["structuredContent"]["bundleSha"], "sha256:x");
        assert_eq!(r["structuredContent"]["reason"], "Rejected");
    }

    #[test]
    fn eligible_until_flips_at_the_instant() {
        let b = bundle(json!([tool(
            "x",
            "eligible",
            json!({"eligibleUntil": "2026-12-01T12:00:01Z"})
        )]));
        assert!(bundle_allows(Some(&b), "team/srv", "x", now()).is_ok());
        let at: Timestamp = "2026-12-01T12:00:01Z".parse().unwrap();
        let e = bundle_allows(Some(&b), "team/srv", "x", at).err().unwrap();
        assert_eq!(e.reason, Reason::DenyViolation);
        assert_eq!(b.next_expiry(now()).map(|(t, _)| t), Some(at));
        assert_eq!(b.next_expiry(at), None);
    }

    /// Regression: the reload loop looked the next expiry up after "now", so an instant
    /// that passed while a poll or a reload ran was never announced (no list_changed).
    /// It now looks after the last instant announced, and announces every server due.
    #[test]
    fn an_expiry_passed_while_busy_is_still_due_for_every_server() {
        let b = bundle(json!([tool(
            "x",
            "eligible",
            json!({"eligibleUntil": "2026-12-01T12:00:01Z"})
        )]));
        let at: Timestamp = "2026-12-01T12:00:01Z".parse().unwrap();
        let announced: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
        // The loop comes round 5 ms late: the instant is behind it, and still next.
        assert_eq!(b.next_expiry(announced).map(|(t, _)| t), Some(at));
        assert_eq!(b.expiring(announced, at), vec!["team/srv".to_string()]);
        // Announced once: not again.
        assert_eq!(b.expiring(at, at), Vec::<String>::new());
        // Two servers expiring at the same instant are both due.
        let until = json!({"eligibleUntil": "2026-12-01T12:00:01Z"});
        let mut y = tool("y", "eligible", until);
        y["server"] = json!("team/other");
        y["key"] = json!("team/other::y");
        let server = |key: &str| json!({"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": "http://127.0.0.1:1/mcp"}, "key": key});
        let doc = json!({
            "agent": {"name": "bot", "namespace": "team"},
            "catalogDigest": "sha256:00", "defaultDecision": "deny", "governanceDigest": "sha256:00",
            "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
            "servers": [server("team/other"), server("team/srv")],
            "tools": [y, tool("x", "eligible", json!({"eligibleUntil": "2026-12-01T12:00:01Z"}))],
        });
        let b = load_bytes(&serde_json::to_vec(&doc).unwrap(), None, &expect()).unwrap();
        let mut due = b.expiring(announced, at);
        due.sort();
        assert_eq!(due, ["team/other", "team/srv"]);
    }

    #[test]
    fn unpinned_and_mismatched_contracts_denied() {
        let b = bundle(json!([
            tool("p", "eligible", json!({"contractDigest": null})),
            tool("q", "eligible", json!({}))
        ]));
        let e = bundle_allows(Some(&b), "team/srv", "p", now())
            .err()
            .unwrap();
        assert_eq!(e.reason, Reason::ContractUnpinned);
        let q = bundle_allows(Some(&b), "team/srv", "q", now()).unwrap();
        assert!(contract_matches(q, Some("sha256:q")).is_ok());
        assert_eq!(
            contract_matches(q, Some("sha256:other"))
                .err()
                .unwrap()
                .reason,
            Reason::ContractMismatch
        );
        assert_eq!(
            contract_matches(q, None).err().unwrap().reason,
            Reason::NotListed
        );
    }

    #[test]
    fn guarded_calls_are_decided_by_their_arguments() {
        let guard = json!({
            "arguments": [{"declared": ["file:///srv/**"], "pointer": "/path", "template": "file://{path}"}],
            "governed": [{"except": [], "pattern": "file:///**/.env", "policy": "gov/no-dotenv"}]
        });
        let b = bundle(json!([tool(
            "r",
            "eligible",
            json!({"guard": guard, "reasons": ["GuardedPerCall"]})
        )]));
        let p = bundle_allows(Some(&b), "team/srv", "r", now()).unwrap();
        assert_eq!(
            guard_allows(p, &json!({"path": "/srv/a.txt"}), now()).unwrap(),
            ["file:///srv/a.txt"]
        );
        let d = guard_allows(p, &json!({"path": "/srv/x/../app/.env"}), now()).unwrap_err();
        assert_eq!(d.reason, Reason::DenyViolation);
        assert_eq!(d.uri.as_deref(), Some("file:///srv/app/.env"));
        assert_eq!(d.reasons(), ["DenyViolation", "Policy gov/no-dotenv"]);
        let r = d.call_result("r", None);
        assert_eq!(r["structuredContent"]["policy"], "gov/no-dotenv");
        assert_eq!(r["structuredContent"]["uri"], "file:///srv/app/.env");
        let d = guard_allows(p, &json!({"path": "/etc/passwd"}), now()).unwrap_err();
        assert_eq!(d.reason, Reason::UndeclaredResource);
        let d = guard_allows(p, &json!({"path": "/srv/..%2f.env"}), now()).unwrap_err();
        assert_eq!(d.reason, Reason::UnresolvedArgument);
        let d = guard_allows(p, &json!({}), now()).unwrap_err();
        assert_eq!(d.reason, Reason::UnresolvedArgument);
        // A tool without a guard is not checked by argument.
        let b = bundle(json!([tool("q", "eligible", json!({}))]));
        let q = bundle_allows(Some(&b), "team/srv", "q", now()).unwrap();
        assert!(
            guard_allows(q, &json!({"path": "/etc/passwd"}), now())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_guard_that_cannot_compile_refuses_the_bundle() {
        let bad = |guard: Value| {
            let doc = json!({
                "agent": {"name": "bot", "namespace": "team"},
                "catalogDigest": "sha256:00", "defaultDecision": "deny", "governanceDigest": "sha256:00",
                "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
                "servers": [{"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": "http://127.0.0.1:1/mcp"}, "key": "team/srv"}],
                "tools": [tool("r", "eligible", json!({"guard": guard}))],
            });
            load_bytes(&serde_json::to_vec(&doc).unwrap(), None, &expect()).is_err()
        };
        let ok = json!({"arguments": [{"declared": ["file:///srv/**"], "pointer": "/path", "template": "file://{path}"}], "governed": []});
        assert!(!bad(ok.clone()));
        let mut v = ok.clone();
        v["arguments"][0]["template"] = json!("file://{a}{b}");
        assert!(bad(v));
        let mut v = ok.clone();
        v["arguments"] = json!([]);
        assert!(bad(v));
        let mut v = ok.clone();
        v["governed"] = json!([{"except": [], "pattern": "FILE:///x", "policy": "p/p"}]);
        assert!(bad(v));
        let mut v = ok;
        v["extra"] = json!(1);
        assert!(bad(v), "unknown guard fields are refused");
    }

    #[test]
    fn invalid_bundles_refused() {
        let bad =
            |doc: Value| load_bytes(&serde_json::to_vec(&doc).unwrap(), None, &expect()).err();
        let mut base = json!({
            "agent": {"name": "bot", "namespace": "team"},
            "catalogDigest": "sha256:00", "defaultDecision": "deny", "governanceDigest": "sha256:00",
            "kind": "mcpgov.io/policy-bundle", "profile": "Strict", "schemaVersion": 2,
            "servers": [], "tools": [],
        });
        assert!(bad(base.clone()).is_none());
        base["agent"]["name"] = json!("other");
        assert!(bad(base.clone()).unwrap().0.contains("other"));
        base["agent"]["name"] = json!("bot");
        let mut v = base.clone();
        v["schemaVersion"] = json!(3);
        assert!(bad(v).is_some());
        let mut v = base.clone();
        v["kind"] = json!("x");
        assert!(bad(v).is_some());
        let mut v = base.clone();
        v["tools"] = json!([tool("a", "eligible", json!({"key": "team/srv::b"}))]);
        assert!(bad(v).is_some());
        let mut v = base.clone();
        v["tools"] = json!([tool("a", "eligible", json!({"eligibleUntil": "tomorrow"}))]);
        assert!(bad(v).is_some());
        let mut v = base.clone();
        v["tools"] = json!([tool("a", "maybe", json!({}))]);
        assert!(bad(v).is_some());
        let mut v = base.clone();
        v["servers"] = json!([{"endpoint": {"headers": [{"name": "Authorization", "secretKeyRef": {"name": "../etc", "key": "x"}}], "transport": "StreamableHTTP", "url": "http://h/mcp"}, "key": "team/srv"}]);
        assert!(
            bad(v).is_some(),
            "a Secret name that escapes the credentials dir"
        );
        let mut v = base.clone();
        v["servers"] = json!([{"endpoint": {"headers": [], "transport": "StreamableHTTP", "url": "file:///etc/passwd"}, "key": "team/srv"}]);
        assert!(bad(v).is_some());
        // A sha key that disagrees with the bytes.
        let bytes = serde_json::to_vec(&base).unwrap();
        assert!(load_bytes(&bytes, Some("sha256:00"), &expect()).is_err());
        let sha = mcpgov_core::canonical::sha256_hex(&bytes);
        assert!(load_bytes(&bytes, Some(&format!("{sha}\n")), &expect()).is_ok());
    }
}
