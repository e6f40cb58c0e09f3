//! Which rule, result and severity a finding becomes in a report. The rule names are
//! part of the output contract (Policy Reporter filters and alerts on them): never
//! rename one. The table is docs/policy-reports.md's; change both together.

use mcpgov_engine::{FindingKind, FindingReason};
use serde::{Deserialize, Serialize};

/// A result's outcome, in the reports' vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The policy's requirement is not met.
    Fail,
    /// Could not be evaluated.
    Error,
    /// Not met, but not scored: hygiene a reader should see.
    Warn,
    /// Not applied: the reach is excused by an expected exception (as Kyverno reports a
    /// resource a PolicyException excuses).
    Skip,
    Pass,
}

/// The reports' severities, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

/// What a finding becomes in a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable kebab-case identifier, the result's `rule`.
    pub name: &'static str,
    pub outcome: Outcome,
    pub severity: Severity,
}

const fn rule(name: &'static str, outcome: Outcome, severity: Severity) -> Rule {
    Rule {
        name,
        outcome,
        severity,
    }
}

/// The rule of a finding, by its kind and reason. A reason without a row of its own
/// takes its kind's rule; the reason itself is always in the result's properties.
pub fn rule_for(kind: FindingKind, reason: FindingReason) -> Rule {
    use FindingReason as R;
    use Outcome::*;
    use Severity::*;
    match (kind, reason) {
        // The engine fails closed when a comparison ran over its budget: the reach is
        // reported as a violation, under its own rule so it can be told apart.
        (FindingKind::Violation, R::PatternBudgetExceeded) => {
            rule("deny-violation-undecided", Fail, High)
        }
        (FindingKind::Violation, _) => rule("deny-violation", Fail, High),
        (FindingKind::Exception, _) => rule("expected-exception", Skip, Info),
        (FindingKind::Drift, _) => rule("drift", Warn, Medium),
        (FindingKind::Unresolved, R::ExceptionUnused) => rule("unused-exception", Warn, Low),
        // The reach it meant to excuse stays a violation, reported as such.
        (FindingKind::Unresolved, R::ExceptionNotAllowed) => {
            rule("disallowed-exception", Warn, Medium)
        }
        (FindingKind::Unresolved, R::ExceptionExpired) => rule("expired-exception", Warn, Medium),
        (FindingKind::Unresolved, R::PatternBudgetExceeded) => {
            rule("undecided-exception", Warn, Medium)
        }
        (FindingKind::Unresolved, R::PolicyNotFound) => rule("unresolved-policy", Warn, Medium),
        (FindingKind::Unresolved, R::AgentNotFound) => rule("unresolved-agent", Warn, Medium),
        (FindingKind::Unresolved, R::Ambiguous) => rule("ambiguous-key", Warn, Medium),
        (FindingKind::Unresolved, R::CrossNamespaceDenied) => {
            rule("cross-namespace-key", Warn, Medium)
        }
        // Two Agents name one bundle ConfigMap: one of them is not published, which no
        // key (Grant, Policy) can fix; its own rule, so it is not read as a typo.
        (FindingKind::Unresolved, R::BundleNameClash) => rule("bundle-name-clash", Warn, High),
        (FindingKind::Unresolved, _) => rule("unresolved-key", Warn, Medium),
        (FindingKind::Invalid, _) => rule("invalid-input", Error, High),
    }
}

/// The category a result is filed under (Policy Reporter groups by it).
pub fn category(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::Violation => "Violation",
        FindingKind::Exception => "Exception",
        FindingKind::Drift => "Drift",
        FindingKind::Unresolved => "Unresolved",
        FindingKind::Invalid => "Invalid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FindingKind::*;

    /// Every (kind, reason) the engine gives today, with the rule it must map to. A new
    /// reason lands in its kind's default until it is added here and to the docs.
    const KNOWN: &[(FindingKind, &str, &str, Outcome, Severity)] = &[
        (
            Violation,
            "DenyViolation",
            "deny-violation",
            Outcome::Fail,
            Severity::High,
        ),
        (
            Violation,
            "PatternBudgetExceeded",
            "deny-violation-undecided",
            Outcome::Fail,
            Severity::High,
        ),
        (
            Exception,
            "AuthorizedButGoverned",
            "expected-exception",
            Outcome::Skip,
            Severity::Info,
        ),
        (Drift, "Drifted", "drift", Outcome::Warn, Severity::Medium),
        (
            Unresolved,
            "NotFound",
            "unresolved-key",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "Ambiguous",
            "ambiguous-key",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "CrossNamespaceDenied",
            "cross-namespace-key",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "AgentNotFound",
            "unresolved-agent",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "PolicyNotFound",
            "unresolved-policy",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "ExceptionNotAllowed",
            "disallowed-exception",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "ExceptionExpired",
            "expired-exception",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Unresolved,
            "ExceptionUnused",
            "unused-exception",
            Outcome::Warn,
            Severity::Low,
        ),
        (
            Unresolved,
            "PatternBudgetExceeded",
            "undecided-exception",
            Outcome::Warn,
            Severity::Medium,
        ),
        (
            Invalid,
            "InvalidURI",
            "invalid-input",
            Outcome::Error,
            Severity::High,
        ),
        (
            Invalid,
            "InvalidToolKey",
            "invalid-input",
            Outcome::Error,
            Severity::High,
        ),
        (
            Invalid,
            "InvalidTimestamp",
            "invalid-input",
            Outcome::Error,
            Severity::High,
        ),
        (
            Invalid,
            "DuplicateTool",
            "invalid-input",
            Outcome::Error,
            Severity::High,
        ),
        (
            Unresolved,
            "BundleNameClash",
            "bundle-name-clash",
            Outcome::Warn,
            Severity::High,
        ),
        (
            Exception,
            "GuardedPerCall",
            "expected-exception",
            Outcome::Skip,
            Severity::Info,
        ),
        (
            Invalid,
            "InvalidArgumentBinding",
            "invalid-input",
            Outcome::Error,
            Severity::High,
        ),
    ];

    #[test]
    fn every_known_reason_maps_to_its_documented_rule() {
        for &(kind, reason, name, outcome, severity) in KNOWN {
            assert_eq!(
                rule_for(kind, reason.parse().unwrap()),
                rule(name, outcome, severity),
                "{kind:?} {reason}"
            );
        }
    }

    #[test]
    fn the_documented_table_lists_every_rule() {
        let doc = include_str!("../../../docs/policy-reports.md");
        for &(_, reason, name, outcome, severity) in KNOWN {
            let row = format!("`{name}`");
            assert!(doc.contains(&row), "docs/policy-reports.md lacks {row}");
            let line = doc
                .lines()
                .find(|l| l.contains(&format!("`{reason}`")) && l.contains(&row))
                .unwrap_or_else(|| panic!("no table row for {reason} -> {name}"));
            assert!(line.contains(&format!("| {} |", word(&outcome))), "{line}");
            assert!(line.contains(&format!("| {} |", word(&severity))), "{line}");
        }
    }

    /// The word a value serialises to, as the reports and the docs spell it.
    fn word<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The table (and so the docs) covers every reason the engine can give.
    #[test]
    fn every_reason_is_in_the_table() {
        for r in FindingReason::ALL {
            assert!(
                KNOWN.iter().any(|k| k.1 == r.as_str()),
                "{r} is not in KNOWN (nor, then, in docs/policy-reports.md)"
            );
        }
    }

    #[test]
    fn a_reason_under_another_kind_takes_that_kinds_rule() {
        use FindingReason as R;
        assert_eq!(rule_for(Violation, R::NotFound).name, "deny-violation");
        assert_eq!(rule_for(Exception, R::Drifted).outcome, Outcome::Skip);
        assert_eq!(rule_for(Drift, R::ExceptionUnused).name, "drift");
        assert_eq!(rule_for(Unresolved, R::InvalidUri).name, "unresolved-key");
        assert_eq!(rule_for(Invalid, R::Ambiguous).outcome, Outcome::Error);
    }

    #[test]
    fn outcomes_and_severities_serialise_as_the_schemas_enums() {
        let words: Vec<String> = [
            Outcome::Fail,
            Outcome::Error,
            Outcome::Warn,
            Outcome::Skip,
            Outcome::Pass,
        ]
        .iter()
        .map(word)
        .collect();
        assert_eq!(words, ["fail", "error", "warn", "skip", "pass"]);
        let words: Vec<String> = [
            Severity::Critical,
            Severity::High,
            Severity::Medium,
            Severity::Low,
            Severity::Info,
        ]
        .iter()
        .map(word)
        .collect();
        assert_eq!(words, ["critical", "high", "medium", "low", "info"]);
    }
}
