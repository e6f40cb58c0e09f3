//! Which rule, result and severity a finding becomes in a report. The rule names are
//! part of the output contract (Policy Reporter filters and alerts on them): never
//! rename one. The table is docs/policy-reports.md's; change both together.

use mcpgov_engine::FindingKind;
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

/// The rule of a finding, by its kind and reason. A reason this table does not know
/// (one added to the engine later) takes its kind's rule; the reason itself is always
/// in the result's properties.
pub fn rule_for(kind: FindingKind, reason: &str) -> Rule {
    use Outcome::*;
    use Severity::*;
    match (kind, reason) {
        // The engine fails closed when a comparison ran over its budget: the reach is
        // reported as a violation, under its own rule so it can be told apart.
        (FindingKind::Violation, "PatternBudgetExceeded") => {
            rule("deny-violation-undecided", Fail, High)
        }
        (FindingKind::Violation, _) => rule("deny-violation", Fail, High),
        (FindingKind::Exception, _) => rule("expected-exception", Skip, Info),
        (FindingKind::Drift, _) => rule("drift", Warn, Medium),
        (FindingKind::Unresolved, "ExceptionUnused") => rule("unused-exception", Warn, Low),
        // The reach it meant to excuse stays a violation, reported as such.
        (FindingKind::Unresolved, "ExceptionNotAllowed") => {
            rule("disallowed-exception", Warn, Medium)
        }
        (FindingKind::Unresolved, "ExceptionExpired") => rule("expired-exception", Warn, Medium),
        (FindingKind::Unresolved, "PatternBudgetExceeded") => {
            rule("undecided-exception", Warn, Medium)
        }
        (FindingKind::Unresolved, "PolicyNotFound") => rule("unresolved-policy", Warn, Medium),
        (FindingKind::Unresolved, "AgentNotFound") => rule("unresolved-agent", Warn, Medium),
        (FindingKind::Unresolved, "Ambiguous") => rule("ambiguous-key", Warn, Medium),
        (FindingKind::Unresolved, "CrossNamespaceDenied") => {
            rule("cross-namespace-key", Warn, Medium)
        }
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
    ];

    #[test]
    fn every_known_reason_maps_to_its_documented_rule() {
        for &(kind, reason, name, outcome, severity) in KNOWN {
            assert_eq!(
                rule_for(kind, reason),
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

    #[test]
    fn unknown_reasons_take_their_kinds_rule() {
        assert_eq!(rule_for(Violation, "Future").name, "deny-violation");
        assert_eq!(rule_for(Exception, "Future").outcome, Outcome::Skip);
        assert_eq!(rule_for(Drift, "Future").name, "drift");
        assert_eq!(rule_for(Unresolved, "Future").name, "unresolved-key");
        assert_eq!(rule_for(Invalid, "Future").outcome, Outcome::Error);
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
