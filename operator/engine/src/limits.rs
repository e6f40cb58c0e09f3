//! Limits on tenant input and on the work it can cause. Every number here is listed,
//! with what it protects, in `docs/security.md`; the CRD schema carries the same input
//! limits so the API server refuses oversized objects at `kubectl apply` time.

/// Longest URI or URI glob (bytes, as authored). Real resource URIs are far shorter;
/// S3 keys, the longest common case, stop at 1,024.
pub const MAX_URI_BYTES: usize = 1024;

/// Most wildcard tokens (`*` or `**`) in one URI glob. Inclusion between globs is
/// exponential in the number of wildcards; real patterns use one to four.
pub const MAX_URI_WILDCARDS: usize = 16;

/// Search steps one pattern comparison may take. A step costs 70-90 ns in a release
/// build, so this is under 10 ms; real patterns need a few hundred steps, and the
/// overlap of two 1,000-byte globs of 16 wildcards needs about 900,000. Over it, the
/// comparison fails closed.
pub const COMPARISON_STEPS: u64 = 100_000;

/// Search steps all the comparisons of one tool's reach may take together (under
/// 100 ms); the comparisons left when it runs out count as reaching the Policy.
pub const REACH_STEPS: u64 = 1_000_000;

/// Search steps the exception coverage of one agent may take, over all its tools (each
/// distinct question paid once); a path left undecided when it runs out counts as not
/// excused. The same budget bounds the exception findings of one Grant.
pub const COVERAGE_STEPS: u64 = 1_000_000;

/// Entries kept in the memo of decided comparisons before it is cleared.
pub const MEMO_ENTRIES: usize = 1 << 16;

/// Number of wildcard tokens (runs of `*`) in a URI glob.
pub fn wildcards(pattern: &str) -> usize {
    pattern
        .as_bytes()
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'*' && (i == 0 || pattern.as_bytes()[i - 1] != b'*'))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_runs_of_stars() {
        assert_eq!(wildcards("file:///a"), 0);
        assert_eq!(wildcards("file:///**/*.env"), 2);
        assert_eq!(wildcards("*a*b**"), 3);
        assert_eq!(wildcards(&"**/".repeat(17)), 17);
    }
}
