//! Findings: one row per thing a reviewer should look at, the common currency of
//! `mcpgov check`, Grant/Policy/MCPServer status and the audit report.

use serde::Serialize;

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
    pub reason: String,
    /// The object the finding belongs to, as `Kind namespace/name`.
    pub object: String,
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
        reason: &str,
        object: String,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            kind,
            reason: reason.to_string(),
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
