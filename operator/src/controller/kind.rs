//! The kinds the index watches. A leaf module: jobs, plans, metrics and messages name
//! objects by it without depending on one another.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::{ApiResource, GroupVersionKind};

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
