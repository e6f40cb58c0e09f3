//! An access verdict's evidence paths as a graph, rendered as Graphviz DOT or Mermaid.
//! Every label comes from manifests or crawled catalogs: each renderer escapes it for
//! its own syntax, so a name cannot close a string, start a new statement or smuggle
//! a control byte into a terminal.

use crate::questions::verdict_name;
use crate::text;
use mcpgov_engine::{AccessVerdict, Classification};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Agent,
    Tool,
    Resource,
    Policy,
}

impl NodeKind {
    fn of(prefix: &str) -> Option<NodeKind> {
        Some(match prefix {
            "agent" => NodeKind::Agent,
            "tool" => NodeKind::Tool,
            "resource" => NodeKind::Resource,
            "policy" => NodeKind::Policy,
            _ => return None,
        })
    }

    fn title(self) -> &'static str {
        match self {
            NodeKind::Agent => "Agent",
            NodeKind::Tool => "Tool",
            NodeKind::Resource => "Resource",
            NodeKind::Policy => "Policy",
        }
    }
}

/// How an edge is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Style {
    Plain,
    /// On a path that is a violation.
    Violation,
    /// On a path an expected exception covers.
    Exception,
    /// CAN_CALL the agent does not have (what calling it would cross).
    NotGranted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// Lines of the label: the relation first, then what backs it.
    pub label: Vec<String>,
    pub style: Style,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    pub title: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

impl Graph {
    fn node(&mut self, ids: &mut BTreeMap<String, usize>, id: &str) -> usize {
        if let Some(&i) = ids.get(id) {
            return i;
        }
        let (prefix, name) = id.split_once(':').unwrap_or(("", id));
        let kind = NodeKind::of(prefix).unwrap_or(NodeKind::Resource);
        self.nodes.push(Node {
            kind,
            name: name.to_string(),
        });
        ids.insert(id.to_string(), self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn edge(&mut self, e: Edge) {
        // The same hop on several paths is drawn once, in its strongest style.
        if let Some(old) = self
            .edges
            .iter_mut()
            .find(|o| o.from == e.from && o.to == e.to && o.label == e.label)
        {
            old.style = old.style.max(e.style);
            return;
        }
        self.edges.push(e);
    }
}

/// The graph of one verdict: the agent, the tool and its grants, and every deny path.
pub fn of_verdict(v: &AccessVerdict) -> Graph {
    let tool = v.tool_key.clone().unwrap_or_else(|| v.tool.clone());
    let mut g = Graph {
        title: format!("{} -> {}: {}", v.agent, tool, verdict_name(v.verdict)),
        ..Graph::default()
    };
    let mut ids = BTreeMap::new();
    let agent = g.node(&mut ids, &format!("agent:{}", v.agent));
    if v.tool_key.is_none() {
        return g;
    }
    let tool_node = g.node(&mut ids, &format!("tool:{tool}"));
    for e in &v.granted_by {
        g.edge(Edge {
            from: agent,
            to: tool_node,
            label: vec![
                "CAN_CALL".into(),
                format!("Grant {}", e.grant),
                format!("selector {}", e.selector),
            ],
            style: Style::Plain,
        });
    }
    let granted = !v.granted_by.is_empty();
    for p in &v.deny_paths {
        let style = match p.classification {
            Classification::Violation => Style::Violation,
            // Decided per call by the gateway: drawn as reach that is not a violation.
            Classification::AuthorizedButGoverned | Classification::GuardedPerCall => {
                Style::Exception
            }
        };
        // path: node, EDGE, node, EDGE, node ...
        let mut prev: Option<usize> = None;
        let mut relation: Option<&str> = None;
        for (i, part) in p.path.iter().enumerate() {
            if i % 2 == 1 {
                relation = Some(part);
                continue;
            }
            let n = g.node(&mut ids, part);
            if let (Some(from), Some(rel)) = (prev, relation) {
                let (label, style) = match rel {
                    // The grant edges are drawn above, with their Grant.
                    "CAN_CALL" if granted => (None, style),
                    "CAN_CALL" => (
                        Some(vec!["CAN_CALL".into(), "not granted".into()]),
                        Style::NotGranted,
                    ),
                    "GOVERNED_BY" => {
                        let mut l =
                            vec!["GOVERNED_BY".into(), format!("binding {}", p.governed_by)];
                        if let Some(g) = &p.exception_grant {
                            l.push(format!("exception: Grant {g}"));
                        }
                        (Some(l), style)
                    }
                    rel => {
                        let mut l = vec![rel.to_string()];
                        if let Some(e) = p.provenance.as_ref().and_then(|p| p.evidence.as_deref()) {
                            l.push(format!("evidence {e}"));
                        }
                        (Some(l), style)
                    }
                };
                if let Some(label) = label {
                    g.edge(Edge {
                        from,
                        to: n,
                        label,
                        style,
                    });
                } else if let Some(e) = g.edges.iter_mut().find(|e| e.from == from && e.to == n) {
                    e.style = e.style.max(style);
                }
            }
            prev = Some(n);
        }
    }
    g
}

/// A DOT double-quoted string: backslash and quote escaped (a backslash also starts
/// DOT's own escapes, `\N`, `\G`), control bytes escaped as text first.
fn dot_str(lines: &[String]) -> String {
    let mut out = String::from("\"");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("\\n");
        }
        for c in text::escape(line).chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                c => out.push(c),
            }
        }
    }
    out.push('"');
    out
}

pub fn dot(g: &Graph) -> String {
    let mut out = String::from("digraph mcpgov {\n");
    out.push_str("  rankdir=LR;\n  labelloc=t;\n");
    out.push_str(&format!(
        "  label={};\n",
        dot_str(std::slice::from_ref(&g.title))
    ));
    out.push_str(
        "  node [fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n",
    );
    for (i, n) in g.nodes.iter().enumerate() {
        let shape = match n.kind {
            NodeKind::Agent => "box, style=rounded",
            NodeKind::Tool => "box",
            NodeKind::Resource => "ellipse",
            NodeKind::Policy => "octagon",
        };
        out.push_str(&format!(
            "  n{i} [label={}, shape={shape}];\n",
            dot_str(&[n.kind.title().to_string(), n.name.clone()])
        ));
    }
    for e in &g.edges {
        let style = match e.style {
            Style::Plain => "",
            Style::Violation => ", color=\"#cc0000\", fontcolor=\"#cc0000\", penwidth=2",
            Style::Exception => ", color=\"#dd8800\", fontcolor=\"#dd8800\", style=dashed",
            Style::NotGranted => ", color=\"#888888\", style=dotted",
        };
        out.push_str(&format!(
            "  n{} -> n{} [label={}{style}];\n",
            e.from,
            e.to,
            dot_str(&e.label)
        ));
    }
    out.push_str("}\n");
    out
}

/// A Mermaid quoted label: everything outside a plain set becomes an entity code
/// (`#34;`), so no quote, bracket, pipe, HTML or markdown from a name is read as syntax.
fn mermaid_str(lines: &[String]) -> String {
    let mut out = String::from("\"");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("<br/>");
        }
        for c in line.chars() {
            if c.is_ascii_alphanumeric() || " .,:/_-*?=+@()[]!~'$%^".contains(c) {
                out.push(c);
            } else {
                out.push_str(&format!("#{};", c as u32));
            }
        }
    }
    out.push('"');
    out
}

pub fn mermaid(g: &Graph) -> String {
    let mut out = String::from("---\n");
    // Front matter is YAML: a JSON string is a valid double-quoted YAML scalar.
    let title = serde_json::to_string(&text::escape(&g.title)).expect("a string serialises");
    out.push_str(&format!("title: {title}\n"));
    out.push_str("---\nflowchart LR\n");
    for (i, n) in g.nodes.iter().enumerate() {
        let label = mermaid_str(&[n.kind.title().to_string(), n.name.clone()]);
        let shaped = match n.kind {
            NodeKind::Agent => format!("([{label}])"),
            NodeKind::Tool => format!("[{label}]"),
            NodeKind::Resource => format!("[({label})]"),
            NodeKind::Policy => format!("{{{{{label}}}}}"),
        };
        out.push_str(&format!("  n{i}{shaped}\n"));
    }
    let mut styles = Vec::new();
    for (i, e) in g.edges.iter().enumerate() {
        let arrow = if e.style == Style::NotGranted {
            "-.->"
        } else {
            "-->"
        };
        out.push_str(&format!(
            "  n{} {arrow}|{}| n{}\n",
            e.from,
            mermaid_str(&e.label),
            e.to
        ));
        match e.style {
            Style::Violation => styles.push(format!(
                "  linkStyle {i} stroke:#cc0000,stroke-width:2px,color:#cc0000\n"
            )),
            Style::Exception => styles.push(format!(
                "  linkStyle {i} stroke:#dd8800,stroke-dasharray:4,color:#dd8800\n"
            )),
            Style::NotGranted => styles.push(format!("  linkStyle {i} stroke:#888888\n")),
            Style::Plain => {}
        }
    }
    for s in styles {
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpgov_engine::VerdictKind;

    /// The verdict for (agent, tool) over a small estate: `fs::read` reads two
    /// resources under one Deny Policy; `writer` is granted it, `idle` is not.
    fn verdict(agent: &str, tool: &str) -> AccessVerdict {
        let yaml = r#"
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: fs, namespace: t}
spec:
  endpoint: {url: "http://fs.t.svc/mcp"}
  dataAccess:
    - {tool: read, resource: "file:///a/x", mode: Reads, provenance: {evidence: "E1"}}
    - {tool: read, resource: "file:///a/y", mode: Reads, provenance: {evidence: "E2"}}
status:
  lastSuccessfulCrawlTime: "2026-11-01T00:00:00Z"
  tools: [{name: read, contractDigest: "sha256:aa"}]
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: deny-a, namespace: t}
spec: {effect: Deny, governs: {resources: [{uri: "file:///a/**"}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: writer, namespace: t}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: idle, namespace: t}
spec: {}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: g, namespace: t}
spec: {agent: writer, tools: ["fs::read"]}
"#;
        let load = crate::manifest::load_str(yaml, std::path::Path::new("t.yaml")).unwrap();
        let engine = mcpgov_engine::Engine::from_snapshot(
            mcpgov_engine::EngineConfig {
                governance_namespace: "mcpgov-system".into(),
            },
            load.objects.iter().map(|l| l.resource.to_engine("t")),
        );
        let eval = engine.evaluator("2026-11-29T00:00:00Z".parse().unwrap());
        eval.check_access(&mcpgov_engine::ObjKey::new("t", agent), tool)
    }

    #[test]
    fn two_paths_share_their_hops_and_keep_their_own() {
        let g = of_verdict(&verdict("writer", "fs::read"));
        let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        // One agent, one tool, two resources, one Policy: shared nodes drawn once.
        assert_eq!(
            names,
            [
                "t/writer",
                "t/fs::read",
                "file:///a/x",
                "t/deny-a",
                "file:///a/y"
            ]
        );
        let edges: Vec<(usize, usize, &str, Style)> = g
            .edges
            .iter()
            .map(|e| (e.from, e.to, e.label[0].as_str(), e.style))
            .collect();
        assert_eq!(
            edges,
            [
                (0, 1, "CAN_CALL", Style::Violation),
                (1, 2, "READS", Style::Violation),
                (2, 3, "GOVERNED_BY", Style::Violation),
                (1, 4, "READS", Style::Violation),
                (4, 3, "GOVERNED_BY", Style::Violation),
            ]
        );
        assert_eq!(g.edges[1].label[1], "evidence E1");
        assert_eq!(g.edges[3].label[1], "evidence E2");
        assert_eq!(g.edges[0].label[1], "Grant t/g");
    }

    #[test]
    fn a_tool_not_granted_shows_what_it_would_cross_dotted() {
        let v = verdict("idle", "fs::read");
        assert_eq!(v.verdict, VerdictKind::NotGranted);
        let g = of_verdict(&v);
        assert_eq!(g.title, "t/idle -> t/fs::read: NOT_GRANTED");
        assert_eq!(g.edges[0].label, ["CAN_CALL", "not granted"]);
        assert_eq!(g.edges[0].style, Style::NotGranted);
        assert!(mermaid(&g).contains("n0 -.->|"), "{}", mermaid(&g));
        assert!(dot(&g).contains("style=dotted"), "{}", dot(&g));
        // No such agent or tool: the agent alone, and the title says why.
        let g = of_verdict(&verdict("nobody", "fs::read"));
        assert_eq!((g.nodes.len(), g.edges.len()), (1, 0));
        assert!(g.title.ends_with("AGENT_NOT_FOUND"));
        let g = of_verdict(&verdict("writer", "nope"));
        assert!(g.title.ends_with("TOOL_NOT_FOUND"));
    }

    fn hostile() -> Graph {
        Graph {
            title: "t".into(),
            nodes: vec![
                Node {
                    kind: NodeKind::Agent,
                    name: "ns/a\"];\nevil[\"x".into(),
                },
                Node {
                    kind: NodeKind::Tool,
                    name: "gw::t|x\\N<b>#9829;`md`\u{1b}[2J".into(),
                },
            ],
            edges: vec![Edge {
                from: 0,
                to: 1,
                label: vec!["CAN_CALL".into(), "Grant \"}; n9 -> n0 [".into()],
                style: Style::Violation,
            }],
        }
    }

    #[test]
    fn dot_labels_cannot_break_out_of_their_strings() {
        let out = dot(&hostile());
        // Outside the quoted strings only our own syntax remains.
        let mut outside = String::new();
        let mut in_str = false;
        let mut escaped = false;
        for c in out.chars() {
            if in_str {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_str = false;
                }
                continue;
            }
            if c == '"' {
                in_str = true;
            } else {
                outside.push(c);
            }
        }
        assert!(!in_str, "an unterminated string:\n{out}");
        assert!(!outside.contains("evil"), "{outside}");
        assert!(!outside.contains("n9"), "{outside}");
        assert_eq!(outside.matches("->").count(), 1, "{outside}");
        assert!(!out.contains('\u{1b}'));
        // A backslash in a name is not one of DOT's `\N` escapes.
        assert!(out.contains("t|x\\\\N"), "{out}");
        // One statement per line: a name's line break stays inside its label.
        assert_eq!(out.lines().count(), 10, "{out}");
    }

    #[test]
    fn mermaid_labels_are_entity_coded() {
        let out = mermaid(&hostile());
        for line in out.lines().skip(3) {
            // Each statement line: id, shape, and one quoted label (two for an edge?
            // no: one), with nothing but plain characters and entities inside.
            let quoted: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
            for q in &quoted {
                assert!(
                    q.chars()
                        .all(|c| c.is_ascii_alphanumeric()
                            || " .,:/_-*?=+@()[]!~'$%^#;<>".contains(c)),
                    "{q}"
                );
                // `<` and `>` only as our own line break.
                assert_eq!(q.replace("<br/>", "").matches(['<', '>']).count(), 0, "{q}");
            }
        }
        assert!(!out.contains("evil[\""), "{out}");
        assert!(!out.contains('`'), "{out}");
        assert!(!out.contains('\u{1b}'));
        assert!(out.contains("#34;"), "a quote becomes an entity: {out}");
        assert!(
            out.contains("#35;9829#59;"),
            "an entity in a name stays text: {out}"
        );
        // Statement lines: 2 nodes, 1 edge, 1 style, after the front matter.
        assert_eq!(out.lines().count(), 3 + 1 + 4, "{out}");
    }
}
