//! The writer's queue: jobs wait in arrival order; a job whose object already has one
//! in flight waits for it (never two writes of one object at once, so they land in
//! plan order); a later job for an object still queued is merged into it (`Job::merge`),
//! so a burst of changes to one object costs one write of its last state. Namespaces
//! share the writer: while several have work, none has more than its share of the
//! slots in flight, so one tenant's burst of writes does not hold up another's.
//! Agent jobs (bundle and status: what agents and their gateways read) and the
//! crawler's catalog status go before the status of Grants, Policies and MCPServers,
//! which start once no Agent job is queued or in flight: a status people read (an
//! MCPServer Ready, a Policy's violations) never shows before the Agents' bundles and
//! status that the same change moved, as when the controller wrote one at a time.

use super::jobs::{Job, ObjectId, Op};
use super::kind::Watched;
use std::collections::{HashMap, VecDeque};

/// While several namespaces have work, each has at most this many jobs in flight (or
/// its share of the slots, if smaller). The API server's time is what the writes share:
/// a tenant's burst at 8 of 16 slots made another's single job wait about as long as
/// the whole burst; at 2 it waits for two jobs of the burst.
const CONTENDED: usize = 2;

/// Queued jobs are started by class, then in arrival order.
const CLASSES: usize = 2;

/// A job's class: 0 (an Agent's bundle and status, a crawled catalog) starts before 1
/// (the rest: status people read).
fn class(job: &Job) -> usize {
    let catalog = job.steps.iter().any(|s| {
        matches!(s.op, Op::Status { manager, .. } if manager == crate::names::CATALOG_FIELD_MANAGER)
    });
    match job.object.kind {
        Watched::Agent => 0,
        _ if catalog => 0,
        _ => 1,
    }
}

#[derive(Default, Debug)]
pub struct Queue {
    queued: HashMap<ObjectId, Job>,
    /// Arrival order, per class.
    order: [VecDeque<ObjectId>; CLASSES],
    /// Objects with a job in flight, and that job's class.
    busy: HashMap<ObjectId, usize>,
    /// Jobs in flight per class.
    running_class: [usize; CLASSES],
    /// Jobs queued or in flight per namespace.
    work: HashMap<String, usize>,
    /// Jobs in flight per namespace.
    running: HashMap<String, usize>,
}

impl Queue {
    pub fn push(&mut self, job: Job) {
        match self.queued.get_mut(&job.object) {
            Some(waiting) => waiting.merge(job),
            None => {
                *self
                    .work
                    .entry(job.object.key.namespace.clone())
                    .or_default() += 1;
                self.order[class(&job)].push_back(job.object.clone());
                self.queued.insert(job.object.clone(), job);
            }
        }
    }

    /// The oldest queued job of the first class with work whose object has nothing in
    /// flight and whose namespace has fewer than its share of `slots` in flight (a
    /// class starts nothing while an earlier one has jobs queued or in flight); its
    /// object is busy until `done`.
    pub fn start(&mut self, slots: usize) -> Option<Job> {
        let share = match self.work.len() {
            0 | 1 => slots.max(1),
            n => (slots / n).clamp(1, CONTENDED),
        };
        let mut found = None;
        for (class, order) in self.order.iter().enumerate() {
            let at = order.iter().position(|id| {
                !self.busy.contains_key(id)
                    && self.running.get(&id.key.namespace).copied().unwrap_or(0) < share
            });
            if let Some(at) = at {
                found = Some((class, at));
                break;
            }
            if !order.is_empty() || self.running_class[class] > 0 {
                return None;
            }
        }
        let (class, at) = found?;
        let id = self.order[class].remove(at)?;
        let job = self.queued.remove(&id)?;
        *self.running.entry(id.key.namespace.clone()).or_default() += 1;
        self.running_class[class] += 1;
        self.busy.insert(id, class);
        Some(job)
    }

    pub fn done(&mut self, object: &ObjectId) {
        let Some(class) = self.busy.remove(object) else {
            return;
        };
        self.running_class[class] -= 1;
        let ns = &object.key.namespace;
        for counts in [&mut self.running, &mut self.work] {
            if let Some(n) = counts.get_mut(ns) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(ns);
                }
            }
        }
    }

    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    pub fn in_flight(&self) -> usize {
        self.busy.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::jobs::Step;
    use crate::controller::kind::Watched;
    use mcpgov_engine::ObjKey;

    fn job(name: &str, v: i64) -> Job {
        let mut j = Job::new(ObjectId::new(Watched::Grant, ObjKey::new("t", name)));
        j.steps.push(Step::new(Op::Status {
            manager: "mcpgov",
            label: "Grant",
            status: serde_json::json!({ "v": v }),
        }));
        j
    }

    fn value(j: &Job) -> i64 {
        match &j.steps[0].op {
            Op::Status { status, .. } => status["v"].as_i64().unwrap(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn one_write_per_object_in_flight_and_the_last_state_wins() {
        let mut q = Queue::default();
        q.push(job("a", 1));
        q.push(job("b", 1));
        let first = q.start(16).unwrap();
        assert_eq!((first.object.key.name.as_str(), value(&first)), ("a", 1));
        // Two more states of a while its first write is in flight: they wait, merged.
        q.push(job("a", 2));
        q.push(job("a", 3));
        assert_eq!(q.queued(), 2);
        let second = q.start(16).unwrap();
        assert_eq!(second.object.key.name, "b", "a is busy: b goes first");
        assert!(
            q.start(16).is_none(),
            "nothing else may start while a is in flight"
        );
        q.done(&first.object);
        let third = q.start(16).unwrap();
        assert_eq!((third.object.key.name.as_str(), value(&third)), ("a", 3));
        assert_eq!(
            third.steps.len(),
            1,
            "state 2 was superseded, never written"
        );
        assert_eq!(q.in_flight(), 2);
        assert!(q.start(16).is_none());
    }

    #[test]
    fn other_status_waits_for_agent_jobs_and_crawled_catalogs_queued_later() {
        let mut q = Queue::default();
        q.push(job("g1", 1));
        q.push(job("g2", 1));
        let mut agent = job("a", 1);
        agent.object.kind = Watched::Agent;
        q.push(agent);
        let mut catalog = job("s", 1);
        catalog.object.kind = Watched::MCPServer;
        if let Op::Status { manager, .. } = &mut catalog.steps[0].op {
            *manager = crate::names::CATALOG_FIELD_MANAGER;
        }
        q.push(catalog);
        let mut server = job("s2", 1);
        server.object.kind = Watched::MCPServer;
        q.push(server);
        let first: Vec<Job> = std::iter::from_fn(|| q.start(16)).collect();
        let names: Vec<String> = first.iter().map(|j| j.object.to_string()).collect();
        assert_eq!(names, ["Agent t/a", "MCPServer t/s"]);
        // The rest waits for them, though slots are free.
        q.done(&first[0].object);
        assert!(
            q.start(16).is_none(),
            "the catalog write is still in flight"
        );
        q.done(&first[1].object);
        let started: Vec<String> = std::iter::from_fn(|| q.start(16))
            .map(|j| j.object.to_string())
            .collect();
        assert_eq!(started, ["Grant t/g1", "Grant t/g2", "MCPServer t/s2"]);
    }

    #[test]
    fn a_namespace_with_a_burst_gets_its_share_of_the_slots_not_all() {
        let job_in = |ns: &str, name: &str| {
            let mut j = job(name, 1);
            j.object.key.namespace = ns.into();
            j
        };
        let mut q = Queue::default();
        for i in 0..6 {
            q.push(job_in("attacker", &format!("bot-{i}")));
        }
        q.push(job_in("victim", "writer"));
        // Four slots, two namespaces with work: two each, the victim's job starts
        // though four of the attacker's came first.
        let started: Vec<String> = std::iter::from_fn(|| q.start(4))
            .map(|j| format!("{}/{}", j.object.key.namespace, j.object.key.name))
            .collect();
        assert_eq!(
            started,
            ["attacker/bot-0", "attacker/bot-1", "victim/writer"]
        );
        // With sixteen slots, the same: two each while both have work.
        let mut q = Queue::default();
        for i in 0..6 {
            q.push(job_in("attacker", &format!("bot-{i}")));
        }
        q.push(job_in("victim", "writer"));
        assert_eq!(std::iter::from_fn(|| q.start(16)).count(), 3);
        // Alone, a namespace may take every slot.
        let mut q = Queue::default();
        for i in 0..6 {
            q.push(job_in("attacker", &format!("bot-{i}")));
        }
        assert_eq!(std::iter::from_fn(|| q.start(4)).count(), 4);
    }
}
