//! `mcpgov why AGENT TOOL` and `mcpgov check-access`: one verdict with its evidence
//! paths, as readable text, JSON, Graphviz DOT or Mermaid.

use super::graph;
use super::{Failure, InputArgs, print_json, print_out};
use crate::questions::{self, Answer, GraphId, Snapshot, Visibility};
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

/// The registry's check-access answer (the verdict and the graph that gave it).
fn verdict(input: &InputArgs, agent: &str, tool: &str) -> Result<Answer<AccessVerdict>, Failure> {
    let loaded = input.load()?;
    let eval = loaded.engine.evaluator(loaded.now);
    let s = Snapshot {
        eval: &eval,
        graph: GraphId::of_inputs(&loaded.engine, loaded.live.is_some()),
        namespace: &loaded.namespace,
        published: None,
    };
    let input = questions::CheckAccessInput {
        agent: agent.to_string(),
        tool: tool.to_string(),
    };
    questions::check_access(&s, &Visibility::All, input).map_err(super::query::refused)
}

fn print(answer: &Answer<AccessVerdict>, output: WhyOutput) {
    let v = &answer.answer;
    match output {
        WhyOutput::Text => print_out(questions::explain_text(v).as_bytes()),
        WhyOutput::Json => print_json(answer),
        WhyOutput::Dot => print_out(graph::dot(&graph::of_verdict(v)).as_bytes()),
        WhyOutput::Mermaid => print_out(graph::mermaid(&graph::of_verdict(v)).as_bytes()),
    }
}

pub fn why(a: WhyArgs) -> Result<(), Failure> {
    let answer = verdict(&a.input, &a.agent, &a.tool)?;
    print(&answer, a.output);
    let v = &answer.answer;
    if !v.agent_found {
        return Err(Failure::Gate(format!(
            "AGENT_NOT_FOUND: no Agent {}",
            v.agent
        )));
    }
    Ok(())
}

pub fn check_access(a: CheckAccessArgs) -> Result<(), Failure> {
    let answer = verdict(&a.input, &a.agent, &a.tool)?;
    if !answer.answer.agent_found {
        eprintln!("AGENT_NOT_FOUND: no Agent {}", answer.answer.agent);
    }
    print(&answer, a.output);
    Ok(())
}
