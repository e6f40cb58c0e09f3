//! `mcpgov check`: every finding over the manifests, as a table, JSON, SARIF or
//! PolicyReports, with an optional gate.

use super::input::{Input, LOOKALIKE_HINT};
use super::{Failure, InputArgs, print_json, print_out};
use crate::manifest::Lookalike;
use crate::reports::{self, Api};
use crate::text;
use clap::{Args, ValueEnum};
use mcpgov_engine::{Finding, FindingKind, Summary};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
    /// A List of wgpolicyk8s.io/v1alpha2 PolicyReports, one per namespace with findings
    /// (YAML).
    #[value(name = "policyreport")]
    PolicyReport,
    /// The same as openreports.io/v1alpha1 Reports (YAML).
    #[value(name = "openreports")]
    OpenReports,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any violation.
    Violation,
    /// Any drift.
    Drift,
    /// Any violation, drift or unresolved reference.
    Any,
}

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    input: InputArgs,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: Output,
    /// Exit 1 when a finding of this kind exists.
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
}

#[derive(Serialize)]
struct Report<'a> {
    findings: &'a [Finding],
    summary: Summary,
    /// Only when there are any, so a clean report keeps its shape.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<Warning>,
}

/// Why a warning is given: the only one so far.
pub(crate) const FOREIGN_API_GROUP: &str = "ForeignApiGroup";

/// Something the check did not look at that a reader would assume it did.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Warning {
    reason: &'static str,
    /// `Kind ns/name`.
    object: String,
    api_version: String,
    file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    message: String,
}

impl Warning {
    fn of(l: &Lookalike) -> Self {
        Warning {
            reason: FOREIGN_API_GROUP,
            object: l.object.clone(),
            api_version: l.api_version.clone(),
            file: text::path(&l.file),
            line: l.line,
            message: format!("{} ({LOOKALIKE_HINT})", l.message()),
        }
    }
}

pub(crate) fn trips(fail_on: FailOn, kind: FindingKind) -> bool {
    match fail_on {
        FailOn::Violation => kind == FindingKind::Violation,
        FailOn::Drift => kind == FindingKind::Drift,
        FailOn::Any => matches!(
            kind,
            FindingKind::Violation | FindingKind::Drift | FindingKind::Unresolved
        ),
    }
}

/// Every finding over the loaded input, or the invalid objects as an input failure.
pub(crate) fn findings(input: &Input) -> Result<Vec<Finding>, Failure> {
    let eval = input.engine.evaluator(input.now);
    let mut findings = eval.check();
    if !input.bundle_clashes.is_empty() {
        findings.extend(input.bundle_clashes.iter().cloned());
        findings.sort();
    }
    let invalid: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind == FindingKind::Invalid)
        .collect();
    if !invalid.is_empty() {
        let lines: Vec<String> = invalid
            .iter()
            .map(|f| text::escape(&format!("{}: {}", f.object, f.message)).into_owned())
            .collect();
        return Err(Failure::Input(format!(
            "invalid input:\n  {}",
            lines.join("\n  ")
        )));
    }
    Ok(findings)
}

pub fn run(args: CheckArgs) -> Result<(), Failure> {
    let input = args.input.load()?;
    let findings = findings(&input)?;
    let summary = Summary::of(&findings);
    match args.output {
        Output::Json => print_json(&Report {
            findings: &findings,
            summary: summary.clone(),
            warnings: input.lookalikes.iter().map(Warning::of).collect(),
        }),
        Output::Table => {
            let mut out = table(&findings, &summary);
            if !input.lookalikes.is_empty() {
                out.push_str(&format!(
                    "warning: {} object(s) of our kinds from other API groups were not checked (see stderr)\n",
                    input.lookalikes.len()
                ));
            }
            print_out(out.as_bytes())
        }
        Output::Sarif => print_json(&super::sarif::log(
            &findings,
            &input.origins,
            &input.lookalikes,
        )),
        Output::PolicyReport => print_reports(&findings, Api::PolicyReport, input.now)?,
        Output::OpenReports => print_reports(&findings, Api::OpenReports, input.now)?,
    }
    if let Some(gate) = args.fail_on {
        let n = findings.iter().filter(|f| trips(gate, f.kind)).count();
        if n > 0 {
            return Err(Failure::Gate(format!(
                "mcpgov check: {n} finding(s) trip --fail-on {}",
                gate.to_possible_value().expect("named").get_name()
            )));
        }
    }
    Ok(())
}

/// The reports as a `v1` List in YAML, stamped with the evaluation instant (`--now`
/// makes the output reproducible).
fn print_reports(findings: &[Finding], api: Api, now: jiff::Timestamp) -> Result<(), Failure> {
    let mut options = reports::Options::new(api);
    options.timestamp = Some(now);
    let built = reports::build(findings, &options);
    if built.unplaced > 0 {
        eprintln!(
            "warning: {} finding(s) name no namespaced object and are in no report",
            built.unplaced
        );
    }
    let list = reports::List::of(built.reports);
    let yaml = serde_saphyr::to_string(&list).map_err(|e| Failure::Input(e.to_string()))?;
    print_out(yaml.as_bytes());
    Ok(())
}

/// The findings for a terminal: every cell escaped (tool names, URIs and messages
/// come from manifests and crawled catalogs).
pub(crate) fn table(findings: &[Finding], s: &Summary) -> String {
    let cell = |t: &str| text::escape(t).into_owned();
    let rows: Vec<[String; 4]> = findings
        .iter()
        .map(|f| {
            [
                format!("{:?}", f.kind),
                cell(f.reason.as_str()),
                cell(&f.object.to_string()),
                cell(&f.message),
            ]
        })
        .collect();
    let header = ["KIND", "REASON", "OBJECT", "MESSAGE"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    if !rows.is_empty() {
        for r in std::iter::once(&header).chain(rows.iter()) {
            let line: Vec<String> = r
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if i == 3 {
                        c.clone()
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{} violation(s), {} exception(s), {} drift, {} unresolved, {} invalid\n",
        s.violations, s.exceptions, s.drift, s.unresolved, s.invalid
    ));
    out
}
