//! `mcpgov what-if -f change.yaml`: the findings a change would add or remove. The
//! change is laid over the live estate (or `--estate` files) as `kubectl apply` would
//! lay it — an object of the same kind and key is replaced, a new one added, or with
//! `--delete` removed — and both estates are checked.

use super::check::{FailOn, findings, table, trips};
use super::input::{InputArgs, Objects};
use super::live::LiveArgs;
use super::{Failure, ReadArgs, print_json, print_out};
use crate::manifest::Resource;
use crate::text;
use clap::{Args, ValueEnum};
use mcpgov_engine::{Finding, Summary};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Args)]
pub struct WhatIfArgs {
    /// The change: manifests you are about to apply (files, directories, `-`).
    #[arg(short = 'f', long = "filename", required = true, num_args = 1.., value_delimiter = ',')]
    change: Vec<PathBuf>,
    /// The change deletes the -f objects instead of applying them.
    #[arg(long)]
    delete: bool,
    /// Lay the change over these manifests instead of the live cluster (e.g. the
    /// base branch in CI).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    estate: Vec<PathBuf>,
    /// Catalog files for --estate (as `check --catalog`).
    #[arg(long, requires = "estate")]
    catalog: Vec<PathBuf>,
    /// Namespace of objects that name none, and (live) the namespace to read
    /// (default: the kubeconfig context's).
    #[arg(short = 'n', long, env = "MCPGOV_NAMESPACE")]
    namespace: Option<String>,
    /// Policies in this namespace govern every namespace.
    #[arg(
        long,
        default_value = "mcpgov-system",
        env = "MCPGOV_GOVERNANCE_NAMESPACE"
    )]
    governance_namespace: String,
    /// Evaluate as of this RFC 3339 instant.
    #[arg(long)]
    now: Option<String>,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    live: LiveArgs,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: Output,
    /// Exit 1 when the change adds a finding of this kind.
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
}

/// What a change does to the findings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub added: Vec<Finding>,
    pub removed: Vec<Finding>,
}

/// Findings in `after` and not in `before` (added), and the reverse (removed), as
/// multisets: a finding twice before and once after is one removal.
pub fn diff(before: &[Finding], after: &[Finding]) -> Diff {
    let mut b: Vec<&Finding> = before.iter().collect();
    let mut a: Vec<&Finding> = after.iter().collect();
    b.sort();
    a.sort();
    let (mut i, mut j) = (0, 0);
    let mut d = Diff::default();
    while i < b.len() || j < a.len() {
        match (b.get(i), a.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                d.removed.push((*x).clone());
                i += 1;
            }
            (Some(_), Some(y)) | (None, Some(y)) => {
                d.added.push((*y).clone());
                j += 1;
            }
            (Some(x), None) => {
                d.removed.push((*x).clone());
                i += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    d
}

/// Lay `change` over `base`: replace or add (keeping a live MCPServer's crawled
/// status, which `kubectl apply` does not touch), or remove with `delete`.
pub fn overlay(base: &Objects, change: Objects, delete: bool) -> (Objects, Vec<String>) {
    let mut after = base.clone();
    let mut notes = Vec::new();
    for (id, mut l) in change {
        if delete {
            if after.remove(&id).is_none() {
                notes.push(format!(
                    "{} {} does not exist: nothing to delete",
                    id.0,
                    text::escape(&id.1.to_string())
                ));
            }
            continue;
        }
        if let (Some(prev), Resource::MCPServer(s)) = (after.get(&id), &mut l.resource)
            && let Resource::MCPServer(p) = &prev.resource
            && !s.has_catalog()
        {
            s.status = p.status.clone();
        }
        after.insert(id, l);
    }
    (after, notes)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    added: &'a [Finding],
    removed: &'a [Finding],
    before: Summary,
    after: Summary,
}

pub fn run(a: WhatIfArgs) -> Result<(), Failure> {
    let live = a.estate.is_empty();
    if !live && a.live.live {
        return Err(Failure::Input(
            "--estate reads files, --live the cluster: give one or the other".into(),
        ));
    }
    let base_args = InputArgs {
        paths: a.estate.clone(),
        catalog: a.catalog.clone(),
        namespace: a.namespace.clone(),
        governance_namespace: a.governance_namespace.clone(),
        now: a.now.clone(),
        read: a.read.clone(),
        live: a.live.clone(),
    };
    let change_args = InputArgs {
        paths: a.change.clone(),
        catalog: Vec::new(),
        ..base_args.clone()
    };
    let now = base_args.instant()?;
    let (ns, base, change) = if live {
        let (runtime, cluster, ns) = base_args.connect()?;
        let (change, _) = change_args.read_files(&ns)?;
        // The namespaces the change touches are read whole, like the one asked about.
        let extra: BTreeSet<String> = change.keys().map(|(_, k)| k.namespace.clone()).collect();
        let base = base_args.read_cluster(&runtime, &cluster, &ns, &extra)?;
        (ns, base, change)
    } else {
        let ns = a.namespace.clone().unwrap_or_else(|| "default".into());
        let (base, _) = base_args.read_files(&ns)?;
        let (change, _) = change_args.read_files(&ns)?;
        (ns, base, change)
    };
    let (after, notes) = overlay(&base, change, a.delete);
    for n in notes {
        eprintln!("note: {n}");
    }
    let before = findings(&base_args.build(base, Vec::new(), ns.clone(), now, None))?;
    let after = findings(&base_args.build(after, Vec::new(), ns, now, None))?;
    let d = diff(&before, &after);
    match a.output {
        Output::Json => print_json(&Report {
            added: &d.added,
            removed: &d.removed,
            before: Summary::of(&before),
            after: Summary::of(&after),
        }),
        Output::Table => {
            print_out(render(&d, &Summary::of(&before), &Summary::of(&after)).as_bytes())
        }
    }
    if let Some(gate) = a.fail_on {
        let n = d.added.iter().filter(|f| trips(gate, f.kind)).count();
        if n > 0 {
            return Err(Failure::Gate(format!(
                "mcpgov what-if: the change adds {n} finding(s) that trip --fail-on {}",
                gate.to_possible_value().expect("named").get_name()
            )));
        }
    }
    Ok(())
}

/// Added findings under `+`, removed under `-`, then the counts before and after.
pub fn render(d: &Diff, before: &Summary, after: &Summary) -> String {
    let mut out = String::new();
    for (sign, list, title) in [
        ('+', &d.added, "Findings the change adds"),
        ('-', &d.removed, "Findings the change removes"),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("{title}:\n"));
        let t = table(list, &Summary::of(list));
        // The table without its summary line, each row marked.
        for line in t.lines().take_while(|l| !l.is_empty()) {
            if line.starts_with("KIND") {
                out.push_str(&format!("  {line}\n"));
            } else {
                out.push_str(&format!("{sign} {line}\n"));
            }
        }
        out.push('\n');
    }
    if d.added.is_empty() && d.removed.is_empty() {
        out.push_str("The change adds and removes no findings.\n");
    }
    let line = |s: &Summary| {
        format!(
            "{} violation(s), {} exception(s), {} drift, {} unresolved",
            s.violations, s.exceptions, s.drift, s.unresolved
        )
    };
    out.push_str(&format!(
        "before: {}\nafter:  {}\n",
        line(before),
        line(after)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpgov_engine::FindingKind;

    fn f(kind: FindingKind, object: &str) -> Finding {
        Finding::new(
            kind,
            mcpgov_engine::FindingReason::NotFound,
            mcpgov_engine::ObjectRef::parse(object).unwrap(),
            format!("about {object}"),
        )
    }

    #[test]
    fn diff_is_a_multiset_difference() {
        let v = |o| f(FindingKind::Violation, o);
        let before = [v("Agent t/a"), v("Agent t/b"), v("Agent t/b")];
        let after = [
            v("Agent t/b"),
            v("Agent t/c"),
            f(FindingKind::Drift, "Grant t/g"),
        ];
        let d = diff(&before, &after);
        assert_eq!(d.removed, [v("Agent t/a"), v("Agent t/b")]);
        assert_eq!(
            d.added,
            [v("Agent t/c"), f(FindingKind::Drift, "Grant t/g")]
        );
        // Order of input does not matter; no change is no diff.
        let mut shuffled = after.to_vec();
        shuffled.reverse();
        assert_eq!(diff(&after, &shuffled), Diff::default());
        assert_eq!(diff(&[], &[]), Diff::default());
    }

    #[test]
    fn the_table_marks_each_side_and_counts_both_estates() {
        let d = Diff {
            added: vec![f(FindingKind::Violation, "Agent t/new")],
            removed: vec![f(FindingKind::Exception, "Agent t/old")],
        };
        let before = Summary {
            exceptions: 1,
            ..Default::default()
        };
        let after = Summary {
            violations: 1,
            ..Default::default()
        };
        let got = render(&d, &before, &after);
        let want = "\
Findings the change adds:
  KIND       REASON    OBJECT       MESSAGE
+ Violation  NotFound  Agent t/new  about Agent t/new

Findings the change removes:
  KIND       REASON    OBJECT       MESSAGE
- Exception  NotFound  Agent t/old  about Agent t/old

before: 0 violation(s), 1 exception(s), 0 drift, 0 unresolved
after:  1 violation(s), 0 exception(s), 0 drift, 0 unresolved
";
        assert_eq!(got, want);
        let none = render(&Diff::default(), &after, &after);
        assert!(
            none.starts_with("The change adds and removes no findings.\n"),
            "{none}"
        );
    }
}
