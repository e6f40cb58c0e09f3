//! Pattern comparisons over tenant input, each within a work budget ([`crate::limits`]).
//! Comparisons of the same two patterns recur for every tool a glob dataAccess entry
//! names, so decided ones are memoised with what they cost; a memo hit is charged the
//! same cost, so answers never depend on what was evaluated first.

use crate::glob::{Budget, OverBudget, UriPattern};
use crate::limits::{COMPARISON_STEPS, MEMO_ENTRIES};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// A decided comparison: its outcome within one comparison's budget, and its cost.
type Decided = (Result<bool, OverBudget>, u64);

/// Comparisons decided with a full per-comparison budget, by the patterns compared
/// (pure functions of them, so never stale).
pub(crate) struct Memo<K>(Mutex<HashMap<K, Decided>>);

impl<K> Default for Memo<K> {
    fn default() -> Self {
        Memo(Mutex::new(HashMap::new()))
    }
}

impl<K: Hash + Eq> Memo<K> {
    /// The memoised outcome and cost of `key`, or `compare` run within one
    /// comparison's budget (and remembered).
    fn decide(
        &self,
        key: K,
        compare: impl FnOnce(&mut Budget) -> Result<bool, OverBudget>,
    ) -> Decided {
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = lock().get(&key).copied() {
            return hit;
        }
        let mut cap = Budget::new(COMPARISON_STEPS);
        let outcome = compare(&mut cap);
        let cost = COMPARISON_STEPS - cap.left();
        let mut memo = lock();
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(key, (outcome, cost));
        (outcome, cost)
    }
}

/// Overlap questions: (a, b).
pub(crate) type OverlapMemo = Memo<(Box<str>, Box<str>)>;

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
        let (outcome, cost) = self.decide(key, |cap| a.try_overlap(b, cap).map(|w| w.is_some()));
        // What the same search would have done within what is left of `budget`.
        budget.spend(cost)?;
        outcome
    }
}

/// Coverage questions: (excused, access, governed).
pub(crate) type CoverMemo = Memo<(Box<str>, Box<str>, Box<str>)>;

/// What one scope (an agent's exception coverage, a Grant's findings) has paid for:
/// a question asked again within the scope costs nothing more, so an agent with many
/// tools sharing the same patterns pays for each distinct question once.
#[derive(Default)]
pub(crate) struct Paid(std::collections::HashSet<u64>);

impl Paid {
    /// A stable key of the patterns: fixed hash keys, so the same in every process.
    fn key(parts: [&str; 3]) -> u64 {
        use std::hash::{DefaultHasher, Hasher};
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
        let (outcome, cost) = self.decide(key, |cap| {
            excused.try_includes_intersection(access, governed, cap)
        });
        if first {
            // Paid only once the budget could pay: an unpaid question stays undecided
            // every time it is asked in this scope.
            budget.spend(cost)?;
            paid.0.insert(id);
        }
        outcome
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
