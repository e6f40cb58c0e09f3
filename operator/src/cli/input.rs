//! Turning `-f` paths and `--catalog` files into an engine, and reading agent names.
//! What the loader skipped is said on stderr; what it refused is a `Failure::Input`.

use super::Failure;
use super::live::{Cluster, LiveArgs};
use crate::manifest::{
    Load, Loaded, Lookalike, ReadLimits, Resource, is_stdin, load_paths, parse_size,
};
use crate::text;
use crate::validate::is_dns1123_label;
use clap::Args;
use mcpgov_engine::{Engine, EngineConfig, ObjKey, Object, ObjectRef};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Manifest files or directories (YAML, multi-document, `kind: List`); repeat the
    /// flag or separate with commas; `-` reads standard input (`./-` is a file named
    /// `-`). Positional arguments go before `-f`. Without -f, give --live (the default
    /// under `kubectl mcpgov`).
    #[arg(short = 'f', long = "filename", num_args = 1.., value_delimiter = ',')]
    pub paths: Vec<PathBuf>,
    /// MCPServer objects with status (as `kubectl get mcpservers.mcpgov.io -A -o yaml`
    /// prints),
    /// read as the crawled catalog.
    #[arg(long)]
    pub catalog: Vec<PathBuf>,
    /// Files: the namespace of objects that name none (default "default"). Live: the
    /// namespace to read (default: the kubeconfig context's).
    #[arg(short = 'n', long, env = "MCPGOV_NAMESPACE")]
    pub namespace: Option<String>,
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
    #[command(flatten)]
    pub live: LiveArgs,
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
    pub origins: BTreeMap<ObjectRef, Origin>,
    /// Objects of our kinds from other API groups, skipped (already said on stderr).
    pub lookalikes: Vec<Lookalike>,
    /// The namespace names without one are read in (`-n`, or the context's).
    pub namespace: String,
    /// The cluster, when the input was read from it.
    pub live: Option<Live>,
    /// What the engine cannot see: Agents sharing a bundle ConfigMap name.
    pub bundle_clashes: Vec<mcpgov_engine::Finding>,
}

/// A live read: the connection (for follow-up requests) and the Agents as listed.
pub struct Live {
    pub runtime: tokio::runtime::Runtime,
    pub cluster: Cluster,
    pub agents: BTreeMap<ObjKey, crate::crd::Agent>,
}

/// Objects by kind and key, as the engine will hold them.
pub type Objects = BTreeMap<(&'static str, ObjKey), Loaded>;

/// The file an object was read from (as given, or `<stdin>`) and its document's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: Option<usize>,
}

pub fn kind_and_key(l: &Loaded, default_ns: &str) -> (&'static str, ObjKey) {
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
    /// Whether the estate comes from the cluster: `--live`, or no -f under `kubectl
    /// mcpgov`. Plain `mcpgov` never reaches for a cluster unasked: a CI job that lost
    /// its -f must fail, not pass on whatever cluster its kubeconfig names.
    pub fn is_live(&self) -> bool {
        self.live.live || (self.paths.is_empty() && super::plugin_mode())
    }

    fn now(&self) -> Result<jiff::Timestamp, Failure> {
        match &self.now {
            None => Ok(jiff::Timestamp::now()),
            Some(t) => t
                .parse()
                .map_err(|e| Failure::Input(format!("--now {t:?}: {e}"))),
        }
    }

    fn check_namespace(flag: &str, ns: &str) -> Result<(), Failure> {
        if is_dns1123_label(ns) {
            return Ok(());
        }
        Err(Failure::Input(format!(
            "{flag} {}: not a valid namespace (a DNS-1123 label)",
            text::quote(ns, 80)
        )))
    }

    pub fn load(&self) -> Result<Input, Failure> {
        let now = self.now()?;
        if self.is_live() {
            if !self.paths.is_empty() || !self.catalog.is_empty() {
                return Err(Failure::Input(
                    "--live reads the cluster, -f and --catalog read files: give one or the other \
                     (`what-if` overlays files on the cluster)"
                        .into(),
                ));
            }
            let (live, ns, objects) = self.read_live(&BTreeSet::new())?;
            return Ok(self.build(objects, Vec::new(), ns, now, Some(live)));
        }
        if self.paths.is_empty() {
            return Err(Failure::Input(
                "no input: give manifests with -f FILE (or `-f -`), or --live to read the \
                 cluster in your kubeconfig"
                    .into(),
            ));
        }
        if self.live.all_namespaces {
            return Err(Failure::Input(
                "-A reads every namespace of the cluster: it needs --live".into(),
            ));
        }
        let ns = self.namespace.clone().unwrap_or_else(|| "default".into());
        let (objects, lookalikes) = self.read_files(&ns)?;
        Ok(self.build(objects, lookalikes, ns, now, None))
    }

    /// Connect as the kubeconfig says and read the estate: namespace `-n` (or the
    /// context's) and `extra` whole, or every namespace with -A.
    pub fn read_live(&self, extra: &BTreeSet<String>) -> Result<(Live, String, Objects), Failure> {
        let (runtime, cluster, ns) = self.connect()?;
        let objects = self.read_cluster(&runtime, &cluster, &ns, extra)?;
        let agents = agents_of(&objects);
        let live = Live {
            runtime,
            cluster,
            agents,
        };
        Ok((live, ns, objects))
    }

    /// The connection, and the namespace to read (`-n`, or the context's).
    pub fn connect(&self) -> Result<(tokio::runtime::Runtime, Cluster, String), Failure> {
        let runtime = super::operator::runtime()?;
        let cluster = runtime.block_on(self.live.connect())?;
        let ns = self
            .namespace
            .clone()
            .unwrap_or_else(|| cluster.default_namespace.clone());
        Self::check_namespace("--namespace", &ns)?;
        Self::check_namespace("--governance-namespace", &self.governance_namespace)?;
        Ok((runtime, cluster, ns))
    }

    pub fn read_cluster(
        &self,
        runtime: &tokio::runtime::Runtime,
        cluster: &Cluster,
        ns: &str,
        extra: &BTreeSet<String>,
    ) -> Result<Objects, Failure> {
        let mut primary = extra.clone();
        primary.insert(ns.to_string());
        let read = runtime.block_on(cluster.read_estate(&primary, &self.governance_namespace))?;
        let mut objects = Objects::new();
        for l in read.objects {
            objects.entry(kind_and_key(&l, ns)).or_insert(l);
        }
        Ok(objects)
    }

    /// Read -f and --catalog into objects, `ns` for those that name no namespace, and
    /// the lookalikes skipped on the way.
    pub fn read_files(&self, ns: &str) -> Result<(Objects, Vec<Lookalike>), Failure> {
        Self::check_namespace("--namespace", ns)?;
        Self::check_namespace("--governance-namespace", &self.governance_namespace)?;
        if self.paths.iter().any(|p| is_stdin(p)) && self.catalog.iter().any(|p| is_stdin(p)) {
            return Err(Failure::Input(
                "standard input (`-`) can be read once: give it to -f or to --catalog".into(),
            ));
        }
        let limits = self.read.limits();
        let read = |paths: &[PathBuf]| {
            load_paths(paths, limits).map_err(|e| Failure::Input(e.to_string()))
        };
        let main = read(&self.paths)?;
        let catalog = read(&self.catalog)?;
        report_skipped(&[&main, &catalog]);
        let lookalikes = [&main.lookalikes[..], &catalog.lookalikes[..]].concat();
        let (loaded, catalog) = (main.objects, catalog.objects);
        let mut objects = Objects::new();
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
        Ok((objects, lookalikes))
    }

    /// The engine over `objects`, and where each came from.
    pub fn build(
        &self,
        objects: Objects,
        lookalikes: Vec<Lookalike>,
        ns: String,
        now: jiff::Timestamp,
        live: Option<Live>,
    ) -> Input {
        let config = EngineConfig {
            governance_namespace: self.governance_namespace.clone(),
        };
        // Objects read from the cluster have no file: SARIF then gives their logical
        // location (`Kind ns/name`) only.
        let origins = objects
            .iter()
            .filter(|(_, l)| l.file != Path::new(super::live::CLUSTER_ORIGIN))
            .filter_map(|((kind, key), l)| {
                let origin = Origin {
                    file: l.file.clone(),
                    line: l.line,
                };
                // Every kind here is one of ours (kind_and_key names them).
                Some((ObjectRef::new(kind.parse().ok()?, key), origin))
            })
            .collect();
        let bundle_names = objects
            .iter()
            .filter_map(|((_, key), l)| match &l.resource {
                Resource::Agent(a) => {
                    Some((key.clone(), crate::controller::bundles::config_map_name(a)))
                }
                _ => None,
            })
            .collect();
        let bundle_clashes = crate::admission::clash::among(&bundle_names)
            .into_iter()
            .map(|(agent, message)| {
                mcpgov_engine::Finding::new(
                    mcpgov_engine::FindingKind::Unresolved,
                    mcpgov_engine::FindingReason::BundleNameClash,
                    mcpgov_engine::ObjectRef::new(mcpgov_engine::Kind::Agent, &agent),
                    message,
                )
                .agent(&agent)
            })
            .collect();
        let engine =
            Engine::from_snapshot(config, objects.values().map(|l| l.resource.to_engine(&ns)));
        Input {
            bundle_clashes,
            engine,
            now,
            origins,
            lookalikes,
            namespace: ns,
            live,
        }
    }

    /// The evaluation instant (`--now`, or the clock).
    pub fn instant(&self) -> Result<jiff::Timestamp, Failure> {
        self.now()
    }
}

fn agents_of(objects: &Objects) -> BTreeMap<ObjKey, crate::crd::Agent> {
    objects
        .iter()
        .filter_map(|((_, key), l)| match &l.resource {
            Resource::Agent(a) => Some((key.clone(), (**a).clone())),
            _ => None,
        })
        .collect()
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
    crate::questions::resolve_agent(engine, raw, default_ns, &crate::questions::Visibility::All)
        .map_err(super::query::refused)
}
