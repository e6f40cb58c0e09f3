//! Questions about the whole estate: blast-radius, drift, the audit report. Under a
//! limited [`Visibility`] their rows are cut to what the caller may read, and the audit
//! report (counts over every namespace) is refused.

use super::{Answer, NoInput, Refusal, Snapshot, Visibility, answered, bounded};
use mcpgov_engine::check::AuditReport;
use mcpgov_engine::queries::{BlastRadius, DriftRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlastRadiusInput {
    /// A resource URI or URI glob (`file:///srv/app/**`), or a Policy (`name`,
    /// `namespace/name`).
    pub target: String,
    /// The namespace of a Policy named without one (default: the server's).
    #[serde(default)]
    pub namespace: Option<String>,
}

pub fn blast_radius(
    s: &Snapshot,
    vis: &Visibility,
    input: BlastRadiusInput,
) -> Result<Answer<BlastRadius>, Refusal> {
    bounded("target", &input.target)?;
    let home = match &input.namespace {
        Some(ns) => {
            if !crate::validate::is_dns1123_label(ns) {
                return Err(Refusal::Invalid(format!(
                    "namespace {}: not a valid namespace (a DNS-1123 label)",
                    crate::text::quote(ns, 80)
                )));
            }
            ns.as_str()
        }
        None => s.namespace,
    };
    let mut b = s.eval.blast_radius(&input.target, home);
    if b.target_kind == Some("policy") && !b.policies.iter().all(|p| vis.can_read_ref(p)) {
        // A Policy the caller may not read is not there for them.
        b = BlastRadius {
            target: b.target,
            target_kind: None,
            found: false,
            policies: Vec::new(),
            impacted: Vec::new(),
            agents: Vec::new(),
        };
    }
    b.policies.retain(|p| vis.can_read_ref(p));
    b.impacted.retain(|t| vis.can_read_ref(&t.tool));
    for t in &mut b.impacted {
        t.agents.retain(|a| vis.can_read_ref(a));
    }
    b.agents.retain(|a| vis.can_read_ref(a));
    Ok(answered(s, b))
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Drift {
    pub rows: Vec<DriftRow>,
}

pub fn drift(s: &Snapshot, vis: &Visibility, _: NoInput) -> Result<Answer<Drift>, Refusal> {
    let rows = s
        .eval
        .drift()
        .into_iter()
        .filter(|r| vis.can_read(&r.object.key.namespace) && vis.can_read_ref(&r.tool))
        .collect();
    Ok(answered(s, Drift { rows }))
}

pub fn audit_report(
    s: &Snapshot,
    vis: &Visibility,
    _: NoInput,
) -> Result<Answer<AuditReport>, Refusal> {
    if *vis != Visibility::All {
        return Err(Refusal::Forbidden(
            "audit_report summarises every namespace: it needs read access to all of them \
             (ask unsafe_tools, drift or blast_radius for what you may read)"
                .into(),
        ));
    }
    Ok(answered(s, s.eval.audit_report()))
}
