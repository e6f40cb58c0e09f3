#!/usr/bin/env python3
"""A tenant estate built to cost the engine as much work as the input limits allow
(issue 10): dataAccess and Policy globs at 1,024 bytes and 16 wildcards whose overlap
needs ~900,000 search steps, and agents whose Grants carry 100 resource-scoped
exceptions each. Usage: gen_hostile.py OUT.yaml [AGENTS] [TOOLS]

Time it with `mcpgov check -f OUT.yaml -o json`; docs/performance.md has the figures.
"""
import sys

out = sys.argv[1]
agents = int(sys.argv[2]) if len(sys.argv) > 2 else 20
tools = int(sys.argv[3]) if len(sys.argv) > 3 else 200
a = "file:///" + ("a" * 60 + "*") * 16
b = "file:///" + ("*" + "a" * 60) * 16
docs = []
access = "\n".join(f'    - {{tool: "*", resource: "{a[:-2]}{i}", mode: Reads}}' for i in range(8))
names = ", ".join(f"{{name: tool{j}}}" for j in range(tools))
docs.append(f"""apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {{name: fs, namespace: t}}
spec:
  endpoint: {{url: "http://fs.local/mcp"}}
  dataAccess:
{access}
status:
  lastSuccessfulCrawlTime: "2026-11-01T00:00:00Z"
  tools: [{names}]
""")
governed = "\n".join(f'    - {{uri: "{b[:-2]}{i}"}}' for i in range(8))
docs.append(f"""apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {{name: deny, namespace: t}}
spec:
  effect: Deny
  governs:
    resources:
{governed}
""")
for k in range(agents):
    exceptions = "\n".join(
        f'    - {{policy: deny, resource: "file:///x{e}/**", reason: r}}' for e in range(100)
    )
    docs.append(f"""apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {{name: bot{k}, namespace: t}}
spec: {{profile: Review}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {{name: g{k}, namespace: t}}
spec:
  agent: bot{k}
  tools: ["fs::*"]
  expectedExceptions:
{exceptions}
""")
with open(out, "w") as f:
    f.write("---\n".join(docs))
