//! The kubectl commands the repository documents (README, docs/, examples/, the chart's
//! README and NOTES, scripts), read from the files themselves, and the resource names
//! they pass. Kyverno (`policies.kyverno.io`) and kagent (`agents.kagent.dev`,
//! `mcpservers.kagent.dev`) use our plurals, and kubectl resolves a bare plural to one
//! group of its choosing, so every command naming our resources must name them in a
//! way only we answer to (issue 15).

use std::path::{Path, PathBuf};

/// Our group.
pub const GROUP: &str = "mcpgov.io";
/// Names of our resources that other products' resources share (or could): never bare.
pub const AMBIGUOUS: [&str; 8] = [
    "mcpserver",
    "mcpservers",
    "agent",
    "agents",
    "policy",
    "policies",
    "grant",
    "grants",
];
/// Our plurals: `PLURAL.mcpgov.io` is unambiguous for get, wait, describe and explain.
pub const PLURALS: [&str; 4] = ["mcpservers", "agents", "policies", "grants"];
/// The category and the short names the CRDs declare that no one else uses.
pub const UNIQUE_NAMES: [&str; 5] = ["mcpgov", "mcps", "mcpagent", "mcppolicy", "mcpgrant"];

/// One kubectl invocation found in a file.
#[derive(Clone, Debug)]
pub struct Command {
    pub file: PathBuf,
    pub line: usize,
    /// The command as found (from `kubectl` to the end of the command).
    pub text: String,
    /// The subcommand (`get`, `wait`, `explain`, `auth can-i` as `can-i`, …).
    pub verb: String,
    /// The resource argument, split at commas, without `/name` (for explain, the whole
    /// `resource.field` path).
    pub resources: Vec<String>,
}

/// Subcommands whose first argument is a resource.
const RESOURCE_VERBS: [&str; 10] = [
    "get", "describe", "wait", "explain", "delete", "edit", "patch", "label", "annotate", "scale",
];

/// Flags followed by a separate value (`-n NS`); others are alone or carry `=`.
const VALUE_FLAGS: [&str; 24] = [
    "-n",
    "--namespace",
    "-o",
    "--output",
    "-l",
    "--selector",
    "-f",
    "--filename",
    "--field-selector",
    "--timeout",
    "--for",
    "--type",
    "-p",
    "--patch",
    "--patch-file",
    "--subresource",
    "--context",
    "--as",
    "--field-manager",
    "-c",
    "--container",
    "--since",
    "--sort-by",
    "--api-version",
];

/// The files whose kubectl commands users copy.
pub fn documented_files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![
        root.join("README.md"),
        root.join("charts/mcpgov/README.md"),
        root.join("charts/mcpgov/templates/NOTES.txt"),
        root.join("e2e/README.md"),
    ];
    for dir in ["docs", "examples", "scripts", "gitops", "e2e/chart"] {
        walk(&root.join(dir), &mut out);
    }
    out.retain(|p| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "md" | "sh" | "yaml" | "yml" | "txt"))
    });
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            walk(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

/// Shell-like words of one command: quotes kept together (and dropped), stopping at
/// the end of the command (`|`, `;`, `&`, a redirection, a backtick, a comment).
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in s.chars() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                cur.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                in_word = true;
            }
            '|' | ';' | '&' | '>' | '<' | '`' | ')' | '\\' => break,
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The kubectl commands of `text` (a file's contents).
pub fn commands(file: &Path, text: &str) -> Vec<Command> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("kubectl") {
            let before = rest[..at].chars().last();
            let after = &rest[at + "kubectl".len()..];
            rest = after;
            // `kubectl` as a word followed by a space, not part of `kubectl-…` or prose
            // like "kubectl's".
            if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
                || !after.starts_with(' ')
            {
                continue;
            }
            let w = words(after);
            let mut positional = Vec::new();
            let mut it = w.iter();
            while let Some(t) = it.next() {
                if t.starts_with('-') {
                    if !t.contains('=') && VALUE_FLAGS.contains(&t.as_str()) {
                        it.next();
                    }
                    continue;
                }
                positional.push(t.clone());
            }
            let (verb, resource) = match positional.as_slice() {
                [auth, can_i, _verb, res, ..] if auth == "auth" && can_i == "can-i" => {
                    ("can-i".to_string(), Some(res.clone()))
                }
                [verb, res, ..] if RESOURCE_VERBS.contains(&verb.as_str()) => {
                    (verb.clone(), Some(res.clone()))
                }
                [verb, ..] => (verb.clone(), None),
                [] => continue,
            };
            let resources = match resource {
                None => Vec::new(),
                Some(r) if verb == "explain" => vec![r],
                Some(r) => r
                    .split(',')
                    .map(|p| p.split('/').next().unwrap_or(p).to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
            };
            out.push(Command {
                file: file.to_path_buf(),
                line: i + 1,
                text: format!("kubectl{}", after.trim_end()),
                verb,
                resources,
            });
        }
    }
    out
}

/// Whether `resource` (as a command passes it) names one of ours only, one of ours in a
/// way another product could answer to (`Err`), or something else (`Ok(false)`).
pub fn names_ours(verb: &str, resource: &str) -> Result<bool, String> {
    if UNIQUE_NAMES.contains(&resource) {
        return Ok(true);
    }
    // `kubectl explain agents.mcpgov.io.spec.profile`: the resource, then the fields.
    if verb == "explain" {
        for p in PLURALS {
            if resource == format!("{p}.{GROUP}") || resource.starts_with(&format!("{p}.{GROUP}."))
            {
                return Ok(true);
            }
        }
        let first = resource.split('.').next().unwrap_or(resource);
        if UNIQUE_NAMES.contains(&first) {
            return Ok(true);
        }
        if AMBIGUOUS.contains(&first) {
            return Err(format!(
                "`{first}` in `kubectl explain {resource}` may explain another product's kind: use `{}.{GROUP}…` or a short name",
                plural_of(first)
            ));
        }
        return Ok(false);
    }
    if PLURALS.iter().any(|p| resource == format!("{p}.{GROUP}")) {
        return Ok(true);
    }
    let first = resource.split('.').next().unwrap_or(resource);
    if AMBIGUOUS.contains(&first) {
        return Err(format!(
            "`{resource}` may name another product's resource (Kyverno, kagent): use `{}.{GROUP}`, the `mcpgov` category or a short name",
            plural_of(first)
        ));
    }
    Ok(false)
}

fn plural_of(name: &str) -> &'static str {
    match name {
        "mcpserver" | "mcpservers" => "mcpservers",
        "agent" | "agents" => "agents",
        "policy" | "policies" => "policies",
        _ => "grants",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Command {
        let c = commands(Path::new("x.md"), line);
        assert_eq!(c.len(), 1, "{line}: {c:?}");
        c.into_iter().next().unwrap()
    }

    #[test]
    fn commands_are_split_into_verb_and_resources() {
        let c = one("kubectl -n mcpgov-system get deploy,pods -l app=x  # comment agents");
        assert_eq!(
            (c.verb.as_str(), c.resources.clone()),
            ("get", vec!["deploy".into(), "pods".into()])
        );
        let c = one("`kubectl get agents.mcpgov.io NAME -n NS -o jsonpath='{.status}'` differ");
        assert_eq!(c.resources, ["agents.mcpgov.io"]);
        let c = one(
            "kubectl wait --for=condition=Crawled -n live mcpserver/everything --timeout=60s >/dev/null",
        );
        assert_eq!(c.resources, ["mcpserver"]);
        let c = one("kubectl wait --for condition=established --timeout=60s -f crds/");
        assert!(c.resources.is_empty());
        let c = one("kubectl auth can-i list agents.mcpgov.io -A --as=system:serviceaccount:a:b");
        assert_eq!(
            (c.verb.as_str(), c.resources.clone()),
            ("can-i", vec!["agents.mcpgov.io".into()])
        );
        let c = one("kubectl get crd mcpservers.mcpgov.io agents.mcpgov.io");
        assert_eq!(c.resources, ["crd"]);
        assert!(commands(Path::new("x"), "kubectl's plurals; kubectl-mcpgov").is_empty());
    }

    #[test]
    fn bare_names_of_ours_are_refused_and_qualified_ones_accepted() {
        for (verb, r) in [
            ("get", "agents"),
            ("get", "agent"),
            ("get", "policy"),
            ("get", "mcpserver"),
            ("get", "agent.mcpgov.io"),
            ("explain", "agent.spec"),
            ("explain", "agent.mcpgov.io.spec"),
        ] {
            assert!(names_ours(verb, r).is_err(), "{verb} {r}");
        }
        for (verb, r) in [
            ("get", "agents.mcpgov.io"),
            ("get", "mcpgov"),
            ("get", "mcps"),
            ("explain", "agents.mcpgov.io.spec.profile"),
            ("explain", "mcpagent.spec"),
        ] {
            assert_eq!(names_ours(verb, r), Ok(true), "{verb} {r}");
        }
        assert_eq!(names_ours("get", "deploy"), Ok(false));
        assert_eq!(names_ours("get", "crd"), Ok(false));
    }
}
