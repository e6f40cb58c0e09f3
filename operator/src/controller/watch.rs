//! Guarded watches: each kind is watched as untyped objects and decoded one by one in
//! its watch task, so a malformed object is logged, counted and skipped instead of
//! failing the whole list, and the index receives typed objects (`msg::Object`).
//! Every watch feeds one channel that the index task drains.

use super::kind::{ALL, Watched};
use super::msg::{Msg, Object, key_of};
use crate::crd::{Agent, Grant, MCPServer, Policy};
use crate::names::{MANAGED_BY, MANAGER};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::Resource;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use prometheus::IntCounterVec;
use tokio::sync::mpsc;
use tracing::Instrument;

/// Spawn one watch per kind; all send into `tx`. `malformed` counts objects that did
/// not decode, by kind.
pub fn spawn_all(
    client: &Client,
    namespace: Option<&str>,
    tx: mpsc::Sender<Msg>,
    malformed: IntCounterVec,
) {
    for kind in ALL {
        let Some(ar) = kind.api_resource() else {
            continue;
        };
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        let mut config = watcher::Config::default();
        if kind == Watched::ConfigMap {
            config = config.labels(&format!("{MANAGED_BY}={MANAGER}"));
        }
        let tx = tx.clone();
        let malformed = malformed.clone();
        let span = tracing::info_span!("watch", kind = kind.name());
        tokio::spawn(
            async move {
                let mut stream = watcher(api, config).default_backoff().boxed();
                while let Some(ev) = stream.next().await {
                    let msg = match ev {
                        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                            let key = key_of(&o.metadata);
                            match decode(kind, o) {
                                Ok(obj) => Msg::Apply(obj),
                                Err(e) => {
                                    tracing::warn!(
                                        namespace = key.namespace,
                                        name = key.name,
                                        error = %e,
                                        "skipping malformed object"
                                    );
                                    malformed.with_label_values(&[kind.name()]).inc();
                                    Msg::Malformed(kind, key)
                                }
                            }
                        }
                        Ok(watcher::Event::Delete(o)) => Msg::Delete(kind, key_of(&o.metadata)),
                        Ok(watcher::Event::Init) => Msg::ListStart(kind),
                        Ok(watcher::Event::InitDone) => Msg::ListDone(kind),
                        Err(e) => {
                            tracing::warn!(error = %e, "watch failed; retrying with backoff");
                            Msg::Failed(kind, e.to_string())
                        }
                    };
                    if tx.send(msg).await.is_err() {
                        return;
                    }
                }
            }
            .instrument(span),
        );
    }
}

/// Decode one untyped object of `kind` into its typed form; a ConfigMap is held
/// (`bundles::held`) on the way.
pub fn decode(kind: Watched, obj: DynamicObject) -> Result<Object, serde_json::Error> {
    Ok(match kind {
        Watched::MCPServer => typed::<MCPServer>(obj)?.into(),
        Watched::Agent => typed::<Agent>(obj)?.into(),
        Watched::Policy => typed::<Policy>(obj)?.into(),
        Watched::Grant => typed::<Grant>(obj)?.into(),
        Watched::ConfigMap => super::bundles::held(typed::<ConfigMap>(obj)?).into(),
        Watched::Report => {
            return Err(serde::de::Error::custom("reports are written, not watched"));
        }
    })
}

/// The typed form of an untyped object. Its fields are moved, not copied, and its
/// metadata, already typed, is put in place after (the typed form gets an empty one to
/// decode).
fn typed<K>(obj: DynamicObject) -> Result<K, serde_json::Error>
where
    K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let DynamicObject {
        types,
        metadata,
        data,
    } = obj;
    let mut fields = match data {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => serde_json::Map::new(),
        _ => return Err(serde::de::Error::custom("not an object")),
    };
    // List items may omit apiVersion/kind; the typed form wants them.
    let (api_version, kind) = match types {
        Some(t) => (t.api_version, t.kind),
        None => (K::api_version(&()).into_owned(), K::kind(&()).into_owned()),
    };
    fields.insert("apiVersion".into(), api_version.into());
    fields.insert("kind".into(), kind.into());
    fields.insert(
        "metadata".into(),
        serde_json::Value::Object(Default::default()),
    );
    let mut k: K = serde_json::from_value(serde_json::Value::Object(fields))?;
    *k.meta_mut() = metadata;
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn untyped(v: serde_json::Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    fn grant(spec: serde_json::Value) -> serde_json::Value {
        json!({
            "metadata": {"name": "g", "namespace": "ns", "resourceVersion": "7",
                         "generation": 3, "labels": {"a": "b"}},
            "spec": spec,
        })
    }

    const SPEC: &str = r#"{"agent": "a", "tools": ["s::t"],
        "provenance": {"source": "OperatorAsserted", "confidence": "High", "evidence": "e"}}"#;

    /// Decoded once, as the typed API would: metadata kept whole, apiVersion and kind
    /// filled in when a list item omits them.
    #[test]
    fn objects_decode_into_their_typed_form() {
        let spec: serde_json::Value = serde_json::from_str(SPEC).unwrap();
        let want: Grant = serde_json::from_value(json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
            "metadata": grant(spec.clone())["metadata"], "spec": spec,
        }))
        .unwrap();
        let mut with_types = grant(spec.clone());
        with_types["apiVersion"] = json!("mcpgov.io/v1alpha1");
        with_types["kind"] = json!("Grant");
        // As a list item (no type fields) and as a watch event carries it.
        for v in [grant(spec.clone()), with_types] {
            let Object::Grant(g) = decode(Watched::Grant, untyped(v)).unwrap() else {
                panic!("not a Grant");
            };
            assert_eq!(json!(*g), json!(want));
        }
        let Object::Grant(g) = decode(Watched::Grant, untyped(grant(spec))).unwrap() else {
            panic!("not a Grant");
        };
        assert_eq!(g.metadata.generation, Some(3));
        assert_eq!(key_of(&g.metadata), mcpgov_engine::ObjKey::new("ns", "g"));
    }

    /// A malformed object is an error for its watch to count, not a panic.
    #[test]
    fn malformed_objects_are_refused() {
        assert!(decode(Watched::Grant, untyped(grant(json!({"agent": 5})))).is_err());
        assert!(decode(Watched::Agent, untyped(grant(json!("x")))).is_err());
        let mut cm = grant(json!(null));
        cm["data"] = json!({"k": 1});
        assert!(decode(Watched::ConfigMap, untyped(cm)).is_err());
    }

    /// A bundle ConfigMap is held on decoding: its bytes never reach the channel.
    #[test]
    fn bundle_configmaps_arrive_held() {
        let bytes = r#"{"kind":"MCPGovBundle"}"#;
        let cm = untyped(json!({
            "metadata": {"name": "b", "namespace": "ns"},
            "data": {crate::names::DATA_KEY: bytes},
            "binaryData": {"x": "AAAA"},
        }));
        let Object::ConfigMap(cm) = decode(Watched::ConfigMap, cm).unwrap() else {
            panic!("not a ConfigMap");
        };
        assert!(!format!("{cm:?}").contains("MCPGovBundle"));
        assert!(cm.binary_data.is_none());
        assert_eq!(
            super::super::bundles::held_digest(&cm),
            Some(mcpgov_engine::canonical::sha256_hex(bytes.as_bytes()).as_str())
        );
    }
}
