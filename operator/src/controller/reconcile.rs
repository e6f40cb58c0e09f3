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
        for a in &agents {
            grants.extend(engine.grants_of(a).map(|g| g.key.clone()));
            self.reconcile_agent(&ev, a).await;
        }
        if !all {
            self.metrics
                .evaluations
                .with_label_values(&["change"])
                .inc_by(agents.len() as u64);
        }
        for g in &grants {
            self.reconcile_grant(&ev, g).await;
        }
        let servers: BTreeSet<ObjKey> = if all {
            self.servers.keys().cloned().collect()
        } else {
            servers
        };
        for s in &servers {
            self.reconcile_server(&ev, s).await;
        }
        // Agent summaries that moved above make every Policy's counts stale.
        // Taken first: a short-circuit would leave the flag set for a second pass.
        let dirty_policies = std::mem::take(&mut self.dirty.policies);
        if all || policies || dirty_policies {
            let keys: Vec<ObjKey> = self.policies.keys().cloned().collect();
            for p in &keys {
                self.reconcile_policy(&ev, p).await;
            }
        }
        self.observe_graph(&ev);
        self.engine = engine;
        self.metrics
            .evaluation_duration
            .observe(started.elapsed().as_secs_f64());
        tracing::debug!(
            agents = agents.len(),
            grants = grants.len(),
            servers = servers.len(),
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
            BundleOutcome::Failed(_) => m.bundle_published.with_label_values(&labels).set(0),
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

    /// Write the bundle ConfigMap unless it already holds these exact bytes.
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
        let ours =
            existing.is_none_or(|cm| cm.labels().get(bundles::AGENT_LABEL) == Some(&key.name));
        if !ours {
            return BundleOutcome::Failed(format!(
                "ConfigMap {name} exists and belongs to another agent; choose spec.bundle.configMapName"
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
        let cm = bundles::desired(agent, bundle, revision + 1, &self.instance, generation);
        match self.writer.apply_configmap(&cm).await {
            Ok(()) => {
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
            Err(e) => {
                let msg = e.to_string();
                self.write_failed(Watched::Agent, &key, e);
                BundleOutcome::Failed(msg)
            }
        }
    }

    /// Delete the agent's bundle ConfigMaps other than `keep`.
    async fn remove_bundles(&mut self, agent: &ObjKey, keep: Option<&str>) {
        let stale: Vec<ObjKey> = self
            .configmaps
            .iter()
            .filter(|(k, cm)| {
                k.namespace == agent.namespace
                    && cm.labels().get(bundles::AGENT_LABEL) == Some(&agent.name)
                    && Some(k.name.as_str()) != keep
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            match self.writer.delete_configmap(&k.namespace, &k.name).await {
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
        let (mut desired, conds) = status::grant(ev, key);
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

fn cm_agent(cm: &k8s_openapi::api::core::v1::ConfigMap) -> Option<ObjKey> {
    Some(ObjKey::new(
        cm.namespace()?,
        cm.labels().get(bundles::AGENT_LABEL)?.clone(),
    ))
}
