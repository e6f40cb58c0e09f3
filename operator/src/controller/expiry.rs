//! Expected exceptions that expire: what Grant status shows of them, and the
//! `mcpgov_exception_expiry_timestamp_seconds` series exported for each. Pure: the
//! reconciler applies what these functions plan.
//!
//! Cardinality: one series per expected exception with a valid `expires`, labelled by
//! its Grant, its position in the list, the Policy it names and its owner (each bounded
//! in length by the CRD schema and again here). A Grant holds at most
//! `MAX_EXCEPTIONS` of them, so the series number at most 100 per Grant.

use super::status::LIST_CAP;
use crate::crd::grant::{ExceptionExpiry, GrantSpec};
use mcpgov_engine::ObjKey;
use std::collections::{BTreeMap, BTreeSet};

/// The schema's bound on `spec.expectedExceptions`, enforced again here: a Grant that
/// reached the index without the schema (an old CRD) cannot grow the series further.
pub const MAX_EXCEPTIONS: usize = 100;
/// The schema's bounds on `policy` and `owner`, in characters.
const MAX_POLICY: usize = 317;
const MAX_OWNER: usize = 253;

/// The label names of `mcpgov_exception_expiry_timestamp_seconds`, in order.
pub const LABELS: [&str; 5] = ["namespace", "grant", "index", "policy", "owner"];

/// One expected exception with a parseable expiry.
#[derive(Clone, Debug, PartialEq)]
pub struct Expiry {
    /// Position in `spec.expectedExceptions`.
    pub index: usize,
    pub policy: String,
    pub owner: String,
    pub expires: jiff::Timestamp,
}

/// The label values of one series (see `LABELS`).
pub type Series = [String; 5];

/// Every expected exception of `spec` whose `expires` parses, in authored order. An
/// unparseable one is left out: the engine reports it (InvalidTimestamp) and it
/// excuses nothing.
pub fn of_grant(spec: &GrantSpec) -> Vec<Expiry> {
    spec.expected_exceptions
        .iter()
        .take(MAX_EXCEPTIONS)
        .enumerate()
        .filter_map(|(index, e)| {
            let expires = e.expires.as_deref()?.parse::<jiff::Timestamp>().ok()?;
            Some(Expiry {
                index,
                policy: bounded(&e.policy, MAX_POLICY),
                owner: bounded(e.owner.as_deref().unwrap_or_default(), MAX_OWNER),
                expires,
            })
        })
        .collect()
}

fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// The status list: soonest first (expired ones lead), at most `LIST_CAP` entries.
/// `expired` is judged at `now`, the instant the engine evaluated at.
pub fn status(expiries: &[Expiry], now: jiff::Timestamp) -> Vec<ExceptionExpiry> {
    let mut sorted: Vec<&Expiry> = expiries.iter().collect();
    sorted.sort_by_key(|e| (e.expires, e.index));
    sorted
        .into_iter()
        .take(LIST_CAP)
        .map(|e| ExceptionExpiry {
            index: e.index as i64,
            policy: e.policy.clone(),
            expires: e.expires.to_string(),
            // The engine's rule: an exception counts while `now < expires`.
            expired: e.expires <= now,
        })
        .collect()
}

/// The series of one Grant and their values (unix seconds of the expiry).
pub fn series(grant: &ObjKey, expiries: &[Expiry]) -> BTreeMap<Series, f64> {
    expiries
        .iter()
        .map(|e| {
            (
                [
                    grant.namespace.clone(),
                    grant.name.clone(),
                    e.index.to_string(),
                    e.policy.clone(),
                    e.owner.clone(),
                ],
                e.expires.as_millisecond() as f64 / 1000.0,
            )
        })
        .collect()
}

/// The series exported before that the new set no longer has: to be removed, so no
/// stale series outlives its exception.
pub fn stale(before: &BTreeSet<Series>, now: &BTreeMap<Series, f64>) -> Vec<Series> {
    before
        .iter()
        .filter(|s| !now.contains_key(*s))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::grant::ExpectedException;

    fn ex(policy: &str, owner: Option<&str>, expires: Option<&str>) -> ExpectedException {
        ExpectedException {
            policy: policy.into(),
            tool: None,
            resource: None,
            reason: "r".into(),
            owner: owner.map(Into::into),
            expires: expires.map(Into::into),
        }
    }

    fn spec(exceptions: Vec<ExpectedException>) -> GrantSpec {
        GrantSpec {
            agent: "a".into(),
            tools: vec!["s::t".into()],
            expected_exceptions: exceptions,
            provenance: Default::default(),
        }
    }

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn only_valid_expiries_count_and_keep_their_position() {
        let s = spec(vec![
            ex("p", None, None),
            ex("q", Some("team-q"), Some("2027-01-01T00:00:00Z")),
            ex("r", None, Some("soon")),
            ex("other/s", None, Some("2026-06-01T12:00:00.5+02:00")),
        ]);
        let got = of_grant(&s);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].index, got[0].policy.as_str(), got[0].owner.as_str()),
            (1, "q", "team-q")
        );
        assert_eq!((got[1].index, got[1].owner.as_str()), (3, ""));
        assert_eq!(got[1].expires, ts("2026-06-01T10:00:00.5Z"));
    }

    #[test]
    fn status_is_soonest_first_and_expired_from_the_instant_on() {
        let s = spec(vec![
            ex("late", None, Some("2027-01-01T00:00:00Z")),
            ex("now", None, Some("2026-12-01T00:00:00Z")),
            ex("past", None, Some("2026-01-01T00:00:00Z")),
        ]);
        let st = status(&of_grant(&s), ts("2026-12-01T00:00:00Z"));
        let got: Vec<(i64, &str, &str, bool)> = st
            .iter()
            .map(|e| (e.index, e.policy.as_str(), e.expires.as_str(), e.expired))
            .collect();
        assert_eq!(
            got,
            [
                (2, "past", "2026-01-01T00:00:00Z", true),
                // Expired at its own second, as the engine stops counting it then.
                (1, "now", "2026-12-01T00:00:00Z", true),
                (0, "late", "2027-01-01T00:00:00Z", false),
            ]
        );
        let before = status(&of_grant(&s), ts("2026-11-30T23:59:59Z"));
        assert!(!before[1].expired, "not expired a second before");
    }

    #[test]
    fn status_and_series_are_bounded_whatever_the_grant_holds() {
        // More than the schema allows, with over-long labels: a Grant that did not pass
        // through the schema.
        let long = "x".repeat(10_000);
        let s = spec(
            (0..1000)
                .map(|i| {
                    ex(
                        &long,
                        Some(&long),
                        Some(&format!("2027-01-01T00:00:{:02}Z", i % 60)),
                    )
                })
                .collect(),
        );
        let e = of_grant(&s);
        assert_eq!(e.len(), MAX_EXCEPTIONS);
        assert!(
            e.iter()
                .all(|e| e.policy.len() == MAX_POLICY && e.owner.len() == MAX_OWNER)
        );
        assert_eq!(status(&e, ts("2026-01-01T00:00:00Z")).len(), LIST_CAP);
        assert_eq!(series(&ObjKey::new("n", "g"), &e).len(), MAX_EXCEPTIONS);
    }

    #[test]
    fn series_carry_the_expiry_and_stale_ones_are_planned_for_removal() {
        let g = ObjKey::new("team", "notes");
        let two = spec(vec![
            ex("p", Some("ops"), Some("2027-01-01T00:00:00.25Z")),
            ex("q", None, Some("2027-02-01T00:00:00Z")),
        ]);
        let before = series(&g, &of_grant(&two));
        let first: Series = [
            "team".into(),
            "notes".into(),
            "0".into(),
            "p".into(),
            "ops".into(),
        ];
        assert_eq!(
            before.get(&first),
            Some(&(ts("2027-01-01T00:00:00Z").as_second() as f64 + 0.25))
        );
        // The first exception removed: the second moves to index 0, both old series go.
        let one = spec(vec![ex("q", None, Some("2027-02-01T00:00:00Z"))]);
        let after = series(&g, &of_grant(&one));
        let keys: BTreeSet<Series> = before.keys().cloned().collect();
        let gone = stale(&keys, &after);
        assert_eq!(gone.len(), 2);
        assert!(gone.contains(&first));
        assert!(after.keys().all(|s| !gone.contains(s)));
        // Nothing changed: nothing to remove.
        assert!(stale(&keys, &before).is_empty());
        // The Grant gone: every series goes.
        assert_eq!(stale(&keys, &BTreeMap::new()).len(), 2);
    }
}
