//! Condition types and reasons (constants, never formatted from debug strings), and the
//! merge that keeps `lastTransitionTime` unless a condition's status flips.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const COMPLIANT: &str = "Compliant";
pub const BUNDLE_PUBLISHED: &str = "BundlePublished";
pub const RESOLVED: &str = "Resolved";
pub const ACTIVE: &str = "Active";
pub const CRAWLED: &str = "Crawled";

pub const REASON_RECONCILED: &str = "Reconciled";
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
pub const REASON_NO_VIOLATIONS: &str = "NoViolations";
pub const REASON_VIOLATIONS_FOUND: &str = "ViolationsFound";
pub const REASON_PUBLISHED: &str = "Published";
pub const REASON_DISABLED: &str = "Disabled";
pub const REASON_TOO_LARGE: &str = "BundleTooLarge";
pub const REASON_PUBLISH_FAILED: &str = "PublishFailed";
/// The bundle's ConfigMap name is taken by an object mcpgov did not create for this
/// Agent: it is never written or deleted.
pub const REASON_CONFIGMAP_CONFLICT: &str = "ConfigMapConflict";
pub const REASON_ALL_RESOLVED: &str = "AllResolved";
pub const REASON_AGENT_NOT_FOUND: &str = "AgentNotFound";
pub const REASON_GOVERNING: &str = "Governing";
pub const REASON_ORPHAN: &str = "Orphan";
pub const REASON_NOT_CRAWLED: &str = "NotCrawled";

/// A condition as computed, before it meets the one already in status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

pub fn cond(
    type_: &'static str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
) -> Desired {
    Desired {
        type_,
        status,
        reason: reason.to_string(),
        message: message.into(),
    }
}

/// kstatus' pair: never Reconciling once we have written status; Stalled when the
/// object can never become ready without a change by its author.
pub fn kstatus(stalled: Option<&str>) -> [Desired; 2] {
    [
        cond(RECONCILING, false, REASON_RECONCILED, ""),
        match stalled {
            Some(msg) => cond(STALLED, true, REASON_INVALID_SPEC, msg),
            None => cond(STALLED, false, REASON_RECONCILED, ""),
        },
    ]
}

fn status_str(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The conditions to write: `lastTransitionTime` comes from `current` unless the
/// status flips, in which case it is `now`. Sorted by type for stable comparison.
pub fn merge(
    current: &[Condition],
    desired: Vec<Desired>,
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    let mut out: Vec<Condition> = desired
        .into_iter()
        .map(|d| {
            let prev = current.iter().find(|c| c.type_ == d.type_);
            let status = status_str(d.status).to_string();
            let last_transition_time = match prev {
                Some(p) if p.status == status => p.last_transition_time.clone(),
                _ => now.clone(),
            };
            Condition {
                type_: d.type_.to_string(),
                status,
                reason: d.reason,
                message: d.message,
                observed_generation: generation,
                last_transition_time,
            }
        })
        .collect();
    out.sort_by(|a, b| a.type_.cmp(&b.type_));
    out
}

/// Whether a condition of `type_` flipped from `current` to `next`.
pub fn flipped(current: &[Condition], next: &[Condition], type_: &str) -> Option<bool> {
    let now = next.iter().find(|c| c.type_ == type_)?;
    let was = current.iter().find(|c| c.type_ == type_);
    if was.is_some_and(|w| w.status == now.status) {
        return None;
    }
    Some(now.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let first = merge(
            &[],
            vec![cond(READY, true, "A", "")],
            Some(1),
            &t("2026-01-01T00:00:00Z"),
        );
        let same = merge(
            &first,
            vec![cond(READY, true, "B", "m")],
            Some(2),
            &t("2026-02-01T00:00:00Z"),
        );
        assert_eq!(same[0].last_transition_time, t("2026-01-01T00:00:00Z"));
        assert_eq!(same[0].reason, "B");
        let flip = merge(
            &same,
            vec![cond(READY, false, "C", "")],
            Some(2),
            &t("2026-03-01T00:00:00Z"),
        );
        assert_eq!(flip[0].last_transition_time, t("2026-03-01T00:00:00Z"));
        assert_eq!(flipped(&same, &flip, READY), Some(false));
        assert_eq!(flipped(&flip, &flip, READY), None);
    }
}
