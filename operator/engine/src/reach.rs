//! Per-tool reach: which Policies a tool reaches, directly or through the resources it
//! reads and writes. Reach does not depend on the agent, so it is computed once per tool
//! and shared; only the classification (violation or exception) is per agent.

use crate::glob::UriPattern;
use crate::index::{CAccess, CException, CPolicy, CServer, Engine};
use crate::key::ToolId;
use crate::model::*;
use serde::Serialize;

/// One authored READS/WRITES edge of a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessEdge {
    pub mode: Mode,
    pub resource: String,
    pub provenance: Provenance,
}

/// A tool -> Policy path, before the agent's exceptions are considered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyPath {
    pub policy: ObjKey,
    pub effect: Effect,
    /// The data-flow edge, or `None` when the Policy governs the tool directly.
    pub access: Option<AccessEdge>,
    /// The Policy's binding (resource pattern or tool selector) that matched.
    pub binding: String,
    pub policy_provenance: Provenance,
    /// Compiled data-access and Policy resource patterns of a resource path.
    pub(crate) patterns: Option<(UriPattern, UriPattern)>,
}

/// Everything about one tool that is the same for every agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolReach {
    pub id: ToolId,
    /// Some server exposes it now.
    pub exposed: bool,
    pub catalog: Option<CatalogTool>,
    pub access: Vec<AccessEdge>,
    /// Paths to Deny and Allow Policies, in Policy key order.
    pub paths: Vec<PolicyPath>,
}

impl ToolReach {
    pub fn drifted(&self) -> bool {
        !self.exposed
    }

    pub fn unmapped(&self) -> bool {
        self.access.is_empty()
    }

    pub fn deny_paths(&self) -> impl Iterator<Item = &PolicyPath> {
        self.paths.iter().filter(|p| p.effect == Effect::Deny)
    }
}

impl Engine {
    /// Compute the reach of one tool (live or drifted).
    pub fn reach(&self, id: &ToolId) -> ToolReach {
        let server = self.servers.get(&ObjKey::new(&id.namespace, &id.server));
        let catalog = server
            .and_then(|s| s.tools.as_ref())
            .and_then(|t| t.get(&id.name))
            .cloned();
        let access = self.access_of(server, id);
        let mut paths = Vec::new();
        for p in self.policies.values() {
            self.policy_paths(p, id, &access, &mut paths);
        }
        ToolReach {
            id: id.clone(),
            exposed: catalog.is_some(),
            catalog,
            access: access
                .iter()
                .map(|a| AccessEdge {
                    mode: a.mode,
                    resource: a.pattern.as_str().to_string(),
                    provenance: a.provenance.clone(),
                })
                .collect(),
            paths,
        }
    }

    /// The dataAccess entries of `server` that name tool `id`.
    pub(crate) fn access_of<'a>(
        &self,
        server: Option<&'a CServer>,
        id: &ToolId,
    ) -> Vec<&'a CAccess> {
        server
            .into_iter()
            .flat_map(|s| s.access.iter())
            .filter(|a| crate::glob::name_matches(&a.tool, &id.name))
            .collect()
    }

    /// Whether Policy `p` reaches tool `id` at all (directly or through a resource).
    pub(crate) fn policy_reaches(&self, p: &CPolicy, id: &ToolId) -> bool {
        if !self.policy_scope_covers(&p.input.key.namespace, &id.namespace) {
            return false;
        }
        let server = self.servers.get(&ObjKey::new(&id.namespace, &id.server));
        let mut paths = Vec::new();
        self.policy_paths(p, id, &self.access_of(server, id), &mut paths);
        !paths.is_empty()
    }

    /// Paths from tool `id` (with its dataAccess `access`) to Policy `p`.
    fn policy_paths(
        &self,
        p: &CPolicy,
        id: &ToolId,
        access: &[&CAccess],
        out: &mut Vec<PolicyPath>,
    ) {
        if !self.policy_scope_covers(&p.input.key.namespace, &id.namespace) {
            return;
        }
        for (sel, prov) in &p.tools {
            if sel.matches(id, &p.input.key.namespace) {
                out.push(PolicyPath {
                    policy: p.input.key.clone(),
                    effect: p.input.effect,
                    access: None,
                    binding: sel.raw.clone(),
                    policy_provenance: prov.clone(),
                    patterns: None,
                });
            }
        }
        for a in access {
            for (pattern, prov) in &p.resources {
                if a.pattern.overlaps(pattern) {
                    out.push(PolicyPath {
                        policy: p.input.key.clone(),
                        effect: p.input.effect,
                        access: Some(AccessEdge {
                            mode: a.mode,
                            resource: a.pattern.as_str().to_string(),
                            provenance: a.provenance.clone(),
                        }),
                        binding: pattern.as_str().to_string(),
                        policy_provenance: prov.clone(),
                        patterns: Some((a.pattern.clone(), pattern.clone())),
                    });
                }
            }
        }
    }

    /// The live expected exception of `agent`'s Grants that covers `path`, if any.
    pub(crate) fn covering_exception(
        &self,
        agent: &ObjKey,
        tool: &ToolId,
        path: &PolicyPath,
        now: jiff::Timestamp,
    ) -> Option<(&ObjKey, &CException)> {
        let policy = self.policies.get(&path.policy)?;
        self.grant_keys_of(agent).find_map(|gk| {
            let g = self.grants.get(gk)?;
            if !policy.input.allows_exceptions_from(&gk.namespace) {
                return None;
            }
            g.exceptions
                .iter()
                .find(|e| exception_covers(e, &path.policy, tool, &gk.namespace, path, now))
                .map(|e| (gk, e))
        })
    }
}

/// Whether exception `e` (of a Grant in `home`) covers `path` of `tool` at `now`.
pub(crate) fn exception_covers(
    e: &CException,
    policy: &ObjKey,
    tool: &ToolId,
    home: &str,
    path: &PolicyPath,
    now: jiff::Timestamp,
) -> bool {
    if &e.policy != policy || e.expires.is_some_and(|t| t <= now) {
        return false;
    }
    if let Some(sel) = &e.tool
        && !sel.matches(tool, home)
    {
        return false;
    }
    match (&e.resource, &path.patterns) {
        (None, _) => true,
        // An exception naming a resource does not excuse a direct tool binding.
        (Some(_), None) => false,
        // Every URI both the tool touches and the Policy governs must be excused.
        (Some(excused), Some((access, governed))) => {
            excused.includes_intersection(access, governed)
        }
    }
}
