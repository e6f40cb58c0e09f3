//! Command line: `mcpgov check | query | bundle | crds`. Results go to stdout,
//! diagnostics to stderr. Exit 0 on success, 1 when a gate trips (or an agent is
//! unknown), 2 on unreadable or invalid input.

mod check;
#[cfg(test)]
mod fuzz;
mod input;
mod operator;
mod query;
mod sarif;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

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
    /// Print the exact policy bundle bytes the operator publishes for AGENT.
    Bundle(query::BundleArgs),
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

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Query(a) => query::run(a),
        Command::Bundle(a) => query::bundle(a),
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
