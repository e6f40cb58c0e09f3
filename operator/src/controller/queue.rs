//! The writer's queue: jobs wait in arrival order; a job whose object already has one
//! in flight waits for it (never two writes of one object at once, so they land in
//! plan order); a later job for an object still queued is merged into it (`Job::merge`),
//! so a burst of changes to one object costs one write of its last state.

use super::jobs::{Job, ObjectId};
use std::collections::{HashMap, HashSet, VecDeque};

#[derive(Default, Debug)]
pub struct Queue {
    queued: HashMap<ObjectId, Job>,
    order: VecDeque<ObjectId>,
    busy: HashSet<ObjectId>,
}

impl Queue {
    pub fn push(&mut self, job: Job) {
        match self.queued.get_mut(&job.object) {
            Some(waiting) => waiting.merge(job),
            None => {
                self.order.push_back(job.object.clone());
                self.queued.insert(job.object.clone(), job);
            }
        }
    }

    /// The oldest queued job whose object has nothing in flight; its object is busy
    /// until `done`.
    pub fn start(&mut self) -> Option<Job> {
        let at = self.order.iter().position(|id| !self.busy.contains(id))?;
        let id = self.order.remove(at)?;
        let job = self.queued.remove(&id)?;
        self.busy.insert(id);
        Some(job)
    }

    pub fn done(&mut self, object: &ObjectId) {
        self.busy.remove(object);
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
    use crate::controller::jobs::{Op, Step};
    use crate::controller::watch::Watched;
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
        let first = q.start().unwrap();
        assert_eq!((first.object.key.name.as_str(), value(&first)), ("a", 1));
        // Two more states of a while its first write is in flight: they wait, merged.
        q.push(job("a", 2));
        q.push(job("a", 3));
        assert_eq!(q.queued(), 2);
        let second = q.start().unwrap();
        assert_eq!(second.object.key.name, "b", "a is busy: b goes first");
        assert!(
            q.start().is_none(),
            "nothing else may start while a is in flight"
        );
        q.done(&first.object);
        let third = q.start().unwrap();
        assert_eq!((third.object.key.name.as_str(), value(&third)), ("a", 3));
        assert_eq!(
            third.steps.len(),
            1,
            "state 2 was superseded, never written"
        );
        assert_eq!(q.in_flight(), 2);
        assert!(q.start().is_none());
    }
}
