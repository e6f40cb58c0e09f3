//! Which agents a change can move. Narrow on purpose: a Policy moves only the agents
//! whose granted tools it reaches (before or after the change), a server only the
//! agents with a Grant selector that can name its tools. The bundle's digests cover
//! exactly these inputs, and a property test checks that no agent outside the reported
//! impact changes.

use crate::glob::{has_glob, name_matches};
use crate::index::{CPolicy, Engine};
use crate::key::{Selector, ToolId};
use crate::model::ObjKey;
use std::collections::BTreeSet;

impl Engine {
    /// Whether `sel`, read from a Grant in `home`, can name a tool of server `key`
    /// (a server not in the index counts as a possible match: it may be appearing).
    pub(crate) fn selector_could_match(&self, sel: &Selector, home: &str, key: &ObjKey) -> bool {
        let visible = self.servers.get(key).is_none_or(|s| s.visible_from(home));
        match &sel.server {
            None => visible,
            Some(server) => {
                visible
                    && name_matches(sel.namespace_or(home), &key.namespace)
                    && name_matches(server, &key.name)
            }
        }
    }

    /// Grants with a selector that can name a tool of server `key`.
    pub(crate) fn grants_matching_server(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        self.grants
            .values()
            .filter(|g| {
                let home = &g.input.key.namespace;
                g.selectors
                    .iter()
                    .any(|s| self.selector_could_match(s, home, key))
            })
            .map(|g| g.input.key.clone())
            .collect()
    }

    /// Agents with a Grant selector that can name a tool of server `key`.
    pub(crate) fn agents_matching_server(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        self.grants_matching_server(key)
            .into_iter()
            .filter_map(|g| self.grants.get(&g))
            .map(|g| ObjKey::new(&g.input.key.namespace, &g.input.agent))
            .collect()
    }

    /// The tools a Policy's literal tool bindings name in its scope: the governance
    /// that remembers a tool after its server stops exposing it.
    pub(crate) fn remembered_by(&self, p: &CPolicy) -> Vec<ToolId> {
        let home = &p.input.key.namespace;
        p.tools
            .iter()
            .filter_map(|(sel, _)| sel.literal_id(home))
            .filter(|id| self.policy_scope_covers(home, &id.namespace))
            .collect()
    }

    /// Grants with a bare name that a literal tool binding of Policy `key` can make
    /// resolve differently (to a remembered drifted tool, or ambiguous with one).
    pub(crate) fn grants_remembering(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        let Some(p) = self.policies.get(key) else {
            return BTreeSet::new();
        };
        let ids = self.remembered_by(p);
        if ids.is_empty() {
            return BTreeSet::new();
        }
        let sees = |home: &str, id: &ToolId| {
            match self.servers.get(&ObjKey::new(&id.namespace, &id.server)) {
                Some(s) => s.visible_from(home),
                // A server that does not exist is remembered in its own namespace only.
                None => id.namespace == home,
            }
        };
        self.grants
            .values()
            .filter(|g| {
                let home = &g.input.key.namespace;
                g.selectors.iter().any(|s| {
                    s.is_bare()
                        && !has_glob(&s.tool)
                        && ids.iter().any(|id| id.name == s.tool && sees(home, id))
                })
            })
            .map(|g| g.input.key.clone())
            .collect()
    }

    /// The agents these Grants name.
    pub(crate) fn agents_of(&self, grants: &BTreeSet<ObjKey>) -> BTreeSet<ObjKey> {
        grants
            .iter()
            .filter_map(|g| self.grants.get(g))
            .map(|g| ObjKey::new(&g.input.key.namespace, &g.input.agent))
            .collect()
    }

    /// Agents whose granted tools Policy `key` reaches, and agents whose expected
    /// exceptions name it, from the tool -> Grants index (each granted tool is looked
    /// at once, not once per Grant).
    pub(crate) fn agents_reaching_policy(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        let Some(p) = self.policies.get(key) else {
            return BTreeSet::new();
        };
        let mut grants: BTreeSet<&ObjKey> = BTreeSet::new();
        let governs_all = key.namespace == self.config.governance_namespace;
        for (tool, by) in &self.grants_by_tool {
            if (governs_all || tool.namespace == key.namespace) && self.policy_reaches(p, tool) {
                grants.extend(by);
            }
        }
        let by_exception = self
            .grants
            .values()
            .filter(|g| g.exceptions.iter().any(|e| &e.policy == key))
            .map(|g| &g.input.key);
        grants.extend(by_exception);
        grants
            .into_iter()
            .filter_map(|g| self.grants.get(g))
            .map(|g| ObjKey::new(&g.input.key.namespace, &g.input.agent))
            .collect()
    }
}
