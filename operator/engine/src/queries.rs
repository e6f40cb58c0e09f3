//! The governance and audit questions Toolgraph answers, over the whole index:
//! unsafe tools, blast radius, drift, unmapped tools, orphan policies, unbacked edges,
//! destructive tools with no policy path, annotation contradictions, the audit report.

use crate::glob::has_glob;
use crate::index::{Engine, compile_uri, parse_object_ref};
use crate::key::ToolId;
use crate::model::*;
use crate::reach::AccessEdge;
use crate::resolve::Resolution;
use crate::verdict::{Classification, DenyPath, Evaluator};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UnsafeRow {
    pub tool: String,
    #[serde(flatten)]
    pub path: DenyPath,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImpactedTool {
    pub tool: String,
    /// How the tool touches the target: READS/WRITES edge, or the Policy path.
    pub via: Vec<String>,
    pub agents: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlastRadius {
    pub target: String,
    /// `resource` or `policy`; null when not found.
    pub target_kind: Option<&'static str>,
    pub found: bool,
    pub policies: Vec<String>,
    pub impacted: Vec<ImpactedTool>,
    pub agents: Vec<String>,
}

crate::wire_enum! {
    /// Which kind of governance names a drifted tool: the `source` of a drift row and
    /// the `kind` label of the drift metric.
    pub enum DriftSource {
        Grant = "Grant",
        Policy = "Policy",
        /// An MCPServer's dataAccess.
        DataAccess = "DataAccess",
    }
}

impl DriftSource {
    /// The kind of object the governance is written in.
    pub fn kind(self) -> Kind {
        match self {
            DriftSource::Grant => Kind::Grant,
            DriftSource::Policy => Kind::Policy,
            DriftSource::DataAccess => Kind::MCPServer,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DriftRow {
    pub source: DriftSource,
    pub object: ObjectRef,
    pub tool: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnmappedRow {
    pub tool: String,
    pub agents: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanRow {
    pub policy: String,
    pub effect: Effect,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnbackedRow {
    pub edge: &'static str,
    pub from: String,
    pub to: String,
    pub object: ObjectRef,
    pub source: Source,
    pub confidence: Confidence,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DestructiveRow {
    pub tool: String,
    pub annotations: Annotations,
    /// Hints are the server's own claims.
    pub hint_provenance: Provenance,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContradictionRow {
    pub tool: String,
    pub resource: String,
    pub hint: &'static str,
    pub hint_provenance: Provenance,
    pub edge_provenance: Provenance,
}

/// Provenance of a tool annotation: crawled, one tier below protocol facts.
pub fn hint_provenance() -> Provenance {
    Provenance {
        source: Source::Crawled,
        confidence: Confidence::Medium,
        evidence: None,
    }
}

impl BlastRadius {
    fn not_found(target: &str) -> Self {
        BlastRadius {
            target: target.to_string(),
            target_kind: None,
            found: false,
            policies: Vec::new(),
            impacted: Vec::new(),
            agents: Vec::new(),
        }
    }
}

impl Engine {
    /// Every tool the graph knows: exposed ones, and those governance names literally.
    pub fn known_tools(&self) -> BTreeSet<ToolId> {
        let mut out = BTreeSet::new();
        for s in self.servers.values() {
            for name in s.tools.iter().flat_map(|t| t.keys()) {
                out.insert(ToolId::new(&s.input.key.namespace, &s.input.key.name, name));
            }
            for a in s.access.iter().filter(|a| !has_glob(&a.tool)) {
                out.insert(ToolId::new(
                    &s.input.key.namespace,
                    &s.input.key.name,
                    &a.tool,
                ));
            }
        }
        for g in self.grants.values() {
            for sel in &g.selectors {
                if let Resolution::Drifted { tool } = self.resolve(sel, &g.input.key.namespace) {
                    out.insert(tool);
                }
            }
        }
        for p in self.policies.values() {
            for (sel, _) in &p.tools {
                if let Some(id) = sel.literal_id(&p.input.key.namespace)
                    && self.policy_scope_covers(&p.input.key.namespace, &id.namespace)
                {
                    out.insert(id);
                }
            }
        }
        out
    }
}

impl Evaluator<'_> {
    /// Granted tools of every agent: tool -> agents.
    pub fn callers(&self) -> BTreeMap<ToolId, BTreeSet<ObjKey>> {
        let mut out: BTreeMap<ToolId, BTreeSet<ObjKey>> = BTreeMap::new();
        for agent in self.engine.grants_by_agent.keys() {
            if self.engine.agent(agent).is_none() {
                continue;
            }
            for id in self.granted_tools(agent).into_keys() {
                out.entry(id).or_default().insert(agent.clone());
            }
        }
        out
    }

    /// unsafe-tools: deny paths the agent reaches; violations only unless `all`.
    /// `None` when the agent does not exist.
    pub fn unsafe_tools(&self, agent: &ObjKey, all: bool) -> Option<Vec<UnsafeRow>> {
        let eval = self.evaluate_agent(agent, None)?;
        Some(
            eval.tools
                .into_iter()
                .flat_map(|t| {
                    let tool = t.id.to_string();
                    t.deny_paths.into_iter().map(move |p| UnsafeRow {
                        tool: tool.clone(),
                        path: p,
                    })
                })
                .filter(|r| all || r.path.classification == Classification::Violation)
                .collect(),
        )
    }

    /// blast-radius of a Policy (`name` or `ns/name`) or a resource URI / URI glob.
    pub fn blast_radius(&self, target: &str, home: &str) -> BlastRadius {
        let callers = self.callers();
        let policy_key = parse_object_ref(target, home);
        let mut impacted = Vec::new();
        let mut policies = BTreeSet::new();
        // Kubernetes names never hold ':' and URIs always do.
        let (kind, found) = if !target.contains(':') {
            if self.engine.policy(&policy_key).is_none() {
                return BlastRadius::not_found(target);
            }
            policies.insert(policy_key.to_string());
            for id in self.engine.known_tools() {
                let reach = self.reach(&id);
                let via: Vec<String> = reach
                    .paths
                    .iter()
                    .filter(|p| p.policy == policy_key)
                    .map(|p| match &p.access {
                        Some(AccessEdge { mode, resource, .. }) => {
                            format!("{} {resource}", mode.edge())
                        }
                        None => format!("GOVERNED_BY {}", p.binding),
                    })
                    .collect();
                if !via.is_empty() {
                    impacted.push((id, via));
                }
            }
            (Some("policy"), true)
        } else if let Ok(pattern) = compile_uri(target) {
            let mut found = false;
            for p in self.engine.policies.values() {
                if p.resources
                    .iter()
                    .any(|(r, _)| crate::compare::overlaps_or_assume(r, &pattern))
                {
                    policies.insert(p.input.key.to_string());
                    found = true;
                }
            }
            found |= self.engine.servers.values().any(|s| {
                s.input
                    .catalog
                    .iter()
                    .flat_map(|c| c.resources.iter())
                    .any(|r| {
                        compile_uri(&r.uri)
                            .is_ok_and(|u| crate::compare::overlaps_or_assume(&u, &pattern))
                    })
            });
            for id in self.engine.known_tools() {
                let reach = self.reach(&id);
                let via: Vec<String> = reach
                    .access
                    .iter()
                    .filter(|a| {
                        compile_uri(&a.resource)
                            .is_ok_and(|u| crate::compare::overlaps_or_assume(&u, &pattern))
                    })
                    .map(|a| format!("{} {}", a.mode.edge(), a.resource))
                    .collect();
                if !via.is_empty() {
                    impacted.push((id, via));
                }
            }
            found |= !impacted.is_empty();
            (found.then_some("resource"), found)
        } else {
            (None, false)
        };
        let mut all_agents = BTreeSet::new();
        let impacted = impacted
            .into_iter()
            .map(|(id, via)| {
                let agents: Vec<String> = callers
                    .get(&id)
                    .into_iter()
                    .flatten()
                    .map(ToString::to_string)
                    .collect();
                all_agents.extend(agents.iter().cloned());
                ImpactedTool {
                    tool: id.to_string(),
                    via,
                    agents,
                }
            })
            .collect();
        BlastRadius {
            target: target.to_string(),
            target_kind: kind,
            found,
            policies: policies.into_iter().collect(),
            impacted,
            agents: all_agents.into_iter().collect(),
        }
    }

    /// drift: governance that names a tool no server exposes now.
    pub fn drift(&self) -> Vec<DriftRow> {
        let e = self.engine;
        let mut out = BTreeSet::new();
        for g in e.grants.values() {
            for sel in &g.selectors {
                if let Resolution::Drifted { tool } = e.resolve(sel, &g.input.key.namespace) {
                    out.insert(drift_row(DriftSource::Grant, &g.input.key, &tool, e));
                }
            }
        }
        for p in e.policies.values() {
            for (sel, _) in &p.tools {
                if let Some(id) = sel.literal_id(&p.input.key.namespace)
                    && !self.reach(&id).exposed
                {
                    out.insert(drift_row(DriftSource::Policy, &p.input.key, &id, e));
                }
            }
        }
        for s in e.servers.values() {
            for a in s.access.iter().filter(|a| !has_glob(&a.tool)) {
                if !s.exposes(&a.tool) {
                    let id = ToolId::new(&s.input.key.namespace, &s.input.key.name, &a.tool);
                    out.insert(drift_row(DriftSource::DataAccess, &s.input.key, &id, e));
                }
            }
        }
        out.into_iter().collect()
    }

    /// unmapped-tools: granted tools with no READS/WRITES authored.
    pub fn unmapped_tools(&self) -> Vec<UnmappedRow> {
        self.callers()
            .into_iter()
            .filter(|(id, _)| self.reach(id).unmapped())
            .map(|(id, agents)| UnmappedRow {
                tool: id.to_string(),
                agents: agents.iter().map(ToString::to_string).collect(),
            })
            .collect()
    }

    /// Policies some agent reaches through a granted tool (Deny or Allow).
    pub fn reached_policies(&self) -> BTreeMap<ObjKey, BTreeSet<ObjKey>> {
        let mut out: BTreeMap<ObjKey, BTreeSet<ObjKey>> = BTreeMap::new();
        for (id, agents) in self.callers() {
            for p in &self.reach(&id).paths {
                out.entry(p.policy.clone())
                    .or_default()
                    .extend(agents.iter().cloned());
            }
        }
        out
    }

    /// orphan-policies: Policies no agent currently reaches.
    pub fn orphan_policies(&self) -> Vec<OrphanRow> {
        let reached = self.reached_policies();
        self.engine
            .policies()
            .filter(|p| !reached.contains_key(&p.key))
            .map(|p| OrphanRow {
                policy: p.key.to_string(),
                effect: p.effect,
            })
            .collect()
    }

    /// unbacked-edges: READS/WRITES/GOVERNED_BY (and CAN_CALL) edges with no evidence.
    /// One row per edge, as Toolgraph has one edge per pair of nodes: several authored
    /// bindings of one edge (`fs::purge` and `purge` in one Policy, two spellings of a
    /// URI, two Grants of one tool) are one edge, backed when any of them cites
    /// evidence; the row names the first authored object.
    pub fn unbacked_edges(&self, include_grants: bool) -> Vec<UnbackedRow> {
        let e = self.engine;
        // (edge, from, to) -> (backed, the first object and provenance)
        type Edges = BTreeMap<(&'static str, String, String), (bool, ObjectRef, Provenance)>;
        let mut edges: Edges = BTreeMap::new();
        let mut add = |edge, from: String, to: String, object: ObjectRef, p: &Provenance| {
            let entry = edges
                .entry((edge, from, to))
                .or_insert_with(|| (false, object, p.clone()));
            entry.0 |= !p.is_unbacked();
        };
        for s in e.servers.values() {
            let key = &s.input.key;
            for a in &s.access {
                add(
                    a.mode.edge(),
                    format!("{}/{}::{}", key.namespace, key.name, a.tool),
                    a.pattern.as_str().to_string(),
                    ObjectRef::new(Kind::MCPServer, key),
                    &a.provenance,
                );
            }
        }
        // Tools a bare binding governs: every known tool of that name in scope.
        let mut known: Option<BTreeSet<ToolId>> = None;
        for p in e.policies.values() {
            let key = &p.input.key;
            let object = ObjectRef::new(Kind::Policy, key);
            for (pattern, prov) in &p.resources {
                add(
                    "GOVERNED_BY",
                    pattern.as_str().to_string(),
                    key.to_string(),
                    object.clone(),
                    prov,
                );
            }
            for (sel, prov) in &p.tools {
                let home = &key.namespace;
                let mut tools: Vec<String> = Vec::new();
                if let Some(id) = sel.literal_id(home) {
                    tools.push(id.to_string());
                } else if sel.is_bare() && !has_glob(&sel.tool) {
                    let known = known.get_or_insert_with(|| e.known_tools());
                    tools.extend(
                        known
                            .iter()
                            .filter(|id| id.name == sel.tool)
                            .filter(|id| e.policy_scope_covers(home, &id.namespace))
                            .map(ToString::to_string),
                    );
                }
                if tools.is_empty() {
                    // A glob, or a bare name no known tool has: the binding itself.
                    tools.push(sel.raw.clone());
                }
                for from in tools {
                    add("GOVERNED_BY", from, key.to_string(), object.clone(), prov);
                }
            }
        }
        if include_grants {
            for agent in e.grants_by_agent.keys() {
                for (id, by) in self.granted_tools(agent) {
                    for g in &by {
                        add(
                            "CAN_CALL",
                            agent.to_string(),
                            id.to_string(),
                            ObjectRef::new(Kind::Grant, &g.grant),
                            &g.provenance,
                        );
                    }
                }
            }
        }
        edges
            .into_iter()
            .filter(|(_, (backed, _, _))| !backed)
            .map(|((edge, from, to), (_, object, p))| UnbackedRow {
                edge,
                from,
                to,
                object,
                source: p.source,
                confidence: p.confidence,
            })
            .collect()
    }

    /// destructive-unsafeguarded: destructive-hinted tools with no policy path at all.
    pub fn destructive_unsafeguarded(&self) -> Vec<DestructiveRow> {
        let mut out = Vec::new();
        for id in self.engine.known_tools() {
            let reach = self.reach(&id);
            let Some(tool) = &reach.catalog else { continue };
            if tool.annotations.destructive_hint == Some(true) && reach.paths.is_empty() {
                out.push(DestructiveRow {
                    tool: id.to_string(),
                    annotations: tool.annotations.clone(),
                    hint_provenance: hint_provenance(),
                });
            }
        }
        out
    }

    /// annotation-contradictions: authored WRITES on a tool that claims readOnlyHint.
    pub fn annotation_contradictions(&self) -> Vec<ContradictionRow> {
        let mut out = Vec::new();
        for id in self.engine.known_tools() {
            let reach = self.reach(&id);
            let Some(tool) = &reach.catalog else { continue };
            if tool.annotations.read_only_hint != Some(true) {
                continue;
            }
            for a in reach.access.iter().filter(|a| a.mode == Mode::Writes) {
                out.push(ContradictionRow {
                    tool: id.to_string(),
                    resource: a.resource.clone(),
                    hint: "readOnlyHint",
                    hint_provenance: hint_provenance(),
                    edge_provenance: a.provenance.clone(),
                });
            }
        }
        out
    }
}

fn drift_row(source: DriftSource, object: &ObjKey, tool: &ToolId, e: &Engine) -> DriftRow {
    let server = e.servers.get(&ObjKey::new(&tool.namespace, &tool.server));
    let message = match server {
        None => format!("no MCPServer {} exists", tool.server_key()),
        Some(s) if s.tools.is_none() => {
            format!("MCPServer {} has not been crawled yet", tool.server_key())
        }
        Some(_) => format!(
            "MCPServer {} does not expose {}",
            tool.server_key(),
            tool.name
        ),
    };
    DriftRow {
        source,
        object: ObjectRef::new(source.kind(), object),
        tool: tool.to_string(),
        message,
    }
}

#[cfg(test)]
mod drift_source_tests {
    use super::*;

    #[test]
    fn drift_sources_keep_their_names_order_and_kinds() {
        let names: Vec<&str> = DriftSource::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["Grant", "Policy", "DataAccess"]);
        for s in DriftSource::ALL {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, serde_json::json!(s.as_str()));
            assert_eq!(serde_json::from_value::<DriftSource>(json).unwrap(), *s);
        }
        let mut sorted = DriftSource::ALL.to_vec();
        sorted.sort();
        assert_eq!(
            sorted,
            [
                DriftSource::DataAccess,
                DriftSource::Grant,
                DriftSource::Policy
            ]
        );
        let kinds: Vec<Kind> = DriftSource::ALL.iter().map(|s| s.kind()).collect();
        assert_eq!(kinds, [Kind::Grant, Kind::Policy, Kind::MCPServer]);
    }
}
