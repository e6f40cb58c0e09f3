//! Builders for engine tests: `server("ns", "fs").tools(&["read_file"]).reads(..)`.
#![allow(dead_code)]

use mcpgov_engine::*;

pub fn prov(evidence: &str) -> Provenance {
    Provenance {
        source: Source::OperatorAsserted,
        confidence: Confidence::High,
        evidence: (!evidence.is_empty()).then(|| evidence.to_string()),
    }
}

pub fn now() -> jiff::Timestamp {
    "2026-06-01T00:00:00Z".parse().unwrap()
}

pub fn key(s: &str) -> ObjKey {
    let (ns, name) = s.split_once('/').unwrap();
    ObjKey::new(ns, name)
}

pub struct ServerB(Server);

pub fn server(ns: &str, name: &str) -> ServerB {
    ServerB(Server {
        key: ObjKey::new(ns, name),
        endpoint: Endpoint {
            url: format!("http://{name}.{ns}:8080/mcp"),
            ..Default::default()
        },
        data_access: vec![],
        sharing: Sharing::None,
        catalog: Some(Catalog::default()),
        contracts: Contracts::default(),
    })
}

impl ServerB {
    /// A header whose value is the Secret `secret`'s `key`.
    pub fn header(mut self, name: &str, secret: &str, key: &str) -> Self {
        self.0.endpoint.headers.push(HeaderRef {
            name: name.into(),
            secret_name: secret.into(),
            secret_key: key.into(),
        });
        self
    }
    pub fn sse(mut self) -> Self {
        self.0.endpoint.transport = Transport::SSE;
        self
    }
    pub fn tools(mut self, names: &[&str]) -> Self {
        let c = self.0.catalog.get_or_insert_with(Catalog::default);
        for n in names {
            c.tools.push(CatalogTool {
                name: n.to_string(),
                contract_digest: Some(format!("sha256:{n}")),
                ..Default::default()
            });
        }
        self
    }
    pub fn annotated(
        mut self,
        name: &str,
        read_only: Option<bool>,
        destructive: Option<bool>,
    ) -> Self {
        let c = self.0.catalog.get_or_insert_with(Catalog::default);
        c.tools.push(CatalogTool {
            name: name.to_string(),
            annotations: Annotations {
                read_only_hint: read_only,
                destructive_hint: destructive,
                ..Default::default()
            },
            ..Default::default()
        });
        self
    }
    pub fn uncrawled(mut self) -> Self {
        self.0.catalog = None;
        self
    }
    fn access(mut self, tool: &str, uri: &str, mode: Mode, evidence: &str) -> Self {
        self.0.data_access.push(DataAccess {
            tool: tool.into(),
            resource: uri.into(),
            mode,
            provenance: prov(evidence),
            argument: None,
        });
        self
    }
    /// A Reads entry whose resource the call argument at `pointer` names.
    pub fn reads_arg(mut self, tool: &str, uri: &str, pointer: &str, template: &str) -> Self {
        self.0.data_access.push(DataAccess {
            tool: tool.into(),
            resource: uri.into(),
            mode: Mode::Reads,
            provenance: prov("src.rs::read"),
            argument: Some(ArgumentRef {
                pointer: pointer.into(),
                template: template.into(),
            }),
        });
        self
    }
    pub fn reads(self, tool: &str, uri: &str) -> Self {
        self.access(tool, uri, Mode::Reads, "src.rs::read")
    }
    pub fn writes(self, tool: &str, uri: &str) -> Self {
        self.access(tool, uri, Mode::Writes, "src.rs::write")
    }
    pub fn reads_unbacked(self, tool: &str, uri: &str) -> Self {
        self.access(tool, uri, Mode::Reads, "")
    }
    pub fn share(mut self, namespaces: &[&str]) -> Self {
        let v: Vec<String> = namespaces.iter().map(|s| s.to_string()).collect();
        self.0.sharing = Sharing::from_list(&v);
        self
    }
    /// Pin the server's contracts to these `(tool, digest)` approvals.
    pub fn pinned(mut self, approved: &[(&str, &str)]) -> Self {
        self.0.contracts = Contracts {
            mode: ContractMode::Pinned,
            approved: approved
                .iter()
                .map(|(t, d)| (t.to_string(), d.to_string()))
                .collect(),
        };
        self
    }
    pub fn build(self) -> Object {
        Object::Server(self.0)
    }
}

pub struct PolicyB(Policy);

pub fn deny(ns: &str, name: &str) -> PolicyB {
    PolicyB(Policy {
        key: ObjKey::new(ns, name),
        effect: Effect::Deny,
        description: None,
        resources: vec![],
        tools: vec![],
        exception_namespaces: None,
        enforcement: Enforcement::Static,
    })
}

pub fn allow(ns: &str, name: &str) -> PolicyB {
    let mut p = deny(ns, name);
    p.0.effect = Effect::Allow;
    p
}

impl PolicyB {
    pub fn resource(mut self, uri: &str) -> Self {
        self.0.resources.push(ResourceBinding {
            uri: uri.into(),
            provenance: prov("POL-1"),
        });
        self
    }
    pub fn resource_unbacked(mut self, uri: &str) -> Self {
        self.0.resources.push(ResourceBinding {
            uri: uri.into(),
            provenance: prov(""),
        });
        self
    }
    pub fn tool(mut self, sel: &str) -> Self {
        self.0.tools.push(ToolBinding {
            tool: sel.into(),
            provenance: prov("POL-2"),
        });
        self
    }
    pub fn tool_unbacked(mut self, sel: &str) -> Self {
        self.0.tools.push(ToolBinding {
            tool: sel.into(),
            provenance: prov(""),
        });
        self
    }
    pub fn per_call(mut self) -> Self {
        self.0.enforcement = Enforcement::PerCall;
        self
    }
    pub fn exceptions_from(mut self, namespaces: &[&str]) -> Self {
        self.0.exception_namespaces = Some(namespaces.iter().map(|s| s.to_string()).collect());
        self
    }
    pub fn build(self) -> Object {
        Object::Policy(self.0)
    }
}

pub fn agent(ns: &str, name: &str, profile: Profile) -> Object {
    Object::Agent(Agent {
        key: ObjKey::new(ns, name),
        profile,
        description: None,
    })
}

pub struct GrantB(Grant);

pub fn grant(ns: &str, name: &str, agent: &str, tools: &[&str]) -> GrantB {
    GrantB(Grant {
        key: ObjKey::new(ns, name),
        agent: agent.into(),
        tools: tools.iter().map(|s| s.to_string()).collect(),
        expected_exceptions: vec![],
        provenance: prov("TICKET-1"),
    })
}

impl GrantB {
    pub fn exception(
        mut self,
        policy: &str,
        tool: Option<&str>,
        resource: Option<&str>,
        expires: Option<&str>,
    ) -> Self {
        self.0.expected_exceptions.push(ExpectedException {
            policy: policy.into(),
            tool: tool.map(Into::into),
            resource: resource.map(Into::into),
            reason: "on purpose".into(),
            owner: None,
            expires: expires.map(Into::into),
        });
        self
    }
    /// Sets the reason of the last expected exception added.
    pub fn because(mut self, reason: &str) -> Self {
        if let Some(e) = self.0.expected_exceptions.last_mut() {
            e.reason = reason.into();
        }
        self
    }
    pub fn unbacked(mut self) -> Self {
        self.0.provenance = prov("");
        self
    }
    pub fn build(self) -> Object {
        Object::Grant(self.0)
    }
}

pub fn engine(objects: Vec<Object>) -> Engine {
    Engine::from_snapshot(EngineConfig::default(), objects)
}

/// The quickstart estate: vibe-coder may call read_note and publish_note; publish_note
/// writes drafts under a Deny.
pub fn quickstart(profile: Profile) -> Vec<Object> {
    vec![
        server("qs", "gw")
            .tools(&["read_note", "publish_note"])
            .reads("read_note", "file:///demo/notes")
            .writes("publish_note", "file:///demo/drafts")
            .build(),
        deny("qs", "drafts-deny")
            .resource("file:///demo/drafts")
            .build(),
        agent("qs", "vibe-coder", profile),
        grant(
            "qs",
            "g",
            "vibe-coder",
            &["gw::read_note", "gw::publish_note"],
        )
        .build(),
    ]
}
