//! Command line: `mcpgov check | query | why | what-if | bundle | approve | crds`. Results go
//! to stdout, diagnostics to stderr. Exit 0 on success, 1 when a gate trips (or an
//! agent is unknown), 2 on unreadable or invalid input. Installed as `kubectl-mcpgov`
//! it is a kubectl plugin: it names itself `kubectl mcpgov` and reads the live cluster
//! when no -f is given.

mod approve;
mod check;
mod checkcall;
#[cfg(test)]
mod fuzz;
mod graph;
pub(crate) mod input;
mod live;
mod operator;
mod query;
mod sarif;
mod serve;
mod verify;
mod whatif;
mod why;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;

pub use input::{InputArgs, ReadArgs};

#[derive(Parser)]
#[command(
    name = "mcpgov",
    version,
    about = "Govern which AI agents may call which MCP tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate manifests offline and print every finding (what CI runs before a merge).
    Check(check::CheckArgs),
    /// Ask one governance question; prints JSON.
    Query(query::QueryArgs),
    /// Why AGENT may or may not call TOOL: the verdict and every evidence path.
    Why(why::WhyArgs),
    /// May AGENT call TOOL (JSON, or its paths as DOT or Mermaid).
    CheckAccess(why::CheckAccessArgs),
    /// The findings applying (or deleting) the -f manifests would add or remove, on
    /// the live cluster, before you apply them.
    WhatIf(whatif::WhatIfArgs),
    /// Print the exact policy bundle bytes the operator publishes for AGENT (with
    /// --verify: compare them with the published ConfigMap).
    Bundle(query::BundleArgs),
    /// Show tool contracts pending approval (what changed) and approve them: print the
    /// MCPServer patch for GitOps, or apply it with --apply.
    Approve(approve::ApproveArgs),
    /// Answer the governance questions of `query` as an MCP server (tools over stdio,
    /// or streamable HTTP on loopback with --listen).
    Serve(serve::ServeArgs),
    /// Print the four CustomResourceDefinitions as YAML.
    Crds {
        /// Print the CRD reference (Markdown) instead.
        #[arg(long)]
        reference: bool,
    },
    /// Run the operator against the cluster in KUBECONFIG (or in-cluster config).
    Operator(operator::OperatorArgs),
    /// Crawl the MCPServers of manifests and print them with their catalog in status.
    Crawl(operator::CrawlArgs),
    /// Cluster-side catalog tools.
    Catalog {
        #[command(subcommand)]
        command: operator::CatalogCommand,
    },
}

/// Outcome of a command: what to print and how to exit.
pub enum Failure {
    /// Bad input or usage: exit 2.
    Input(String),
    /// A gate tripped or a name is unknown: exit 1 (stdout may already hold a result).
    Gate(String),
}

/// The executable name kubectl looks for on PATH for `kubectl mcpgov`.
pub const PLUGIN_EXECUTABLE: &str = "kubectl-mcpgov";

static PLUGIN: OnceLock<bool> = OnceLock::new();

/// Whether this process runs as a kubectl plugin (set once, from argv[0]).
pub(crate) fn plugin_mode() -> bool {
    *PLUGIN.get().unwrap_or(&false)
}

/// Whether `argv0` names the plugin executable (a path, a symlink, `.exe` on Windows).
pub fn invoked_as_plugin(argv0: &std::ffi::OsStr) -> bool {
    let path = std::path::Path::new(argv0);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = name.strip_suffix(".exe").unwrap_or(name);
    name == PLUGIN_EXECUTABLE
}

fn command(plugin: bool) -> clap::Command {
    let cmd = Cli::command();
    if plugin {
        // Usage and errors then show the command the user typed.
        cmd.bin_name("kubectl mcpgov")
            .display_name("kubectl mcpgov")
    } else {
        cmd
    }
}

pub fn run() -> ExitCode {
    let plugin = std::env::args_os()
        .next()
        .is_some_and(|a| invoked_as_plugin(&a));
    let _ = PLUGIN.set(plugin);
    let matches = command(plugin).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Query(a) => query::run(a),
        Command::Why(a) => why::why(a),
        Command::CheckAccess(a) => why::check_access(a),
        Command::WhatIf(a) => whatif::run(a),
        Command::Bundle(a) => query::bundle(a),
        Command::Approve(a) => approve::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Crds { reference } => {
            let text = if reference {
                crate::crd::reference::markdown()
            } else {
                crate::crd::crds_yaml()
            };
            print_out(text.as_bytes());
            Ok(())
        }
        Command::Operator(a) => operator::run(a),
        Command::Crawl(a) => operator::crawl(a),
        Command::Catalog { command } => operator::catalog(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Messages quote input (names, values, file names): whatever a part forgot to
        // escape is escaped here, line breaks aside, so no raw control byte reaches a
        // terminal.
        Err(Failure::Gate(msg)) => {
            if !msg.is_empty() {
                eprintln!("{}", crate::text::escape_lines(&msg));
            }
            ExitCode::from(1)
        }
        Err(Failure::Input(msg)) => {
            eprintln!("error: {}", crate::text::escape_lines(&msg));
            ExitCode::from(2)
        }
    }
}

/// Write to stdout; a closed pipe (`| head`) is not an error worth a panic.
pub(crate) fn print_out(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|_| out.flush());
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) {
    let mut s = serde_json::to_string_pretty(value).expect("results serialise");
    s.push('\n');
    print_out(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn the_plugin_is_known_by_its_executable_name() {
        for yes in [
            "kubectl-mcpgov",
            "/usr/local/bin/kubectl-mcpgov",
            "./kubectl-mcpgov",
            "kubectl-mcpgov.exe",
        ] {
            assert!(invoked_as_plugin(OsStr::new(yes)), "{yes}");
        }
        for no in ["mcpgov", "/bin/mcpgov", "kubectl-mcpgov-x", "kubectl", ""] {
            assert!(!invoked_as_plugin(OsStr::new(no)), "{no}");
        }
    }

    #[test]
    fn the_plugin_names_itself_as_kubectl_does() {
        let help = command(true).render_usage().to_string();
        assert!(help.contains("kubectl mcpgov"), "{help}");
        let help = command(false).render_usage().to_string();
        assert!(!help.contains("kubectl"), "{help}");
        command(true).debug_assert();
    }
}
