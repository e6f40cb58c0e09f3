//! Per-tool reach: which Policies a tool reaches, directly or through the resources it
//! reads and writes. Reach does not depend on the agent, so it is computed once per tool
//! and shared; only the classification (violation or exception) is per agent.

use crate::glob::{Budget, OverBudget, UriPattern};
use crate::index::{CAccess, CException, CPolicy, CServer, Engine};
use crate::key::ToolId;
use crate::limits::{COVERAGE_STEPS, REACH_STEPS};
use crate::model::*;
use crate::verdict::node;
use serde::Serialize;
use std::collections::BTreeSet;

/// One authored READS/WRITES edge of a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessEdge {
    pub mode: Mode,
    pub resource: String,
    pub provenance: Provenance,
    /// The argument bindings of the entries merged into this edge, when every one of
    /// them is bound (an unbound claim of the same resource makes the edge static).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ArgumentRef>,
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
    /// `ns/name` of the Policy, and the evidence path from the tool node on: the same
    /// for every agent, so built once here.
    pub(crate) policy_name: String,
    pub(crate) tail: Vec<String>,
    /// The overlap of the two patterns could not be decided within the work budget:
    /// the path is kept (fail closed) and reported as such.
    pub undecided: bool,
    /// The Policy asks for per-call enforcement and the path runs through an
    /// argument-bound edge: a gateway can decide each call, so it is no static violation.
    pub per_call: bool,
}

/// The evidence path of a tool -> Policy path, from the tool node on.
fn path_tail(id: &ToolId, access: Option<&AccessEdge>, policy: &ObjKey) -> Vec<String> {
    let mut tail = vec![node("tool", id)];
    if let Some(a) = access {
        tail.push(a.mode.edge().into());
        tail.push(node("resource", &a.resource));
    }
    tail.push("GOVERNED_BY".into());
    tail.push(node("policy", policy));
    tail
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
    /// Under a pinned server, why the crawled contract may not be used (`None`: it may,
    /// or the server trusts what it crawls).
    pub contract: Option<ContractState>,
    /// The contract digest a gateway must see live: the approved one under pinning.
    pub expected_digest: Option<String>,
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
    /// The reach of one tool, from the engine's cache (computed on a miss).
    pub(crate) fn cached_reach(&self, id: &ToolId) -> std::sync::Arc<ToolReach> {
        let mut cache = self.reach_cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(id.clone())
            .or_insert_with(|| std::sync::Arc::new(self.reach(id)))
            .clone()
    }

    /// Compute the reach of one tool (live or drifted).
    pub fn reach(&self, id: &ToolId) -> ToolReach {
        let server = self.servers.get(&ObjKey::new(&id.namespace, &id.server));
        let catalog = server
            .and_then(|s| s.tools.as_ref())
            .and_then(|t| t.get(&id.name))
            .cloned();
        let access = self.access_of(server, id);
        let pins = server.map(|s| &s.input.contracts);
        let crawled = catalog.as_ref().and_then(|c| c.contract_digest.as_deref());
        // A tool no server exposes has no contract to judge: it is Drifted.
        let contract = pins
            .filter(|_| catalog.is_some())
            .and_then(|p| p.check(&id.name, crawled));
        let expected_digest = match pins {
            Some(p) => p.expected(&id.name, crawled).map(str::to_string),
            None => crawled.map(str::to_string),
        };
        let edges: Vec<AccessEdge> = access
            .iter()
            .map(|a| AccessEdge {
                mode: a.mode,
                resource: a.pattern.as_str().to_string(),
                provenance: a.provenance.clone(),
                arguments: bindings_of(server, id, a),
            })
            .collect();
        let mut paths = Vec::new();
        // One budget for all of this tool's comparisons, spent in Policy key order.
        let mut budget = Budget::new(REACH_STEPS);
        for p in self.candidate_policies(id, &access) {
            self.policy_paths(p, id, &access, &edges, &mut paths, &mut budget);
        }
        ToolReach {
            id: id.clone(),
            exposed: catalog.is_some(),
            catalog,
            access: edges,
            paths,
            contract,
            expected_digest,
        }
    }

    /// The Policies that can reach a tool with these dataAccess entries, in key order:
    /// those governing one of its literal URIs, and those with a glob or a tool
    /// selector (all of them in scope when the tool's own access is a glob).
    fn candidate_policies<'a>(&'a self, id: &'a ToolId, access: &[&CAccess]) -> Vec<&'a CPolicy> {
        if access.iter().any(|a| !a.pattern.is_literal()) {
            return self.policies_governing(&id.namespace).collect();
        }
        let mut keys: BTreeSet<&ObjKey> = self.broad_policies.iter().collect();
        for a in access {
            keys.extend(
                self.policies_by_uri
                    .get(a.pattern.as_str())
                    .into_iter()
                    .flatten(),
            );
        }
        keys.into_iter()
            .filter(|k| self.policy_scope_covers(&k.namespace, &id.namespace))
            .filter_map(|k| self.policies.get(k))
            .collect()
    }

    /// Policies that can govern a tool of namespace `ns` (its own and the governance
    /// namespace's), in key order, without visiting the others.
    pub(crate) fn policies_governing<'a>(
        &'a self,
        ns: &'a str,
    ) -> impl Iterator<Item = &'a CPolicy> {
        let gov = self.config.governance_namespace.as_str();
        let mut spaces = vec![ns];
        if ns != gov {
            spaces.push(gov);
        }
        spaces.sort_unstable();
        spaces.into_iter().flat_map(move |ns| {
            self.policies
                .range(ObjKey::new(ns, "")..)
                .take_while(move |(k, _)| k.namespace == ns)
                .map(|(_, p)| p)
        })
    }

    /// The dataAccess entries of `server` that name tool `id`.
    pub(crate) fn access_of<'a>(
        &self,
        server: Option<&'a CServer>,
        id: &ToolId,
    ) -> Vec<&'a CAccess> {
        let Some(s) = server else {
            return Vec::new();
        };
        let literal = s
            .access_by_tool
            .get(&id.name)
            .map_or(&[][..], Vec::as_slice);
        let mut idx: Vec<usize> = literal.to_vec();
        idx.extend(
            s.glob_access
                .iter()
                .copied()
                .filter(|&i| crate::glob::name_matches(&s.access[i].tool, &id.name)),
        );
        // Authored order, as a scan would give; one READS/WRITES edge per resource
        // pattern and mode, however many entries name it (backed when one cites
        // evidence), as Toolgraph merges them.
        idx.sort_unstable();
        let mut out: Vec<&'a CAccess> = Vec::with_capacity(idx.len());
        if idx.len() < 2 {
            out.extend(idx.into_iter().map(|i| &s.access[i]));
            return out;
        }
        let mut seen: std::collections::HashMap<(Mode, &str), usize> =
            std::collections::HashMap::with_capacity(idx.len());
        for a in idx.into_iter().map(|i| &s.access[i]) {
            match seen.get(&(a.mode, a.pattern.as_str())) {
                None => {
                    seen.insert((a.mode, a.pattern.as_str()), out.len());
                    out.push(a);
                }
                Some(&i) if out[i].provenance.is_unbacked() && !a.provenance.is_unbacked() => {
                    out[i] = a;
                }
                Some(_) => {}
            }
        }
        out
    }

    /// Whether Policy `p` reaches tool `id` at all (directly or through a resource):
    /// `policy_paths` without building the paths. The incremental property test holds
    /// the two together (impact comes from this, verdicts from the paths).
    pub(crate) fn policy_reaches(&self, p: &CPolicy, id: &ToolId) -> bool {
        if !self.policy_scope_covers(&p.input.key.namespace, &id.namespace) {
            return false;
        }
        if p.tools
            .iter()
            .any(|(sel, _)| sel.matches(id, &p.input.key.namespace))
        {
            return true;
        }
        // Undecided counts as reaching, as in `policy_paths`: impact may only grow.
        let server = self.servers.get(&ObjKey::new(&id.namespace, &id.server));
        let mut budget = Budget::new(REACH_STEPS);
        self.access_of(server, id).iter().any(|a| {
            p.resources.iter().any(|(r, _)| {
                self.overlap_memo
                    .overlaps(&a.pattern, r, &mut budget)
                    .unwrap_or(true)
            })
        })
    }

    /// Paths from tool `id` (with its dataAccess `access`) to Policy `p`.
    fn policy_paths(
        &self,
        p: &CPolicy,
        id: &ToolId,
        access: &[&CAccess],
        edges: &[AccessEdge],
        out: &mut Vec<PolicyPath>,
        budget: &mut Budget,
    ) {
        let per_call_policy = p.input.enforcement == Enforcement::PerCall;
        if !self.policy_scope_covers(&p.input.key.namespace, &id.namespace) {
            return;
        }
        // One GOVERNED_BY edge from the tool to the Policy, however many bindings name
        // it (`fs::purge` and `purge`): Toolgraph merges them into one edge. It shows
        // the first binding that cites evidence (the edge is backed when one does).
        let matching = p
            .tools
            .iter()
            .filter(|(sel, _)| sel.matches(id, &p.input.key.namespace));
        if let Some((sel, prov)) = preferred(matching) {
            out.push(PolicyPath {
                policy: p.input.key.clone(),
                effect: p.input.effect,
                access: None,
                binding: sel.raw.clone(),
                policy_provenance: prov.clone(),
                patterns: None,
                policy_name: p.input.key.to_string(),
                tail: path_tail(id, None, &p.input.key),
                undecided: false,
                per_call: false,
            });
        }
        for (a, edge) in access.iter().zip(edges) {
            for (pattern, prov) in &p.resources {
                // Fail closed: a comparison over budget counts as reaching the Policy.
                let undecided = match self.overlap_memo.overlaps(&a.pattern, pattern, budget) {
                    Ok(false) => continue,
                    Ok(true) => false,
                    Err(OverBudget) => true,
                };
                {
                    out.push(PolicyPath {
                        policy: p.input.key.clone(),
                        effect: p.input.effect,
                        tail: path_tail(id, Some(edge), &p.input.key),
                        per_call: per_call_policy && !edge.arguments.is_empty(),
                        access: Some(edge.clone()),
                        binding: pattern.as_str().to_string(),
                        policy_provenance: prov.clone(),
                        patterns: Some((a.pattern.clone(), pattern.clone())),
                        policy_name: p.input.key.to_string(),
                        undecided,
                    });
                }
            }
        }
    }

    /// The expected exceptions of `agent`'s Grants still live at `now`, with their
    /// Grant, in Grant order: looked up once per agent, not once per path.
    pub(crate) fn live_exceptions(
        &self,
        agent: &ObjKey,
        now: jiff::Timestamp,
    ) -> Vec<(&ObjKey, &CException)> {
        self.grant_keys_of(agent)
            .filter_map(|gk| self.grants.get(gk).map(|g| (gk, g)))
            .flat_map(|(gk, g)| g.exceptions.iter().map(move |e| (gk, e)))
            .filter(|(_, e)| e.expires.is_none_or(|t| t > now))
            .collect()
    }

    /// The most specific of `exceptions` (see `live_exceptions`) that covers `path`,
    /// if any, deciding within `budget` (the agent's): one naming a resource before
    /// one that does not, then one naming a tool, then authored order (Toolgraph shows
    /// the reason of the exception with a resource). `Err` when none was shown to
    /// cover it and at least one could not be decided: the path stays a violation.
    pub(crate) fn covering_exception<'a>(
        &self,
        exceptions: &[(&'a ObjKey, &'a CException)],
        tool: &ToolId,
        path: &PolicyPath,
        now: jiff::Timestamp,
        budget: &mut Budget,
        paid: &mut crate::compare::Paid,
    ) -> Result<Option<(&'a ObjKey, &'a CException)>, OverBudget> {
        if exceptions.is_empty() {
            return Ok(None);
        }
        let Some(policy) = self.policies.get(&path.policy) else {
            return Ok(None);
        };
        let specificity =
            |e: &CException| 2 * u8::from(e.resource.is_some()) + u8::from(e.tool.is_some());
        let mut best: Option<(&'a ObjKey, &'a CException)> = None;
        let mut undecided = false;
        for &(gk, e) in exceptions {
            if best.is_some_and(|(_, b)| specificity(b) >= specificity(e))
                || !policy.input.allows_exceptions_from(&gk.namespace)
            {
                continue;
            }
            match self.exception_covers(
                e,
                &path.policy,
                tool,
                &gk.namespace,
                path,
                now,
                budget,
                paid,
            ) {
                Ok(true) => best = Some((gk, e)),
                Ok(false) => {}
                Err(OverBudget) => undecided = true,
            }
        }
        match best {
            Some(b) => Ok(Some(b)),
            None if undecided => Err(OverBudget),
            None => Ok(None),
        }
    }

    /// Whether exception `e` (of a Grant in `home`) covers `path` of `tool` at `now`.
    /// `Err` when the resource inclusion could not be decided within `budget`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exception_covers(
        &self,
        e: &CException,
        policy: &ObjKey,
        tool: &ToolId,
        home: &str,
        path: &PolicyPath,
        now: jiff::Timestamp,
        budget: &mut Budget,
        paid: &mut crate::compare::Paid,
    ) -> Result<bool, OverBudget> {
        if &e.policy != policy || e.expires.is_some_and(|t| t <= now) {
            return Ok(false);
        }
        if let Some(sel) = &e.tool
            && !sel.matches(tool, home)
        {
            return Ok(false);
        }
        match (&e.resource, &path.patterns) {
            (None, _) => Ok(true),
            // An exception naming a resource does not excuse a direct tool binding.
            (Some(_), None) => Ok(false),
            // Every URI both the tool touches and the Policy governs must be excused.
            (Some(excused), Some((access, governed))) => self
                .cover_memo
                .covers(excused, access, governed, budget, paid),
        }
    }
}

/// The argument bindings of every dataAccess entry of `server` that names tool `id`
/// with `a`'s resource and mode (they merge into one edge), sorted; empty unless every
/// one of them is bound. Static entries cost nothing here.
fn bindings_of(server: Option<&CServer>, id: &ToolId, a: &CAccess) -> Vec<ArgumentRef> {
    let (Some(s), Some(_)) = (server, &a.argument) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in s.access.iter().filter(|e| {
        e.mode == a.mode
            && e.pattern == a.pattern
            && (e.tool == id.name
                || (crate::glob::has_glob(&e.tool) && crate::glob::name_matches(&e.tool, &id.name)))
    }) {
        match &e.argument {
            Some(b) => out.push(b.clone()),
            None => return Vec::new(),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Of several bindings that make one edge, the first that cites evidence, else the
/// first: the edge is backed when any of its bindings is.
pub(crate) fn preferred<'a, T>(
    bindings: impl Iterator<Item = &'a (T, Provenance)>,
) -> Option<&'a (T, Provenance)>
where
    T: 'a,
{
    let mut first = None;
    for b in bindings {
        if !b.1.is_unbacked() {
            return Some(b);
        }
        first.get_or_insert(b);
    }
    first
}

/// A fresh budget for the exception coverage of one agent (or one Grant's findings).
pub(crate) fn coverage_budget() -> Budget {
    Budget::new(COVERAGE_STEPS)
}
