//! The `mcpgov` command: offline checks, queries and bundles over manifests, and the
//! CRD generator.

fn main() -> std::process::ExitCode {
    mcpgov::cli::run()
}
