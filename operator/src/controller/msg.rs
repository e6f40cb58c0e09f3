//! What the index task drains: watch events, already decoded into their typed objects
//! by the watch task (`watch`), crawl outcomes (`crawl`) and the writer's reports
//! (`writer`). It depends on none of its senders: the crawl scheduler and the writer
//! send anything `From` their outcome or report, and the `From` impls are here.

use super::crawl::Outcome;
use super::jobs::Report;
use super::kind::Watched;
use crate::crd::{Agent, Grant, MCPServer, Policy};
use k8s_openapi::api::core::v1::ConfigMap;
use mcpgov_engine::ObjKey;

/// A watched object, decoded. ConfigMaps are held (`bundles::held`): their bundle bytes
/// never wait in the channel.
#[derive(Clone, Debug)]
pub enum Object {
    MCPServer(Box<MCPServer>),
    Agent(Box<Agent>),
    Policy(Box<Policy>),
    Grant(Box<Grant>),
    ConfigMap(Box<ConfigMap>),
}

impl Object {
    pub fn kind(&self) -> Watched {
        match self {
            Object::MCPServer(_) => Watched::MCPServer,
            Object::Agent(_) => Watched::Agent,
            Object::Policy(_) => Watched::Policy,
            Object::Grant(_) => Watched::Grant,
            Object::ConfigMap(_) => Watched::ConfigMap,
        }
    }

    pub fn meta(&self) -> &kube::api::ObjectMeta {
        match self {
            Object::MCPServer(o) => &o.metadata,
            Object::Agent(o) => &o.metadata,
            Object::Policy(o) => &o.metadata,
            Object::Grant(o) => &o.metadata,
            Object::ConfigMap(o) => &o.metadata,
        }
    }

    pub fn key(&self) -> ObjKey {
        key_of(self.meta())
    }
}

/// Namespace and name (empty when absent: a cluster-scoped or nameless object).
pub fn key_of(meta: &kube::api::ObjectMeta) -> ObjKey {
    ObjKey::new(
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

macro_rules! object_from {
    ($($ty:ident),*) => {$(
        impl From<$ty> for Object {
            fn from(o: $ty) -> Object {
                Object::$ty(Box::new(o))
            }
        }
    )*};
}
object_from!(MCPServer, Agent, Policy, Grant, ConfigMap);

#[derive(Debug)]
pub enum Msg {
    Apply(Object),
    /// An object that did not decode (logged and counted by its watch): it is still
    /// there, so a relist does not forget the last good version of it.
    Malformed(Watched, ObjKey),
    Delete(Watched, ObjKey),
    /// A (re)list started: objects not re-listed before `ListDone` are gone.
    ListStart(Watched),
    ListDone(Watched),
    Failed(Watched, String),
    /// A crawl finished (from the crawl scheduler, not a watch).
    Crawled(Box<Outcome>),
    /// The writer finished a job (from the writer task, not a watch).
    Written(Box<Report>),
    /// A list of our reports came back (from the task `reports::list`).
    ReportsListed(Box<super::reports::Listed>),
}

impl From<Outcome> for Msg {
    fn from(o: Outcome) -> Msg {
        Msg::Crawled(Box::new(o))
    }
}

impl From<Report> for Msg {
    fn from(r: Report) -> Msg {
        Msg::Written(Box::new(r))
    }
}
