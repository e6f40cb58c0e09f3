//! `mcpgov query check-call` on examples/per-call: the gateway's per-call decision,
//! offline, with its evidence.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn check_call(tool: &str, arguments: &str) -> (Value, i32) {
    let o = Command::new(env!("CARGO_BIN_EXE_mcpgov"))
        .args([
            "query",
            "check-call",
            "researcher",
            tool,
            "--arguments",
            arguments,
        ])
        .args(["-f", "examples/per-call", "--now", "2026-11-29T00:00:00Z"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("mcpgov runs");
    let code = o.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (v, code)
}

#[test]
fn calls_are_decided_by_the_resource_their_argument_names() {
    let read = "files::read_text_file";
    let (v, code) = check_call(read, r#"{"path": "/srv/app/README.md"}"#);
    assert_eq!(code, 0);
    assert_eq!(v["decision"], "allow", "{v}");
    assert_eq!(v["reasons"], serde_json::json!(["GuardedPerCall"]));
    assert_eq!(v["resolved"][0]["uris"][0], "file:///srv/app/README.md");
    for (args, reason, uri) in [
        (
            r#"{"path": "/srv/app/.env"}"#,
            "DenyViolation",
            Some("file:///srv/app/.env"),
        ),
        (
            r#"{"path": "/srv/app/x/../.env"}"#,
            "DenyViolation",
            Some("file:///srv/app/.env"),
        ),
        (
            r#"{"path": "/srv/../etc/passwd"}"#,
            "UndeclaredResource",
            Some("file:///etc/passwd"),
        ),
        (r#"{"path": "/srv/..%2f.env"}"#, "UnresolvedArgument", None),
        (r#"{"path": 7}"#, "UnresolvedArgument", None),
        (r#"{}"#, "UnresolvedArgument", None),
    ] {
        let (v, code) = check_call(read, args);
        assert_eq!(code, 0);
        assert_eq!(v["decision"], "deny", "{args}: {v}");
        assert_eq!(v["reason"], reason, "{args}: {v}");
        assert_eq!(v["uri"].as_str(), uri, "{args}: {v}");
    }
    let (v, _) = check_call(read, r#"{"path": "/srv/.env"}"#);
    assert_eq!(v["policy"], "mcpgov-system/no-dotenv");
    // write_file reaches the Policy through an unbound entry: statically rejected.
    let (v, _) = check_call("files::write_file", r#"{"path": "/srv/a"}"#);
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["reason"], "Rejected");
    assert_eq!(v["reasons"], serde_json::json!(["DenyViolation"]));
    // Arguments that are not a JSON object are an input error (exit 2).
    for bad in ["[1]", "{", "\"x\""] {
        assert_eq!(check_call(read, bad).1, 2, "{bad}");
    }
}
