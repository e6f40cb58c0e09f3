//! A deterministic synthetic estate (servers, tools, data access, policies, agents,
//! grants, exceptions, a little drift) for benchmarks: the same seed and size always
//! give the same objects.

use crate::model::*;

/// Sizes of an estate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub servers: usize,
    pub tools_per_server: usize,
    pub agents: usize,
    pub policies: usize,
    pub grants_per_agent: usize,
    pub namespaces: usize,
}

impl Size {
    pub const SMALL: Size = Size {
        servers: 2,
        tools_per_server: 10,
        agents: 5,
        policies: 3,
        grants_per_agent: 3,
        namespaces: 1,
    };
    pub const MEDIUM: Size = Size {
        servers: 10,
        tools_per_server: 50,
        agents: 50,
        policies: 20,
        grants_per_agent: 10,
        namespaces: 3,
    };
    pub const LARGE: Size = Size {
        servers: 50,
        tools_per_server: 200,
        agents: 500,
        policies: 100,
        grants_per_agent: 30,
        namespaces: 10,
    };

    pub fn named(name: &str) -> Option<Size> {
        match name {
            "small" => Some(Size::SMALL),
            "medium" => Some(Size::MEDIUM),
            "large" => Some(Size::LARGE),
            _ => None,
        }
    }
}

/// A small, fast, deterministic generator (splitmix64): no dependency, same stream
/// on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

pub const GOVERNANCE_NS: &str = "mcpgov-system";

pub fn namespace(i: usize) -> String {
    format!("team-{i:02}")
}

pub fn server_name(i: usize) -> String {
    format!("srv-{i:03}")
}

/// Tool `j` of a server: a verb and a number; every tenth is destructive.
pub fn tool_name(j: usize) -> String {
    let verb = match j % 10 {
        0 => "delete",
        1 | 2 => "write",
        _ => "read",
    };
    format!("{verb}_{j:04}")
}

fn resource(server: usize, j: usize) -> String {
    format!("file:///data/{}/obj-{j:04}", server_name(server))
}

fn prov(evidence: &str) -> Provenance {
    Provenance {
        source: Source::OperatorAsserted,
        confidence: Confidence::High,
        evidence: Some(evidence.to_string()),
    }
}

/// The Grants among `objects` (what the benches pick questions from).
pub fn grants(objects: &[Object]) -> Vec<Grant> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::Grant(g) => Some(g.clone()),
            _ => None,
        })
        .collect()
}

/// Every object of the estate.
pub fn generate(size: Size, seed: u64) -> Vec<Object> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let ns_of = |server: usize| namespace(server % size.namespaces.max(1));
    for s in 0..size.servers {
        let mut tools = Vec::new();
        let mut access = Vec::new();
        for j in 0..size.tools_per_server {
            let name = tool_name(j);
            // A little drift: one tool in a hundred is governed but no longer exposed.
            if !rng.chance(1) {
                tools.push(CatalogTool {
                    name: name.clone(),
                    description: Some(format!("{name} on {}", server_name(s))),
                    annotations: Annotations {
                        read_only_hint: Some(name.starts_with("read")),
                        destructive_hint: Some(name.starts_with("delete")),
                        ..Default::default()
                    },
                    contract_digest: Some(format!("sha256:{s:03}{j:04}")),
                });
            }
            if rng.chance(90) {
                // Mostly concrete URIs; some tools reach a whole folder.
                let uri = if rng.chance(10) {
                    format!("file:///data/{}/**", server_name(s))
                } else {
                    resource(s, j)
                };
                access.push(DataAccess {
                    tool: name.clone(),
                    resource: uri,
                    mode: if name.starts_with("read") {
                        Mode::Reads
                    } else {
                        Mode::Writes
                    },
                    provenance: prov(&format!("{}::{name}", server_name(s))),
                    argument: None,
                });
            }
        }
        out.push(Object::Server(Server {
            key: ObjKey::new(ns_of(s), server_name(s)),
            endpoint: Endpoint {
                url: format!("http://{}.{}:8080/mcp", server_name(s), ns_of(s)),
                ..Default::default()
            },
            data_access: access,
            sharing: if rng.chance(20) {
                Sharing::All
            } else {
                Sharing::None
            },
            catalog: Some(Catalog {
                tools,
                resources: Vec::new(),
            }),
            contracts: Contracts::default(),
        }));
    }
    for p in 0..size.policies {
        let platform = p % 5 == 0;
        let s = rng.below(size.servers);
        let ns = if platform {
            GOVERNANCE_NS.to_string()
        } else {
            ns_of(s)
        };
        let mut resources = Vec::new();
        let mut tools = Vec::new();
        for _ in 0..3 {
            let j = rng.below(size.tools_per_server);
            resources.push(ResourceBinding {
                uri: if rng.chance(20) {
                    format!("file:///data/{}/obj-{:03}*", server_name(s), j / 10)
                } else {
                    resource(s, j)
                },
                provenance: prov(&format!("POL-{p}")),
            });
        }
        if rng.chance(30) {
            let prefix = if platform {
                format!("*/{}", server_name(s))
            } else {
                server_name(s)
            };
            tools.push(ToolBinding {
                tool: format!("{prefix}::delete_*"),
                provenance: prov(&format!("POL-{p}")),
            });
        }
        out.push(Object::Policy(Policy {
            key: ObjKey::new(ns, format!("policy-{p:03}")),
            effect: if rng.chance(90) {
                Effect::Deny
            } else {
                Effect::Allow
            },
            description: None,
            enforcement: Enforcement::Static,
            resources,
            tools,
            exception_namespaces: if platform {
                Some(vec![namespace(0)])
            } else {
                None
            },
        }));
    }
    for a in 0..size.agents {
        let ns = namespace(a % size.namespaces.max(1));
        let name = format!("agent-{a:04}");
        out.push(Object::Agent(Agent {
            key: ObjKey::new(&ns, &name),
            profile: match a % 3 {
                0 => Profile::Strict,
                1 => Profile::Review,
                _ => Profile::Explore,
            },
            description: None,
        }));
        for g in 0..size.grants_per_agent {
            // Servers of the agent's namespace (by construction s % namespaces).
            let nss = size.namespaces.max(1);
            let local = (a % nss) + nss * rng.below(size.servers.div_ceil(nss));
            let s = local.min(size.servers - 1);
            let j = rng.below(size.tools_per_server);
            let selector = match rng.below(10) {
                0..=5 => format!("{}::{}", server_name(s), tool_name(j)),
                6..=8 => format!("{}::read_{:03}*", server_name(s), j / 10),
                _ => format!("{}::write_*", server_name(s)),
            };
            let mut expected = Vec::new();
            if rng.chance(10) {
                expected.push(ExpectedException {
                    policy: format!("policy-{:03}", rng.below(size.policies.max(1))),
                    tool: None,
                    resource: None,
                    reason: "by design".into(),
                    owner: None,
                    expires: None,
                });
            }
            out.push(Object::Grant(Grant {
                key: ObjKey::new(&ns, format!("{name}-g{g:02}")),
                agent: name.clone(),
                tools: vec![selector],
                expected_exceptions: expected,
                provenance: prov("TICKET"),
            }));
        }
    }
    out
}
