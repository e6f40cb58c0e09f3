//! Guarded watches: each kind is watched as untyped objects and decoded one by one, so
//! a malformed object is logged, counted and skipped instead of failing the whole list.
//! Every watch feeds one channel that the index task drains.

use super::metrics::Metrics;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::mpsc;
use tracing::Instrument;

/// What the index watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Watched {
    MCPServer,
    Agent,
    Policy,
    Grant,
    ConfigMap,
}

pub const ALL: [Watched; 5] = [
    Watched::MCPServer,
    Watched::Agent,
    Watched::Policy,
    Watched::Grant,
    Watched::ConfigMap,
];

use crate::names::{MANAGED_BY, MANAGER};

impl Watched {
    pub fn name(self) -> &'static str {
        match self {
            Watched::MCPServer => "MCPServer",
            Watched::Agent => "Agent",
            Watched::Policy => "Policy",
            Watched::Grant => "Grant",
            Watched::ConfigMap => "ConfigMap",
        }
    }

    pub(super) fn api_resource(self) -> ApiResource {
        match self {
            Watched::ConfigMap => ApiResource::erase::<ConfigMap>(&()),
            k => ApiResource::from_gvk(&GroupVersionKind::gvk(
                crate::crd::common::GROUP,
                crate::crd::common::VERSION,
                k.name(),
            )),
        }
    }
}

#[derive(Debug)]
pub enum Msg {
    Apply(Watched, DynamicObject),
    Delete(Watched, DynamicObject),
    /// A (re)list started: objects not re-listed before `ListDone` are gone.
    ListStart(Watched),
    ListDone(Watched),
    Failed(Watched, String),
    /// A crawl finished (from the crawl scheduler, not a watch).
    Crawled(Box<super::crawl::Outcome>),
    /// The writer finished a job (from the writer task, not a watch).
    Written(Box<super::jobs::Report>),
}

/// Spawn one watch per kind; all send into `tx`.
pub fn spawn_all(client: &Client, namespace: Option<&str>, tx: mpsc::Sender<Msg>) {
    for kind in ALL {
        let ar = kind.api_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        let mut config = watcher::Config::default();
        if kind == Watched::ConfigMap {
            config = config.labels(&format!("{MANAGED_BY}={MANAGER}"));
        }
        let tx = tx.clone();
        let span = tracing::info_span!("watch", kind = kind.name());
        tokio::spawn(
            async move {
                let mut stream = watcher(api, config).default_backoff().boxed();
                while let Some(ev) = stream.next().await {
                    let msg = match ev {
                        Ok(watcher::Event::Apply(mut o) | watcher::Event::InitApply(mut o)) => {
                            if kind == Watched::ConfigMap {
                                super::bundles::hold_untyped(&mut o.data);
                            }
                            Msg::Apply(kind, o)
                        }
                        Ok(watcher::Event::Delete(o)) => Msg::Delete(kind, o),
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

/// Decode one untyped object into its typed form; `None` (logged, counted) if malformed.
pub fn decode<K>(obj: &DynamicObject, kind: Watched, metrics: &Metrics) -> Option<K>
where
    K: Resource + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let mut value = serde_json::to_value(obj).ok()?;
    // List items may omit apiVersion/kind; the typed form wants them.
    if let Some(map) = value.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| K::api_version(&Default::default()).into_owned().into());
        map.entry("kind")
            .or_insert_with(|| K::kind(&Default::default()).into_owned().into());
    }
    match serde_json::from_value::<K>(value) {
        Ok(k) => Some(k),
        Err(e) => {
            tracing::warn!(
                kind = kind.name(),
                namespace = obj.metadata.namespace.as_deref().unwrap_or(""),
                name = obj.metadata.name.as_deref().unwrap_or(""),
                error = %e,
                "skipping malformed object"
            );
            metrics
                .watch
                .malformed_objects
                .with_label_values(&[kind.name()])
                .inc();
            None
        }
    }
}
