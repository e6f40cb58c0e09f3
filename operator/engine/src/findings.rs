//! Findings: one row per thing a reviewer should look at, the common currency of
//! `mcpgov check`, Grant/Policy/MCPServer status and the audit report.

use crate::model::ObjectRef;
use serde::Serialize;

crate::wire_enum! {
    /// Why a finding was raised: its `reason` in JSON output, status conditions, Events,
    /// PolicyReport rules and SARIF rule ids. The names are an interface: never rename one.
    pub enum FindingReason {
        /// An agent reaches a Deny-governed path, not excused.
        DenyViolation = "DenyViolation",
        /// Whether a path is denied was not decided within the work budget: taken as
        /// denied (fail closed).
        PatternBudgetExceeded = "PatternBudgetExceeded",
        /// A denied reach excused by a live expected exception.
        AuthorizedButGoverned = "AuthorizedButGoverned",
        /// Governance names a tool no server exposes now.
        Drifted = "Drifted",
        /// A tool reference that matches nothing.
        NotFound = "NotFound",
        /// A bare tool name several servers expose.
        Ambiguous = "Ambiguous",
        /// A reference to another namespace's server that does not share with it.
        CrossNamespaceDenied = "CrossNamespaceDenied",
        /// A Grant's agent does not exist.
        AgentNotFound = "AgentNotFound",
        /// An expected exception names a Policy that does not exist.
        PolicyNotFound = "PolicyNotFound",
        /// The Policy does not accept exceptions from the Grant's namespace.
        ExceptionNotAllowed = "ExceptionNotAllowed",
        ExceptionExpired = "ExceptionExpired",
        /// An expected exception that covers no path.
        ExceptionUnused = "ExceptionUnused",
        InvalidUri = "InvalidURI",
        InvalidToolKey = "InvalidToolKey",
        InvalidTimestamp = "InvalidTimestamp",
        /// A server lists the same tool name twice.
        DuplicateTool = "DuplicateTool",
        /// Two Agents of a namespace publish their bundle under one ConfigMap name.
        BundleNameClash = "BundleNameClash",
        /// Reach to a PerCall Deny the gateway decides call by call, by argument.
        GuardedPerCall = "GuardedPerCall",
        /// A dataAccess argument binding that cannot be read (the edge stays static).
        InvalidArgumentBinding = "InvalidArgumentBinding",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FindingKind {
    /// An agent reaches a Deny-governed tool or resource, not excused.
    Violation,
    /// The same reach, covered by a live expected exception the Policy permits.
    Exception,
    /// Governance names a tool no server exposes now.
    Drift,
    /// A reference that resolves to nothing, to several things, or breaks tenancy.
    Unresolved,
    /// Input the engine cannot use (bad URI, bad key, bad timestamp).
    Invalid,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub kind: FindingKind,
    /// Machine-readable reason, e.g. `DenyViolation`, `CrossNamespaceDenied`.
    pub reason: FindingReason,
    /// The object the finding belongs to (written `Kind namespace/name`).
    pub object: ObjectRef,
    pub agent: Option<String>,
    pub tool: Option<String>,
    pub policy: Option<String>,
    /// Null when the Policy governs the tool directly.
    pub resource: Option<String>,
    pub path: Vec<String>,
    pub message: String,
    /// The reason the expected exception gives, on findings about one: the reach it
    /// excuses, or the exception itself (unused, not allowed, expired).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception_reason: Option<String>,
    /// The Grant that declares that exception.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception_grant: Option<String>,
}

impl Finding {
    pub fn new(
        kind: FindingKind,
        reason: FindingReason,
        object: ObjectRef,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            kind,
            reason,
            object,
            agent: None,
            tool: None,
            policy: None,
            resource: None,
            path: Vec::new(),
            message: message.into(),
            exception_reason: None,
            exception_grant: None,
        }
    }

    pub fn agent(mut self, agent: impl ToString) -> Self {
        self.agent = Some(agent.to_string());
        self
    }

    pub fn tool(mut self, tool: impl ToString) -> Self {
        self.tool = Some(tool.to_string());
        self
    }

    pub fn policy(mut self, policy: impl ToString) -> Self {
        self.policy = Some(policy.to_string());
        self
    }

    /// The expected exception the finding is about: its Grant and its reason.
    pub fn exception(mut self, grant: impl ToString, reason: impl ToString) -> Self {
        self.exception_grant = Some(grant.to_string());
        self.exception_reason = Some(reason.to_string());
        self
    }
}

/// Counts per kind, as the `summary` of a check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub violations: usize,
    pub exceptions: usize,
    pub drift: usize,
    pub unresolved: usize,
    pub invalid: usize,
}

impl Summary {
    pub fn of(findings: &[Finding]) -> Self {
        let mut s = Summary::default();
        for f in findings {
            match f.kind {
                FindingKind::Violation => s.violations += 1,
                FindingKind::Exception => s.exceptions += 1,
                FindingKind::Drift => s.drift += 1,
                FindingKind::Unresolved => s.unresolved += 1,
                FindingKind::Invalid => s.invalid += 1,
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, ObjKey};

    /// The strings the engine wrote before the reason was typed: each variant must still
    /// write exactly one of them (status, Events, reports and goldens carry them).
    const OLD_LITERALS: [&str; 19] = [
        "DenyViolation",
        "PatternBudgetExceeded",
        "AuthorizedButGoverned",
        "Drifted",
        "NotFound",
        "Ambiguous",
        "CrossNamespaceDenied",
        "AgentNotFound",
        "PolicyNotFound",
        "ExceptionNotAllowed",
        "ExceptionExpired",
        "ExceptionUnused",
        "InvalidURI",
        "InvalidToolKey",
        "InvalidTimestamp",
        "DuplicateTool",
        "BundleNameClash",
        "GuardedPerCall",
        "InvalidArgumentBinding",
    ];

    #[test]
    fn every_reason_writes_and_reads_back_its_old_literal() {
        assert_eq!(FindingReason::ALL.len(), OLD_LITERALS.len());
        for (r, old) in FindingReason::ALL.iter().zip(OLD_LITERALS) {
            assert_eq!(r.as_str(), old);
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::json!(old));
            assert_eq!(
                serde_json::from_value::<FindingReason>(serde_json::json!(old)).unwrap(),
                *r
            );
        }
        assert!(serde_json::from_str::<FindingReason>("\"InvalidUri\"").is_err());
    }

    #[test]
    fn findings_sort_by_the_reason_text_as_before() {
        let mut rs = FindingReason::ALL.to_vec();
        rs.sort();
        let mut old = OLD_LITERALS.to_vec();
        old.sort();
        assert_eq!(rs.iter().map(|r| r.as_str()).collect::<Vec<_>>(), old);
    }

    #[test]
    fn a_finding_serialises_as_before() {
        let f = Finding::new(
            FindingKind::Invalid,
            FindingReason::InvalidUri,
            ObjectRef::new(Kind::MCPServer, &ObjKey::new("ns", "s")),
            "m",
        );
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["reason"], "InvalidURI");
        assert_eq!(v["object"], "MCPServer ns/s");
        assert_eq!(v["kind"], "Invalid");
    }
}
