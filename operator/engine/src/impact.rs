//! Which agents a change can move. Narrow on purpose: a Policy moves only the agents
//! whose granted tools it reaches (before or after the change), a server only the
//! agents with a Grant selector that can name its tools. The bundle's digests cover
//! exactly these inputs, and a property test checks that no agent outside the reported
//! impact changes.

use crate::glob::name_matches;
use crate::index::Engine;
use crate::key::{Selector, ToolId};
use crate::model::ObjKey;
use std::collections::{BTreeSet, HashMap};

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

    /// Agents with a Grant selector that can name a tool of server `key`.
    pub(crate) fn agents_matching_server(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        self.grants
            .values()
            .filter(|g| {
                let home = &g.input.key.namespace;
                g.selectors
                    .iter()
                    .any(|s| self.selector_could_match(s, home, key))
            })
            .map(|g| ObjKey::new(&g.input.key.namespace, &g.input.agent))
            .collect()
    }

    /// Every granted tool (live or drifted) with the agents granted it.
    pub(crate) fn callers_index(&self) -> HashMap<ToolId, BTreeSet<ObjKey>> {
        let mut out: HashMap<ToolId, BTreeSet<ObjKey>> = HashMap::new();
        for g in self.grants.values() {
            let agent = ObjKey::new(&g.input.key.namespace, &g.input.agent);
            for sel in &g.selectors {
                for id in self.resolve(sel, &g.input.key.namespace).granted() {
                    out.entry(id).or_default().insert(agent.clone());
                }
            }
        }
        out
    }

    /// Agents whose granted tools Policy `key` reaches, and agents whose expected
    /// exceptions name it.
    pub(crate) fn agents_reaching_policy(&self, key: &ObjKey) -> BTreeSet<ObjKey> {
        let Some(p) = self.policies.get(key) else {
            return BTreeSet::new();
        };
        let mut out = BTreeSet::new();
        for (tool, agents) in self.callers_index() {
            if self.policy_reaches(p, &tool) {
                out.extend(agents);
            }
        }
        for g in self.grants.values() {
            if g.exceptions.iter().any(|e| &e.policy == key) {
                out.insert(ObjKey::new(&g.input.key.namespace, &g.input.agent));
            }
        }
        out
    }
}
