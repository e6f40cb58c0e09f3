//! The engine's index: every object of the four kinds, compiled once when it is applied
//! (selectors parsed, URIs canonicalised, globs compiled), plus the reverse lookups that
//! tell which agents a change can affect. Pure data: no I/O, no clock.

use crate::canonical::fingerprint;
use crate::findings::{Finding, FindingKind, FindingReason};
use crate::glob::UriPattern;
use crate::key::Selector;
use crate::model::*;
use crate::resolve::Resolution;
use crate::uri::canonicalize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Settings that change answers (not tuning knobs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Policies in this namespace govern every namespace.
    pub governance_namespace: String,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            governance_namespace: "mcpgov-system".to_string(),
        }
    }
}

/// Canonicalise and compile a URI or URI glob, with a message fit for a finding.
/// The input limits of [`crate::limits`] apply here, before any work.
pub fn compile_uri(raw: &str) -> Result<UriPattern, String> {
    use crate::limits::{MAX_URI_BYTES, MAX_URI_WILDCARDS, wildcards};
    if raw.len() > MAX_URI_BYTES {
        return Err(format!(
            "URI of {} bytes is longer than the limit of {MAX_URI_BYTES}",
            raw.len()
        ));
    }
    if wildcards(raw) > MAX_URI_WILDCARDS {
        return Err(format!(
            "URI glob has {} wildcards; the limit is {MAX_URI_WILDCARDS}",
            wildcards(raw)
        ));
    }
    let canonical = canonicalize(raw).map_err(|e| format!("URI {raw:?}: {e}"))?;
    UriPattern::new(&canonical).map_err(|e| format!("URI glob {raw:?}: {e}"))
}

pub(crate) struct CAccess {
    pub tool: String,
    pub pattern: UriPattern,
    pub mode: Mode,
    pub provenance: Provenance,
    /// A valid argument binding; an invalid one is a finding and leaves the entry
    /// static (fail closed: its reach is judged as if no call could be checked).
    pub argument: Option<ArgumentRef>,
}

pub(crate) struct CServer {
    pub input: Server,
    /// Digests of the server's governance (dataAccess, sharing) and of its catalog,
    /// computed once here so that every bundle does not re-hash them.
    pub governance_digest: String,
    pub catalog_digest: String,
    /// Exposed tools by name; `None` when the server never crawled.
    pub tools: Option<BTreeMap<String, CatalogTool>>,
    /// The ids of `tools`, in the same (name) order, built once and shared by every
    /// resolution that names them.
    pub ids: Vec<crate::key::ToolId>,
    pub access: Vec<CAccess>,
    /// Indexes into `access` by literal tool name, and those whose tool is a glob:
    /// a tool's entries are found without scanning the whole list.
    pub access_by_tool: HashMap<String, Vec<usize>>,
    pub glob_access: Vec<usize>,
    pub problems: Vec<Finding>,
}

pub(crate) struct CPolicy {
    pub input: Policy,
    pub digest: String,
    pub resources: Vec<(UriPattern, Provenance)>,
    pub tools: Vec<(Selector, Provenance)>,
    pub problems: Vec<Finding>,
}

pub(crate) struct CException {
    pub policy: ObjKey,
    pub tool: Option<Selector>,
    pub resource: Option<UriPattern>,
    pub expires: Option<jiff::Timestamp>,
    pub input: ExpectedException,
}

pub(crate) struct CGrant {
    pub input: Grant,
    pub digest: String,
    pub selectors: Vec<Selector>,
    pub exceptions: Vec<CException>,
    pub problems: Vec<Finding>,
}

fn invalid(kind: Kind, key: &ObjKey, reason: FindingReason, message: String) -> Finding {
    Finding::new(
        FindingKind::Invalid,
        reason,
        ObjectRef::new(kind, key),
        message,
    )
}

fn compile_server(input: Server) -> CServer {
    let mut problems = Vec::new();
    let mut access = Vec::new();
    for da in &input.data_access {
        match compile_uri(&da.resource) {
            Ok(pattern) => {
                let argument = da.argument.as_ref().and_then(|a| {
                    match mcpgov_core::percall::ArgumentBinding::parse(&a.pointer, &a.template) {
                        Ok(_) => Some(a.clone()),
                        Err(m) => {
                            problems.push(invalid(
                                Kind::MCPServer,
                                &input.key,
                                FindingReason::InvalidArgumentBinding,
                                m,
                            ));
                            None
                        }
                    }
                });
                access.push(CAccess {
                    tool: da.tool.clone(),
                    pattern,
                    mode: da.mode,
                    provenance: da.provenance.clone(),
                    argument,
                })
            }
            Err(m) => problems.push(invalid(
                Kind::MCPServer,
                &input.key,
                FindingReason::InvalidUri,
                m,
            )),
        }
    }
    let tools = input.catalog.as_ref().map(|c| {
        let mut by_name = BTreeMap::new();
        for t in &c.tools {
            if by_name.insert(t.name.clone(), t.clone()).is_some() {
                problems.push(invalid(
                    Kind::MCPServer,
                    &input.key,
                    FindingReason::DuplicateTool,
                    format!("catalog lists tool {:?} more than once", t.name),
                ));
            }
        }
        by_name
    });
    let mut access_by_tool: HashMap<String, Vec<usize>> = HashMap::new();
    let mut glob_access = Vec::new();
    for (i, a) in access.iter().enumerate() {
        if crate::glob::has_glob(&a.tool) {
            glob_access.push(i);
        } else {
            access_by_tool.entry(a.tool.clone()).or_default().push(i);
        }
    }
    let ids = tools
        .iter()
        .flat_map(|t| t.keys())
        .map(|name| crate::key::ToolId::new(&input.key.namespace, &input.key.name, name))
        .collect();
    CServer {
        ids,
        access_by_tool,
        glob_access,
        // Approvals are governance; a trusting server's digest is the one it always had.
        governance_digest: if input.contracts.is_default() {
            fingerprint(&(&input.key, &input.data_access, &input.sharing))
        } else {
            fingerprint(&(
                &input.key,
                &input.data_access,
                &input.sharing,
                &input.contracts,
            ))
        },
        catalog_digest: fingerprint(&(&input.key, &input.catalog)),
        input,
        tools,
        access,
        problems,
    }
}

fn compile_policy(input: Policy) -> CPolicy {
    let mut problems = Vec::new();
    let mut resources = Vec::new();
    // Spellings of one URI are one GOVERNED_BY edge (backed when one of them cites
    // evidence), as Toolgraph merges them after canonicalising.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for b in &input.resources {
        match compile_uri(&b.uri) {
            Ok(p) => match seen.get(p.as_str()) {
                None => {
                    seen.insert(p.as_str().to_string(), resources.len());
                    resources.push((p, b.provenance.clone()));
                }
                Some(&i) => {
                    let prov: &mut Provenance = &mut resources[i].1;
                    if prov.is_unbacked() {
                        *prov = b.provenance.clone();
                    }
                }
            },
            Err(m) => problems.push(invalid(
                Kind::Policy,
                &input.key,
                FindingReason::InvalidUri,
                m,
            )),
        }
    }
    let mut tools = Vec::new();
    for b in &input.tools {
        match Selector::parse(&b.tool) {
            Ok(s) => tools.push((s, b.provenance.clone())),
            Err(e) => problems.push(invalid(
                Kind::Policy,
                &input.key,
                FindingReason::InvalidToolKey,
                e.to_string(),
            )),
        }
    }
    CPolicy {
        digest: fingerprint(&input),
        input,
        resources,
        tools,
        problems,
    }
}

/// `name` or `namespace/name`, read from `home`.
pub fn parse_object_ref(raw: &str, home: &str) -> ObjKey {
    match raw.split_once('/') {
        Some((ns, name)) => ObjKey::new(ns, name),
        None => ObjKey::new(home, raw),
    }
}

fn compile_grant(input: Grant) -> CGrant {
    let mut problems = Vec::new();
    let key = input.key.clone();
    let mut selectors = Vec::new();
    for raw in &input.tools {
        match Selector::parse(raw) {
            Ok(s) => selectors.push(s),
            Err(e) => problems.push(invalid(
                Kind::Grant,
                &key,
                FindingReason::InvalidToolKey,
                e.to_string(),
            )),
        }
    }
    let mut exceptions = Vec::new();
    for e in &input.expected_exceptions {
        let tool = match e.tool.as_deref().map(Selector::parse).transpose() {
            Ok(t) => t,
            Err(err) => {
                problems.push(invalid(
                    Kind::Grant,
                    &key,
                    FindingReason::InvalidToolKey,
                    err.to_string(),
                ));
                continue;
            }
        };
        let resource = match e.resource.as_deref().map(compile_uri).transpose() {
            Ok(r) => r,
            Err(m) => {
                problems.push(invalid(Kind::Grant, &key, FindingReason::InvalidUri, m));
                continue;
            }
        };
        let expires = match e.expires.as_deref().map(str::parse::<jiff::Timestamp>) {
            None => None,
            Some(Ok(t)) => Some(t),
            Some(Err(err)) => {
                problems.push(invalid(
                    Kind::Grant,
                    &key,
                    FindingReason::InvalidTimestamp,
                    format!("expires {:?}: {err}", e.expires.as_deref().unwrap_or("")),
                ));
                continue;
            }
        };
        exceptions.push(CException {
            policy: parse_object_ref(&e.policy, &key.namespace),
            tool,
            resource,
            expires,
            input: e.clone(),
        });
    }
    CGrant {
        digest: fingerprint(&input),
        input,
        selectors,
        exceptions,
        problems,
    }
}

/// One Grant's selectors resolved, and the tools they grant (sorted, deduplicated).
pub(crate) struct GrantResolution {
    pub selectors: Vec<Resolution>,
    pub tools: Vec<crate::key::ToolId>,
}

/// Which agents (and other objects) a change can move.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impact {
    /// Agents whose verdicts, status or bundle may differ after the change.
    pub agents: BTreeSet<ObjKey>,
    /// True when every Policy's status may differ (reach counts, orphan flags).
    pub policies: bool,
    /// False when the object was already there, identical: nothing moved.
    pub changed: bool,
}

/// The governance index. Build it from a snapshot, then `apply` / `delete` one object
/// at a time; each returns the agents that change can affect.
pub struct Engine {
    pub(crate) config: EngineConfig,
    pub(crate) servers: BTreeMap<ObjKey, CServer>,
    pub(crate) policies: BTreeMap<ObjKey, CPolicy>,
    pub(crate) agents: BTreeMap<ObjKey, Agent>,
    pub(crate) grants: BTreeMap<ObjKey, CGrant>,
    /// Agent key -> its Grants (an Agent need not exist for its Grants to be indexed).
    pub(crate) grants_by_agent: BTreeMap<ObjKey, BTreeSet<ObjKey>>,
    /// Grant -> what its selectors resolve to now, kept current on apply (only the
    /// Grants a change can move are re-resolved), so that evaluating an agent and
    /// finding the agents a Policy reaches need no resolution.
    pub(crate) resolved: HashMap<ObjKey, GrantResolution>,
    /// The reverse: tool -> the Grants that grant it.
    pub(crate) grants_by_tool: HashMap<crate::key::ToolId, BTreeSet<ObjKey>>,
    /// Policies by the literal URIs they govern, and those that can match otherwise
    /// (a URI glob or a tool selector): a tool's reach looks only at the Policies its
    /// resources can meet instead of comparing with every binding of every Policy.
    pub(crate) policies_by_uri: HashMap<String, BTreeSet<ObjKey>>,
    pub(crate) broad_policies: BTreeSet<ObjKey>,
    /// Server -> tool name -> the Policies whose literal tool bindings (in scope) name
    /// that tool: governance that still remembers a tool after its server stops
    /// exposing it, which bare names resolve to (see `resolve_bare`).
    pub(crate) policy_tool_refs: BTreeMap<ObjKey, BTreeMap<String, BTreeSet<ObjKey>>>,
    /// Each tool's reach, computed on first use and kept across evaluators: it depends
    /// only on the tool's server and the Policies, so a change drops just the entries
    /// it can move (a server's tools; the tools a Policy reaches before or after).
    pub(crate) reach_cache: Mutex<HashMap<crate::key::ToolId, Arc<crate::reach::ToolReach>>>,
    /// Decided pattern comparisons (pure functions of the two patterns: never stale).
    pub(crate) overlap_memo: crate::compare::OverlapMemo,
    pub(crate) cover_memo: crate::compare::CoverMemo,
    generation: u64,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        Engine {
            config,
            servers: BTreeMap::new(),
            policies: BTreeMap::new(),
            agents: BTreeMap::new(),
            grants: BTreeMap::new(),
            grants_by_agent: BTreeMap::new(),
            resolved: HashMap::new(),
            grants_by_tool: HashMap::new(),
            policies_by_uri: HashMap::new(),
            broad_policies: BTreeSet::new(),
            policy_tool_refs: BTreeMap::new(),
            reach_cache: Mutex::new(HashMap::new()),
            overlap_memo: Default::default(),
            cover_memo: Default::default(),
            generation: 0,
        }
    }

    pub fn from_snapshot(config: EngineConfig, objects: impl IntoIterator<Item = Object>) -> Self {
        let mut engine = Engine::new(config);
        // Servers and Policies first: applied after the Grants, each would look for
        // the Grants and agents it moves (an impact nobody reads at build time).
        let mut objects: Vec<Object> = objects.into_iter().collect();
        objects.sort_by_key(Object::kind);
        for o in objects {
            engine.apply(o);
        }
        engine
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Bumped by every apply and delete that changed something.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn agent(&self, key: &ObjKey) -> Option<&Agent> {
        self.agents.get(key)
    }

    pub fn agents(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }

    pub fn server(&self, key: &ObjKey) -> Option<&Server> {
        self.servers.get(key).map(|s| &s.input)
    }

    pub fn servers(&self) -> impl Iterator<Item = &Server> {
        self.servers.values().map(|s| &s.input)
    }

    pub fn policy(&self, key: &ObjKey) -> Option<&Policy> {
        self.policies.get(key).map(|p| &p.input)
    }

    pub fn policies(&self) -> impl Iterator<Item = &Policy> {
        self.policies.values().map(|p| &p.input)
    }

    pub fn grant(&self, key: &ObjKey) -> Option<&Grant> {
        self.grants.get(key).map(|g| &g.input)
    }

    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants.values().map(|g| &g.input)
    }

    /// The earliest instant after `now` at which an expected exception expires: the
    /// operator re-evaluates then, so an expired exception stops excusing on time.
    pub fn next_expiry(&self, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
        self.grants
            .values()
            .flat_map(|g| g.exceptions.iter().filter_map(|e| e.expires))
            .filter(|t| *t > now)
            .min()
    }

    /// Agents with an expected exception that expires in `(after, until]`.
    pub fn expiring(&self, after: jiff::Timestamp, until: jiff::Timestamp) -> BTreeSet<ObjKey> {
        self.grants
            .values()
            .filter(|g| {
                g.exceptions
                    .iter()
                    .filter_map(|e| e.expires)
                    .any(|t| t > after && t <= until)
            })
            .map(|g| ObjKey::new(&g.input.key.namespace, &g.input.agent))
            .collect()
    }

    /// The Grants that name `agent`.
    pub fn grants_of(&self, agent: &ObjKey) -> impl Iterator<Item = &Grant> {
        self.grant_keys_of(agent)
            .filter_map(|k| self.grants.get(k).map(|g| &g.input))
    }

    pub(crate) fn grant_keys_of(&self, agent: &ObjKey) -> impl Iterator<Item = &ObjKey> {
        self.grants_by_agent.get(agent).into_iter().flatten()
    }

    /// All namespaces any object lives in.
    pub fn namespaces(&self) -> BTreeSet<&str> {
        let mut out = BTreeSet::new();
        out.extend(self.servers.keys().map(|k| k.namespace.as_str()));
        out.extend(self.policies.keys().map(|k| k.namespace.as_str()));
        out.extend(self.agents.keys().map(|k| k.namespace.as_str()));
        out.extend(self.grants.keys().map(|k| k.namespace.as_str()));
        out
    }

    /// Namespaces a Policy in `namespace` governs: its own, or all for the governance one.
    pub(crate) fn policy_scope_covers(&self, policy_ns: &str, tool_ns: &str) -> bool {
        policy_ns == tool_ns || policy_ns == self.config.governance_namespace
    }

    /// Agents a change to this object (old or new form) can affect.
    fn impact_of(&self, kind: Kind, key: &ObjKey) -> Impact {
        let mut agents = BTreeSet::new();
        match kind {
            Kind::Agent => {
                agents.insert(key.clone());
            }
            Kind::Grant => {
                if let Some(g) = self.grants.get(key) {
                    agents.insert(ObjKey::new(&key.namespace, &g.input.agent));
                }
            }
            Kind::Policy => agents = self.agents_reaching_policy(key),
            Kind::MCPServer => agents = self.agents_matching_server(key),
        }
        Impact {
            agents,
            policies: kind != Kind::Agent,
            changed: true,
        }
    }

    /// Insert or replace one object. Returns the agents the change can affect (judged
    /// on both the old and the new form), or nothing when the object is unchanged.
    pub fn apply(&mut self, object: Object) -> Impact {
        let kind = object.kind();
        let key = object.key().clone();
        if self.is_unchanged(&object) {
            return Impact::default();
        }
        let mut impact = self.impact_of(kind, &key);
        // Grants whose resolution a server change can move, judged before and after.
        let mut stale_grants = match kind {
            Kind::MCPServer => self.grants_matching_server(&key),
            Kind::Grant => BTreeSet::from([key.clone()]),
            Kind::Policy => self.grants_remembering(&key),
            Kind::Agent => BTreeSet::new(),
        };
        let mut stale_reach = self.stale_reach(kind, &key);
        self.remove(kind, &key);
        match object {
            Object::Server(s) => {
                self.servers.insert(key.clone(), compile_server(s));
            }
            Object::Policy(p) => {
                let compiled = compile_policy(p);
                for (pattern, _) in compiled.resources.iter().filter(|(p, _)| p.is_literal()) {
                    self.policies_by_uri
                        .entry(pattern.as_str().to_string())
                        .or_default()
                        .insert(key.clone());
                }
                if !compiled.tools.is_empty()
                    || compiled.resources.iter().any(|(p, _)| !p.is_literal())
                {
                    self.broad_policies.insert(key.clone());
                }
                for id in self.remembered_by(&compiled) {
                    self.policy_tool_refs
                        .entry(ObjKey::new(&id.namespace, &id.server))
                        .or_default()
                        .entry(id.name.clone())
                        .or_default()
                        .insert(key.clone());
                }
                self.policies.insert(key.clone(), compiled);
            }
            Object::Agent(a) => {
                self.agents.insert(key.clone(), a);
            }
            Object::Grant(g) => {
                let agent = ObjKey::new(&key.namespace, &g.agent);
                self.grants_by_agent
                    .entry(agent)
                    .or_default()
                    .insert(key.clone());
                self.grants.insert(key.clone(), compile_grant(g));
            }
        }
        match kind {
            Kind::MCPServer => stale_grants.extend(self.grants_matching_server(&key)),
            Kind::Policy => stale_grants.extend(self.grants_remembering(&key)),
            Kind::Agent | Kind::Grant => {}
        }
        if kind == Kind::Policy {
            // A Grant whose bare name now finds (or no longer finds) a remembered tool.
            impact.agents.extend(self.agents_of(&stale_grants));
        }
        self.refresh_granted(stale_grants);
        stale_reach.extend(self.stale_reach(kind, &key));
        self.forget_reach(stale_reach);
        let after = self.impact_of(kind, &key);
        impact.agents.extend(after.agents);
        impact.policies |= after.policies;
        self.generation += 1;
        impact
    }

    /// Remove one object. Returns the agents that can be affected.
    pub fn delete(&mut self, kind: Kind, key: &ObjKey) -> Impact {
        let mut impact = self.impact_of(kind, key);
        let stale_grants = match kind {
            Kind::MCPServer => self.grants_matching_server(key),
            Kind::Policy => self.grants_remembering(key),
            Kind::Agent | Kind::Grant => BTreeSet::new(),
        };
        if kind == Kind::Policy {
            impact.agents.extend(self.agents_of(&stale_grants));
        }
        let stale_reach = self.stale_reach(kind, key);
        if self.remove(kind, key) {
            self.refresh_granted(stale_grants);
            self.forget_reach(stale_reach);
            self.generation += 1;
            impact
        } else {
            Impact::default()
        }
    }

    /// Re-resolve these Grants (a missing one is forgotten).
    fn refresh_granted(&mut self, grants: BTreeSet<ObjKey>) {
        for key in grants {
            self.forget_resolution(&key);
            let Some(g) = self.grants.get(&key) else {
                continue;
            };
            let selectors: Vec<Resolution> = g
                .selectors
                .iter()
                .map(|s| self.resolve(s, &key.namespace))
                .collect();
            let mut tools: Vec<_> = selectors
                .iter()
                .flat_map(|r| r.granted_ids().iter().cloned())
                .collect();
            tools.sort();
            tools.dedup();
            for t in &tools {
                self.grants_by_tool
                    .entry(t.clone())
                    .or_default()
                    .insert(key.clone());
            }
            self.resolved
                .insert(key, GrantResolution { selectors, tools });
        }
    }

    /// Cached reaches a change to this object (in its current form) can move.
    fn stale_reach(&self, kind: Kind, key: &ObjKey) -> Vec<crate::key::ToolId> {
        let cache = self.reach_cache.lock().unwrap_or_else(|e| e.into_inner());
        match kind {
            Kind::MCPServer => cache
                .keys()
                .filter(|t| t.namespace == key.namespace && t.server == key.name)
                .cloned()
                .collect(),
            Kind::Policy => match self.policies.get(key) {
                Some(p) => cache
                    .keys()
                    .filter(|t| self.policy_reaches(p, t))
                    .cloned()
                    .collect(),
                None => Vec::new(),
            },
            Kind::Agent | Kind::Grant => Vec::new(),
        }
    }

    fn forget_reach(&mut self, tools: Vec<crate::key::ToolId>) {
        let cache = self
            .reach_cache
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        for t in tools {
            cache.remove(&t);
        }
    }

    /// Drop a Grant's cached resolution and its reverse entries.
    fn forget_resolution(&mut self, grant: &ObjKey) {
        let Some(old) = self.resolved.remove(grant) else {
            return;
        };
        for t in &old.tools {
            if let Some(set) = self.grants_by_tool.get_mut(t) {
                set.remove(grant);
                if set.is_empty() {
                    self.grants_by_tool.remove(t);
                }
            }
        }
    }

    fn is_unchanged(&self, object: &Object) -> bool {
        match object {
            Object::Server(s) => self.servers.get(&s.key).is_some_and(|c| &c.input == s),
            Object::Policy(p) => self.policies.get(&p.key).is_some_and(|c| &c.input == p),
            Object::Agent(a) => self.agents.get(&a.key) == Some(a),
            Object::Grant(g) => self.grants.get(&g.key).is_some_and(|c| &c.input == g),
        }
    }

    fn remove(&mut self, kind: Kind, key: &ObjKey) -> bool {
        match kind {
            Kind::MCPServer => self.servers.remove(key).is_some(),
            Kind::Policy => {
                let Some(p) = self.policies.remove(key) else {
                    return false;
                };
                for (pattern, _) in &p.resources {
                    if let Some(set) = self.policies_by_uri.get_mut(pattern.as_str()) {
                        set.remove(key);
                        if set.is_empty() {
                            self.policies_by_uri.remove(pattern.as_str());
                        }
                    }
                }
                self.broad_policies.remove(key);
                for id in self.remembered_by(&p) {
                    let server = ObjKey::new(&id.namespace, &id.server);
                    if let Some(names) = self.policy_tool_refs.get_mut(&server) {
                        if let Some(set) = names.get_mut(&id.name) {
                            set.remove(key);
                            if set.is_empty() {
                                names.remove(&id.name);
                            }
                        }
                        if names.is_empty() {
                            self.policy_tool_refs.remove(&server);
                        }
                    }
                }
                true
            }
            Kind::Agent => self.agents.remove(key).is_some(),
            Kind::Grant => {
                let Some(g) = self.grants.remove(key) else {
                    return false;
                };
                self.forget_resolution(key);
                let agent = ObjKey::new(&key.namespace, &g.input.agent);
                if let Some(set) = self.grants_by_agent.get_mut(&agent) {
                    set.remove(key);
                    if set.is_empty() {
                        self.grants_by_agent.remove(&agent);
                    }
                }
                true
            }
        }
    }

    /// Compile problems of one object.
    pub fn compile_findings_of(&self, kind: Kind, key: &ObjKey) -> Vec<Finding> {
        let problems = match kind {
            Kind::MCPServer => self.servers.get(key).map(|s| &s.problems),
            Kind::Policy => self.policies.get(key).map(|p| &p.problems),
            Kind::Grant => self.grants.get(key).map(|g| &g.problems),
            Kind::Agent => None,
        };
        problems.cloned().unwrap_or_default()
    }

    /// Problems found while compiling objects (bad URIs, bad keys, bad timestamps).
    pub fn compile_findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        out.extend(
            self.servers
                .values()
                .flat_map(|s| s.problems.iter().cloned()),
        );
        out.extend(
            self.policies
                .values()
                .flat_map(|p| p.problems.iter().cloned()),
        );
        out.extend(
            self.grants
                .values()
                .flat_map(|g| g.problems.iter().cloned()),
        );
        out
    }
}

/// Sizes of the graph by node and edge kind (CAN_CALL needs resolution: see callers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphCounts {
    pub nodes: Vec<(&'static str, usize)>,
    pub edges: Vec<(&'static str, usize)>,
}

impl Engine {
    pub fn graph_counts(&self) -> GraphCounts {
        let tools: usize = self
            .servers
            .values()
            .map(|s| s.tools.as_ref().map_or(0, |t| t.len()))
            .sum();
        let resources: usize = self
            .servers
            .values()
            .map(|s| s.input.catalog.as_ref().map_or(0, |c| c.resources.len()))
            .sum();
        let reads = self
            .servers
            .values()
            .flat_map(|s| s.access.iter())
            .filter(|a| a.mode == Mode::Reads)
            .count();
        let writes: usize = self.servers.values().map(|s| s.access.len()).sum::<usize>() - reads;
        let governed: usize = self
            .policies
            .values()
            .map(|p| p.resources.len() + p.tools.len())
            .sum();
        GraphCounts {
            nodes: vec![
                ("MCPServer", self.servers.len()),
                ("Tool", tools),
                ("Resource", resources),
                ("Policy", self.policies.len()),
                ("Agent", self.agents.len()),
            ],
            edges: vec![
                ("EXPOSES", tools),
                ("PROVIDES", resources),
                ("READS", reads),
                ("WRITES", writes),
                ("GOVERNED_BY", governed),
            ],
        }
    }
}
