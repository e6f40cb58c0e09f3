//! Turning `-f` paths and `--catalog` files into an engine, and reading agent names.
//! What the loader skipped is said on stderr; what it refused is a `Failure::Input`.

use super::Failure;
use crate::manifest::{
    Load, Loaded, Lookalike, ReadLimits, Resource, is_stdin, load_paths, parse_size,
};
use crate::text;
use crate::validate::is_dns1123_label;
use clap::Args;
use mcpgov_engine::{Engine, EngineConfig, ObjKey, Object};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Manifest files or directories (YAML, multi-document, `kind: List`); repeat the
    /// flag or separate with commas; `-` reads standard input (`./-` is a file named
    /// `-`). Positional arguments go before `-f`.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1.., value_delimiter = ',')]
    pub paths: Vec<PathBuf>,
    /// MCPServer objects with status (as `kubectl get mcpservers.mcpgov.io -A -o yaml`
    /// prints),
    /// read as the crawled catalog.
    #[arg(long)]
    pub catalog: Vec<PathBuf>,
    /// Namespace of objects that name none.
    #[arg(short = 'n', long, default_value = "default", env = "MCPGOV_NAMESPACE")]
    pub namespace: String,
    /// Policies in this namespace govern every namespace.
    #[arg(
        long,
        default_value = "mcpgov-system",
        env = "MCPGOV_GOVERNANCE_NAMESPACE"
    )]
    pub governance_namespace: String,
    /// Evaluate as of this RFC 3339 instant (expected exceptions expire against it).
    #[arg(long)]
    pub now: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// How input files are read (shared by every command that reads manifests).
#[derive(Args, Clone, Debug)]
pub struct ReadArgs {
    /// Refuse any input file larger than this: bytes, or a number with Ki, Mi or Gi.
    #[arg(
        long,
        default_value = "32Mi",
        env = "MCPGOV_MAX_FILE_SIZE",
        value_parser = parse_size
    )]
    pub max_file_size: u64,
}

impl ReadArgs {
    pub fn limits(&self) -> ReadLimits {
        ReadLimits {
            max_file_bytes: self.max_file_size,
        }
    }

    /// Load `paths`, saying on stderr what was skipped.
    pub fn load(&self, paths: &[PathBuf]) -> Result<Load, Failure> {
        let load = load_paths(paths, self.limits()).map_err(|e| Failure::Input(e.to_string()))?;
        report_skipped(&[&load]);
        Ok(load)
    }
}

pub struct Input {
    pub engine: Engine,
    pub now: jiff::Timestamp,
    /// Where each object came from, keyed as findings name objects (`Kind ns/name`).
    pub origins: BTreeMap<String, Origin>,
    /// Objects of our kinds from other API groups, skipped (already said on stderr).
    pub lookalikes: Vec<Lookalike>,
}

/// The file an object was read from (as given, or `<stdin>`) and its document's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: Option<usize>,
}

fn kind_and_key(l: &Loaded, default_ns: &str) -> (&'static str, ObjKey) {
    let o = l.resource.to_engine(default_ns);
    let kind = match o {
        Object::Server(_) => "MCPServer",
        Object::Policy(_) => "Policy",
        Object::Agent(_) => "Agent",
        Object::Grant(_) => "Grant",
    };
    (kind, o.key().clone())
}

impl InputArgs {
    pub fn load(&self) -> Result<Input, Failure> {
        let now = match &self.now {
            None => jiff::Timestamp::now(),
            Some(t) => t
                .parse()
                .map_err(|e| Failure::Input(format!("--now {t:?}: {e}")))?,
        };
        for (flag, ns) in [
            ("--namespace", &self.namespace),
            ("--governance-namespace", &self.governance_namespace),
        ] {
            if !is_dns1123_label(ns) {
                return Err(Failure::Input(format!(
                    "{flag} {}: not a valid namespace (a DNS-1123 label)",
                    text::quote(ns, 80)
                )));
            }
        }
        if self.paths.iter().any(|p| is_stdin(p)) && self.catalog.iter().any(|p| is_stdin(p)) {
            return Err(Failure::Input(
                "standard input (`-`) can be read once: give it to -f or to --catalog".into(),
            ));
        }
        let ns = self.namespace.as_str();
        let limits = self.read.limits();
        let read = |paths: &[PathBuf]| {
            load_paths(paths, limits).map_err(|e| Failure::Input(e.to_string()))
        };
        let main = read(&self.paths)?;
        let catalog = read(&self.catalog)?;
        report_skipped(&[&main, &catalog]);
        let lookalikes = [&main.lookalikes[..], &catalog.lookalikes[..]].concat();
        let (loaded, catalog) = (main.objects, catalog.objects);
        let mut objects: BTreeMap<(&'static str, ObjKey), Loaded> = BTreeMap::new();
        for l in loaded {
            let id = kind_and_key(&l, ns);
            if let Some(prev) = objects.get_mut(&id) {
                if !merge_catalog(prev, &l) {
                    return Err(Failure::Input(format!(
                        "{}: {} {} is also defined in {}",
                        text::path(&l.file),
                        id.0,
                        text::escape(&id.1.to_string()),
                        text::path(&prev.file)
                    )));
                }
                continue;
            }
            objects.insert(id, l);
        }
        // Catalog files lend their status to the MCPServers the manifests declare;
        // servers only the catalog knows come in whole.
        for c in catalog {
            if !matches!(c.resource, Resource::MCPServer(_)) {
                continue;
            }
            let id = kind_and_key(&c, ns);
            match objects.get_mut(&id) {
                Some(prev) => {
                    if let (Resource::MCPServer(s), Resource::MCPServer(cs)) =
                        (&mut prev.resource, &c.resource)
                    {
                        s.status = cs.status.clone();
                    }
                }
                None => {
                    objects.insert(id, c);
                }
            }
        }
        let config = EngineConfig {
            governance_namespace: self.governance_namespace.clone(),
        };
        let origins = objects
            .iter()
            .map(|((kind, key), l)| {
                let origin = Origin {
                    file: l.file.clone(),
                    line: l.line,
                };
                (format!("{kind} {key}"), origin)
            })
            .collect();
        let engine =
            Engine::from_snapshot(config, objects.values().map(|l| l.resource.to_engine(ns)));
        Ok(Input {
            engine,
            now,
            origins,
            lookalikes,
        })
    }
}

/// Notes on stderr: a CI log should show what the gate did not look at, and why.
fn report_skipped(loads: &[&Load]) {
    for f in loads.iter().flat_map(|l| &l.skipped_files) {
        eprintln!("note: skipped {}: {}", text::path(&f.path), f.reason);
    }
    let documents: usize = loads.iter().map(|l| l.skipped_documents).sum();
    if documents > 0 {
        eprintln!(
            "note: skipped {documents} document(s) of other API groups (not {})",
            crate::crd::common::GROUP
        );
    }
    let lookalikes: Vec<&Lookalike> = loads.iter().flat_map(|l| &l.lookalikes).collect();
    for l in lookalikes.iter().take(SHOWN_LOOKALIKES) {
        eprintln!("warning: {}", l.message());
    }
    if lookalikes.len() > SHOWN_LOOKALIKES {
        eprintln!(
            "warning: … and {} more objects of our kinds from other API groups",
            lookalikes.len() - SHOWN_LOOKALIKES
        );
    }
    if !lookalikes.is_empty() {
        eprintln!("warning: {LOOKALIKE_HINT}");
    }
}

/// Enough to recognise the mistake without flooding a CI log.
const SHOWN_LOOKALIKES: usize = 20;

/// What to do about lookalikes: Kyverno (`policies.kyverno.io`) and kagent
/// (`agents.kagent.dev`, `mcpservers.kagent.dev`) share our plurals, and kubectl picks
/// one group for a bare plural.
pub const LOOKALIKE_HINT: &str = "the input holds MCPServer, Agent, Policy or Grant objects of \
     another API group: they were not checked. If it is an export, `kubectl get \
     mcpservers,agents,policies,grants` picked another product's resources (Kyverno and \
     kagent use the same plurals); export with `kubectl get mcpgov -A -o yaml` or the \
     group-qualified names (agents.mcpgov.io, policies.mcpgov.io, ...)";

/// The same MCPServer declared once as spec and once with its crawled status (a
/// catalog snapshot beside the manifests) merges; any other duplicate is an error.
fn merge_catalog(prev: &mut Loaded, next: &Loaded) -> bool {
    let (Resource::MCPServer(a), Resource::MCPServer(b)) = (&mut prev.resource, &next.resource)
    else {
        return false;
    };
    match (a.has_catalog(), b.has_catalog()) {
        (false, true) => {
            a.status = b.status.clone();
            true
        }
        (true, false) => {
            let status = a.status.take();
            **a = (**b).clone();
            a.status = status;
            prev.file = next.file.clone();
            prev.line = next.line;
            true
        }
        _ => false,
    }
}

/// `namespace/name`, or a bare name when exactly one namespace has such an agent.
pub fn agent_key(engine: &Engine, raw: &str, default_ns: &str) -> Result<ObjKey, Failure> {
    if let Some((ns, name)) = raw.split_once('/') {
        return Ok(ObjKey::new(ns, name));
    }
    let matches: Vec<&ObjKey> = engine
        .agents()
        .map(|a| &a.key)
        .filter(|k| k.name == raw)
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Ok(ObjKey::new(default_ns, raw)),
        many => Err(Failure::Input(format!(
            "agent {raw:?} exists in several namespaces ({}); name it as namespace/name",
            many.iter()
                .map(|k| k.namespace.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
