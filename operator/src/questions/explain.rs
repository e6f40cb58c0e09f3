//! The verdict in words (`mcpgov why`, and the `explain` question's `text`).

use crate::text;
use mcpgov_engine::{AccessVerdict, Classification, Provenance, VerdictKind};

/// `(OperatorAsserted, High, evidence "x")`, or a warning when nothing backs it.
fn provenance(p: &Provenance) -> String {
    let evidence = match p.evidence.as_deref().filter(|e| !e.trim().is_empty()) {
        Some(e) => format!("evidence {}", text::quote(e, 200)),
        None => "NO EVIDENCE".to_string(),
    };
    format!("({:?}, {:?}, {evidence})", p.source, p.confidence)
}

/// The verdict in words: what was decided, by which grants, along which paths.
pub fn explain_text(v: &AccessVerdict) -> String {
    let q = |s: &str| text::escape(s).into_owned();
    let tool = v.tool_key.as_deref().unwrap_or(&v.tool);
    let mut out = format!(
        "{}: agent {} -> tool {}\n",
        verdict_name(v.verdict),
        q(&v.agent),
        q(tool)
    );
    let summary = match v.verdict {
        VerdictKind::AgentNotFound => "no such Agent".to_string(),
        VerdictKind::ToolNotFound => format!("no tool {} is visible from the agent", q(&v.tool)),
        VerdictKind::Ambiguous => format!(
            "{} names several tools: {}",
            q(&v.tool),
            v.candidates
                .iter()
                .map(|c| q(c))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        VerdictKind::NotGranted => "no Grant gives the agent this tool".to_string(),
        VerdictKind::Allow => "granted, and no path reaches a Deny policy".to_string(),
        VerdictKind::Deny => {
            let violations = v
                .deny_paths
                .iter()
                .filter(|p| p.classification == Classification::Violation)
                .count();
            let guarded = v
                .deny_paths
                .iter()
                .any(|p| p.classification == Classification::GuardedPerCall);
            if violations == 0 && guarded {
                format!(
                    "granted; each of {} deny path(s) is an authorized exception or checked per call by the gateway",
                    v.deny_paths.len()
                )
            } else if violations == 0 {
                format!(
                    "granted; every one of {} deny path(s) is an authorized exception",
                    v.deny_paths.len()
                )
            } else {
                format!(
                    "granted, and {violations} of {} deny path(s) are violations",
                    v.deny_paths.len()
                )
            }
        }
    };
    out.push_str(&format!("  {summary}\n"));
    if v.drifted {
        out.push_str("  drift: no server exposes this tool now (governance still names it)\n");
    }
    if v.unmapped && v.tool_key.is_some() {
        out.push_str("  unmapped: no READS/WRITES authored for this tool\n");
    }
    if !v.granted_by.is_empty() {
        out.push_str("\nGranted by:\n");
        for g in &v.granted_by {
            out.push_str(&format!(
                "  Grant {} selector {} {}\n",
                q(&g.grant.to_string()),
                text::quote(&g.selector, 200),
                provenance(&g.provenance)
            ));
        }
    }
    if !v.deny_paths.is_empty() {
        out.push_str(&format!(
            "\nDeny paths{}:\n",
            if v.granted_by.is_empty() {
                " (crossed if it were granted)"
            } else {
                ""
            }
        ));
    }
    for (i, p) in v.deny_paths.iter().enumerate() {
        let class = match p.classification {
            Classification::Violation => "VIOLATION",
            Classification::AuthorizedButGoverned => "EXCEPTION",
            Classification::GuardedPerCall => "PER-CALL",
        };
        out.push_str(&format!(
            "  {}. {class}  {}\n",
            i + 1,
            p.path.iter().map(|s| q(s)).collect::<Vec<_>>().join(" ")
        ));
        if let (Some(mode), Some(resource)) = (p.mode, &p.resource) {
            let prov = p.provenance.as_ref().map(provenance).unwrap_or_default();
            out.push_str(&format!("     {} {} {prov}\n", mode.edge(), q(resource)));
        }
        out.push_str(&format!(
            "     GOVERNED_BY Policy {} via {} {}\n",
            q(&p.policy),
            text::quote(&p.governed_by, 200),
            provenance(&p.policy_provenance)
        ));
        match (&p.exception_grant, &p.exception_reason) {
            (Some(g), reason) => out.push_str(&format!(
                "     exception: Grant {} reason {}\n",
                q(g),
                text::quote(reason.as_deref().unwrap_or(""), 300)
            )),
            (None, _) => out.push_str("     exception: none\n"),
        }
        if let Some(u) = &p.undecided {
            out.push_str(&format!("     undecided (counted): {}\n", q(u)));
        }
    }
    out
}

/// The verdict as the CLI and the graphs name it.
pub fn verdict_name(v: VerdictKind) -> &'static str {
    match v {
        VerdictKind::AgentNotFound => "AGENT_NOT_FOUND",
        VerdictKind::ToolNotFound => "TOOL_NOT_FOUND",
        VerdictKind::Ambiguous => "AMBIGUOUS",
        VerdictKind::NotGranted => "NOT_GRANTED",
        VerdictKind::Deny => "DENY",
        VerdictKind::Allow => "ALLOW",
    }
}
