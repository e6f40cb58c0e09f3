//! What a plan asks the writer to do, and what the writer reports back. A job holds the
//! steps for one object (an Agent's bundle ConfigMaps and then its status; a Grant's
//! status; ...), run in order by the writer; events go out after their step succeeded.

use super::events::Notice;
use super::kind::Watched;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use mcpgov_engine::ObjKey;

/// One API object the writer may write: never two writes of it in flight.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    pub kind: Watched,
    pub key: ObjKey,
}

impl ObjectId {
    pub fn new(kind: Watched, key: ObjKey) -> Self {
        ObjectId { kind, key }
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind.name(), self.key)
    }
}

/// What one step writes: a later step with the same target replaces a queued one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The job object's status, under a field manager.
    Status(&'static str),
    /// A ConfigMap in the job object's namespace.
    ConfigMap(String),
    /// The report in the job object's namespace.
    Report,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Server-side apply of the job object's status; `label` counts it in metrics.
    Status {
        manager: &'static str,
        label: &'static str,
        status: serde_json::Value,
    },
    /// Create a bundle ConfigMap (a taken name fails with `Error::Taken`).
    CreateConfigMap(Box<ConfigMap>),
    /// Update one of our bundle ConfigMaps (pinned to the uid it carries, if any).
    ApplyConfigMap(Box<ConfigMap>),
    /// Delete one of our bundle ConfigMaps, only while it is still the object `uid`.
    DeleteConfigMap { name: String, uid: String },
    /// Server-side apply of our report in the job object's namespace.
    ApplyReport {
        api: crate::reports::Api,
        report: Box<crate::reports::Report>,
    },
    /// Delete our report in the job object's namespace, only while it is still the
    /// object `uid` (when known).
    DeleteReport {
        api: crate::reports::Api,
        uid: Option<String>,
    },
}

impl Op {
    /// The same op with a ConfigMap in the form the index holds (`bundles::held`).
    pub fn held(self) -> Op {
        match self {
            Op::CreateConfigMap(cm) => Op::CreateConfigMap(Box::new(super::bundles::held(*cm))),
            Op::ApplyConfigMap(cm) => Op::ApplyConfigMap(Box::new(super::bundles::held(*cm))),
            op => op,
        }
    }

    pub fn target(&self) -> Target {
        match self {
            Op::Status { manager, .. } => Target::Status(manager),
            Op::CreateConfigMap(cm) | Op::ApplyConfigMap(cm) => {
                Target::ConfigMap(cm.metadata.name.clone().unwrap_or_default())
            }
            Op::DeleteConfigMap { name, .. } => Target::ConfigMap(name.clone()),
            Op::ApplyReport { .. } | Op::DeleteReport { .. } => Target::Report,
        }
    }

    /// The object this step writes (a ConfigMap is its own object).
    pub fn object(&self, job: &ObjectId) -> ObjectId {
        match self.target() {
            Target::Status(_) | Target::Report => job.clone(),
            Target::ConfigMap(name) => {
                ObjectId::new(Watched::ConfigMap, ObjKey::new(&job.key.namespace, name))
            }
        }
    }
}

/// An Event about `regarding`, published once its step succeeded.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub regarding: ObjectReference,
    pub notice: Notice,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub op: Op,
    pub events: Vec<Event>,
}

impl Step {
    pub fn new(op: Op) -> Self {
        Step {
            op,
            events: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub object: ObjectId,
    pub steps: Vec<Step>,
}

impl Job {
    pub fn new(object: ObjectId) -> Self {
        Job {
            object,
            steps: Vec::new(),
        }
    }

    /// Fold a later job of the same object into this queued one: its steps replace the
    /// queued steps with the same target (keeping their events: the transitions they
    /// announce did happen in the index, but one reason only once, the latest), the
    /// others stay first, in order.
    pub fn merge(&mut self, later: Job) {
        debug_assert_eq!(self.object, later.object);
        for mut step in later.steps {
            let target = step.op.target();
            if let Some(i) = self.steps.iter().position(|s| s.op.target() == target) {
                let old = self.steps.remove(i);
                let mut events: Vec<Event> = old
                    .events
                    .into_iter()
                    .filter(|e| {
                        !step
                            .events
                            .iter()
                            .any(|n| n.notice.reason == e.notice.reason)
                    })
                    .collect();
                events.append(&mut step.events);
                step.events = events;
            }
            self.steps.push(step);
        }
    }
}

/// What became of one step (a ConfigMap's bundle bytes replaced by their digest).
#[derive(Clone, Debug)]
pub struct Done {
    pub object: ObjectId,
    pub op: Op,
    pub result: Result<Written, super::writer::Error>,
}

/// What the API server answered to a write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub resource_version: Option<String>,
    pub uid: Option<String>,
}

/// The writer's answer for one job: each step's outcome, in order (after a failure the
/// remaining steps are `NotAttempted`).
#[derive(Clone, Debug)]
pub struct Report {
    pub job: ObjectId,
    pub steps: Vec<Done>,
}

#[cfg(test)]
mod tests {
    use super::super::events::EventReason;
    use super::*;

    fn status(v: i64) -> Step {
        Step::new(Op::Status {
            manager: "mcpgov",
            label: "Agent",
            status: serde_json::json!({ "v": v }),
        })
    }

    fn cm(name: &str, rev: &str) -> Step {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.annotations = Some([("rev".to_string(), rev.to_string())].into());
        Step::new(Op::ApplyConfigMap(Box::new(cm)))
    }

    fn notice(reason: EventReason) -> Event {
        Event {
            regarding: ObjectReference::default(),
            notice: Notice {
                warning: false,
                reason,
                action: "Reconcile".into(),
                note: String::new(),
            },
        }
    }

    #[test]
    fn a_later_job_replaces_steps_by_target_and_keeps_the_rest_in_order() {
        let id = ObjectId::new(Watched::Agent, ObjKey::new("t", "a"));
        let mut queued = Job::new(id.clone());
        let mut s1 = status(1);
        s1.events.push(notice(EventReason::ViolationFound));
        queued.steps = vec![cm("a-b", "2"), s1];
        // A later plan only changes status: the queued ConfigMap write must survive.
        let mut later = Job::new(id.clone());
        let mut s2 = status(2);
        s2.events.push(notice(EventReason::ViolationsCleared));
        later.steps = vec![s2];
        queued.merge(later);
        assert_eq!(queued.steps.len(), 2);
        assert_eq!(queued.steps[0], cm("a-b", "2"));
        assert_eq!(
            queued.steps[1].op,
            status(2).op,
            "the later status wins, after the bundle it reports"
        );
        let reasons: Vec<_> = queued.steps[1]
            .events
            .iter()
            .map(|e| e.notice.reason.as_str())
            .collect();
        assert_eq!(reasons, ["ViolationFound", "ViolationsCleared"]);
        // Found again before any of it was written: each reason once, the latest last.
        let mut later = Job::new(id.clone());
        let mut s3 = status(3);
        s3.events.push(notice(EventReason::ViolationFound));
        later.steps = vec![s3];
        queued.merge(later);
        let reasons: Vec<_> = queued.steps[1]
            .events
            .iter()
            .map(|e| e.notice.reason.as_str())
            .collect();
        assert_eq!(reasons, ["ViolationsCleared", "ViolationFound"]);
        // A newer bundle replaces the queued one and stays before the status.
        let mut later = Job::new(id);
        later.steps = vec![cm("a-b", "3"), status(3)];
        queued.merge(later);
        assert_eq!(queued.steps, {
            let mut s = status(3);
            s.events = queued.steps[1].events.clone();
            vec![cm("a-b", "3"), s]
        });
    }
}
