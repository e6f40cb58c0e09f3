//! The four custom resources (API group `mcpgov.io`, version `v1alpha1`) and their
//! conversion into the engine's plain input model.

pub mod agent;
pub mod common;
pub mod grant;
pub mod policy;
pub mod reference;
pub mod server;

pub use agent::{Agent, AgentSpec, AgentStatus};
pub use grant::{Grant, GrantSpec, GrantStatus};
pub use policy::{Policy, PolicySpec, PolicyStatus};
pub use server::{MCPServer, MCPServerSpec, MCPServerStatus};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResourceExt, ResourceExt};
use mcpgov_engine as engine;

/// The four CRDs, in a stable order.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    vec![MCPServer::crd(), Agent::crd(), Policy::crd(), Grant::crd()]
}

/// The four CRDs as one multi-document YAML stream, as committed under `crds/`.
pub fn crds_yaml() -> String {
    let mut out = String::new();
    for crd in all_crds() {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&crd).expect("CRDs serialise"));
    }
    out
}

/// An empty `metadata.namespace` is unset, as the API server (and `kubectl apply`) treat
/// it: the object lands in the default namespace, never in one named "".
pub fn key_of<K: ResourceExt>(obj: &K, default_ns: &str) -> engine::ObjKey {
    engine::ObjKey::new(
        obj.namespace()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| default_ns.to_string()),
        obj.name_any(),
    )
}

impl MCPServer {
    /// Whether status carries a crawled catalog (not merely conditions).
    pub fn has_catalog(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.last_successful_crawl_time.is_some()
                || s.catalog_digest.is_some()
                || !s.tools.is_empty()
        })
    }

    pub fn to_engine(&self, default_ns: &str) -> engine::Server {
        let catalog = self.has_catalog().then(|| {
            let st = self.status.as_ref().expect("has_catalog checked status");
            engine::Catalog::from(st)
        });
        engine::Server {
            key: key_of(self, default_ns),
            endpoint: engine::Endpoint {
                url: self.spec.endpoint.url.clone(),
                transport: match self.spec.endpoint.transport {
                    server::Transport::StreamableHTTP => engine::Transport::StreamableHTTP,
                    server::Transport::SSE => engine::Transport::SSE,
                },
                headers: self
                    .spec
                    .endpoint
                    .headers
                    .iter()
                    .map(|h| engine::HeaderRef {
                        name: h.name.clone(),
                        secret_name: h.value_from.secret_key_ref.name.clone(),
                        secret_key: h.value_from.secret_key_ref.key.clone(),
                    })
                    .collect(),
            },
            data_access: self
                .spec
                .data_access
                .iter()
                .map(|d| engine::DataAccess {
                    tool: d.tool.clone(),
                    resource: d.resource.clone(),
                    mode: match d.mode {
                        server::AccessMode::Reads => engine::Mode::Reads,
                        server::AccessMode::Writes => engine::Mode::Writes,
                    },
                    provenance: (&d.provenance).into(),
                    argument: d.argument.as_ref().map(|a| engine::ArgumentRef {
                        // A name is the pointer to that member; with neither (the CRD
                        // refuses it) the empty pointer fails the engine's check.
                        pointer: match (&a.name, &a.pointer) {
                            (Some(n), None) => mcpgov_core::percall::pointer_of_name(n),
                            (None, Some(p)) => p.clone(),
                            _ => String::new(),
                        },
                        template: a.template.clone(),
                    }),
                })
                .collect(),
            sharing: self
                .spec
                .sharing
                .as_ref()
                .map(|s| engine::Sharing::from_list(&s.namespaces))
                .unwrap_or_default(),
            catalog,
            contracts: self.contract_pins(),
        }
    }

    /// `spec.contracts` as the engine reads it (Trust, nothing approved, when absent).
    pub fn contract_pins(&self) -> engine::Contracts {
        let Some(c) = &self.spec.contracts else {
            return engine::Contracts::default();
        };
        engine::Contracts {
            mode: match c.mode {
                server::ContractMode::Trust => engine::ContractMode::Trust,
                server::ContractMode::Pinned => engine::ContractMode::Pinned,
            },
            approved: c
                .approved
                .iter()
                .map(|a| (a.tool.clone(), a.digest.clone()))
                .collect(),
        }
    }
}

impl Policy {
    pub fn to_engine(&self, default_ns: &str) -> engine::Policy {
        let g = &self.spec.governs;
        engine::Policy {
            key: key_of(self, default_ns),
            effect: match self.spec.effect {
                policy::Effect::Deny => engine::Effect::Deny,
                policy::Effect::Allow => engine::Effect::Allow,
            },
            description: self.spec.description.clone(),
            resources: g
                .resources
                .iter()
                .map(|r| engine::ResourceBinding {
                    uri: r.uri.clone(),
                    provenance: (&r.provenance).into(),
                })
                .collect(),
            tools: g
                .tools
                .iter()
                .map(|t| engine::ToolBinding {
                    tool: t.tool.clone(),
                    provenance: (&t.provenance).into(),
                })
                .collect(),
            exception_namespaces: self
                .spec
                .exceptions
                .as_ref()
                .map(|e| e.allowed_namespaces.clone()),
            enforcement: match self.spec.enforcement {
                Some(policy::Enforcement::PerCall) => engine::Enforcement::PerCall,
                Some(policy::Enforcement::Static) | None => engine::Enforcement::Static,
            },
        }
    }
}

impl Agent {
    pub fn to_engine(&self, default_ns: &str) -> engine::Agent {
        engine::Agent {
            key: key_of(self, default_ns),
            profile: match self.spec.profile {
                agent::Profile::Strict => engine::Profile::Strict,
                agent::Profile::Review => engine::Profile::Review,
                agent::Profile::Explore => engine::Profile::Explore,
            },
            description: self.spec.description.clone(),
        }
    }
}

impl Grant {
    pub fn to_engine(&self, default_ns: &str) -> engine::Grant {
        engine::Grant {
            key: key_of(self, default_ns),
            agent: self.spec.agent.clone(),
            tools: self.spec.tools.clone(),
            expected_exceptions: self
                .spec
                .expected_exceptions
                .iter()
                .map(|e| engine::ExpectedException {
                    policy: e.policy.clone(),
                    tool: e.tool.clone(),
                    resource: e.resource.clone(),
                    reason: e.reason.clone(),
                    owner: e.owner.clone(),
                    expires: e.expires.clone(),
                })
                .collect(),
            provenance: (&self.spec.provenance).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_argument_is_the_pointer_to_that_member_and_enforcement_defaults_static() {
        let s: MCPServer = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
            "metadata": {"name": "fs", "namespace": "t"},
            "spec": {"endpoint": {"url": "http://fs:8080/mcp"}, "dataAccess": [
                {"tool": "a", "resource": "file:///srv/**", "mode": "Reads",
                 "argument": {"name": "a/b~c", "template": "file://{p}"}},
                {"tool": "b", "resource": "file:///srv/**", "mode": "Reads",
                 "argument": {"pointer": "/opts/path", "template": "file://{p}"}},
                {"tool": "c", "resource": "file:///srv/**", "mode": "Reads"}]}
        }))
        .unwrap();
        let e = s.to_engine("t");
        let ptr = |i: usize| {
            e.data_access[i]
                .argument
                .as_ref()
                .map(|a| a.pointer.clone())
        };
        assert_eq!(ptr(0).as_deref(), Some("/a~1b~0c"));
        assert_eq!(ptr(1).as_deref(), Some("/opts/path"));
        assert_eq!(ptr(2), None);
        let p: Policy = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Policy",
            "metadata": {"name": "p", "namespace": "t"},
            "spec": {"effect": "Deny", "governs": {"resources": [{"uri": "file:///x"}]}}
        }))
        .unwrap();
        assert_eq!(p.to_engine("t").enforcement, engine::Enforcement::Static);
    }

    /// Found by the check fuzzer: `namespace: ""` must not make a namespace named "".
    #[test]
    fn an_empty_namespace_is_the_default_one() {
        let p: Policy = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Policy",
            "metadata": {"name": "srv", "namespace": ""},
            "spec": {"effect": "Deny", "governs": {"resources": [], "tools": []}}
        }))
        .unwrap();
        assert_eq!(
            p.to_engine("team-a").key,
            engine::ObjKey::new("team-a", "srv")
        );
    }

    /// The endpoint reaches the engine (and so the bundle's `servers`) from the CRD, the
    /// conversion both the CLI and the controller use: Secret names, never values.
    #[test]
    fn a_servers_endpoint_reaches_the_engine() {
        let s: MCPServer = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
            "metadata": {"name": "gh", "namespace": "team-a"},
            "spec": {"endpoint": {
                "url": "https://gh.example:8443/mcp", "transport": "SSE",
                "headers": [
                    {"name": "Authorization", "valueFrom": {"secretKeyRef": {"name": "gh-token", "key": "token"}}},
                    {"name": "X-Org", "valueFrom": {"secretKeyRef": {"name": "gh-org", "key": "id"}}}
                ]}}
        }))
        .unwrap();
        let e = s.to_engine("default").endpoint;
        assert_eq!(
            e,
            engine::Endpoint {
                url: "https://gh.example:8443/mcp".into(),
                transport: engine::Transport::SSE,
                headers: vec![
                    engine::HeaderRef {
                        name: "Authorization".into(),
                        secret_name: "gh-token".into(),
                        secret_key: "token".into(),
                    },
                    engine::HeaderRef {
                        name: "X-Org".into(),
                        secret_name: "gh-org".into(),
                        secret_key: "id".into(),
                    },
                ],
            }
        );
        let plain: MCPServer = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
            "metadata": {"name": "fs"},
            "spec": {"endpoint": {"url": "http://fs:8080/mcp"}}
        }))
        .unwrap();
        let e = plain.to_engine("default").endpoint;
        assert_eq!(e.transport, engine::Transport::StreamableHTTP);
        assert!(e.headers.is_empty());
    }
}
