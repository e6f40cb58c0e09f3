//! The kinds the index watches (and the one it only writes: reports). A leaf module:
//! jobs, plans, metrics and messages name objects by it without depending on one
//! another.

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
    /// Not watched: the operator's report (PolicyReport or OpenReports Report) in a
    /// namespace, which it writes, and reads back with a list on full passes.
    Report,
}

/// The kinds with a watch.
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
            Watched::Report => "Report",
        }
    }

    /// The resource of a watched kind; `None` for reports, whose resource depends on
    /// `--policy-reports` (their ops carry it: `crate::reports::Api::resource`).
    pub(super) fn api_resource(self) -> Option<ApiResource> {
        match self {
            Watched::ConfigMap => Some(ApiResource::erase::<ConfigMap>(&())),
            Watched::Report => None,
            k => Some(ApiResource::from_gvk(&GroupVersionKind::gvk(
                crate::crd::common::GROUP,
                crate::crd::common::VERSION,
                k.name(),
            ))),
        }
    }
}
