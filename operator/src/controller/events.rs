//! Events (`events.k8s.io/v1`) with a series key that includes the note.
//!
//! kube-runtime's recorder folds every Event with the same object, type, reason and action
//! into one series and patches only its count, so the text stays the first one's: the
//! cluster kept saying `revision 1` while the bundle ConfigMap was at revision 3. Here,
//! as in client-go's recorder, the note is part of the key: an Event whose text changed is
//! a new Event, and only an exact repeat (within the TTL) bumps a series.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use std::collections::HashMap;

/// A repeat later than this after the last one starts a new Event (as kube-runtime's).
pub const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);
/// Series remembered at most; past it the oldest are forgotten (their next repeat is a
/// new Event, which is harmless).
const MAX_SERIES: usize = 4096;
/// The API server's limit on `note` (bytes).
const MAX_NOTE: usize = 1024;

mcpgov_engine::wire_enum! {
    /// Why the controller publishes an Event: its `reason`. The names are an interface
    /// (kubectl, alerts, e2e tests read them): never rename one.
    pub enum EventReason {
        ViolationFound = "ViolationFound",
        ViolationsCleared = "ViolationsCleared",
        BundlePublished = "BundlePublished",
        ReferenceBroken = "ReferenceBroken",
        ReferencesResolved = "ReferencesResolved",
    }
}

/// An Event to publish, before it is keyed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub warning: bool,
    pub reason: EventReason,
    pub action: String,
    pub note: String,
}

/// What makes two Events the same one repeated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    warning: bool,
    reason: EventReason,
    action: String,
    note: String,
}

impl Key {
    pub fn new(notice: &Notice, regarding: &ObjectReference) -> Self {
        Key {
            api_version: regarding.api_version.clone(),
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
            warning: notice.warning,
            reason: notice.reason,
            action: notice.action.clone(),
            note: truncate(&notice.note, MAX_NOTE).to_string(),
        }
    }
}

/// What to send for an Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// A new Event object.
    Create,
    /// A repeat of the Event `name`: patch its series to `count`.
    Repeat { name: String, count: i32 },
}

#[derive(Clone, Debug)]
struct Seen {
    name: String,
    count: i32,
    last: Timestamp,
}

/// The series this replica has published, by key.
#[derive(Debug, Default)]
pub struct Series {
    seen: HashMap<Key, Seen>,
}

impl Series {
    /// Whether an Event with this key is new or repeats one published within the TTL.
    pub fn next(&mut self, key: &Key, now: Timestamp) -> Next {
        self.seen.retain(|_, s| s.last + SERIES_TTL > now);
        match self.seen.get(key) {
            Some(s) => Next::Repeat {
                name: s.name.clone(),
                count: s.count + 1,
            },
            None => Next::Create,
        }
    }

    /// Remember a published Event (`count` 1 for a new one).
    pub fn published(&mut self, key: Key, name: String, count: i32, now: Timestamp) {
        if self.seen.len() >= MAX_SERIES
            && !self.seen.contains_key(&key)
            && let Some(oldest) = self
                .seen
                .iter()
                .min_by_key(|(_, s)| s.last)
                .map(|(k, _)| k.clone())
        {
            self.seen.remove(&oldest);
        }
        self.seen.insert(
            key,
            Seen {
                name,
                count,
                last: now,
            },
        );
    }

    /// Forget a series whose Event is gone (e.g. expired on the server).
    pub fn forget(&mut self, key: &Key) {
        self.seen.remove(key);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen.len()
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A new Event object about `regarding`, named like kube-runtime's (`<object>.<nanos hex>`).
pub fn new_event(
    notice: &Notice,
    regarding: &ObjectReference,
    controller: &str,
    instance: &str,
    now: Timestamp,
) -> K8sEvent {
    K8sEvent {
        action: Some(notice.action.clone()),
        reason: Some(notice.reason.to_string()),
        note: Some(truncate(&notice.note, MAX_NOTE).to_string()),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding.clone()),
        metadata: ObjectMeta {
            namespace: regarding.namespace.clone(),
            name: Some(format!(
                "{}.{:x}",
                regarding.name.as_deref().unwrap_or(controller),
                now.as_nanosecond()
            )),
            ..Default::default()
        },
        reporting_controller: Some(controller.to_string()),
        reporting_instance: Some(instance.to_string()),
        type_: Some(if notice.warning { "Warning" } else { "Normal" }.into()),
        ..Default::default()
    }
}

/// The merge patch that records one more repeat of an Event.
pub fn series_patch(count: i32, now: Timestamp) -> serde_json::Value {
    serde_json::json!({
        "series": EventSeries {
            count,
            last_observed_time: MicroTime(now),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, uid: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("mcpgov.io/v1alpha1".into()),
            kind: Some("Agent".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    fn notice(reason: EventReason, note: &str) -> Notice {
        Notice {
            warning: false,
            reason,
            action: "Reconcile".into(),
            note: note.into(),
        }
    }

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    /// Publish through the series as the writer does; returns what was sent.
    fn publish(s: &mut Series, n: &Notice, obj: &ObjectReference, now: Timestamp) -> Next {
        let key = Key::new(n, obj);
        let next = s.next(&key, now);
        match &next {
            Next::Create => {
                let ev = new_event(n, obj, "mcpgov", "pod-0", now);
                s.published(key, ev.metadata.name.unwrap(), 1, now);
            }
            Next::Repeat { name, count } => s.published(key, name.clone(), *count, now),
        }
        next
    }

    #[test]
    fn a_changed_note_is_a_new_event_not_a_stale_series() {
        let mut s = Series::default();
        let a = agent("a", "u1");
        let r1 = notice(
            EventReason::BundlePublished,
            "a-mcpgov-bundle revision 1 sha256:aa",
        );
        let r2 = notice(
            EventReason::BundlePublished,
            "a-mcpgov-bundle revision 2 sha256:bb",
        );
        let r3 = notice(
            EventReason::BundlePublished,
            "a-mcpgov-bundle revision 3 sha256:cc",
        );
        assert_eq!(publish(&mut s, &r1, &a, t(0)), Next::Create);
        assert_eq!(publish(&mut s, &r2, &a, t(1)), Next::Create);
        assert_eq!(publish(&mut s, &r3, &a, t(2)), Next::Create);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn an_exact_repeat_counts_up_one_series() {
        let mut s = Series::default();
        let a = agent("a", "u1");
        let n = notice(EventReason::ViolationFound, "1 deny-policy violation(s)");
        assert_eq!(publish(&mut s, &n, &a, t(0)), Next::Create);
        let Next::Repeat { name, count } = publish(&mut s, &n, &a, t(10)) else {
            panic!("a repeat")
        };
        assert_eq!(count, 2);
        assert!(name.starts_with("a."), "{name}");
        assert_eq!(
            publish(&mut s, &n, &a, t(20)),
            Next::Repeat { name, count: 3 }
        );
    }

    #[test]
    fn type_reason_object_and_uid_separate_series() {
        let mut s = Series::default();
        let n = notice(EventReason::ViolationFound, "1 deny-policy violation(s)");
        let warn = Notice {
            warning: true,
            ..n.clone()
        };
        assert_eq!(publish(&mut s, &n, &agent("a", "u1"), t(0)), Next::Create);
        assert_eq!(
            publish(&mut s, &warn, &agent("a", "u1"), t(0)),
            Next::Create
        );
        let other = notice(EventReason::ViolationsCleared, "1 deny-policy violation(s)");
        assert_eq!(
            publish(&mut s, &other, &agent("a", "u1"), t(0)),
            Next::Create
        );
        assert_eq!(publish(&mut s, &n, &agent("b", "u2"), t(0)), Next::Create);
        // Deleted and recreated under the same name: a new object, a new Event.
        assert_eq!(publish(&mut s, &n, &agent("a", "u3"), t(0)), Next::Create);
    }

    #[test]
    fn a_repeat_after_the_ttl_is_a_new_event() {
        let mut s = Series::default();
        let a = agent("a", "u1");
        let n = notice(EventReason::ReferenceBroken, "1 reference(s) unresolved");
        assert_eq!(publish(&mut s, &n, &a, t(0)), Next::Create);
        let later = t(SERIES_TTL.as_secs() + 1);
        assert_eq!(publish(&mut s, &n, &a, later), Next::Create);
        assert_eq!(s.len(), 1, "expired series are dropped");
    }

    #[test]
    fn forgotten_series_start_again() {
        let mut s = Series::default();
        let a = agent("a", "u1");
        let n = notice(EventReason::ViolationFound, "2 deny-policy violation(s)");
        publish(&mut s, &n, &a, t(0));
        s.forget(&Key::new(&n, &a));
        assert_eq!(publish(&mut s, &n, &a, t(1)), Next::Create);
    }

    #[test]
    fn memory_is_bounded() {
        let mut s = Series::default();
        for i in 0..(MAX_SERIES + 10) {
            let n = notice(EventReason::BundlePublished, &format!("revision {i}"));
            publish(&mut s, &n, &agent("a", "u1"), t(i as i64 / 100));
        }
        assert_eq!(s.len(), MAX_SERIES);
    }

    #[test]
    fn notes_are_cut_to_the_api_limit_on_a_char_boundary() {
        let long = "é".repeat(MAX_NOTE);
        let ev = new_event(
            &notice(EventReason::ReferenceBroken, &long),
            &agent("a", "u1"),
            "mcpgov",
            "i",
            t(0),
        );
        let note = ev.note.unwrap();
        assert!(note.len() <= MAX_NOTE && note.len() >= MAX_NOTE - 1);
        assert_eq!(ev.type_.as_deref(), Some("Normal"));
        assert_eq!(ev.metadata.namespace.as_deref(), Some("ns"));
        let p = series_patch(2, t(5));
        assert_eq!(p["series"]["count"], 2);
        assert!(p["series"]["lastObservedTime"].is_string(), "{p}");
        assert_eq!(p.as_object().unwrap().len(), 1, "{p}");
    }

    /// The reasons the controller's Events carried as literals before they were typed.
    #[test]
    fn event_reasons_write_their_old_strings() {
        let old = [
            "ViolationFound",
            "ViolationsCleared",
            "BundlePublished",
            "ReferenceBroken",
            "ReferencesResolved",
        ];
        assert_eq!(EventReason::NAMES, old);
        for (r, old) in EventReason::ALL.iter().zip(old) {
            let ev = new_event(&notice(*r, "n"), &agent("a", "u1"), "mcpgov", "i", t(0));
            assert_eq!(ev.reason.as_deref(), Some(old));
            assert_eq!(old.parse::<EventReason>().unwrap(), *r);
        }
    }
}
