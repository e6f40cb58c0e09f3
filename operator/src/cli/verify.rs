//! `mcpgov bundle AGENT --verify`: the bundle ConfigMap the operator published against
//! a fresh compilation from the live estate. The bytes must be equal; when they are
//! not, say where (the JSON paths that differ) and exit 1.

use super::Failure;
use super::input::Live;
use crate::controller::bundles::{DATA_KEY, SHA_ANNOTATION, config_map_name, enabled, owned_by};
use crate::text;
use mcpgov_engine::{Bundle, ObjKey};
use serde_json::Value;

/// JSON paths shown when the bytes differ.
const SHOWN_PATHS: usize = 10;

pub fn verify(live: &Live, key: &ObjKey, fresh: &Bundle) -> Result<(), Failure> {
    let agent = live
        .agents
        .get(key)
        .ok_or_else(|| Failure::Gate(format!("AGENT_NOT_FOUND: no Agent {key}")))?;
    if !enabled(agent) {
        return Err(Failure::Gate(format!(
            "Agent {key} has spec.bundle.enabled: false: no bundle is published to verify"
        )));
    }
    let name = config_map_name(agent);
    // The schema admits DNS names only; checked again here, as it becomes a URL path.
    if !crate::validate::is_dns1123_subdomain(&name) {
        return Err(Failure::Input(format!(
            "Agent {key}: bundle ConfigMap name {} is not a valid object name",
            text::quote(&name, 80)
        )));
    }
    let cm_key = format!("{}/{}", key.namespace, text::escape(&name));
    let cm = live
        .runtime
        .block_on(live.cluster.config_map(&key.namespace, &name))
        .map_err(|e| Failure::Input(format!("cannot get ConfigMap {cm_key}: {e}")))?
        .ok_or_else(|| {
            Failure::Gate(format!(
                "MISSING: no ConfigMap {cm_key}: the operator has not published the bundle of \
                 Agent {key} (is it running, and watching {}?)",
                key.namespace
            ))
        })?;
    let published = cm.data.as_ref().and_then(|d| d.get(DATA_KEY));
    let annotation = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SHA_ANNOTATION));
    let differences = compare(
        owned_by(&cm, agent),
        published.map(String::as_bytes),
        annotation.map(String::as_str),
        fresh,
    );
    if differences.is_empty() {
        super::print_out(
            format!(
                "verified: ConfigMap {cm_key} holds the bundle of Agent {key} as compiled now \
                 ({} bytes, {})\n",
                fresh.bytes.len(),
                fresh.sha256
            )
            .as_bytes(),
        );
        return Ok(());
    }
    let mut out =
        format!("DIFFERS: ConfigMap {cm_key} against a fresh compilation of Agent {key}\n");
    for d in &differences {
        out.push_str(&format!("  {}\n", text::escape_lines(d)));
    }
    super::print_out(out.as_bytes());
    Err(Failure::Gate(format!(
        "bundle of Agent {key}: {} difference(s) between ConfigMap {cm_key} and a fresh compilation",
        differences.len()
    )))
}

/// `sha256:<hex>`, as the annotation and `Bundle::sha256` write it.
fn digest(bytes: &[u8]) -> String {
    mcpgov_core::canonical::sha256_hex(bytes)
}

/// Every way the published ConfigMap departs from `fresh`, one line each.
pub fn compare(
    owned: bool,
    published: Option<&[u8]>,
    annotation: Option<&str>,
    fresh: &Bundle,
) -> Vec<String> {
    let mut out = Vec::new();
    if !owned {
        out.push(
            "owner: not marked as mcpgov's bundle of this Agent (managed-by label and \
             controller reference to the Agent's uid)"
                .to_string(),
        );
    }
    let Some(published) = published else {
        out.push(format!("data: no {DATA_KEY} key"));
        return out;
    };
    let published_digest = digest(published);
    match annotation {
        None => out.push(format!("annotation {SHA_ANNOTATION}: missing")),
        Some(a) if a != published_digest => out.push(format!(
            "annotation {SHA_ANNOTATION}: says {}, the published bytes hash to {published_digest}",
            text::quote(a, 80)
        )),
        Some(_) => {}
    }
    if published == fresh.bytes.as_slice() {
        return out;
    }
    out.push(format!(
        "bytes: published {} bytes ({published_digest}), fresh compilation {} bytes ({})",
        published.len(),
        fresh.bytes.len(),
        fresh.sha256
    ));
    let fresh_json: Value = serde_json::from_slice(&fresh.bytes).expect("bundles are JSON");
    match serde_json::from_slice::<Value>(published) {
        Err(e) => out.push(format!("bytes: the published data is not JSON ({e})")),
        Ok(p) => {
            let mut paths = Vec::new();
            json_diff(&p, &fresh_json, &mut String::new(), &mut paths);
            if paths.is_empty() {
                out.push("bytes: the same JSON, written differently (not canonical)".into());
            }
            let more = paths.len() > SHOWN_PATHS;
            out.extend(paths.into_iter().take(SHOWN_PATHS));
            if more {
                out.push("… and more paths differ".to_string());
            }
        }
    }
    out
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".to_string(),
        // JSON text: its strings are quoted and escaped already.
        Some(v) => text::escape(&text::truncate(&v.to_string(), 80)).into_owned(),
    }
}

/// The paths where `published` and `fresh` differ (`tools[1].decision: published X,
/// fresh Y`), up to one more than are shown. Depth is bounded by serde_json's parse
/// limit on both documents.
fn json_diff(published: &Value, fresh: &Value, path: &mut String, out: &mut Vec<String>) {
    if out.len() > SHOWN_PATHS {
        // Enough to say where.
        return;
    }
    match (published, fresh) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&text::escape(k));
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => json_diff(x, y, path, out),
                    (x, y) => out.push(format!("{path}: published {}, fresh {}", show(x), show(y))),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                json_diff(x, y, path, out);
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => out.push(format!(
            "{}: published {} item(s), fresh {}",
            if path.is_empty() { "(root)" } else { path },
            a.len(),
            b.len()
        )),
        (a, b) if a != b => out.push(format!(
            "{}: published {}, fresh {}",
            if path.is_empty() { "(root)" } else { path },
            show(Some(a)),
            show(Some(b))
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(json: &str) -> Bundle {
        Bundle {
            agent: ObjKey::new("t", "a"),
            bytes: json.as_bytes().to_vec(),
            sha256: digest(json.as_bytes()),
            governance_digest: String::new(),
            catalog_digest: String::new(),
        }
    }

    const FRESH: &str = r#"{"kind":"MCPGovBundle","tools":[{"decision":"Deny","key":"t/gw::x"}]}"#;

    #[test]
    fn equal_bytes_under_our_name_verify() {
        let b = bundle(FRESH);
        assert!(compare(true, Some(FRESH.as_bytes()), Some(&b.sha256), &b).is_empty());
    }

    #[test]
    fn a_tampered_decision_is_named_by_its_path() {
        let b = bundle(FRESH);
        let tampered = FRESH.replace("Deny", "Allow");
        let d = compare(true, Some(tampered.as_bytes()), Some(&b.sha256), &b);
        assert_eq!(d.len(), 3, "{d:#?}");
        assert!(
            d[0].starts_with("annotation mcpgov.io/bundle-sha256: says"),
            "{d:#?}"
        );
        let published = format!("bytes: published {} bytes (sha256:", tampered.len());
        assert!(d[1].starts_with(&published), "{d:#?}");
        assert_eq!(
            d[2],
            r#"tools[0].decision: published "Allow", fresh "Deny""#
        );
    }

    #[test]
    fn missing_data_foreign_owner_and_reformatted_json_are_each_said() {
        let b = bundle(FRESH);
        let d = compare(false, None, None, &b);
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(d[0].starts_with("owner:"));
        assert_eq!(d[1], "data: no bundle.json key");
        let pretty =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(FRESH).unwrap()).unwrap();
        let d = compare(
            true,
            Some(pretty.as_bytes()),
            Some(&digest(pretty.as_bytes())),
            &b,
        );
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(d[1].contains("not canonical"), "{d:#?}");
        let d = compare(true, Some(b"\x1b[2J not json"), Some("x"), &b);
        assert!(d.iter().any(|l| l.contains("not JSON")), "{d:#?}");
        assert!(d.iter().all(|l| !l.contains('\u{1b}')), "{d:#?}");
    }

    #[test]
    fn many_differences_are_cut_and_counted() {
        let tools = |d: &str| {
            let t: Vec<String> = (0..40)
                .map(|i| format!(r#"{{"decision":"{d}","key":"k{i}"}}"#))
                .collect();
            format!(r#"{{"tools":[{}]}}"#, t.join(","))
        };
        let b = bundle(&tools("Deny"));
        let published = tools("Allow");
        let d = compare(
            true,
            Some(published.as_bytes()),
            Some(&digest(published.as_bytes())),
            &b,
        );
        assert_eq!(d.len(), 1 + SHOWN_PATHS + 1, "{d:#?}");
        assert!(d.last().unwrap().starts_with("… and "), "{d:#?}");
    }
}
