//! Condition types and reasons (constants, never formatted from debug strings), and the
//! merge that keeps `lastTransitionTime` unless a condition's status flips.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use mcpgov_engine::FindingReason;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const COMPLIANT: &str = "Compliant";
pub const BUNDLE_PUBLISHED: &str = "BundlePublished";
pub const RESOLVED: &str = "Resolved";
pub const ACTIVE: &str = "Active";
pub const CRAWLED: &str = "Crawled";

mcpgov_engine::wire_enum! {
    /// The controller's own condition reasons. The names are an interface (kubectl,
    /// alerts, e2e tests read them): never rename one.
    pub enum ConditionReason {
        Reconciled = "Reconciled",
        InvalidSpec = "InvalidSpec",
        NoViolations = "NoViolations",
        ViolationsFound = "ViolationsFound",
        Published = "Published",
        Disabled = "Disabled",
        BundleTooLarge = "BundleTooLarge",
        PublishFailed = "PublishFailed",
        /// The bundle's ConfigMap name is taken by an object mcpgov did not create for
        /// this Agent: it is never written or deleted.
        ConfigMapConflict = "ConfigMapConflict",
        AllResolved = "AllResolved",
        Governing = "Governing",
        Orphan = "Orphan",
        NotCrawled = "NotCrawled",
        CrawlSucceeded = "CrawlSucceeded",
    }
}

/// A condition's reason: the controller's own, a finding's (the first problem of a
/// Grant or Policy), or the crawler's classification of a failed crawl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Condition(ConditionReason),
    Finding(FindingReason),
    Crawl(&'static str),
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Condition(r) => r.as_str(),
            Reason::Finding(r) => r.as_str(),
            Reason::Crawl(r) => r,
        }
    }
}

impl From<ConditionReason> for Reason {
    fn from(r: ConditionReason) -> Self {
        Reason::Condition(r)
    }
}

impl From<FindingReason> for Reason {
    fn from(r: FindingReason) -> Self {
        Reason::Finding(r)
    }
}

/// A condition as computed, before it meets the one already in status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    pub type_: &'static str,
    pub status: bool,
    pub reason: Reason,
    pub message: String,
}

pub fn cond(
    type_: &'static str,
    status: bool,
    reason: impl Into<Reason>,
    message: impl Into<String>,
) -> Desired {
    Desired {
        type_,
        status,
        reason: reason.into(),
        message: message.into(),
    }
}

/// kstatus' pair: never Reconciling once we have written status; Stalled when the
/// object can never become ready without a change by its author.
pub fn kstatus(stalled: Option<&str>) -> [Desired; 2] {
    [
        cond(RECONCILING, false, ConditionReason::Reconciled, ""),
        match stalled {
            Some(msg) => cond(STALLED, true, ConditionReason::InvalidSpec, msg),
            None => cond(STALLED, false, ConditionReason::Reconciled, ""),
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
                reason: d.reason.as_str().to_string(),
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
            vec![cond(READY, true, ConditionReason::Reconciled, "")],
            Some(1),
            &t("2026-01-01T00:00:00Z"),
        );
        let same = merge(
            &first,
            vec![cond(READY, true, ConditionReason::Published, "m")],
            Some(2),
            &t("2026-02-01T00:00:00Z"),
        );
        assert_eq!(same[0].last_transition_time, t("2026-01-01T00:00:00Z"));
        assert_eq!(same[0].reason, "Published");
        let flip = merge(
            &same,
            vec![cond(READY, false, FindingReason::InvalidUri, "")],
            Some(2),
            &t("2026-03-01T00:00:00Z"),
        );
        assert_eq!(flip[0].last_transition_time, t("2026-03-01T00:00:00Z"));
        assert_eq!(flip[0].reason, "InvalidURI");
        assert_eq!(flipped(&same, &flip, READY), Some(false));
        assert_eq!(flipped(&flip, &flip, READY), None);
    }

    /// The names conditions carried as string constants before they were typed.
    #[test]
    fn condition_reasons_write_their_old_strings() {
        let old = [
            "Reconciled",
            "InvalidSpec",
            "NoViolations",
            "ViolationsFound",
            "Published",
            "Disabled",
            "BundleTooLarge",
            "PublishFailed",
            "ConfigMapConflict",
            "AllResolved",
            "Governing",
            "Orphan",
            "NotCrawled",
            "CrawlSucceeded",
        ];
        assert_eq!(ConditionReason::NAMES, old);
        for (r, old) in ConditionReason::ALL.iter().zip(old) {
            assert_eq!(Reason::from(*r).as_str(), old);
            assert_eq!(old.parse::<ConditionReason>().unwrap(), *r);
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::json!(old));
        }
        assert_eq!(Reason::from(FindingReason::Drifted).as_str(), "Drifted");
        assert_eq!(Reason::Crawl("Timeout").as_str(), "Timeout");
    }
}
