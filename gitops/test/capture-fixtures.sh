#!/usr/bin/env bash
# Re-captures gitops/test/fixtures/captured-*.json from a live control plane and operator.
#
#   MCPGOV_DEMO_KEEP=1 bash scripts/demo.sh        # its last line names the operator pid
#   bash gitops/test/capture-fixtures.sh PID       # PID: that operator
#
# Besides the demo's examples it applies a few objects in namespace `gitops` (an
# unreachable server, invalid URIs, an orphan Policy, a disabled bundle), runs its own
# MCP server to show a crawl succeed and then fail, and finally stops the operator
# (PID) to catch objects it has not seen: one without status, one whose spec changed.
# Objects are trimmed (no managedFields, uid, resourceVersion) and written as-is.
# Expected results live in gitops/test/expected.json: a re-capture changes messages
# (durations, digests, times), so review `bash gitops/test.sh` afterwards.
#
# Then stop what the demo left running (the operator is already stopped):
#   MCPGOV_MCP_STATE=$MCPGOV_E2E_DIR/mcp-servers bash e2e/mcp-servers/stop.sh --all
#   bash e2e/stop-control-plane.sh "$MCPGOV_E2E_DIR"
set -euo pipefail
cd "$(dirname "$0")/../.."
E2E="${MCPGOV_E2E_DIR:-/tmp/mcpgov-demo}"
OUT="gitops/test/fixtures"
op_pid="${1:?usage: capture-fixtures.sh OPERATOR_PID (printed by MCPGOV_DEMO_KEEP=1 scripts/demo.sh)}"
cmd="$(tr '\0' ' ' <"/proc/$op_pid/cmdline" 2>/dev/null || true)"
[[ "$cmd" == *mcpgov*operator* ]] || { echo "pid $op_pid is not a running mcpgov operator" >&2; exit 1; }
# shellcheck disable=SC1091
source "$E2E/env"
export MCPGOV_MCP_STATE="$E2E/mcp-servers"
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
snapshot() { kubectl get agents.mcpgov.io,grants.mcpgov.io,policies.mcpgov.io,mcpservers.mcpgov.io -A -o json >"$raw/$1.json"; }
wait_cond() { # KIND/NAME TYPE STATUS
  kubectl wait -n gitops "$1" --timeout=90s \
    --for=jsonpath="{.status.conditions[?(@.type==\"$2\")].status}=$3" >/dev/null
}

echo "== a live MCP server for gitops/flaky"
url=$(bash e2e/mcp-servers/start.sh everything-http@gitops 0 | tail -n1)

echo "== objects in namespace gitops"
kubectl create namespace gitops --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply --server-side -f - >/dev/null <<YAML
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: flaky, namespace: gitops}
spec:
  endpoint: {url: "$url"}
  crawl: {intervalSeconds: 10}
---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: unreachable, namespace: gitops}
spec:
  endpoint: {url: "http://127.0.0.1:9/mcp"}
---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: bad-uri, namespace: gitops}
spec:
  endpoint: {url: "http://127.0.0.1:9/mcp"}
  dataAccess:
    - {tool: read, resource: "file://[broken/**", mode: Reads}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: bad-uri, namespace: gitops}
spec:
  effect: Deny
  governs: {resources: [{uri: "file://[broken/**", provenance: {evidence: "fixture"}}]}
---
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: orphan, namespace: gitops}
spec:
  effect: Deny
  governs: {resources: [{uri: "file:///nobody/reads/this/**", provenance: {evidence: "fixture"}}]}
---
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: no-bundle, namespace: gitops}
spec: {profile: Review, bundle: {enabled: false}}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: dangling, namespace: gitops}
spec: {agent: nobody, tools: ["unreachable::*"]}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: bad-exception, namespace: gitops}
spec:
  agent: no-bundle
  tools: ["unreachable::*"]
  expectedExceptions:
    - {policy: orphan, reason: "fixture", resource: "file://[broken/**"}
YAML
wait_cond mcpservers.mcpgov.io/flaky Crawled True
wait_cond mcpservers.mcpgov.io/unreachable Crawled False
wait_cond mcpservers.mcpgov.io/bad-uri Stalled True
wait_cond policies.mcpgov.io/bad-uri Stalled True
wait_cond policies.mcpgov.io/orphan Ready True
wait_cond agents.mcpgov.io/no-bundle Ready True
wait_cond grants.mcpgov.io/dangling Ready True
wait_cond grants.mcpgov.io/bad-exception Stalled True
snapshot 1

echo "== stopping the MCP server: the next crawl of gitops/flaky fails"
bash e2e/mcp-servers/stop.sh everything-http@gitops
wait_cond mcpservers.mcpgov.io/flaky Crawled False
snapshot 2

echo "== stopping the operator (pid $op_pid), then changing what it no longer sees"
kill "$op_pid"
while kill -0 "$op_pid" 2>/dev/null; do sleep 0.2; done
kubectl apply --server-side -f - >/dev/null <<'YAML'
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: fresh, namespace: gitops}
spec: {profile: Review}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: fresh, namespace: gitops}
spec: {agent: fresh, tools: ["flaky::echo"]}
YAML
kubectl patch agents.mcpgov.io no-bundle -n gitops --type merge -p '{"spec":{"profile":"Strict"}}' >/dev/null
snapshot 3

echo "== writing $OUT/captured-*.json"
python3 - "$raw" "$OUT" <<'PY'
import json, sys
raw, out = sys.argv[1], sys.argv[2]
# fixture name: (snapshot, kind, namespace, name)
wanted = {
    "agent-compliant": (1, "Agent", "ci", "ops-agent"),
    "agent-violation": (1, "Agent", "ci", "ci-bot"),
    "agent-bundle-disabled": (1, "Agent", "gitops", "no-bundle"),
    "agent-no-status": (3, "Agent", "gitops", "fresh"),
    "agent-generation-not-observed": (3, "Agent", "gitops", "no-bundle"),
    "grant-resolved": (1, "Grant", "ci", "ci-bot-git"),
    "grant-cross-namespace-denied": (1, "Grant", "team-a", "report-bot-tools"),
    "grant-not-found": (1, "Grant", "gitops", "dangling"),
    "grant-stalled": (1, "Grant", "gitops", "bad-exception"),
    "grant-no-status": (3, "Grant", "gitops", "fresh"),
    "policy-governing": (1, "Policy", "ci", "secrets-deny"),
    "policy-orphan": (1, "Policy", "gitops", "orphan"),
    "policy-stalled": (1, "Policy", "gitops", "bad-uri"),
    "mcpserver-crawled": (1, "MCPServer", "gitops", "flaky"),
    "mcpserver-crawl-failed-stale": (2, "MCPServer", "gitops", "flaky"),
    "mcpserver-catalog-applied-unreachable": (1, "MCPServer", "ci", "git"),
    "mcpserver-never-crawled": (1, "MCPServer", "gitops", "unreachable"),
    "mcpserver-stalled": (1, "MCPServer", "gitops", "bad-uri"),
}
snaps = {}
for n in (1, 2, 3):
    with open(f"{raw}/{n}.json") as f:
        snaps[n] = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o
                    for o in json.load(f)["items"]}
for fixture, (n, *key) in wanted.items():
    obj = snaps[n][tuple(key)]
    for field in ("managedFields", "uid", "resourceVersion"):
        obj["metadata"].pop(field, None)
    with open(f"{out}/captured-{fixture}.json", "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    print(f"  captured-{fixture}.json")
PY
echo "done: the operator is stopped; see the header for stopping the control plane"
