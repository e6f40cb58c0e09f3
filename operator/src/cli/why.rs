//! `mcpgov why AGENT TOOL` and `mcpgov check-access`: one verdict with its evidence
//! paths, as readable text, JSON, Graphviz DOT or Mermaid.

use super::graph;
use super::input::agent_key;
use super::{Failure, InputArgs, print_json, print_out};
use clap::{Args, ValueEnum};
use mcpgov_engine::AccessVerdict;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WhyOutput {
    Text,
    Json,
    /// Graphviz DOT (`| dot -Tsvg > why.svg`).
    Dot,
    /// A Mermaid flowchart (Markdown renders it in a ```mermaid block).
    Mermaid,
}

#[derive(Args)]
pub struct WhyArgs {
    #[command(flatten)]
    input: InputArgs,
    /// `namespace/name`, or a name when only one namespace has such an agent.
    agent: String,
    /// A tool key (`server::tool`, `namespace/server::tool`) or a bare tool name.
    tool: String,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: WhyOutput,
}

#[derive(Args)]
pub struct CheckAccessArgs {
    #[command(flatten)]
    input: InputArgs,
    agent: String,
    tool: String,
    /// JSON (as `query check-access`), or the paths as DOT or Mermaid.
    #[arg(short = 'o', long, value_enum, default_value = "json")]
    output: WhyOutput,
}

fn verdict(input: &InputArgs, agent: &str, tool: &str) -> Result<AccessVerdict, Failure> {
    let loaded = input.load()?;
    let eval = loaded.engine.evaluator(loaded.now);
    let key = agent_key(eval.engine(), agent, &loaded.namespace)?;
    Ok(eval.check_access(&key, tool))
}

fn print(v: &AccessVerdict, output: WhyOutput) {
    match output {
        WhyOutput::Text => print_out(crate::questions::explain_text(v).as_bytes()),
        WhyOutput::Json => print_json(v),
        WhyOutput::Dot => print_out(graph::dot(&graph::of_verdict(v)).as_bytes()),
        WhyOutput::Mermaid => print_out(graph::mermaid(&graph::of_verdict(v)).as_bytes()),
    }
}

pub fn why(a: WhyArgs) -> Result<(), Failure> {
    let v = verdict(&a.input, &a.agent, &a.tool)?;
    print(&v, a.output);
    if !v.agent_found {
        return Err(Failure::Gate(format!(
            "AGENT_NOT_FOUND: no Agent {}",
            v.agent
        )));
    }
    Ok(())
}

pub fn check_access(a: CheckAccessArgs) -> Result<(), Failure> {
    let v = verdict(&a.input, &a.agent, &a.tool)?;
    if !v.agent_found {
        eprintln!("AGENT_NOT_FOUND: no Agent {}", v.agent);
    }
    print(&v, a.output);
    Ok(())
}
