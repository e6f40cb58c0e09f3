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
        // Nothing left: every comparison that needs a search fails (and the memo
        // lookup, which hashes both patterns, is skipped).
        if budget.left() == 0 {
            return Err(OverBudget);
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

/// Decided coverage questions: (excused, access, governed) -> outcome and cost.
type CoverKey = (Box<str>, Box<str>, Box<str>);
type Covers = HashMap<CoverKey, (Result<bool, OverBudget>, u64)>;

#[derive(Default)]
pub(crate) struct CoverMemo(Mutex<Covers>);

/// What one scope (an agent's exception coverage, a Grant's findings) has paid for:
/// a question asked again within the scope costs nothing more, so an agent with many
/// tools sharing the same patterns pays for each distinct question once.
#[derive(Default)]
pub(crate) struct Paid(std::collections::HashSet<u64>);

impl Paid {
    /// A stable key of the patterns: fixed hash keys, so the same in every process.
    fn key(parts: [&str; 3]) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        parts.hash(&mut h);
        h.finish()
    }
}

impl CoverMemo {
    /// `excused` includes the intersection of `access` and `governed`, charged to
    /// `budget` once per scope (`paid`) and capped per comparison. `Err` when
    /// undecided: callers count the path as not excused.
    pub(crate) fn covers(
        &self,
        excused: &UriPattern,
        access: &UriPattern,
        governed: &UriPattern,
        budget: &mut Budget,
        paid: &mut Paid,
    ) -> Result<bool, OverBudget> {
        // Spent: every question left in this scope is undecided (fail closed), asked
        // before or not — deterministic, and a single branch per question from here on.
        if budget.left() == 0 {
            return Err(OverBudget);
        }
        let parts = [excused.as_str(), access.as_str(), governed.as_str()];
        let id = Paid::key(parts);
        let first = !paid.0.contains(&id);
        let key = (parts[0].into(), parts[1].into(), parts[2].into());
        let known = self.lock().get(&key).copied();
        let (outcome, cost) = match known {
            Some(hit) => hit,
            None => {
                let mut cap = Budget::new(COMPARISON_STEPS);
                let outcome = excused.try_includes_intersection(access, governed, &mut cap);
                let cost = COMPARISON_STEPS - cap.left();
                let mut memo = self.lock();
                if memo.len() >= MEMO_ENTRIES {
                    memo.clear();
                }
                memo.insert(key, (outcome, cost));
                (outcome, cost)
            }
        };
        if first {
            // Paid only once the budget could pay: an unpaid question stays undecided
            // every time it is asked in this scope.
            budget.spend(cost)?;
            paid.0.insert(id);
        }
        outcome
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Covers> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `a` and `b` overlap, failing closed (true) when it cannot be decided
/// within one comparison's budget: for queries that list what a pattern may touch.
pub fn overlaps_or_assume(a: &UriPattern, b: &UriPattern) -> bool {
    !matches!(
        a.try_overlap(b, &mut Budget::new(COMPARISON_STEPS)),
        Ok(None)
    )
}
