//! `mcpgov query <question>` and `mcpgov bundle`: the engine's questions over manifests.

use super::input::agent_key;
use super::{Failure, InputArgs, print_json, print_out};
use crate::questions::{self as q, GraphId, Refusal, Snapshot, Visibility};
use clap::{Args, Subcommand};
use mcpgov_engine::{Evaluator, ObjKey};
use serde_json::json;

/// A question the registry refused: bad arguments exit 2, the rest 1.
/// A `--profile` flag, parsed as the MCP questions parse theirs.
fn profile_arg(p: Option<&str>) -> Result<Option<q::ProfileArg>, Failure> {
    p.map(q::ProfileArg::parse).transpose().map_err(refused)
}

pub(super) fn refused(r: Refusal) -> Failure {
    match r {
        Refusal::Invalid(m) => Failure::Input(m),
        other => Failure::Gate(other.message().to_string()),
    }
}

#[derive(Args)]
pub struct QueryArgs {
    #[command(subcommand)]
    question: Question,
}

#[derive(Subcommand)]
enum Question {
    /// May AGENT call TOOL, and does the call cross a Deny policy?
    CheckAccess {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        tool: String,
    },
    /// What the gateway would decide for one call of TOOL by AGENT with these
    /// arguments (bundle decision, expiry and per-call guard; the live contract is not
    /// checked offline), with the evidence.
    CheckCall {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        tool: String,
        /// The call's `arguments`, a JSON object.
        #[arg(long, default_value = "{}")]
        arguments: String,
    },
    /// Tools AGENT can call that reach a Deny-governed resource or tool.
    UnsafeTools {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        /// Also list operator-declared exceptions.
        #[arg(long)]
        all: bool,
    },
    /// Tools and agents affected by a resource URI/glob or a Policy (`name`, `ns/name`).
    BlastRadius {
        #[command(flatten)]
        input: InputArgs,
        target: String,
    },
    /// Governance naming tools no server exposes now.
    Drift {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Granted tools with no READS/WRITES authored.
    UnmappedTools {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Policies no agent currently reaches.
    OrphanPolicies {
        #[command(flatten)]
        input: InputArgs,
    },
    /// READS/WRITES/GOVERNED_BY edges with no evidence.
    UnbackedEdges {
        #[command(flatten)]
        input: InputArgs,
        /// Also audit CAN_CALL grants.
        #[arg(long)]
        include_grants: bool,
    },
    /// Destructive-hinted tools with no policy path.
    DestructiveUnsafeguarded {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Authored WRITES on tools that claim readOnlyHint.
    AnnotationContradictions {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Whole-estate audit summary with pass/fail status.
    AuditReport {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Why AGENT may or may not use TOOL under a profile: the decision, the reasons
    /// and the evidence paths.
    Explain {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        tool: String,
        /// strict, review or explore; default: the Agent's own profile.
        #[arg(long)]
        profile: Option<String>,
    },
    /// The bundle compiled for AGENT: sha256, the digests of its inputs, its size.
    BundleIdentity {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
    },
    /// Hard filter of candidate tools under a profile, with reject reasons.
    EligibleTools {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        /// Candidate tool keys; default: every tool the agent is granted.
        tools: Vec<String>,
        /// strict, review or explore; default: the Agent's own profile.
        #[arg(long)]
        profile: Option<String>,
    },
    /// Per-candidate facts and Toolgraph's fixed risk score.
    RankFeatures {
        #[command(flatten)]
        input: InputArgs,
        agent: String,
        #[arg(required = true)]
        tools: Vec<String>,
    },
}

#[derive(Args)]
pub struct BundleArgs {
    #[command(flatten)]
    input: InputArgs,
    /// `namespace/name`, or a name when only one namespace has such an agent.
    agent: String,
    /// Compare the bundle ConfigMap the operator published for AGENT with a fresh
    /// compilation from the live estate; exit 1 naming what differs.
    #[arg(long)]
    verify: bool,
}

fn not_found(agent: &ObjKey) -> Failure {
    Failure::Gate(format!("AGENT_NOT_FOUND: no Agent {agent}"))
}

/// Resolve AGENT and fail with AGENT_NOT_FOUND when it does not exist.
fn existing_agent(eval: &Evaluator, raw: &str, ns: &str) -> Result<ObjKey, Failure> {
    let key = agent_key(eval.engine(), raw, ns)?;
    if eval.engine().agent(&key).is_none() {
        return Err(not_found(&key));
    }
    Ok(key)
}

pub fn run(args: QueryArgs) -> Result<(), Failure> {
    use Question::*;
    let input = match &args.question {
        CheckAccess { input, .. }
        | CheckCall { input, .. }
        | UnsafeTools { input, .. }
        | BlastRadius { input, .. }
        | Drift { input }
        | UnmappedTools { input }
        | OrphanPolicies { input }
        | UnbackedEdges { input, .. }
        | DestructiveUnsafeguarded { input }
        | AnnotationContradictions { input }
        | AuditReport { input }
        | Explain { input, .. }
        | BundleIdentity { input, .. }
        | EligibleTools { input, .. }
        | RankFeatures { input, .. } => input,
    };
    let loaded = input.load()?;
    let ns = loaded.namespace.clone();
    let eval = loaded.engine.evaluator(loaded.now);
    // The registry's questions: the same functions and JSON as `mcpgov serve`.
    let s = Snapshot {
        eval: &eval,
        graph: GraphId::of_inputs(&loaded.engine, loaded.live.is_some()),
        namespace: &ns,
        published: None,
    };
    let all = &Visibility::All;
    match args.question {
        CheckAccess { agent, tool, .. } => {
            let v =
                q::check_access(&s, all, q::CheckAccessInput { agent, tool }).map_err(refused)?;
            if !v.answer.agent_found {
                eprintln!("AGENT_NOT_FOUND: no Agent {}", v.answer.agent);
            }
            print_json(&v);
        }
        CheckCall {
            agent,
            tool,
            arguments,
            ..
        } => {
            let key = existing_agent(&eval, &agent, &ns)?;
            print_json(&super::checkcall::check_call(
                &eval, &key, &tool, &arguments,
            )?);
        }
        UnsafeTools {
            agent, all: every, ..
        } => print_json(
            &q::unsafe_tools(&s, all, q::UnsafeToolsInput { agent, all: every })
                .map_err(refused)?,
        ),
        BlastRadius { target, .. } => print_json(
            &q::blast_radius(
                &s,
                all,
                q::BlastRadiusInput {
                    target,
                    namespace: None,
                },
            )
            .map_err(refused)?,
        ),
        Drift { .. } => print_json(&q::drift(&s, all, q::NoInput {}).map_err(refused)?),
        AuditReport { .. } => {
            print_json(&q::audit_report(&s, all, q::NoInput {}).map_err(refused)?)
        }
        EligibleTools {
            agent,
            tools,
            profile,
            ..
        } => {
            let profile = profile_arg(profile.as_deref())?;
            let input = q::EligibleToolsInput {
                agent,
                tools,
                profile,
            };
            print_json(&q::eligible_tools(&s, all, input).map_err(refused)?);
        }
        Explain {
            agent,
            tool,
            profile,
            ..
        } => {
            let profile = profile_arg(profile.as_deref())?;
            let input = q::ExplainInput {
                agent,
                tool,
                profile,
            };
            print_json(&q::explain(&s, all, input).map_err(refused)?);
        }
        BundleIdentity { agent, .. } => print_json(
            &q::bundle_identity(&s, all, q::BundleIdentityInput { agent }).map_err(refused)?,
        ),
        UnmappedTools { .. } => print_json(&eval.unmapped_tools()),
        OrphanPolicies { .. } => print_json(&eval.orphan_policies()),
        UnbackedEdges { include_grants, .. } => print_json(&eval.unbacked_edges(include_grants)),
        DestructiveUnsafeguarded { .. } => print_json(&eval.destructive_unsafeguarded()),
        AnnotationContradictions { .. } => print_json(&eval.annotation_contradictions()),
        RankFeatures { agent, tools, .. } => {
            let key = existing_agent(&eval, &agent, &ns)?;
            let rows: Vec<_> = tools.iter().map(|t| eval.features(&key, t)).collect();
            print_json(&json!({"agent": key.to_string(), "tools": rows}));
        }
    }
    Ok(())
}

pub fn bundle(args: BundleArgs) -> Result<(), Failure> {
    if args.verify && !args.input.is_live() {
        return Err(Failure::Input(
            "--verify compares with the ConfigMap on the cluster: it needs --live (no -f)".into(),
        ));
    }
    let loaded = args.input.load()?;
    let ns = loaded.namespace.clone();
    let eval = loaded.engine.evaluator(loaded.now);
    let key = existing_agent(&eval, &args.agent, &ns)?;
    let b = eval
        .bundle(&key)
        .map_err(|e| Failure::Gate(format!("error: {e}")))?;
    if args.verify {
        let live = loaded.live.as_ref().expect("--verify reads live");
        return super::verify::verify(live, &key, &b);
    }
    eprintln!("bundle {} {} ({} bytes)", key, b.sha256, b.bytes.len());
    print_out(&b.bytes);
    Ok(())
}
