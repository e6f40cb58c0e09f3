//! The pure half of the controller: from the index as it stands, what to write. `plan`
//! recomputes what is dirty and returns jobs (status patches, bundle ConfigMaps to
//! write or delete, events) and metric values; it awaits nothing and calls no API, so
//! it is unit-tested with no API server. The writer runs the jobs and reports back
//! (`Index::written`), which is where retries are scheduled.
//!
//! Only what differs from the current state is planned. "Current" is the object as last
//! seen by the watch, or the status this process sent and has not heard back about
//! (`Index::sent`): a change planned twice before its write lands is written once.

use super::bundles;
use super::conditions::{self as c, Desired};
use super::events::{EventReason, Notice};
use super::index::{AgentSummary, Dirty, Index};
use super::jobs::{Event, Job, ObjectId, Op, Step};
use super::kind::Watched;
use super::metrics::{Counter, Gauge, MetricOp};
use super::status::{self, BundleOutcome};
use crate::crd::Agent;
use crate::crd::agent::{AgentStatus, BundleStatus};
use crate::crd::grant::GrantStatus;
use crate::crd::policy::PolicyStatus;
use crate::crd::server::MCPServerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{Resource, ResourceExt};
use mcpgov_engine::queries::DriftSource;
use mcpgov_engine::{BundleError, Evaluator, ObjKey};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What one `plan` asks for.
#[derive(Default, Debug)]
pub struct Plan {
    /// At most one per object, in the order they were planned.
    pub jobs: Vec<Job>,
    pub metrics: Vec<MetricOp>,
    /// Whether it evaluated anything (the graph metrics are then read after it).
    pub evaluated: bool,
}

impl Plan {
    fn set(&mut self, g: Gauge, labels: &[&str], v: i64) {
        self.metrics.push(MetricOp::Set(g, owned(labels), v));
    }

    fn remove(&mut self, g: Gauge, labels: &[&str]) {
        self.metrics.push(MetricOp::Remove(g, owned(labels)));
    }

    fn count(&mut self, c: Counter, labels: &[&str], n: u64) {
        if n > 0 {
            self.metrics.push(MetricOp::Count(c, owned(labels), n));
        }
    }

    /// The job of `object`, if one was planned.
    #[cfg(test)]
    pub fn job(&self, object: &ObjectId) -> Option<&Job> {
        self.jobs.iter().find(|j| &j.object == object)
    }
}

fn owned(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| l.to_string()).collect()
}

fn event<K: Resource<DynamicType = ()>>(
    obj: &K,
    warning: bool,
    reason: EventReason,
    note: String,
) -> Event {
    Event {
        regarding: obj.object_ref(&()),
        notice: Notice {
            warning,
            reason,
            action: "Reconcile".into(),
            note,
        },
    }
}

fn json<S: Serialize>(s: &S) -> serde_json::Value {
    serde_json::to_value(s).unwrap_or_default()
}

/// The status step of `object` under our field manager.
fn status_step<S: Serialize>(kind: Watched, desired: &S) -> Step {
    Step::new(Op::Status {
        manager: crate::names::FIELD_MANAGER,
        label: kind.name(),
        status: json(desired),
    })
}

/// Skipped writes, counted once per plan.
#[derive(Default)]
struct Skipped {
    status: BTreeMap<&'static str, u64>,
    configmaps: u64,
}

impl Index {
    /// Everything dirty, evaluated at `now`: the writes that differ from the current
    /// state, and metric values. Bookkeeping only changes here (summaries, what was
    /// sent, what is left for the next slice); nothing is awaited.
    pub fn plan(&mut self, now: jiff::Timestamp) -> Plan {
        let mut plan = Plan::default();
        let mut skipped = Skipped::default();
        self.plan_crawls(&mut plan);
        let dirty = std::mem::take(&mut self.dirty);
        if !dirty.pending() {
            return plan;
        }
        let started = std::time::Instant::now();
        // The evaluator borrows the engine while the planning below needs `&mut self`.
        let placeholder = mcpgov_engine::Engine::new(self.engine.config().clone());
        let engine = std::mem::replace(&mut self.engine, placeholder);
        // The evaluator judges expiries at the exact instant; status times are whole
        // seconds, as the API server keeps them.
        let ev = engine.evaluator(now);
        let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
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
            self.plan_agent(&ev, a, now, &mut plan, &mut skipped);
            *self.ns_cost.entry(a.namespace.clone()).or_default() += t.elapsed();
        }
        if !all {
            plan.count(
                Counter::Evaluations,
                &["change"],
                (evaluated - left.agents.len()) as u64,
            );
        }
        let grants = fair_order(grants, &self.ns_cost);
        for (i, g) in grants.iter().enumerate() {
            if started.elapsed() > SLICE {
                left.grants.extend(grants[i..].iter().cloned());
                break;
            }
            let t = std::time::Instant::now();
            self.plan_grant(&ev, g, now, &mut plan, &mut skipped);
            *self.ns_cost.entry(g.namespace.clone()).or_default() += t.elapsed();
        }
        let servers = fair_order(servers, &self.ns_cost);
        for (i, s) in servers.iter().enumerate() {
            if started.elapsed() > SLICE {
                left.servers.extend(servers[i..].iter().cloned());
                break;
            }
            self.plan_server(&ev, s, now, &mut plan, &mut skipped);
        }
        // Policy status aggregates every agent's summary: planned only once no agent
        // is left for a later slice, so it never counts a summary that is behind.
        // Taken first: agent summaries that moved above set it again.
        let dirty_policies = std::mem::take(&mut self.dirty.policies);
        if all || policies || dirty_policies {
            if left.is_empty() {
                let keys: Vec<ObjKey> = self.policies.keys().cloned().collect();
                for p in &keys {
                    self.plan_policy(&ev, p, now, &mut plan, &mut skipped);
                }
            } else {
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
            plan.count(Counter::EvaluationSlices, &[], 1);
        }
        self.dirty.agents.extend(left.agents);
        self.dirty.grants.extend(left.grants);
        self.dirty.servers.extend(left.servers);
        plan.evaluated = true;
        self.engine = engine;
        for (kind, n) in skipped.status {
            plan.count(Counter::StatusWrites, &[kind, "skipped"], n);
        }
        plan.count(Counter::ConfigMapWrites, &["skipped"], skipped.configmaps);
        plan.metrics
            .push(MetricOp::EvaluationSeconds(started.elapsed().as_secs_f64()));
        tracing::debug!(
            agents = evaluated,
            grants = grants.len(),
            servers = servers.len(),
            jobs = plan.jobs.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "reconciled"
        );
        plan
    }

    /// Hand a job to the plan, remembering the status it sends (see `sent`).
    fn push(&mut self, plan: &mut Plan, job: Job) {
        if job.steps.is_empty() {
            return;
        }
        for step in &job.steps {
            match &step.op {
                Op::Status {
                    manager, status, ..
                } if *manager == crate::names::FIELD_MANAGER => {
                    self.sent.insert(job.object.clone(), status.clone());
                }
                Op::CreateConfigMap(cm) | Op::ApplyConfigMap(cm) => {
                    let key = ObjKey::new(&job.object.key.namespace, cm.name_any());
                    self.sent_cm.insert(key, bundles::held((**cm).clone()));
                }
                Op::DeleteConfigMap { name, .. } => {
                    self.deleting
                        .insert(ObjKey::new(&job.object.key.namespace, name));
                }
                // Recorded by `plan_reports` (`Reports::planned`).
                Op::Status { .. } | Op::ApplyReport { .. } | Op::DeleteReport { .. } => {}
            }
        }
        plan.jobs.push(job);
    }

    /// The status to compare with and merge conditions into: what this process sent
    /// and has not heard back about, else what the watch last showed.
    fn current<S>(&self, id: &ObjectId, seen: Option<&S>) -> S
    where
        S: serde::de::DeserializeOwned + Clone + Default,
    {
        self.sent
            .get(id)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .or_else(|| seen.cloned())
            .unwrap_or_default()
    }

    /// Graph sizes and drift per kind, read after a plan that evaluated something,
    /// once its jobs are on their way (drift walks the whole estate: computed inside the
    /// plan it delayed every write by as long).
    pub fn observe_graph(&self, now: jiff::Timestamp) -> Vec<MetricOp> {
        let ev = self.engine.evaluator(now);
        let mut plan = Plan::default();
        let counts = ev.engine().graph_counts();
        for (kind, n) in counts.nodes {
            plan.set(Gauge::GraphNodes, &[kind], n as i64);
        }
        for (kind, n) in counts.edges {
            plan.set(Gauge::GraphEdges, &[kind], n as i64);
        }
        let can_call: usize = self.summaries.values().map(|s| s.tools).sum();
        plan.set(Gauge::GraphEdges, &["CAN_CALL"], can_call as i64);
        let drift = ev.drift();
        for source in DriftSource::ALL {
            let n = drift.iter().filter(|d| d.source == *source).count();
            plan.set(Gauge::Drift, &[source.as_str()], n as i64);
        }
        plan.metrics
    }

    /// The crawler's part of MCPServer status for each finished crawl.
    fn plan_crawls(&mut self, plan: &mut Plan) {
        for outcome in std::mem::take(&mut self.pending_crawls) {
            let Some(server) = self.servers.get(&outcome.key) else {
                continue;
            };
            let current = server.status.clone().unwrap_or_default();
            let status =
                super::crawl::status::status_for(&outcome, &current, server.metadata.generation);
            let mut job = Job::new(ObjectId::new(Watched::MCPServer, outcome.key.clone()));
            job.steps.push(Step::new(Op::Status {
                manager: crate::names::CATALOG_FIELD_MANAGER,
                label: "MCPServerCatalog",
                status,
            }));
            self.push(plan, job);
        }
    }

    fn plan_agent(
        &mut self,
        ev: &Evaluator<'_>,
        key: &ObjKey,
        now: jiff::Timestamp,
        plan: &mut Plan,
        skipped: &mut Skipped,
    ) {
        let labels = [key.namespace.as_str(), key.name.as_str()];
        let id = ObjectId::new(Watched::Agent, key.clone());
        let mut job = Job::new(id.clone());
        let Some(agent) = self.agents.get(key).cloned() else {
            for d in ["eligible", "rejected"] {
                plan.remove(Gauge::AgentTools, &[labels[0], labels[1], d]);
            }
            for g in [
                Gauge::AgentViolations,
                Gauge::AgentExceptions,
                Gauge::BundlePublished,
                Gauge::BundleBytes,
                Gauge::BundleLastPublish,
            ] {
                plan.remove(g, &labels);
            }
            self.summaries.remove(key);
            self.bundle_issues.remove(key);
            self.plan_bundle_removal(key, None, &mut job);
            self.push(plan, job);
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
            self.plan_bundle_removal(key, None, &mut job);
            BundleOutcome::Disabled
        } else if let Some(issue) = self.bundle_issues.remove(key) {
            // The writer could not publish the last bundle: status says so once; the
            // next evaluation (a retry, a change) tries again.
            issue
        } else {
            match ev.bundle_of(&eval) {
                Err(e @ BundleError::TooLarge { .. }) => BundleOutcome::TooLarge(e.to_string()),
                Err(e) => BundleOutcome::Failed(e.to_string()),
                Ok(bundle) => self.plan_publish(
                    &agent,
                    &bundle,
                    ev.engine().generation(),
                    &mut job,
                    plan,
                    skipped,
                ),
            }
        };
        let (mut desired, conds) = status::agent(&eval, &outcome);
        let eligible = eval.eligible() as i64;
        for (decision, n) in [
            ("eligible", eligible),
            ("rejected", eval.tools.len() as i64 - eligible),
        ] {
            plan.set(Gauge::AgentTools, &[labels[0], labels[1], decision], n);
        }
        plan.set(
            Gauge::AgentViolations,
            &labels,
            desired.violations.unwrap_or(0),
        );
        plan.set(
            Gauge::AgentExceptions,
            &labels,
            desired.exceptions.unwrap_or(0),
        );
        match &outcome {
            BundleOutcome::Published(_) => plan.set(Gauge::BundlePublished, &labels, 1),
            BundleOutcome::TooLarge(_) => {
                plan.set(Gauge::BundlePublished, &labels, 0);
                plan.count(Counter::ReconcileErrors, &["bundle_too_large"], 1);
            }
            BundleOutcome::Failed(_) | BundleOutcome::Conflict(_) => {
                plan.set(Gauge::BundlePublished, &labels, 0)
            }
            BundleOutcome::Disabled => plan.remove(Gauge::BundlePublished, &labels),
        }
        let current: AgentStatus = self.current(&id, agent.status.as_ref());
        desired.conditions = finish(&current.conditions, conds, agent.metadata.generation, now);
        desired.observed_generation = agent.metadata.generation;
        if desired == current {
            *skipped.status.entry("Agent").or_default() += 1;
            self.push(plan, job);
            return;
        }
        let mut step = status_step(Watched::Agent, &desired);
        match c::flipped(&current.conditions, &desired.conditions, c::COMPLIANT) {
            Some(false) => {
                let n = desired.violations.unwrap_or(0);
                step.events.push(event(
                    &agent,
                    true,
                    EventReason::ViolationFound,
                    format!("{n} deny-policy violation(s)"),
                ));
            }
            Some(true) if !current.conditions.is_empty() => step.events.push(event(
                &agent,
                false,
                EventReason::ViolationsCleared,
                "no deny-policy violations".into(),
            )),
            _ => {}
        }
        job.steps.push(step);
        self.push(plan, job);
    }

    /// The bundle ConfigMap write, unless it already holds these exact bytes. Only a
    /// ConfigMap mcpgov created for this Agent (label + controller reference with the
    /// Agent's uid) is ever updated; a name taken by anything else is a conflict.
    fn plan_publish(
        &mut self,
        agent: &Agent,
        bundle: &mcpgov_engine::Bundle,
        generation: u64,
        job: &mut Job,
        plan: &mut Plan,
        skipped: &mut Skipped,
    ) -> BundleOutcome {
        let key = ObjKey::new(agent.namespace().unwrap_or_default(), agent.name_any());
        let name = bundles::config_map_name(agent);
        let cm_key = ObjKey::new(&key.namespace, &name);
        self.plan_bundle_removal(&key, Some(&name), job);
        // What this process sent last wins over the watch's older view; one whose
        // deletion is planned is gone by the time this job runs (same object, after).
        let existing = self.sent_cm.get(&cm_key).or_else(|| {
            self.configmaps
                .get(&cm_key)
                .filter(|_| !self.deleting.contains(&cm_key))
        });
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
            skipped.configmaps += 1;
            return published(revision);
        }
        let mut cm = bundles::desired(agent, bundle, revision + 1, &self.instance, generation);
        let op = match existing {
            // Ours: an update, pinned to the uid we saw (none yet when our create has
            // not been reported: the job before this one on the same object made it).
            Some(old) => {
                cm.metadata.uid = old.metadata.uid.clone();
                Op::ApplyConfigMap(Box::new(cm))
            }
            // Not among ours: create it, never apply over someone else's object.
            None => Op::CreateConfigMap(Box::new(cm)),
        };
        plan.set(
            Gauge::BundleBytes,
            &[key.namespace.as_str(), key.name.as_str()],
            bundle.bytes.len() as i64,
        );
        let mut step = Step::new(op);
        // A change of what an agent may call is announced; its first bundle is not (its
        // status says so, and a start of the operator on a large estate would otherwise
        // send one Event per Agent before the API server has written their status).
        let had_bundle = agent.status.as_ref().is_some_and(|s| s.bundle.is_some());
        if had_bundle {
            step.events.push(event(
                agent,
                false,
                EventReason::BundlePublished,
                format!("{name} revision {} {}", revision + 1, bundle.sha256),
            ));
        }
        job.steps.push(step);
        published(revision + 1)
    }

    /// Delete the bundle ConfigMaps mcpgov created for `agent` other than `keep`
    /// (by controller reference; with a uid precondition, so a same-named object
    /// created since is left alone).
    fn plan_bundle_removal(&mut self, agent: &ObjKey, keep: Option<&str>, job: &mut Job) {
        let uid = self.agents.get(agent).and_then(|a| a.metadata.uid.clone());
        let stale: Vec<(String, String)> = self
            .configmaps
            .iter()
            .filter(|(k, cm)| {
                k.namespace == agent.namespace
                    && Some(k.name.as_str()) != keep
                    && !self.deleting.contains(*k)
                    && bundles::owner(cm).is_some_and(|(name, owner_uid)| {
                        name == agent.name && uid.as_deref().is_none_or(|u| u == owner_uid)
                    })
            })
            .filter_map(|(k, cm)| Some((k.name.clone(), cm.metadata.uid.clone()?)))
            .collect();
        for (name, uid) in stale {
            job.steps.push(Step::new(Op::DeleteConfigMap { name, uid }));
        }
    }

    fn plan_grant(
        &mut self,
        ev: &Evaluator<'_>,
        key: &ObjKey,
        now: jiff::Timestamp,
        plan: &mut Plan,
        skipped: &mut Skipped,
    ) {
        let Some(grant) = self.grants.get(key).cloned() else {
            return;
        };
        let id = ObjectId::new(Watched::Grant, key.clone());
        let expiries = super::expiry::of_grant(&grant.spec);
        plan.metrics.push(MetricOp::Expiries(
            key.clone(),
            super::expiry::series(key, &expiries),
        ));
        let (mut desired, conds) = status::grant(ev, key, &expiries);
        let current: GrantStatus = self.current(&id, grant.status.as_ref());
        desired.conditions = finish(&current.conditions, conds, grant.metadata.generation, now);
        desired.observed_generation = grant.metadata.generation;
        if desired == current {
            *skipped.status.entry("Grant").or_default() += 1;
            return;
        }
        let mut step = status_step(Watched::Grant, &desired);
        match c::flipped(&current.conditions, &desired.conditions, c::RESOLVED) {
            Some(false) => {
                let msg = desired
                    .conditions
                    .iter()
                    .find(|c| c.type_ == c::RESOLVED)
                    .map(|c| c.message.clone())
                    .unwrap_or_default();
                step.events
                    .push(event(&grant, true, EventReason::ReferenceBroken, msg));
            }
            Some(true) if !current.conditions.is_empty() => step.events.push(event(
                &grant,
                false,
                EventReason::ReferencesResolved,
                "every reference resolves".into(),
            )),
            _ => {}
        }
        let mut job = Job::new(id);
        job.steps.push(step);
        self.push(plan, job);
    }

    fn plan_server(
        &mut self,
        ev: &Evaluator<'_>,
        key: &ObjKey,
        now: jiff::Timestamp,
        plan: &mut Plan,
        skipped: &mut Skipped,
    ) {
        let Some(server) = self.servers.get(key) else {
            return;
        };
        let id = ObjectId::new(Watched::MCPServer, key.clone());
        let (mut desired, conds) = status::server(
            ev,
            key,
            server.has_catalog() || self.catalogs.contains_key(key),
        );
        let generation = server.metadata.generation;
        let current: MCPServerStatus = self.current(&id, server.status.as_ref());
        // Compare only the fields this writer owns; the crawler owns the catalog.
        let ours: Vec<&str> = conds.iter().map(|d| d.type_).collect();
        let current_ours: Vec<Condition> = current
            .conditions
            .iter()
            .filter(|c| ours.contains(&c.type_.as_str()))
            .cloned()
            .collect();
        desired.conditions = finish(&current_ours, conds, generation, now);
        desired.observed_generation = generation;
        let same = desired.conditions == current_ours
            && desired.drift == current.drift
            && desired.observed_generation == current.observed_generation;
        if same {
            *skipped.status.entry("MCPServer").or_default() += 1;
            return;
        }
        let mut job = Job::new(id);
        job.steps.push(status_step(Watched::MCPServer, &desired));
        self.push(plan, job);
    }

    fn plan_policy(
        &mut self,
        ev: &Evaluator<'_>,
        key: &ObjKey,
        now: jiff::Timestamp,
        plan: &mut Plan,
        skipped: &mut Skipped,
    ) {
        let labels = [key.namespace.as_str(), key.name.as_str()];
        let Some(policy) = self.policies.get(key) else {
            plan.remove(Gauge::PolicyViolations, &labels);
            return;
        };
        let id = ObjectId::new(Watched::Policy, key.clone());
        let mut reached_by = BTreeSet::new();
        let mut violations = 0;
        for (agent, s) in &self.summaries {
            if s.reached.contains(key) {
                reached_by.insert(agent.clone());
            }
            violations += s.violations.get(key).copied().unwrap_or(0);
        }
        plan.set(Gauge::PolicyViolations, &labels, violations as i64);
        let (mut desired, conds) = status::policy(ev, key, &reached_by, violations);
        let current: PolicyStatus = self.current(&id, policy.status.as_ref());
        desired.conditions = finish(&current.conditions, conds, policy.metadata.generation, now);
        desired.observed_generation = policy.metadata.generation;
        if desired == current {
            *skipped.status.entry("Policy").or_default() += 1;
            return;
        }
        let mut job = Job::new(id);
        job.steps.push(status_step(Watched::Policy, &desired));
        self.push(plan, job);
    }
}

/// Conditions merged with the current ones, `observedGeneration` set.
fn finish(
    current: &[Condition],
    desired: Vec<Desired>,
    generation: Option<i64>,
    now: jiff::Timestamp,
) -> Vec<Condition> {
    c::merge(current, desired, generation, &Time(now))
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

#[cfg(test)]
mod plan_tests {
    //! Plans on the quickstart estate, with no API server: what gets written, in what
    //! order, and that what was written (or is on its way) is not written again.
    use super::*;
    use crate::controller::jobs::{Done, Report, Written};
    use crate::controller::msg::Msg;
    use crate::controller::writer::Error;
    use crate::manifest::{Resource as R, load_str};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    const NOW: &str = "2026-12-01T12:00:00Z";

    fn now() -> jiff::Timestamp {
        NOW.parse().unwrap()
    }

    fn index() -> Index {
        let config = crate::controller::Config {
            namespace: None,
            governance_namespace: "mcpgov-system".into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            resync: std::time::Duration::from_secs(300),
            crawl_concurrency: 0,
            net: Default::default(),
            election: None,
            admission: None,
            mcp: None,
            policy_reports: None,
        };
        let (specs, _) = tokio::sync::watch::channel(Default::default());
        let (leadership, _) = crate::controller::leader::Leadership::always();
        let mut ix = Index::new(
            config,
            crate::controller::metrics::Metrics::new(),
            Arc::new(AtomicBool::new(true)),
            specs,
            leadership,
        );
        for kind in crate::controller::kind::ALL {
            ix.handle(Msg::ListDone(kind));
        }
        ix
    }

    /// The quickstart: one server (crawled: its catalog in status), one Deny Policy, one
    /// Agent granted both tools, one of which writes what the Policy governs.
    fn quickstart(ix: &mut Index, uid: &str) {
        let gov = load_str(
            include_str!("../../../examples/quickstart/governance.yaml"),
            "governance.yaml".as_ref(),
        )
        .unwrap();
        let cat = load_str(
            include_str!("../../../examples/quickstart/catalog.yaml"),
            "catalog.yaml".as_ref(),
        )
        .unwrap();
        let catalog = cat.objects.iter().find_map(|o| match &o.resource {
            R::MCPServer(s) => s.status.clone(),
            _ => None,
        });
        // As a watch delivers them: with a resourceVersion (older than our writes').
        let rv = Some("5".to_string());
        for o in gov.objects {
            match o.resource {
                R::MCPServer(mut s) => {
                    s.status = catalog.clone();
                    s.metadata.resource_version = rv.clone();
                    ix.handle(Msg::Apply((*s).into()))
                }
                R::Agent(mut a) => {
                    a.metadata.uid = Some(uid.into());
                    a.metadata.resource_version = rv.clone();
                    ix.handle(Msg::Apply((*a).into()))
                }
                R::Policy(mut p) => {
                    p.metadata.resource_version = rv.clone();
                    ix.handle(Msg::Apply((*p).into()))
                }
                R::Grant(mut g) => {
                    g.metadata.resource_version = rv.clone();
                    ix.handle(Msg::Apply((*g).into()))
                }
            }
        }
    }

    fn id(kind: Watched, name: &str) -> ObjectId {
        ObjectId::new(kind, ObjKey::new("quickstart", name))
    }

    fn status_of(step: &Step) -> &serde_json::Value {
        match &step.op {
            Op::Status { status, .. } => status,
            op => panic!("not a status write: {op:?}"),
        }
    }

    fn condition<'a>(status: &'a serde_json::Value, type_: &str) -> &'a serde_json::Value {
        status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == type_)
            .unwrap()
    }

    /// The writer's report on `job` with each step answered by `answer(step index)`.
    fn report(job: &Job, answer: impl Fn(usize) -> Result<Written, Error>) -> Msg {
        let steps = job
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| Done {
                object: s.op.object(&job.object),
                op: s.op.clone().held(),
                result: answer(i),
            })
            .collect();
        Msg::Written(Box::new(Report {
            job: job.object.clone(),
            steps,
        }))
    }

    fn ok(rv: u64) -> Result<Written, Error> {
        Ok(Written {
            resource_version: Some(rv.to_string()),
            uid: Some(format!("uid-{rv}")),
        })
    }

    fn all(ix: &mut Index) -> Plan {
        ix.dirty.all = true;
        ix.plan(now())
    }

    #[test]
    fn the_bundle_is_written_before_the_status_that_reports_it() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let plan = all(&mut ix);
        let agent = plan.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        assert_eq!(agent.steps.len(), 2, "{agent:#?}");
        let Op::CreateConfigMap(cm) = &agent.steps[0].op else {
            panic!("first the bundle: {:?}", agent.steps[0].op)
        };
        assert_eq!(
            cm.metadata.name.as_deref(),
            Some("vibe-coder-mcpgov-bundle")
        );
        let sha = &cm.metadata.annotations.as_ref().unwrap()[bundles::SHA_ANNOTATION];
        let status = status_of(&agent.steps[1]);
        assert_eq!(&status["bundle"]["sha256"], sha);
        assert_eq!(status["bundle"]["revision"], 1);
        assert_eq!(status["violations"], 1);
        assert_eq!(status["eligible"], 1);
        assert_eq!(condition(status, c::COMPLIANT)["status"], "False");
        assert_eq!(
            condition(status, c::COMPLIANT)["lastTransitionTime"],
            NOW,
            "status times are the plan's instant"
        );
        let reasons: Vec<_> = agent
            .steps
            .iter()
            .flat_map(|s| &s.events)
            .map(|e| e.notice.reason.as_str())
            .collect();
        assert_eq!(
            reasons,
            ["ViolationFound"],
            "an Agent's first bundle is not announced by an Event"
        );
        // Every other object gets its status too, each in a job of its own.
        for (kind, name) in [
            (Watched::Grant, "vibe-coder-notes"),
            (Watched::Policy, "drafts-deny"),
            (Watched::MCPServer, "policy-gateway"),
        ] {
            let job = plan.job(&id(kind, name)).unwrap();
            assert_eq!(job.steps.len(), 1, "{job:#?}");
        }
        let policy = plan.job(&id(Watched::Policy, "drafts-deny")).unwrap();
        assert_eq!(status_of(&policy.steps[0])["violations"], 1);
        assert!(plan.metrics.contains(&MetricOp::Set(
            Gauge::AgentViolations,
            owned(&["quickstart", "vibe-coder"]),
            1
        )));
    }

    #[test]
    fn what_was_sent_is_not_planned_again_before_or_after_its_echo() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let first = all(&mut ix);
        assert_eq!(first.jobs.len(), 4);
        // In flight: a resync plans nothing.
        assert_eq!(all(&mut ix).jobs, vec![]);
        // Written: still nothing, and the bundle is not republished.
        for job in &first.jobs {
            ix.handle(report(job, |i| ok(10 + i as u64)));
        }
        assert!(ix.sent.is_empty() && ix.sent_cm.is_empty());
        assert_eq!(all(&mut ix).jobs, vec![]);
        // A watch event from before our writes (the Agent as applied, no status; a
        // ConfigMap list without ours) does not make the plan write again.
        quickstart(&mut ix, "uid-a");
        assert_eq!(all(&mut ix).jobs, vec![]);
        let skipped = all(&mut ix).metrics;
        assert!(skipped.contains(&MetricOp::Count(
            Counter::ConfigMapWrites,
            owned(&["skipped"]),
            1
        )));
    }

    #[test]
    fn a_failed_write_is_planned_again_and_a_taken_name_is_a_conflict() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let first = all(&mut ix);
        let grant = first.job(&id(Watched::Grant, "vibe-coder-notes")).unwrap();
        ix.handle(report(grant, |_| {
            Err(Error::Api {
                code: Some(503),
                message: "unavailable".into(),
            })
        }));
        let key = (
            Watched::Grant,
            ObjKey::new("quickstart", "vibe-coder-notes"),
        );
        assert!(
            ix.retries.contains_key(&key),
            "a transient failure is retried"
        );
        // The ConfigMap name is taken by someone else's object: the status step after
        // it was not sent.
        let agent = first.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        ix.handle(report(agent, |i| match i {
            0 => Err(Error::Taken),
            _ => Err(Error::NotAttempted),
        }));
        // The retry comes due: the Grant's status is planned again, as before.
        ix.dirty.grants.insert(key.1.clone());
        let next = ix.plan(now());
        let again = next.job(&id(Watched::Grant, "vibe-coder-notes")).unwrap();
        assert_eq!(again.steps, grant.steps);
        let agent = next.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        assert_eq!(agent.steps.len(), 1, "no second create: {agent:#?}");
        let status = status_of(&agent.steps[0]);
        let published = condition(status, c::BUNDLE_PUBLISHED);
        assert_eq!(published["status"], "False");
        assert_eq!(published["reason"], "ConfigMapConflict");
        assert!(status.get("bundle").is_none(), "{status}");
    }

    #[test]
    fn policy_status_counts_every_agent_evaluated_in_the_same_plan() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        // A second agent with the same grant, its own bundle.
        let a: crate::crd::Agent = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Agent",
            "metadata": {"name": "second", "namespace": "quickstart", "uid": "uid-b"},
            "spec": {"profile": "Strict"}
        }))
        .unwrap();
        let g: crate::crd::Grant = serde_json::from_value(serde_json::json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "Grant",
            "metadata": {"name": "second-notes", "namespace": "quickstart"},
            "spec": {"agent": "second", "tools": ["policy-gateway::publish_note"],
                     "provenance": {"source": "OperatorAsserted", "confidence": "High", "evidence": "t"}}
        }))
        .unwrap();
        ix.handle(Msg::Apply(a.clone().into()));
        ix.handle(Msg::Apply(g.clone().into()));
        let plan = all(&mut ix);
        let policy = plan.job(&id(Watched::Policy, "drafts-deny")).unwrap();
        let status = status_of(&policy.steps[0]);
        assert_eq!(status["violations"], 2, "{status}");
        assert_eq!(
            status["reachedBy"],
            serde_json::json!(["quickstart/second", "quickstart/vibe-coder"])
        );
        // One agent loses its grant: the next plan counts one, though only that agent
        // was re-evaluated.
        for job in &plan.jobs {
            ix.handle(report(job, |i| ok(20 + i as u64)));
        }
        ix.handle(Msg::Delete(
            Watched::Grant,
            crate::controller::msg::key_of(&g.metadata),
        ));
        let next = ix.plan(now());
        let policy = next.job(&id(Watched::Policy, "drafts-deny")).unwrap();
        assert_eq!(status_of(&policy.steps[0])["violations"], 1);
    }

    #[test]
    fn a_deleted_agent_has_its_bundle_removed_by_uid() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let plan = all(&mut ix);
        for job in &plan.jobs {
            ix.handle(report(job, |i| ok(30 + i as u64)));
        }
        let agent = ix
            .agents
            .get(&ObjKey::new("quickstart", "vibe-coder"))
            .cloned()
            .unwrap();
        ix.handle(Msg::Delete(
            Watched::Agent,
            crate::controller::msg::key_of(&agent.metadata),
        ));
        let next = ix.plan(now());
        let job = next.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        assert_eq!(
            job.steps,
            vec![Step::new(Op::DeleteConfigMap {
                name: "vibe-coder-mcpgov-bundle".into(),
                uid: "uid-30".into(),
            })]
        );
        // Planned once: a resync while the delete is in flight does not repeat it.
        assert!(
            all(&mut ix)
                .job(&id(Watched::Agent, "vibe-coder"))
                .is_none()
        );
    }
    #[test]
    fn a_removed_bundle_is_republished_and_a_relist_forgets_what_it_lacks() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let plan = all(&mut ix);
        for job in &plan.jobs {
            ix.handle(report(job, |i| ok(40 + i as u64)));
        }
        let cm_key = ObjKey::new("quickstart", "vibe-coder-mcpgov-bundle");
        let cm = ix.configmaps.get(&cm_key).cloned().unwrap();
        // Someone deletes the bundle: the Agent's next plan creates it again (revision
        // 1 again: nothing holds the old one).
        ix.handle(Msg::Delete(
            Watched::ConfigMap,
            crate::controller::msg::key_of(&cm.metadata),
        ));
        let next = ix.plan(now());
        let agent = next.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        assert!(
            matches!(&agent.steps[0].op, Op::CreateConfigMap(_)),
            "{agent:#?}"
        );
        let reasons: Vec<_> = agent.steps[0]
            .events
            .iter()
            .map(|e| e.notice.reason.as_str())
            .collect();
        assert_eq!(
            reasons,
            ["BundlePublished"],
            "a republished bundle is announced"
        );
        // A relist that no longer has the Grant: it is gone, and the Agent loses its
        // tools (and the Policy its violation) in the next plan.
        ix.handle(Msg::ListStart(Watched::Grant));
        ix.handle(Msg::ListDone(Watched::Grant));
        assert!(ix.grants.is_empty());
        let next = ix.plan(now());
        let agent = next.job(&id(Watched::Agent, "vibe-coder")).unwrap();
        let status = status_of(agent.steps.last().unwrap());
        assert_eq!(status["eligible"], 0, "{status}");
        assert_eq!(status["violations"], 0, "{status}");
    }

    #[test]
    fn a_new_generation_is_acknowledged_even_when_nothing_else_changed() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let plan = all(&mut ix);
        for job in &plan.jobs {
            ix.handle(report(job, |i| ok(50 + i as u64)));
        }
        let mut policy = ix
            .policies
            .get(&ObjKey::new("quickstart", "drafts-deny"))
            .cloned()
            .unwrap();
        policy.metadata.generation = Some(2);
        policy.metadata.resource_version = Some("60".into());
        ix.handle(Msg::Apply(policy.clone().into()));
        let next = ix.plan(now());
        assert_eq!(next.jobs.len(), 1, "{next:#?}");
        let status = status_of(&next.jobs[0].steps[0]);
        assert_eq!(status["observedGeneration"], 2);
        assert!(
            status["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["observedGeneration"] == 2)
        );
    }
    #[test]
    fn an_exception_expires_at_its_exact_instant_not_at_the_whole_second() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let mut g = ix
            .grants
            .get(&ObjKey::new("quickstart", "vibe-coder-notes"))
            .cloned()
            .unwrap();
        g.spec.expected_exceptions = vec![crate::crd::grant::ExpectedException {
            policy: "drafts-deny".into(),
            tool: None,
            resource: None,
            reason: "until the review".into(),
            owner: None,
            expires: Some("2026-12-01T12:00:00.5Z".into()),
        }];
        ix.handle(Msg::Apply(g.clone().into()));
        let violations = |ix: &mut Index, at: &str| {
            ix.dirty.all = true;
            let plan = ix.plan(at.parse().unwrap());
            let job = plan.job(&id(Watched::Agent, "vibe-coder")).unwrap().clone();
            for j in &plan.jobs {
                ix.handle(report(j, |i| ok(70 + i as u64)));
            }
            status_of(job.steps.last().unwrap())["violations"].clone()
        };
        assert_eq!(violations(&mut ix, "2026-12-01T12:00:00.4Z"), 0);
        // Re-evaluated 5 ms after the expiry (as the index schedules it): the status
        // time is the whole second, the judgement is not.
        assert_eq!(violations(&mut ix, "2026-12-01T12:00:00.505Z"), 1);
    }

    /// An object that no longer decodes is still there: a relist keeps its last good
    /// version (and the Agent its tools) rather than forgetting it, as when every
    /// event went through the index's own decoding.
    #[test]
    fn a_relist_keeps_the_last_good_version_of_a_malformed_object() {
        let mut ix = index();
        quickstart(&mut ix, "uid-a");
        let keys: Vec<ObjKey> = ix.grants.keys().cloned().collect();
        assert!(!keys.is_empty());
        ix.handle(Msg::ListStart(Watched::Grant));
        for k in &keys {
            ix.handle(Msg::Malformed(Watched::Grant, k.clone()));
        }
        ix.handle(Msg::ListDone(Watched::Grant));
        assert_eq!(ix.grants.keys().cloned().collect::<Vec<_>>(), keys);
        // Not re-listed at all: gone.
        ix.handle(Msg::ListStart(Watched::Grant));
        ix.handle(Msg::ListDone(Watched::Grant));
        assert!(ix.grants.is_empty());
    }

    /// Reports are jobs like any write: planned after a list came back, not planned
    /// again while in flight, held once written, and a failed write is rebuilt when
    /// its retry is due.
    #[test]
    fn reports_are_planned_as_jobs_and_answered_by_the_writer() {
        use crate::controller::reports::{Listed, Reports};
        let mut ix = index();
        ix.reports = Some(Reports::new(crate::reports::Api::PolicyReport));
        quickstart(&mut ix, "uid-a");
        ix.dirty.all = true;
        // What the API holds is not known yet: nothing is written before a list.
        assert!(ix.plan_reports(now()).is_empty());
        ix.plan(now());
        ix.handle(Msg::ReportsListed(Box::new(Listed(Ok(Default::default())))));
        assert!(
            ix.reports.as_ref().unwrap().owed(),
            "a list is followed by a pass"
        );
        let jobs = ix.plan_reports(now());
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        let job = &jobs[0];
        assert_eq!(job.object, id(Watched::Report, crate::names::REPORT_NAME));
        match &job.steps[0].op {
            Op::ApplyReport { report, .. } => {
                assert_eq!(report.metadata.namespace, "quickstart");
                assert!(report.summary.fail > 0, "{:?}", report.summary);
            }
            op => panic!("not a report write: {op:?}"),
        }
        assert!(!ix.reports.as_ref().unwrap().owed());
        // A change while the write is in flight: the same report is not planned again.
        ix.dirty
            .agents
            .insert(ObjKey::new("quickstart", "vibe-coder"));
        assert!(ix.plan_reports(now()).is_empty());
        // The write fails: its retry is scheduled, and once due the report is planned again.
        ix.handle(report(job, |_| {
            Err(Error::Api {
                code: Some(500),
                message: "boom".into(),
            })
        }));
        let key = (
            Watched::Report,
            ObjKey::new("quickstart", crate::names::REPORT_NAME),
        );
        let at = ix.retries.get_mut(&key).expect("a retry is scheduled");
        at.0 = std::time::Instant::now();
        ix.due_retries();
        assert!(ix.reports.as_ref().unwrap().owed());
        let again = ix.plan_reports(now());
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].steps, job.steps);
        // Written: held, so the next change that leaves it equal writes nothing.
        ix.handle(report(&again[0], |i| ok(60 + i as u64)));
        ix.dirty
            .agents
            .insert(ObjKey::new("quickstart", "vibe-coder"));
        assert!(ix.plan_reports(now()).is_empty());
        assert!(!ix.reports.as_ref().unwrap().owed());
    }

    /// The admission webhook and the MCP listener read a mirror fed by the index: every
    /// object the index stores or forgets must reach it (a generic store once applied
    /// to the engine directly, and the mirror saw crawls but no watched object).
    #[tokio::test]
    async fn every_object_the_index_stores_or_forgets_reaches_the_mirror() {
        let mut ix = index();
        let (feed, mirror) = crate::admission::mirror::spawn(
            ix.engine.config().clone(),
            Arc::new(AtomicBool::new(true)),
        );
        ix.feed = Some(feed);
        quickstart(&mut ix, "uid-a");
        let agent = ObjKey::new("quickstart", "vibe-coder");
        let counts = |e: &mcpgov_engine::Engine| {
            (
                e.agents().count(),
                e.grants().count(),
                e.policies().count(),
                e.servers().count(),
            )
        };
        let findings = |e: &mcpgov_engine::Engine| e.evaluator(now()).agent_findings(&agent);
        let caught_up = async |ix: &Index| {
            for _ in 0..500 {
                {
                    let m = mirror.state.lock().unwrap();
                    if counts(&m.engine) == counts(&ix.engine)
                        && findings(&m.engine) == findings(&ix.engine)
                    {
                        return true;
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            false
        };
        let (agents, grants, policies, servers) = counts(&ix.engine);
        assert!(agents > 0 && grants > 0 && policies > 0 && servers > 0);
        assert!(!findings(&ix.engine).is_empty(), "the quickstart violates");
        assert!(
            caught_up(&ix).await,
            "the mirror holds what the index holds"
        );
        // Forgetting: the Grants go, and with them the violation, in both.
        let grants: Vec<ObjKey> = ix.grants.keys().cloned().collect();
        for g in grants {
            ix.handle(Msg::Delete(Watched::Grant, g));
        }
        assert_eq!(counts(&ix.engine).1, 0);
        assert!(
            caught_up(&ix).await,
            "the mirror forgets what the index forgets"
        );
    }
}
