//! What state an answer came from: a digest of everything the index holds, so two
//! answers from the same inputs say so, whichever process computed them.

use crate::index::Engine;
use crate::model::ObjKey;
use serde::Serialize;

/// The index by reference: each object enters through the digest taken when it was
/// applied (servers: governance and catalog), agents through their fingerprint.
#[derive(Serialize)]
struct Contents<'a> {
    governance_namespace: &'a str,
    servers: Vec<(&'a ObjKey, &'a str, &'a str)>,
    policies: Vec<(&'a ObjKey, &'a str)>,
    grants: Vec<(&'a ObjKey, &'a str)>,
    agents: Vec<(&'a ObjKey, String)>,
}

impl Engine {
    /// `sha256:<hex>` over the index's contents (keys in order): equal for equal
    /// inputs, different when any object, catalog or the configuration differs.
    pub fn content_digest(&self) -> String {
        let contents = Contents {
            governance_namespace: &self.config.governance_namespace,
            servers: self
                .servers
                .iter()
                .map(|(k, s)| (k, s.governance_digest.as_str(), s.catalog_digest.as_str()))
                .collect(),
            policies: self
                .policies
                .iter()
                .map(|(k, p)| (k, p.digest.as_str()))
                .collect(),
            grants: self
                .grants
                .iter()
                .map(|(k, g)| (k, g.digest.as_str()))
                .collect(),
            agents: self
                .agents
                .iter()
                .map(|(k, a)| (k, crate::canonical::fingerprint(a)))
                .collect(),
        };
        crate::canonical::fingerprint(&contents)
    }
}

#[cfg(test)]
mod tests {
    use crate::estate::{Size, generate};
    use crate::{Engine, EngineConfig, Object};

    #[test]
    fn equal_inputs_give_equal_digests_and_any_change_moves_it() {
        let objects = generate(Size::SMALL, 7);
        let a = Engine::from_snapshot(EngineConfig::default(), objects.clone());
        let b = Engine::from_snapshot(EngineConfig::default(), objects.clone());
        assert_eq!(a.content_digest(), b.content_digest());
        assert!(a.content_digest().starts_with("sha256:"));

        let other_ns = EngineConfig {
            governance_namespace: "platform".into(),
        };
        let c = Engine::from_snapshot(other_ns, objects.clone());
        assert_ne!(a.content_digest(), c.content_digest());

        // Dropping any one object moves the digest.
        for skip in 0..objects.len() {
            let fewer: Vec<Object> = objects
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, o)| o.clone())
                .collect();
            let d = Engine::from_snapshot(EngineConfig::default(), fewer);
            assert_ne!(
                a.content_digest(),
                d.content_digest(),
                "without object {skip}"
            );
        }
    }
}
