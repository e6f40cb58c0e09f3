//! Resolving tool selectors against the servers a namespace may see, under the tenancy
//! rules: a namespace sees its own servers and those that share themselves with it.

use crate::findings::FindingReason;
use crate::glob::{has_glob, name_matches};
use crate::index::{CServer, Engine};
use crate::key::{Selector, ToolId};
use crate::model::ObjKey;
use serde::Serialize;

/// What one selector of a Grant (or one tool argument of a query) resolved to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Resolution {
    /// Live tools the selector names.
    Resolved { tools: Vec<ToolId> },
    /// A literal key whose tool no server exposes now (or whose server never crawled).
    Drifted { tool: ToolId },
    /// Nothing visible matches.
    NotFound,
    /// A bare name exposed by several visible servers; never guessed.
    Ambiguous { candidates: Vec<ToolId> },
    /// The key names a server of another namespace that does not share with this one.
    CrossNamespaceDenied { server: String },
}

impl Resolution {
    /// Reason code used in status: `Resolved`, or the reason of the finding.
    pub fn reason(&self) -> &'static str {
        self.finding_reason()
            .map_or("Resolved", FindingReason::as_str)
    }

    /// The reason of the finding an unresolved reference raises; None when resolved.
    pub fn finding_reason(&self) -> Option<FindingReason> {
        Some(match self {
            Resolution::Resolved { .. } => return None,
            Resolution::Drifted { .. } => FindingReason::Drifted,
            Resolution::NotFound => FindingReason::NotFound,
            Resolution::Ambiguous { .. } => FindingReason::Ambiguous,
            Resolution::CrossNamespaceDenied { .. } => FindingReason::CrossNamespaceDenied,
        })
    }

    /// Tools the selector creates CAN_CALL edges to (live or drifted).
    pub fn granted(&self) -> Vec<ToolId> {
        self.granted_ids().to_vec()
    }

    /// The same, borrowed.
    pub fn granted_ids(&self) -> &[ToolId] {
        match self {
            Resolution::Resolved { tools } => tools,
            Resolution::Drifted { tool } => std::slice::from_ref(tool),
            _ => &[],
        }
    }
}

impl CServer {
    pub(crate) fn visible_from(&self, namespace: &str) -> bool {
        self.input.key.namespace == namespace || self.input.sharing.allows(namespace)
    }

    pub(crate) fn exposes(&self, tool: &str) -> bool {
        self.tools.as_ref().is_some_and(|t| t.contains_key(tool))
    }

    /// The shared id of an exposed tool.
    pub(crate) fn tool_id(&self, name: &str) -> Option<&ToolId> {
        self.ids
            .binary_search_by(|id| id.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.ids[i])
    }

    fn matching_tools<'a>(&'a self, pattern: &'a str) -> impl Iterator<Item = ToolId> + 'a {
        let literal = !has_glob(pattern);
        self.ids
            .iter()
            .filter(move |id| {
                if literal {
                    id.name == pattern
                } else {
                    name_matches(pattern, &id.name)
                }
            })
            .cloned()
    }
}

impl Engine {
    /// Resolve `selector` as read from namespace `home` (a Grant's, or a query agent's).
    pub fn resolve(&self, selector: &Selector, home: &str) -> Resolution {
        let Some(server_pat) = selector.server.as_deref() else {
            return self.resolve_bare(&selector.tool, home);
        };
        let ns_pat = selector.namespace_or(home);
        let candidates: Vec<&CServer> = if has_glob(ns_pat) || has_glob(server_pat) {
            self.servers
                .values()
                .filter(|s| {
                    name_matches(ns_pat, &s.input.key.namespace)
                        && name_matches(server_pat, &s.input.key.name)
                })
                .collect()
        } else {
            // The common case: one named server, found without a scan.
            self.servers
                .get(&ObjKey::new(ns_pat, server_pat))
                .into_iter()
                .collect()
        };
        let visible: Vec<&CServer> = candidates
            .iter()
            .copied()
            .filter(|s| s.visible_from(home))
            .collect();
        if selector.names_other_namespace(home) && visible.is_empty() {
            // Only a literal foreign namespace is reported: a glob must not reveal
            // servers the reader cannot see.
            return Resolution::CrossNamespaceDenied {
                server: format!("{ns_pat}/{server_pat}"),
            };
        }
        if selector.is_literal() {
            if let Some(live) = visible.first().and_then(|s| s.tool_id(&selector.tool)) {
                return Resolution::Resolved {
                    tools: vec![live.clone()],
                };
            }
            if let Some(id) = selector.literal_id(home) {
                return Resolution::Drifted { tool: id };
            }
        }
        let tools: Vec<ToolId> = visible
            .iter()
            .flat_map(|s| s.matching_tools(&selector.tool))
            .collect();
        if tools.is_empty() {
            Resolution::NotFound
        } else {
            Resolution::Resolved { tools }
        }
    }

    /// A bare name resolves among the servers of `home` first, and looks at servers
    /// other namespaces share with `home` only when none of its own matches: another
    /// namespace sharing a namesake must not be able to make a team's Grant ambiguous
    /// (a denial of service the team could not prevent). A literal bare name also
    /// finds a tool that is no longer exposed but that governance still remembers
    /// (see [`Engine::remembers`]), as a drifted tool: a bare name must not lose its
    /// tool, and with it the tool's deny paths, when a crawl stops listing it.
    /// See docs/semantics.md, "Tool keys and resolution".
    fn resolve_bare(&self, pattern: &str, home: &str) -> Resolution {
        // Own servers, and the servers only a Policy of this namespace (or the
        // governance namespace) still names: an MCPServer deleted while a Policy
        // governs its tools is remembered in its own namespace.
        let mut own: Vec<&ObjKey> = self
            .servers
            .range(ObjKey::new(home, "")..)
            .take_while(|(k, _)| k.namespace == home)
            .map(|(k, _)| k)
            .collect();
        own.extend(
            self.policy_tool_refs
                .range(ObjKey::new(home, "")..)
                .take_while(|(k, _)| k.namespace == home)
                .map(|(k, _)| k)
                .filter(|k| !self.servers.contains_key(*k)),
        );
        own.sort();
        let found = self.bare_among(own.into_iter(), pattern);
        if !matches!(found, Resolution::NotFound) {
            return found;
        }
        let shared = self
            .servers
            .iter()
            .filter(|(k, s)| k.namespace != home && s.visible_from(home))
            .map(|(k, _)| k);
        self.bare_among(shared, pattern)
    }

    fn bare_among<'a>(
        &self,
        servers: impl Iterator<Item = &'a ObjKey>,
        pattern: &str,
    ) -> Resolution {
        let literal = !has_glob(pattern);
        let mut tools = Vec::new();
        let mut matched = 0;
        let mut drifted = false;
        for key in servers {
            let before = tools.len();
            let server = self.servers.get(key);
            if let Some(s) = server {
                tools.extend(s.matching_tools(pattern));
            }
            if tools.len() == before && literal && self.remembers(key, pattern) {
                tools.push(ToolId::new(&key.namespace, &key.name, pattern));
                drifted = true;
            }
            if tools.len() > before {
                matched += 1;
            }
        }
        match matched {
            0 => Resolution::NotFound,
            1 if drifted => Resolution::Drifted {
                tool: tools.remove(0),
            },
            1 => Resolution::Resolved { tools },
            _ => Resolution::Ambiguous { candidates: tools },
        }
    }

    /// Whether governance still names tool `name` of server `server` literally: a
    /// dataAccess entry of the server itself, or a literal tool binding of a Policy
    /// that governs the server's namespace. Grants do not count: a Grant states what
    /// its agent may call, not what exists, and a Grant of another namespace must not
    /// change what a bare name means here.
    pub(crate) fn remembers(&self, server: &ObjKey, name: &str) -> bool {
        self.servers
            .get(server)
            .is_some_and(|s| s.access_by_tool.contains_key(name))
            || self
                .policy_tool_refs
                .get(server)
                .is_some_and(|names| names.contains_key(name))
    }

    /// Parse and resolve a tool argument of a query (`server::tool`, `ns/server::tool`
    /// or a bare name) for an agent in `home`. Globs are not tool arguments.
    pub fn resolve_tool_arg(&self, raw: &str, home: &str) -> Resolution {
        match Selector::parse(raw) {
            Ok(s) if !has_glob(raw) => match self.resolve(&s, home) {
                // A query about a tool no server exposes is a miss, unless governance
                // still names it (then it is a known, drifted tool).
                Resolution::Drifted { tool } if !self.is_referenced(&tool) => Resolution::NotFound,
                r => r,
            },
            _ => Resolution::NotFound,
        }
    }

    /// Whether any Grant or literal Policy/dataAccess binding names this tool.
    pub(crate) fn is_referenced(&self, id: &ToolId) -> bool {
        let by_grant = self.grants.values().any(|g| {
            g.selectors
                .iter()
                .any(|s| s.literal_id(&g.input.key.namespace).as_ref() == Some(id))
        });
        let by_policy = self.policies.values().any(|p| {
            p.tools
                .iter()
                .any(|(s, _)| s.literal_id(&p.input.key.namespace).as_ref() == Some(id))
        });
        let by_access = self
            .servers
            .get(&ObjKey::new(&id.namespace, &id.server))
            .is_some_and(|s| s.access.iter().any(|a| a.tool == id.name));
        by_grant || by_policy || by_access
    }
}
