//! Recompute what is dirty and write only what differs: bundles first (the Agent's
//! status reports them), then Agent, Grant, MCPServer and Policy status.

use super::bundles;
use super::conditions::{self as c, Desired};
use super::index::{AgentSummary, Dirty, Index};
use super::status::{self, BundleOutcome};
use super::watch::Watched;
use crate::crd::agent::BundleStatus;
use crate::crd::{Agent, Grant, MCPServer, Policy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;
use mcpgov_engine::{BundleError, Evaluator, ObjKey};
use std::collections::BTreeSet;

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

/// Conditions merged with the current ones, `observedGeneration` set.
fn finish(current: &[Condition], desired: Vec<Desired>, generation: Option<i64>) -> Vec<Condition> {
    c::merge(current, desired, generation, &now())
}

impl Index {
    pub(super) async fn reconcile(&mut self) {
        self.write_crawls().await;
        let dirty = std::mem::take(&mut self.dirty);
        let nothing = !dirty.all
            && dirty.agents.is_empty()
            && dirty.grants.is_empty()
            && dirty.servers.is_empty()
            && !dirty.policies;
        if nothing {
            return;
        }
        let started = std::time::Instant::now();
        // The evaluator borrows the engine while the writes below need `&mut self`.
        let placeholder = mcpgov_engine::Engine::new(self.engine.config().clone());
        let engine = std::mem::replace(&mut self.engine, placeholder);
        let ev = engine.evaluator(jiff::Timestamp::now());
        self.sync_reports(&ev, &dirty).await;
        let Dirty {
            all,
            agents,
            grants,
            servers,
            policies,
        } = dirty;
        let agents: BTreeSet<ObjKey> = if all {
            self.agents
                .keys()
                .cloned()
                .chain(self.summaries.keys().cloned())
                .chain(self.configmaps.values().filter_map(cm_agent))
                .collect()
        } else {
            agents
        };
        let mut grants = if all {
            self.grants.keys().cloned().collect()
        } else {
            grants
        };
        let servers: BTreeSet<ObjKey> = if all {
            self.servers.keys().cloned().collect()
        } else {
            servers
        };
        for cost in self.ns_cost.values_mut() {
            *cost /= 2;
        }
        self.ns_cost
            .retain(|_, c| *c >= std::time::Duration::from_millis(1));
        // Cheap namespaces first, round-robin; past the slice, the rest waits for the
        // next pass, after the messages that arrived meanwhile.
        let mut left = Leftover::default();
        let agents = fair_order(agents, &self.ns_cost);
        let evaluated = agents.len();
        for (i, a) in agents.iter().enumerate() {
            if started.elapsed() > SLICE {
                left.agents.extend(agents[i..].iter().cloned());
                break;
            }
            // The reach of the agent's tools, one tool at a time: a server of expensive
            // patterns then holds a pass up by one tool's (budgeted) reach at most.
            let t = std::time::Instant::now();
            let warm = ev.granted_tools(a).into_keys().all(|id| {
                if started.elapsed() > SLICE {
                    return false;
                }
                // Computed once, then cached by the engine for the evaluation below.
                ev.reach(&id);
                true
            });
            if !warm {
                *self.ns_cost.entry(a.namespace.clone()).or_default() += t.elapsed();
                left.agents.extend(agents[i..].iter().cloned());
                break;
            }
            grants.extend(engine.grants_of(a).map(|g| g.key.clone()));
            self.reconcile_agent(&ev, a).await;
            *self.ns_cost.entry(a.namespace.clone()).or_default() += t.elapsed();
        }
        if !all {
            self.metrics
                .evaluations
                .with_label_values(&["change"])
                .inc_by((evaluated - left.agents.len()) as u64);
        }
        let grants = fair_order(grants, &self.ns_cost);
        for (i, g) in grants.iter().enumerate() {
            if started.elapsed() > SLICE {
                left.grants.extend(grants[i..].iter().cloned());
                break;
            }
            let t = std::time::Instant::now();
            self.reconcile_grant(&ev, g).await;
            *self.ns_cost.entry(g.namespace.clone()).or_default() += t.elapsed();
        }
        let servers = fair_order(servers, &self.ns_cost);
        for (i, s) in servers.iter().enumerate() {
            if started.elapsed() > SLICE {
                left.servers.extend(servers[i..].iter().cloned());
                break;
            }
            self.reconcile_server(&ev, s).await;
        }
        // Agent summaries that moved above make every Policy's counts stale.
        // Taken first: a short-circuit would leave the flag set for a second pass.
        let dirty_policies = std::mem::take(&mut self.dirty.policies);
        if all || policies || dirty_policies {
            if left.is_empty() {
                let keys: Vec<ObjKey> = self.policies.keys().cloned().collect();
                for p in &keys {
                    self.reconcile_policy(&ev, p).await;
                }
            } else {
                // Policy counts aggregate every agent: once the backlog is done.
                self.dirty.policies = true;
            }
        }
        if !left.is_empty() {
            tracing::debug!(
                agents = left.agents.len(),
                grants = left.grants.len(),
                servers = left.servers.len(),
                "slice used up; the rest goes on after pending changes"
            );
            self.metrics.evaluation_slices.inc();
        }
        self.dirty.agents.extend(left.agents);
        self.dirty.grants.extend(left.grants);
        self.dirty.servers.extend(left.servers);
        self.observe_graph(&ev);
        self.engine = engine;
        self.metrics
            .evaluation_duration
            .observe(started.elapsed().as_secs_f64());
        tracing::debug!(
            agents = evaluated,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "reconciled"
        );
    }

    /// Graph sizes and drift per kind, read at the end of each pass.
    fn observe_graph(&self, ev: &Evaluator<'_>) {
        let counts = ev.engine().graph_counts();
        for (kind, n) in counts.nodes {
            self.metrics
                .graph_nodes
                .with_label_values(&[kind])
                .set(n as i64);
        }
        for (kind, n) in counts.edges {
            self.metrics
                .graph_edges
                .with_label_values(&[kind])
                .set(n as i64);
        }
        let can_call: usize = self.summaries.values().map(|s| s.tools).sum();
        self.metrics
            .graph_edges
            .with_label_values(&["CAN_CALL"])
            .set(can_call as i64);
        let drift = ev.drift();
        for kind in ["Grant", "Policy", "DataAccess"] {
            let n = drift.iter().filter(|d| d.source == kind).count();
            self.metrics.drift.with_label_values(&[kind]).set(n as i64);
        }
    }

    /// Apply the crawler's part of MCPServer status for each finished crawl.
    async fn write_crawls(&mut self) {
        for outcome in std::mem::take(&mut self.pending_crawls) {
            let Some(server) = self.servers.get(&outcome.key) else {
                continue;
            };
            let current = server.status.clone().unwrap_or_default();
            let status =
                super::catalog_status::status_for(&outcome, &current, server.metadata.generation);
            let key = outcome.key.clone();
            self.metrics.observe_crawl(&key, &outcome);
            if let Err(e) = self
                .writer
                .apply_status_as::<MCPServer, _>(
                    crate::catalog::CATALOG_FIELD_MANAGER,
                    "MCPServerCatalog",
                    &key.namespace,
                    &key.name,
                    &status,
                )
                .await
            {
                tracing::warn!(server = %key, error = %e, "could not write the crawl status");
            }
        }
    }

    async fn reconcile_agent(&mut self, ev: &Evaluator<'_>, key: &ObjKey) {
        let labels = [key.namespace.as_str(), key.name.as_str()];
        let Some(agent) = self.agents.get(key).cloned() else {
            for d in ["eligible", "rejected"] {
                let _ = self
                    .metrics
                    .agent_tools
                    .remove_label_values(&[labels[0], labels[1], d]);
            }
            for m in [
                &self.metrics.agent_violations,
                &self.metrics.agent_exceptions,
                &self.metrics.bundle_published,
                &self.metrics.bundle_bytes,
                &self.metrics.bundle_last_publish,
            ] {
                let _ = m.remove_label_values(&labels);
            }
            self.summaries.remove(key);
            self.remove_bundles(key, None).await;
            return;
        };
        let Some(eval) = ev.evaluate_agent(key, None) else {
            return;
        };
        let mut summary = AgentSummary {
            tools: eval.tools.len(),
            reached: eval.reached_policies.clone(),
            ..Default::default()
        };
        for (_, p) in eval.violations() {
            *summary
                .violations
                .entry(mcpgov_engine::index::parse_object_ref(&p.policy, ""))
                .or_default() += 1;
        }
        if self.summaries.get(key) != Some(&summary) {
            self.summaries.insert(key.clone(), summary);
            self.dirty.policies = true;
        }
        let outcome = if !bundles::enabled(&agent) {
            self.remove_bundles(key, None).await;
            BundleOutcome::Disabled
        } else {
            match ev.bundle_of(&eval) {
                Err(e @ BundleError::TooLarge { .. }) => BundleOutcome::TooLarge(e.to_string()),
                Err(e) => BundleOutcome::Failed(e.to_string()),
                Ok(bundle) => {
                    self.publish(&agent, &bundle, ev.engine().generation())
                        .await
                }
            }
        };
        let (mut desired, conds) = status::agent(&eval, &outcome);
        let m = &self.metrics;
        let eligible = eval.eligible() as i64;
        for (decision, n) in [
            ("eligible", eligible),
            ("rejected", eval.tools.len() as i64 - eligible),
        ] {
            m.agent_tools
                .with_label_values(&[labels[0], labels[1], decision])
                .set(n);
        }
        m.agent_violations
            .with_label_values(&labels)
            .set(desired.violations.unwrap_or(0));
        m.agent_exceptions
            .with_label_values(&labels)
            .set(desired.exceptions.unwrap_or(0));
        match &outcome {
            BundleOutcome::Published(_) => m.bundle_published.with_label_values(&labels).set(1),
            BundleOutcome::TooLarge(_) => {
                m.bundle_published.with_label_values(&labels).set(0);
                m.reconcile_errors
                    .with_label_values(&["bundle_too_large"])
                    .inc();
            }
            BundleOutcome::Failed(_) | BundleOutcome::Conflict(_) => {
                m.bundle_published.with_label_values(&labels).set(0)
            }
            BundleOutcome::Disabled => {
                let _ = m.bundle_published.remove_label_values(&labels);
            }
        }
        let current = agent.status.clone().unwrap_or_default();
        desired.conditions = finish(&current.conditions, conds, agent.metadata.generation);
        desired.observed_generation = agent.metadata.generation;
        if desired == current {
            self.writer.skipped_status("Agent");
            return;
        }
        match self
            .writer
            .apply_status::<Agent, _>(&key.namespace, &key.name, &desired)
            .await
        {
            Ok(()) => {
                self.retries.remove(&(Watched::Agent, key.clone()));
                match c::flipped(&current.conditions, &desired.conditions, c::COMPLIANT) {
                    Some(false) => {
                        let n = desired.violations.unwrap_or(0);
                        self.writer
                            .event(
                                &agent,
                                true,
                                "ViolationFound",
                                format!("{n} deny-policy violation(s)"),
                            )
                            .await
                    }
                    Some(true) if !current.conditions.is_empty() => {
                        self.writer
                            .event(
                                &agent,
                                false,
                                "ViolationsCleared",
                                "no deny-policy violations".into(),
                            )
                            .await
                    }
                    _ => {}
                }
            }
            Err(e) => self.write_failed(Watched::Agent, key, e),
        }
    }

    fn write_failed(&mut self, kind: Watched, key: &ObjKey, e: super::writer::Error) {
        let label = match e.label() {
            "conflict" => Some("conflict"),
            "timeout" => Some("timeout"),
            "not_leader" => None,
            _ => Some("api"),
        };
        if let Some(l) = label {
            self.metrics.reconcile_errors.with_label_values(&[l]).inc();
        }
        tracing::warn!(kind = kind.name(), object = %key, error = %e, transient = e.is_transient(), "write failed");
        if e.is_transient() {
            self.retry_later(kind, key.clone());
        }
    }

    /// Write the bundle ConfigMap unless it already holds these exact bytes. Only a
    /// ConfigMap mcpgov created for this Agent (label + controller reference with the
    /// Agent's uid) is ever updated; a name taken by anything else is a conflict.
    async fn publish(
        &mut self,
        agent: &Agent,
        bundle: &mcpgov_engine::Bundle,
        generation: u64,
    ) -> BundleOutcome {
        let key = ObjKey::new(agent.namespace().unwrap_or_default(), agent.name_any());
        let name = bundles::config_map_name(agent);
        let cm_key = ObjKey::new(&key.namespace, &name);
        self.remove_bundles(&key, Some(&name)).await;
        let existing = self.configmaps.get(&cm_key);
        if let Some(cm) = existing
            && !bundles::owned_by(cm, agent)
        {
            let owner = match bundles::owner(cm) {
                Some((owner, _)) if owner == key.name => {
                    format!(
                        "an earlier Agent {}/{owner} of the same name",
                        key.namespace
                    )
                }
                Some((owner, _)) => format!("Agent {}/{owner}", key.namespace),
                None => "another owner".to_string(),
            };
            return BundleOutcome::Conflict(format!(
                "ConfigMap {name} belongs to {owner}; choose another spec.bundle.configMapName"
            ));
        }
        let revision = existing.map(bundles::revision).unwrap_or(0);
        let published = |revision| {
            BundleOutcome::Published(BundleStatus {
                config_map_name: name.clone(),
                sha256: bundle.sha256.clone(),
                revision: Some(revision),
            })
        };
        if existing.and_then(bundles::held_digest) == Some(bundle.sha256.as_str()) {
            self.writer.skipped_configmap();
            return published(revision);
        }
        let mut cm = bundles::desired(agent, bundle, revision + 1, &self.instance, generation);
        let written = match existing {
            // Ours: an update, pinned to the uid we saw.
            Some(old) => {
                cm.metadata.uid = old.metadata.uid.clone();
                self.writer.apply_configmap(&cm).await.map(|()| true)
            }
            // Not among ours: create it, never apply over someone else's object.
            None => self.writer.create_configmap(&cm).await,
        };
        match written {
            Ok(true) => {
                let labels = [key.namespace.as_str(), key.name.as_str()];
                self.metrics
                    .bundle_bytes
                    .with_label_values(&labels)
                    .set(bundle.bytes.len() as i64);
                self.metrics
                    .bundle_last_publish
                    .with_label_values(&labels)
                    .set(jiff::Timestamp::now().as_second());
                self.configmaps.insert(cm_key, bundles::held(cm));
                self.writer
                    .event(
                        agent,
                        false,
                        "BundlePublished",
                        format!("{name} revision {} {}", revision + 1, bundle.sha256),
                    )
                    .await;
                published(revision + 1)
            }
            Ok(false) => BundleOutcome::Conflict(format!(
                "ConfigMap {name} exists and was not created by mcpgov for this Agent; \
                 choose another spec.bundle.configMapName"
            )),
            Err(e) => {
                let msg = e.to_string();
                self.write_failed(Watched::Agent, &key, e);
                BundleOutcome::Failed(msg)
            }
        }
    }

    /// Delete the bundle ConfigMaps mcpgov created for `agent` other than `keep`
    /// (by controller reference; with a uid precondition, so a same-named object
    /// created since is left alone).
    async fn remove_bundles(&mut self, agent: &ObjKey, keep: Option<&str>) {
        let uid = self.agents.get(agent).and_then(|a| a.metadata.uid.clone());
        let stale: Vec<(ObjKey, String)> = self
            .configmaps
            .iter()
            .filter(|(k, cm)| {
                k.namespace == agent.namespace
                    && Some(k.name.as_str()) != keep
                    && bundles::owner(cm).is_some_and(|(name, owner_uid)| {
                        name == agent.name && uid.as_deref().is_none_or(|u| u == owner_uid)
                    })
            })
            .filter_map(|(k, cm)| Some((k.clone(), cm.metadata.uid.clone()?)))
            .collect();
        for (k, cm_uid) in stale {
            match self
                .writer
                .delete_configmap(&k.namespace, &k.name, &cm_uid)
                .await
            {
                Ok(()) => {
                    self.configmaps.remove(&k);
                }
                Err(e) => self.write_failed(Watched::Agent, agent, e),
            }
        }
    }

    async fn reconcile_grant(&mut self, ev: &Evaluator<'_>, key: &ObjKey) {
        let Some(grant) = self.grants.get(key).cloned() else {
            return;
        };
        let expiries = super::expiry::of_grant(&grant.spec);
        self.set_expiry_series(key, &super::expiry::series(key, &expiries));
        let (mut desired, conds) = status::grant(ev, key, &expiries);
        let current = grant.status.clone().unwrap_or_default();
        desired.conditions = finish(&current.conditions, conds, grant.metadata.generation);
        desired.observed_generation = grant.metadata.generation;
        if desired == current {
            self.writer.skipped_status("Grant");
            return;
        }
        match self
            .writer
            .apply_status::<Grant, _>(&key.namespace, &key.name, &desired)
            .await
        {
            Ok(()) => match c::flipped(&current.conditions, &desired.conditions, c::RESOLVED) {
                Some(false) => {
                    let msg = desired
                        .conditions
                        .iter()
                        .find(|c| c.type_ == c::RESOLVED)
                        .map(|c| c.message.clone())
                        .unwrap_or_default();
                    self.writer
                        .event(&grant, true, "ReferenceBroken", msg)
                        .await
                }
                Some(true) if !current.conditions.is_empty() => {
                    self.writer
                        .event(
                            &grant,
                            false,
                            "ReferencesResolved",
                            "every reference resolves".into(),
                        )
                        .await
                }
                _ => {}
            },
            Err(e) => self.write_failed(Watched::Grant, key, e),
        }
    }

    async fn reconcile_server(&mut self, ev: &Evaluator<'_>, key: &ObjKey) {
        let Some(server) = self.servers.get(key).cloned() else {
            return;
        };
        let (mut desired, conds) = status::server(
            ev,
            key,
            server.has_catalog() || self.catalogs.contains_key(key),
        );
        let current = server.status.clone().unwrap_or_default();
        // Compare only the fields this writer owns; the crawler owns the catalog.
        let ours: Vec<&str> = conds.iter().map(|d| d.type_).collect();
        let current_ours: Vec<Condition> = current
            .conditions
            .iter()
            .filter(|c| ours.contains(&c.type_.as_str()))
            .cloned()
            .collect();
        desired.conditions = finish(&current_ours, conds, server.metadata.generation);
        desired.observed_generation = server.metadata.generation;
        let same = desired.conditions == current_ours
            && desired.drift == current.drift
            && desired.observed_generation == current.observed_generation;
        if same {
            self.writer.skipped_status("MCPServer");
            return;
        }
        if let Err(e) = self
            .writer
            .apply_status::<MCPServer, _>(&key.namespace, &key.name, &desired)
            .await
        {
            self.write_failed(Watched::MCPServer, key, e);
        }
    }

    async fn reconcile_policy(&mut self, ev: &Evaluator<'_>, key: &ObjKey) {
        let Some(policy) = self.policies.get(key).cloned() else {
            let _ = self
                .metrics
                .policy_violations
                .remove_label_values(&[key.namespace.as_str(), key.name.as_str()]);
            return;
        };
        let mut reached_by = BTreeSet::new();
        let mut violations = 0;
        for (agent, s) in &self.summaries {
            if s.reached.contains(key) {
                reached_by.insert(agent.clone());
            }
            violations += s.violations.get(key).copied().unwrap_or(0);
        }
        self.metrics
            .policy_violations
            .with_label_values(&[key.namespace.as_str(), key.name.as_str()])
            .set(violations as i64);
        let (mut desired, conds) = status::policy(ev, key, &reached_by, violations);
        let current = policy.status.clone().unwrap_or_default();
        desired.conditions = finish(&current.conditions, conds, policy.metadata.generation);
        desired.observed_generation = policy.metadata.generation;
        if desired == current {
            self.writer.skipped_status("Policy");
            return;
        }
        if let Err(e) = self
            .writer
            .apply_status::<Policy, _>(&key.namespace, &key.name, &desired)
            .await
        {
            self.write_failed(Watched::Policy, key, e);
        }
    }
}

/// How long one pass may evaluate before it lets pending changes in.
const SLICE: std::time::Duration = std::time::Duration::from_millis(200);

/// What a pass left for the next one.
#[derive(Default)]
struct Leftover {
    agents: Vec<ObjKey>,
    grants: Vec<ObjKey>,
    servers: Vec<ObjKey>,
}

impl Leftover {
    fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.grants.is_empty() && self.servers.is_empty()
    }
}

/// `keys` grouped by namespace, the namespaces that cost least recently first, then
/// taken one from each namespace in turn: a namespace with many (or expensive) objects
/// delays another's by at most one object per turn.
fn fair_order(
    keys: BTreeSet<ObjKey>,
    cost: &std::collections::BTreeMap<String, std::time::Duration>,
) -> Vec<ObjKey> {
    let mut groups: std::collections::BTreeMap<String, std::collections::VecDeque<ObjKey>> =
        Default::default();
    for k in keys {
        groups.entry(k.namespace.clone()).or_default().push_back(k);
    }
    let mut queues: Vec<(std::time::Duration, std::collections::VecDeque<ObjKey>)> = groups
        .into_iter()
        .map(|(ns, q)| (cost.get(&ns).copied().unwrap_or_default(), q))
        .collect();
    // Stable: equal costs keep namespace order, so passes stay deterministic.
    queues.sort_by_key(|(c, _)| *c);
    let total = queues.iter().map(|(_, q)| q.len()).sum();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for (_, q) in queues.iter_mut() {
            out.extend(q.pop_front());
        }
    }
    out
}

fn cm_agent(cm: &k8s_openapi::api::core::v1::ConfigMap) -> Option<ObjKey> {
    Some(ObjKey::new(
        cm.namespace()?,
        bundles::owner(cm)?.0.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn keys(list: &[&str]) -> BTreeSet<ObjKey> {
        list.iter()
            .map(|k| {
                let (ns, n) = k.split_once('/').unwrap();
                ObjKey::new(ns, n)
            })
            .collect()
    }

    #[test]
    fn cheap_namespaces_go_first_and_take_turns() {
        let set = keys(&["a/1", "a/2", "a/3", "b/1", "c/1", "c/2"]);
        let order: Vec<String> = fair_order(set.clone(), &BTreeMap::new())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(order, ["a/1", "b/1", "c/1", "a/2", "c/2", "a/3"]);
        // Namespace a cost the most lately: the others are served before it.
        let cost = BTreeMap::from([("a".to_string(), Duration::from_secs(3))]);
        let order: Vec<String> = fair_order(set, &cost)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(order, ["b/1", "c/1", "a/1", "c/2", "a/2", "a/3"]);
    }
}
