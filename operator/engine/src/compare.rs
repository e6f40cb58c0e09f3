//! Pattern comparisons over tenant input, each within a work budget ([`crate::limits`]).
//! Comparisons of the same two patterns recur for every tool a glob dataAccess entry
//! names, so decided ones are memoised with what they cost; a memo hit is charged the
//! same cost, so answers never depend on what was evaluated first.

use crate::glob::{Budget, OverBudget, UriPattern};
use crate::limits::{COMPARISON_STEPS, MEMO_ENTRIES};
use std::collections::HashMap;
use std::sync::Mutex;

/// Outcome of one comparison with its full per-comparison budget, and its cost.
type Memo = HashMap<(Box<str>, Box<str>), (Result<bool, OverBudget>, u64)>;

#[derive(Default)]
pub(crate) struct OverlapMemo(Mutex<Memo>);

impl OverlapMemo {
    /// Whether `a` and `b` overlap, charged to `budget` and capped per comparison.
    /// `Err` when it could not be decided: callers fail closed.
    pub(crate) fn overlaps(
        &self,
        a: &UriPattern,
        b: &UriPattern,
        budget: &mut Budget,
    ) -> Result<bool, OverBudget> {
        if a.is_literal() || b.is_literal() {
            // Linear in the lengths, which the input limits bound: not worth a memo.
            return Ok(a.try_overlap(b, &mut Budget::unlimited())?.is_some());
        }
        let key = (Box::from(a.as_str()), Box::from(b.as_str()));
        let known = self.lock().get(&key).copied();
        let (outcome, cost) = match known {
            Some(hit) => hit,
            None => {
                let mut cap = Budget::new(COMPARISON_STEPS);
                let outcome = a.try_overlap(b, &mut cap).map(|w| w.is_some());
                let cost = COMPARISON_STEPS - cap.left();
                let mut memo = self.lock();
                if memo.len() >= MEMO_ENTRIES {
                    memo.clear();
                }
                memo.insert(key, (outcome, cost));
                (outcome, cost)
            }
        };
        // What the same search would have done within what is left of `budget`.
        budget.spend(cost)?;
        outcome
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `excused` includes the intersection of `access` and `governed`, within `budget`
/// (capped per comparison). `Err` when undecided: callers count the path as not
/// excused.
pub(crate) fn covers(
    excused: &UriPattern,
    access: &UriPattern,
    governed: &UriPattern,
    budget: &mut Budget,
) -> Result<bool, OverBudget> {
    let mut cap = Budget::new(COMPARISON_STEPS.min(budget.left()));
    let outcome = excused.try_includes_intersection(access, governed, &mut cap);
    budget.spend(COMPARISON_STEPS.min(budget.left()) - cap.left())?;
    outcome
}

/// Whether `a` and `b` overlap, failing closed (true) when it cannot be decided
/// within one comparison's budget: for queries that list what a pattern may touch.
pub fn overlaps_or_assume(a: &UriPattern, b: &UriPattern) -> bool {
    !matches!(
        a.try_overlap(b, &mut Budget::new(COMPARISON_STEPS)),
        Ok(None)
    )
}
