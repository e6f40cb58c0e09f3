//! `mcpgov approve`: show the tool contracts waiting for approval (with what changed,
//! from the crawler's `status.contracts`), and approve them: print the approval as an
//! MCPServer manifest patch for GitOps (stdout), or apply it with `--apply`
//! (server-side apply of `spec.contracts` under the field manager
//! [`crate::names::APPROVE_FIELD_MANAGER`]). Scope: one tool, one server, or every
//! pending tool of a namespace (or of all with -A).
//!
//! What is approved is the digest the crawler recorded and the diff shows: the patch
//! names it, so what is applied is what was reviewed, not whatever the server serves
//! by then (a later change is pending again).

use super::Failure;
use super::live::LiveArgs;
use crate::crd::MCPServer;
use crate::crd::server::{ApprovedContract, ContractMode, PendingContract};
use crate::manifest::Resource;
use crate::text;
use clap::Args;
use mcpgov_engine::ObjKey;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
pub struct ApproveArgs {
    /// Only this MCPServer (in the namespace of -n).
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// Only this tool (needs --server).
    #[arg(long, value_name = "NAME", requires = "server")]
    pub tool: Option<String>,
    /// Also servers in Trust mode: their tools are approved as crawled and the patch
    /// sets `mode: Pinned` (how a server starts being pinned).
    #[arg(long)]
    pub pin: bool,
    /// Apply the approval to the cluster (server-side apply) instead of printing it.
    #[arg(long)]
    pub apply: bool,
    /// With --apply: take over `spec.contracts` fields another field manager (a GitOps
    /// tool) owns with other values, as `kubectl apply --force-conflicts` does.
    #[arg(long, requires = "apply")]
    pub force_conflicts: bool,
    /// Read MCPServers (with status, as `kubectl get mcpservers.mcpgov.io -o yaml`
    /// prints them) from these files instead of the cluster; `-` is standard input.
    #[arg(short = 'f', long = "filename", num_args = 1.., value_delimiter = ',')]
    pub paths: Vec<PathBuf>,
    /// The namespace (files: of objects that name none; live: the one to read; default:
    /// the kubeconfig context's).
    #[arg(short = 'n', long, env = "MCPGOV_NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub read: super::ReadArgs,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// One tool waiting for approval.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub tool: String,
    pub reason: &'static str,
    pub approved: Option<String>,
    pub crawled: String,
    /// The crawler's diff lines, when it recorded them for this digest.
    pub diff: Vec<String>,
}

/// What approving a server's pending tools would apply.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerApproval {
    pub key: ObjKey,
    pub pending: Vec<Pending>,
    /// `spec.contracts` after the approval: every existing approval kept, the pending
    /// ones set to their crawled digests, mode Pinned.
    pub approved: Vec<ApprovedContract>,
}

/// The pending tools of one server in scope, from its spec and crawled status.
pub fn pending_of(s: &MCPServer, tool: Option<&str>, pin: bool) -> Vec<Pending> {
    let pins = s.contract_pins();
    let pinned = pins.mode == mcpgov_engine::ContractMode::Pinned;
    if !pinned && !pin {
        return Vec::new();
    }
    let Some(st) = &s.status else {
        return Vec::new();
    };
    let recorded: BTreeMap<&str, &PendingContract> = st
        .contracts
        .iter()
        .flat_map(|c| &c.pending)
        .map(|p| (p.tool.as_str(), p))
        .collect();
    let as_pinned = mcpgov_engine::Contracts {
        mode: mcpgov_engine::ContractMode::Pinned,
        ..pins
    };
    st.tools
        .iter()
        .filter(|t| tool.is_none_or(|n| n == t.name))
        .filter_map(|t| {
            // A tool the crawl could not digest cannot be approved: there is no
            // contract to pin. Nor can one whose name the spec's grammar refuses
            // (whitespace, over 256 bytes): it stays unapproved, so blocked.
            let crawled = t.contract_digest.clone()?;
            if !approvable(&t.name) {
                eprintln!(
                    "skipped {}: a tool name with whitespace or over 256 bytes cannot be approved",
                    text::escape(&t.name)
                );
                return None;
            }
            let state = as_pinned.check(&t.name, Some(&crawled))?;
            let diff = recorded
                .get(t.name.as_str())
                .filter(|p| p.crawled_digest == crawled)
                .map(|p| p.diff.clone())
                .unwrap_or_default();
            Some(Pending {
                tool: t.name.clone(),
                reason: crate::controller::contract_status::reason(state),
                approved: as_pinned.approved.get(&t.name).cloned(),
                crawled,
                diff,
            })
        })
        .collect()
}

/// Whether `spec.contracts.approved[].tool` accepts this name: its CRD pattern
/// `^[^\s]+$`, where the API server's `\s` (RE2) is ASCII whitespace only.
fn approvable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && !name
            .chars()
            .any(|c| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' '))
}

/// The approval of `pending` on top of what `s` already approves.
pub fn approval(s: &MCPServer, default_ns: &str, pending: Vec<Pending>) -> ServerApproval {
    let mut approved: BTreeMap<String, String> = s
        .spec
        .contracts
        .iter()
        .flat_map(|c| &c.approved)
        .map(|a| (a.tool.clone(), a.digest.clone()))
        .collect();
    for p in &pending {
        approved.insert(p.tool.clone(), p.crawled.clone());
    }
    ServerApproval {
        key: crate::crd::key_of(s, default_ns),
        pending,
        approved: approved
            .into_iter()
            .map(|(tool, digest)| ApprovedContract { tool, digest })
            .collect(),
    }
}

/// The manifest patch (an apply configuration) of one approval.
pub fn patch(a: &ServerApproval) -> Value {
    json!({
        "apiVersion": crate::crd::common::API_VERSION,
        "kind": "MCPServer",
        "metadata": {"name": a.key.name, "namespace": a.key.namespace},
        "spec": {"contracts": {"mode": ContractMode::Pinned, "approved": a.approved}},
    })
}

/// What a person reads before approving: one block per tool, every server-sent string
/// escaped again here (status is written by the crawler, but read from anywhere).
pub fn describe(a: &ServerApproval) -> String {
    let mut out = String::new();
    for p in &a.pending {
        let tool = text::escape(&p.tool);
        out.push_str(&format!(
            "{}/{}::{tool}  {}  {} → {}\n",
            a.key.namespace,
            a.key.name,
            p.reason,
            p.approved.as_deref().unwrap_or("(none)"),
            p.crawled
        ));
        for line in &p.diff {
            out.push_str(&format!("    {}\n", text::escape(line)));
        }
    }
    out
}

fn servers_from_files(args: &ApproveArgs) -> Result<(Vec<MCPServer>, String), Failure> {
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let load = args.read.load(&args.paths)?;
    let servers = load
        .objects
        .into_iter()
        .filter_map(|l| match l.resource {
            Resource::MCPServer(s) => Some(*s),
            _ => None,
        })
        .collect();
    Ok((servers, ns))
}

pub fn run(args: ApproveArgs) -> Result<(), Failure> {
    if args.apply && !args.paths.is_empty() {
        return Err(Failure::Input(
            "--apply writes to the cluster: it reads the servers there, not from -f".into(),
        ));
    }
    let rt = super::operator::runtime()?;
    let (servers, ns, cluster) = if args.paths.is_empty() {
        let cluster = rt.block_on(args.live.connect())?;
        let ns = args
            .namespace
            .clone()
            .unwrap_or_else(|| cluster.default_namespace.clone());
        let scope = (!args.live.all_namespaces).then_some(ns.as_str());
        let mut budget = args.live.max_objects;
        let mut skipped = Vec::new();
        let listed = rt
            .block_on(cluster.list("MCPServer", scope, &mut budget, &mut skipped))
            .map_err(|e| {
                Failure::Input(format!(
                    "cannot list MCPServers in {}: {e}",
                    scope.unwrap_or("all namespaces")
                ))
            })?;
        for s in skipped {
            eprintln!("skipped: {s}");
        }
        let servers = listed
            .into_iter()
            .filter_map(|l| match l.resource {
                Resource::MCPServer(s) => Some(*s),
                _ => None,
            })
            .collect();
        (servers, ns, Some(cluster))
    } else {
        let (s, ns) = servers_from_files(&args)?;
        (s, ns, None)
    };
    let mut approvals = Vec::new();
    for s in &servers {
        let key = crate::crd::key_of(s, &ns);
        if args.server.as_deref().is_some_and(|n| n != key.name)
            || (args.server.is_some() && key.namespace != ns)
        {
            continue;
        }
        let pending = pending_of(s, args.tool.as_deref(), args.pin);
        if !pending.is_empty() {
            approvals.push(approval(s, &ns, pending));
        }
    }
    if approvals.is_empty() {
        let what = match (&args.server, &args.tool) {
            (Some(s), Some(t)) => format!("tool {t} of MCPServer {ns}/{s}"),
            (Some(s), None) => format!("MCPServer {ns}/{s}"),
            _ if args.live.all_namespaces => "any namespace".to_string(),
            _ => format!("namespace {ns}"),
        };
        let hint = if args.pin {
            ""
        } else {
            " (servers in Trust mode are left out unless --pin)"
        };
        eprintln!("nothing pending approval in {what}{hint}");
        return Ok(());
    }
    for a in &approvals {
        eprint!("{}", describe(a));
    }
    let Some(cluster) = cluster.filter(|_| args.apply) else {
        for a in &approvals {
            let yaml = serde_saphyr::to_string(&patch(a))
                .map_err(|e| Failure::Input(format!("cannot print the patch: {e}")))?;
            super::print_out(format!("---\n{yaml}").as_bytes());
        }
        return Ok(());
    };
    let mut failed = Vec::new();
    for a in &approvals {
        let api: kube::Api<MCPServer> =
            kube::Api::namespaced(cluster.client.clone(), &a.key.namespace);
        let mut pp = kube::api::PatchParams::apply(crate::names::APPROVE_FIELD_MANAGER);
        pp.force = args.force_conflicts;
        match rt.block_on(api.patch(&a.key.name, &pp, &kube::api::Patch::Apply(&patch(a)))) {
            Ok(_) => {
                for p in &a.pending {
                    super::print_out(
                        format!(
                            "approved {}/{}::{} {}\n",
                            a.key.namespace,
                            a.key.name,
                            text::escape(&p.tool),
                            p.crawled
                        )
                        .as_bytes(),
                    );
                }
            }
            Err(e) => failed.push(format!(
                "MCPServer {}: {}",
                a.key,
                text::escape(&e.to_string())
            )),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Gate(format!(
            "could not apply:\n{}\n(a conflict means another field manager owns the entry: \
             approve through it, e.g. commit the printed patch, or pass --force-conflicts)",
            failed.join("\n")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(yaml: &str) -> MCPServer {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    const D3: &str = "sha256:3333333333333333333333333333333333333333333333333333333333333333";

    fn notes(mode: &str) -> MCPServer {
        server(&format!(
            r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: notes, namespace: team}}
spec:
  endpoint: {{url: "http://notes:8080/mcp"}}
  contracts:
    mode: {mode}
    approved: [{{tool: lookup, digest: "{D1}"}}, {{tool: gone, digest: "{D3}"}}]
status:
  lastSuccessfulCrawlTime: "2026-01-01T00:00:00Z"
  tools:
  - {{name: lookup, contractDigest: "{D2}"}}
  - {{name: publish, contractDigest: "{D3}"}}
  - {{name: broken}}
  - {{name: "has space", contractDigest: "{D1}"}}
  contracts:
    pendingCount: 2
    pending:
    - {{tool: lookup, reason: ContractChanged, approvedDigest: "{D1}", crawledDigest: "{D2}",
       changed: [description], diff: ["description: \"a\" → \"a\u001b[2J b\""]}}
"#
        ))
    }

    #[test]
    fn pending_tools_are_the_changed_and_unapproved_ones_with_their_diff() {
        let s = notes("Pinned");
        let p = pending_of(&s, None, false);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            (p[0].tool.as_str(), p[0].reason, p[0].approved.as_deref()),
            ("lookup", "ContractChanged", Some(D1))
        );
        assert_eq!(p[0].crawled, D2);
        assert_eq!(p[0].diff.len(), 1);
        assert_eq!(
            (p[1].tool.as_str(), p[1].reason),
            ("publish", "ContractUnapproved")
        );
        // One tool only.
        assert_eq!(pending_of(&s, Some("publish"), false).len(), 1);
        // A Trust server is left alone unless asked to pin it.
        let t = notes("Trust");
        assert!(pending_of(&t, None, false).is_empty());
        assert_eq!(pending_of(&t, None, true).len(), 2);
    }

    #[test]
    fn the_patch_keeps_every_approval_and_pins_the_reviewed_digests() {
        let s = notes("Pinned");
        let a = approval(&s, "default", pending_of(&s, None, false));
        let p = patch(&a);
        assert_eq!(p["metadata"], json!({"name": "notes", "namespace": "team"}));
        assert_eq!(p["spec"]["contracts"]["mode"], "Pinned");
        assert_eq!(
            p["spec"]["contracts"]["approved"],
            json!([
                {"tool": "gone", "digest": D3},
                {"tool": "lookup", "digest": D2},
                {"tool": "publish", "digest": D3},
            ])
        );
        // What a person reads: the diff, escaped (no raw terminal escape).
        let d = describe(&a);
        assert!(d.contains("team/notes::lookup  ContractChanged"), "{d}");
        assert!(d.contains("description:") && !d.contains('\u{1b}'), "{d}");
        // The patch validates against the CRD's own types.
        let back: MCPServer = serde_json::from_value(json!({
            "apiVersion": "mcpgov.io/v1alpha1", "kind": "MCPServer",
            "metadata": p["metadata"], "spec": {"endpoint": {"url": "http://x/mcp"},
            "contracts": p["spec"]["contracts"]}}))
        .unwrap();
        assert_eq!(back.spec.contracts.unwrap().approved.len(), 3);
    }
}
