//! Deny: what is wrong in the object itself, with the offline CLI's words. The object
//! goes through the same loader as `mcpgov check -f` (apiVersion, the CRD schema and
//! CEL as the offline validator reads them), then through the engine's compiler alone
//! (tool-key grammar, URI and glob canonicalisation, the pattern limits: the compile
//! findings `check` prints), then the checks that need a clock or a name rule.

use crate::controller::bundles::config_map_name;
use crate::manifest::{self, Resource};
use crate::text;
use mcpgov_engine::{Engine, EngineConfig, Kind, ObjKey};
use serde_json::Value;
use std::path::Path;

/// Problems shown in one denial; the rest are counted.
pub const SHOWN: usize = 10;

/// An object as the engine reads it, with what the engine does not carry.
pub struct Read {
    pub object: mcpgov_engine::Object,
    /// An Agent's bundle ConfigMap name (set, or the default).
    pub bundle: Option<String>,
}

/// Every problem of `object` (empty: nothing to deny), and the object as the engine
/// reads it. `namespace` is the request's, for an object that names none.
pub fn problems(
    object: &Value,
    namespace: &str,
    governance_namespace: &str,
    now: jiff::Timestamp,
) -> (Vec<String>, Vec<Read>) {
    let text = object.to_string();
    let load = match manifest::load_str(&text, Path::new("admission")) {
        Ok(l) => l,
        Err(errors) => {
            let problems = errors
                .0
                .iter()
                .map(|e| match &e.object {
                    Some(o) => format!("{}: {}", text::escape(o), text::escape(&e.message)),
                    None => text::escape(&e.message).into_owned(),
                })
                .collect();
            return (problems, Vec::new());
        }
    };
    let mut out = Vec::new();
    let mut objects = Vec::new();
    for loaded in &load.objects {
        let object = loaded.resource.to_engine(namespace);
        let (kind, key) = (object.kind(), object.key().clone());
        objects.push(Read {
            object: object.clone(),
            bundle: match &loaded.resource {
                Resource::Agent(a) => Some(config_map_name(a)),
                _ => None,
            },
        });
        let engine = Engine::from_snapshot(
            EngineConfig {
                governance_namespace: governance_namespace.to_string(),
            },
            [object],
        );
        for f in engine.compile_findings_of(kind, &key) {
            out.push(format!("{}: {}", f.object, f.message));
        }
        out.extend(own_checks(&loaded.resource, kind, &key, now));
    }
    (out, objects)
}

fn own_checks(r: &Resource, kind: Kind, key: &ObjKey, now: jiff::Timestamp) -> Vec<String> {
    let mut out = Vec::new();
    match r {
        Resource::Grant(g) => {
            for ex in &g.spec.expected_exceptions {
                let Some(raw) = ex.expires.as_deref() else {
                    continue;
                };
                // An unparsable instant is a compile finding already.
                if let Ok(t) = raw.parse::<jiff::Timestamp>()
                    && t <= now
                {
                    out.push(format!(
                        "{kind} {key}: expected exception to {} expired at {}: it would \
                         excuse nothing (remove it, or set a later expires)",
                        text::escape(&ex.policy),
                        text::escape(raw)
                    ));
                }
            }
        }
        Resource::Agent(a) => {
            let name = config_map_name(a);
            // The schema bounds a set name, not the default `<agent>-mcpgov-bundle`.
            if !crate::validate::is_dns1123_subdomain(&name) {
                out.push(format!(
                    "{kind} {key}: bundle ConfigMap name {} is not a valid object name",
                    text::quote(&name, 80)
                ));
            }
        }
        Resource::MCPServer(_) | Resource::Policy(_) => {}
    }
    out
}

/// One message for `kubectl apply` from the problems.
pub fn message(problems: &[String]) -> String {
    let mut m = String::from("mcpgov: ");
    for (i, p) in problems.iter().take(SHOWN).enumerate() {
        if i > 0 {
            m.push_str("; ");
        }
        m.push_str(&text::truncate(p, 600));
    }
    if problems.len() > SHOWN {
        m.push_str(&format!("; … and {} more", problems.len() - SHOWN));
    }
    m
}
