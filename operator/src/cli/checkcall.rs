//! `mcpgov query check-call`: what the gateway would decide for one call, offline. It
//! compiles the agent's bundle exactly as the operator publishes it, reads it back with
//! the gateway's reader and decides with the same code (`mcpgov_core::percall`). Only
//! the live contract check needs the server, and is left out.

use super::Failure;
use mcpgov_core::bundle::{BundleTool, parse};
use mcpgov_core::percall::CompiledGuard;
use mcpgov_engine::{Evaluator, ObjKey};
use serde_json::{Value, json};

/// The arguments are hostile text as much as a gateway's are: bounded.
const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

pub fn check_call(
    eval: &Evaluator,
    agent: &ObjKey,
    tool: &str,
    arguments: &str,
) -> Result<Value, Failure> {
    if arguments.len() > MAX_ARGUMENTS_BYTES {
        return Err(Failure::Input(format!(
            "--arguments is {} bytes, over {MAX_ARGUMENTS_BYTES}",
            arguments.len()
        )));
    }
    let args: Value = serde_json::from_str(arguments)
        .map_err(|e| Failure::Input(format!("--arguments is not JSON: {e}")))?;
    if !args.is_object() {
        return Err(Failure::Input("--arguments must be a JSON object".into()));
    }
    let access = eval.check_access(agent, tool);
    let mut out = json!({
        "agent": agent.to_string(),
        "tool": tool,
        "toolKey": access.tool_key,
        "contractChecked": false,
    });
    let Some(key) = access.tool_key.clone() else {
        out["decision"] = json!("deny");
        out["reason"] = json!("NotInBundle");
        out["detail"] = json!(format!(
            "{tool} does not name one tool ({:?})",
            access.verdict
        ));
        return Ok(out);
    };
    let bundle = eval
        .bundle(agent)
        .map_err(|e| Failure::Gate(format!("error: {e}")))?;
    let doc = parse(&bundle.bytes)
        .map_err(|e| Failure::Gate(format!("error: the compiled bundle does not read: {e}")))?;
    out["bundleSha"] = json!(bundle.sha256);
    let Some(t) = doc.tools.iter().find(|t| t.key == key) else {
        out["decision"] = json!("deny");
        out["reason"] = json!("NotInBundle");
        out["detail"] = json!(format!("{key} is not in the agent's bundle (not granted)"));
        return Ok(out);
    };
    out["reasons"] = json!(t.reasons);
    out["denyPaths"] = json!(t.deny_paths);
    out["guard"] = json!(t.guard);
    let (reason, detail, extra) = decide(t, &args, eval.now().as_second());
    out["decision"] = json!(if reason.is_none() { "allow" } else { "deny" });
    out["reason"] = json!(reason.unwrap_or("Eligible"));
    out["detail"] = json!(detail);
    if let Value::Object(m) = extra {
        for (k, v) in m {
            out[k] = v;
        }
    }
    Ok(out)
}

/// The gateway's order: the bundle's decision, then the expiry, then the guard.
fn decide(t: &BundleTool, args: &Value, now: i64) -> (Option<&'static str>, String, Value) {
    if t.decision != "eligible" {
        return (
            Some("Rejected"),
            format!("the bundle rejects {}", t.key),
            json!({}),
        );
    }
    if let Some(u) = t.eligible_until_unix().filter(|u| now >= *u) {
        return (
            Some("DenyViolation"),
            format!("the exception that made {} eligible expired at {u}", t.key),
            json!({}),
        );
    }
    let Some(g) = &t.guard else {
        return (
            None,
            format!(
                "{} is eligible; its calls are not checked by argument",
                t.key
            ),
            json!({}),
        );
    };
    let guard = match CompiledGuard::compile(g) {
        Ok(g) => g,
        Err(e) => return (Some("UnresolvedArgument"), e, json!({})),
    };
    match guard.check(args, now) {
        Ok(resolved) => (
            None,
            format!(
                "every bound argument of {} names a declared, ungoverned resource",
                t.key
            ),
            json!({"resolved": resolved}),
        ),
        Err(b) => (
            Some(b.reason.as_str()),
            format!("argument {}: {}", b.argument, b.detail),
            json!({"uri": b.uri, "policy": b.policy, "pattern": b.pattern, "argument": b.argument}),
        ),
    }
}
