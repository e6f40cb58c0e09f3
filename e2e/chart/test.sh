#!/usr/bin/env bash
# Tests of the Helm chart charts/mcpgov. Run from anywhere: `bash e2e/chart/test.sh`.
#
#   0. the chart's copy of the CRDs is in step with crds/ (and the check catches a stale one)
#   1. helm, built from its Go module into the cache on the first run
#   2. helm lint (and --strict) of every valid value set; every value has a schema entry
#      and a row in the chart README
#   3. helm template of each value set in e2e/chart/values/, checked by check.py (which
#      must notice mutations of a good rendering); renders are deterministic and the
#      templates use no lookup/rand/now; kubeVersion is enforced
#   4. invalid value sets are refused (the schema's message, or the chart's own check)
#   5. a real kube-apiserver: `kubectl apply --dry-run=server` of the full rendering, and
#      its pod passes Pod Security "restricted" enforcement; helm install, upgrade and
#      uninstall for real (the CRDs stay with crds.keep, go without)
#   6. the rendered RBAC for real: the operator runs as the chart's ServiceAccount with
#      the Deployment's own flags (leader election included), reaches its result with no
#      "forbidden", and `kubectl auth can-i` shows nothing broader; again with
#      watchNamespace set (a RoleBinding in that namespace only); again with policyReports
#      on (the real PolicyReport CRD: the report written and deleted, that API's verbs only)
#   6b. tenant RBAC: the ClusterRoles aggregated into view/edit/admin, acting as users
#      bound to those roles (kubectl --as). This control plane has no kube-controller-
#      manager: the test shows that nothing aggregated them, aggregates as its
#      clusterrole-aggregation controller would (check.py aggregate), and also binds the
#      chart's roles directly
#   6c. the gateway sidecar: examples/gateway and the README's patch, statically
#      (e2e/chart/sidecar.py: the bundle mounted whole as <agent>-mcpgov-bundle, Secrets in
#      the gateway container only, flags the gateway binary knows; the checker must notice
#      mutations; the gateway binary run with the example's flags and mounts gets ready),
#      then `kubectl apply --dry-run=server` of the example (CRDs installed)
#      and `kubectl patch --dry-run=server` of an agent Deployment with the README's
#      snippet, their pods admitted under Pod Security "restricted" (enforce)
#   7. prints the rendered RBAC rules
#
# Exits non-zero when a test fails; the last line is "N passed, N failed".
# MCPGOV_CHART_TEST_KEEP=1 keeps the work directory (renders, logs).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
export PATH="$CACHE/bin:$PATH"
export GOMAXPROCS="${GOMAXPROCS:-1}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
CHART=charts/mcpgov
VALUES=e2e/chart/values
CHECK=(python3 e2e/chart/check.py)
KUBE_VERSION=1.34.0
RELEASE=mcpgov
NS=mcpgov-system
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpgov-chart.XXXXXX")"
STATE="$WORK/control-plane"
VALID_SETS=(default single watch-namespace monitoring network-policy no-crds crds-not-kept no-rbac no-tenant-roles admission mcp reports full)

passed=0
failed=0
timings=()
op_pid=""
cp_started=""

cleanup() {
  if [[ -n "$op_pid" ]]; then kill "$op_pid" 2>/dev/null; wait "$op_pid" 2>/dev/null; fi
  if [[ -n "$cp_started" ]]; then bash e2e/stop-control-plane.sh "$STATE" >/dev/null 2>&1; fi
  if [[ "${MCPGOV_CHART_TEST_KEEP:-}" == 1 ]]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

now_ms() { date +%s%3N; }

# run NAME FUNCTION [ARGS...]: one counted test; its output is indented.
run() {
  local name="$1"; shift
  local t0 rc secs
  t0=$(now_ms)
  echo "== $name"
  "$@" > "$WORK/out" 2>&1
  rc=$?
  sed 's/^/   /' "$WORK/out"
  secs=$(awk -v ms=$(( $(now_ms) - t0 )) 'BEGIN { printf "%.1f", ms / 1000 }')
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1)); echo "PASS $name (${secs}s)"
  else
    failed=$((failed + 1)); echo "FAIL $name (${secs}s)"
  fi
  timings+=("$(printf '%7ss  %s' "$secs" "$name")")
  return 0
}

# until_ok DESCRIPTION SECONDS COMMAND...: poll (no fixed sleep) until COMMAND succeeds.
until_ok() {
  local what="$1" secs="$2"; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= deadline )); then
      echo "timed out after ${secs}s waiting for: $what"
      return 1
    fi
    sleep 0.3
  done
  echo "ok: $what"
}

# jsonpath_is KIND/NAME NAMESPACE JSONPATH WANT
jsonpath_is() { [[ "$(kubectl get "$1" -n "$2" -o jsonpath="$3")" == "$4" ]]; }
# crds_gone: none of the four CRDs exists
crds_gone() { ! kubectl get crd agents.mcpgov.io mcpservers.mcpgov.io policies.mcpgov.io grants.mcpgov.io -o name 2>/dev/null | grep -q .; }
# has_event NAMESPACE REASON
has_event() { kubectl get events -n "$1" --field-selector "reason=$2" -o name | grep -q .; }

render() { # render SET [EXTRA HELM ARGS...] > file
  local set="$1"; shift
  "$HELM" template "$RELEASE" "$CHART" --namespace "$NS" --kube-version "$KUBE_VERSION" \
    -f "$VALUES/$set.yaml" "$@"
}

# ---------------------------------------------------------------- 0. the CRD copy
t_crds_in_sync() {
  bash charts/sync-crds.sh --check || return 1
  # The check must catch a stale copy: the same layout in a scratch tree, one line changed.
  local tree="$WORK/stale"
  mkdir -p "$tree/charts/mcpgov/files" "$tree/crds"
  cp charts/sync-crds.sh "$tree/charts/"
  cp crds/mcpgov.io.yaml "$tree/crds/"
  sed 's/^  scope: Namespaced$/  scope: Cluster/' crds/mcpgov.io.yaml > "$tree/charts/mcpgov/files/crds.yaml"
  if bash "$tree/charts/sync-crds.sh" --check >/dev/null 2>&1; then
    echo "a stale copy passed --check"; return 1
  fi
  echo "ok: a stale copy is refused by --check"
  if ! { bash "$tree/charts/sync-crds.sh" >/dev/null && bash "$tree/charts/sync-crds.sh" --check >/dev/null; }; then
    echo "sync did not repair the stale copy"; return 1
  fi
  echo "ok: sync-crds.sh repairs it"
}

# ---------------------------------------------------------------- 1. helm
t_helm() {
  HELM="$(bash e2e/chart/build-helm.sh)" || return 1
  "$HELM" version --short
  "$HELM" version --template '{{ .Version }} (go {{ .GoVersion }})' > "$WORK/helm-version"
  echo
}

# ---------------------------------------------------------------- 2. lint
t_lint() {
  "$HELM" lint "$CHART" || return 1
  "$HELM" lint --strict "$CHART" --kube-version "$KUBE_VERSION" || return 1
  local set
  for set in "${VALID_SETS[@]}"; do
    "$HELM" lint --strict --quiet "$CHART" --kube-version "$KUBE_VERSION" -f "$VALUES/$set.yaml" >"$WORK/lint.log" 2>&1 ||
      { cat "$WORK/lint.log"; echo "lint --strict failed with $set"; return 1; }
    echo "ok: lint --strict -f $set.yaml"
  done
}

# ---------------------------------------------------------------- 3. template
t_no_nondeterminism() {
  python3 - "$CHART/templates" <<'PY'
import os, re, sys
bad = re.compile(r"\b(lookup|now|date|dateInZone|unixEpoch|uuidv4|randAlphaNum|randAlpha|randNumeric|randAscii|randBytes|randInt|shuffle|genCA|genPrivateKey|genSelfSignedCert|genSignedCert|htpasswd|derivePassword|getHostByName|env|expandenv)\b")
hits = []
for f in sorted(os.listdir(sys.argv[1])):
    text = open(os.path.join(sys.argv[1], f)).read()
    for action in re.findall(r"\{\{.*?\}\}", text, re.S):
        code = re.sub(r"/\*.*?\*/", "", action, flags=re.S)
        for m in bad.finditer(code):
            hits.append(f"{f}: {m.group(1)} in {action.strip()[:60]}")
for h in hits:
    print(h)
print(f"{len(hits)} non-deterministic or cluster-reading functions in templates/")
sys.exit(1 if hits else 0)
PY
}

t_template() {
  local set="$1" out="$WORK/render-$1.yaml"
  render "$set" > "$out" || return 1
  render "$set" | cmp -s - "$out" || { echo "two renders differ"; return 1; }
  echo "ok: rendered twice, byte-identical ($(grep -c '^kind:' "$out") objects)"
  "${CHECK[@]}" values "$CHART/values.yaml" "$VALUES/$set.yaml" -- \
    "_namespace=$NS" "_release=$RELEASE" "_crds_source=crds/mcpgov.io.yaml" \
    "_alerts_source=$CHART/files/alerts.yaml" "_dashboard_source=$CHART/files/dashboard.json" > "$WORK/values-$set.json" || return 1
  "${CHECK[@]}" render "$out" "$WORK/values-$set.json"
}

# The rules as rendered with a non-default expiry window still pass promtool.
t_rendered_rules() {
  local promtool
  promtool="$(bash e2e/alerts/install-promtool.sh | tail -n1)" || return 1
  python3 - "$WORK/render-monitoring.yaml" "$WORK/rules-monitoring.yaml" <<'PY' || return 1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "PrometheusRule"]
assert len(docs) == 1, f"{len(docs)} PrometheusRules"
yaml.safe_dump({"groups": docs[0]["spec"]["groups"]}, open(sys.argv[2], "w"))
PY
  grep -F -- '<= 129600' "$WORK/rules-monitoring.yaml" || { echo "the 36h window is not in the rule"; return 1; }
  "$promtool" check rules "$WORK/rules-monitoring.yaml"
}

t_checker_catches() {
  "${CHECK[@]}" selftest "$WORK/render-default.yaml" "$WORK/values-default.json"
}

t_kube_version() {
  if "$HELM" template "$RELEASE" "$CHART" --kube-version 1.29.9 >"$WORK/kv.log" 2>&1; then
    echo "rendered for Kubernetes 1.29"; return 1
  fi
  grep -i "kubeVersion\|incompatible" "$WORK/kv.log" | head -n 2
  render default --kube-version 1.30.0 >/dev/null || { echo "1.30.0 refused"; return 1; }
  echo "ok: 1.29 refused, 1.30 accepted"
}

# ---------------------------------------------------------------- 4. schema
t_invalid() { # SET EXPECTED-SUBSTRING...
  local set="$1"; shift
  if render "$set" >"$WORK/invalid.log" 2>&1; then
    echo "$set.yaml was accepted"; return 1
  fi
  sed -n '1,8p' "$WORK/invalid.log"
  local want
  for want in "$@"; do
    grep -qF -- "$want" "$WORK/invalid.log" || { echo "message lacks: $want"; return 1; }
  done
}

# ---------------------------------------------------------------- 5. server dry-run
STUB_CRDS='
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
'

t_control_plane() {
  cp_started=1
  bash e2e/start-control-plane.sh "$STATE" >"$WORK/start.log" 2>&1 || { tail -n 20 "$WORK/start.log"; return 1; }
  # shellcheck disable=SC1091
  source "$STATE/env"
  kubectl version 2>/dev/null | sed -n 's/^Server Version: /kube-apiserver /p'
}

t_dry_run() {
  [[ -f "$STATE/env" ]] || { echo "no control plane"; return 1; }
  local ns
  for ns in "$NS" team-a; do
    kubectl create namespace "$ns" || return 1
    # Pod Security "restricted", enforced: what the chart claims to pass.
    kubectl label namespace "$ns" pod-security.kubernetes.io/enforce=restricted \
      pod-security.kubernetes.io/warn=restricted >/dev/null || return 1
  done
  echo "$STUB_CRDS" | kubectl apply -f - || return 1
  kubectl wait --for condition=established --timeout=60s \
    crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com || return 1
  local set
  for set in full watch-namespace; do
    kubectl apply --dry-run=server -f "$WORK/render-$set.yaml" >"$WORK/dry-$set.log" 2>&1 ||
      { cat "$WORK/dry-$set.log"; echo "dry-run of $set.yaml refused"; return 1; }
    if grep -i "warning" "$WORK/dry-$set.log"; then echo "warnings with $set.yaml"; return 1; fi
    echo "ok: dry-run=server of $set.yaml: $(grep -c 'created (server dry run)' "$WORK/dry-$set.log") objects accepted, no warnings"
  done
  sed 's/ (server dry run)//' "$WORK/dry-full.log" | sed 's/^/  /'
  # The pod the Deployment would make, in an enforce=restricted namespace.
  "${CHECK[@]}" pod "$WORK/render-full.yaml" > "$WORK/pod.yaml" || return 1
  kubectl apply --dry-run=server -f "$WORK/pod.yaml" || { echo "the pod is refused"; return 1; }
  echo "ok: the operator pod is admitted under Pod Security restricted (enforce)"
  # Control: the same pod with privilege escalation allowed is refused, so enforcement is on.
  sed 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' "$WORK/pod.yaml" > "$WORK/pod-bad.yaml"
  if kubectl apply --dry-run=server -f "$WORK/pod-bad.yaml" >"$WORK/pod-bad.log" 2>&1; then
    echo "control pod with allowPrivilegeEscalation=true was admitted: enforcement is off"; return 1
  fi
  grep -o 'violates PodSecurity "restricted:[^"]*"' "$WORK/pod-bad.log" | head -n 1
  echo "ok: control pod (allowPrivilegeEscalation=true) refused"
}

# ---------------------------------------------------------------- 5b. helm install for real
# install, upgrade, uninstall (the CRDs stay: keep), re-install adopting them, uninstall
# with crds.keep=false (the CRDs go).
t_helm_lifecycle() {
  [[ -f "$STATE/env" ]] || { echo "no control plane"; return 1; }
  local hns=mcpgov-helm
  "$HELM" install "$RELEASE" "$CHART" -n "$hns" --create-namespace > "$WORK/install.log" 2>&1 ||
    { cat "$WORK/install.log"; return 1; }
  sed -n '/^STATUS/p; /^NOTES/,$p' "$WORK/install.log"
  [[ "$(kubectl get deploy "$RELEASE" -n "$hns" -o jsonpath='{.spec.replicas}')" == 2 ]] || return 1
  "$HELM" upgrade "$RELEASE" "$CHART" -n "$hns" --reuse-values --set replicaCount=3 >/dev/null || return 1
  jsonpath_is "deploy/$RELEASE" "$hns" '{.spec.replicas}' 3 || { echo "upgrade did not apply"; return 1; }
  echo "ok: helm upgrade --set replicaCount=3 applied"
  "$HELM" uninstall "$RELEASE" -n "$hns" | sed 's/^/  /'
  kubectl get crd agents.mcpgov.io mcpservers.mcpgov.io policies.mcpgov.io grants.mcpgov.io -o name ||
    { echo "CRDs gone after uninstall with crds.keep=true"; return 1; }
  if kubectl get clusterrole "$RELEASE" >/dev/null 2>&1; then echo "ClusterRole left behind"; return 1; fi
  echo "ok: uninstall removed the release but kept the CRDs (helm.sh/resource-policy: keep)"
  "$HELM" install "$RELEASE" "$CHART" -n "$hns" --set crds.keep=false >/dev/null ||
    { echo "re-install did not adopt the kept CRDs"; return 1; }
  echo "ok: re-install adopted the kept CRDs"
  "$HELM" uninstall "$RELEASE" -n "$hns" >/dev/null || return 1
  until_ok "CRDs deleted by uninstall with crds.keep=false" 60 crds_gone
}

# ---------------------------------------------------------------- 6. RBAC for real
RB_NS=mcpgov-rbac
BIN=""

# sa_kubeconfig SA NS FILE: a kubeconfig holding only that ServiceAccount's token.
sa_kubeconfig() {
  local token
  token="$(kubectl create token "$1" -n "$2" --duration 1h)" || return 1
  KUBECONFIG="$3" kubectl config set-cluster e2e --server="$MCPGOV_APISERVER_URL" \
    --certificate-authority="$MCPGOV_CA_FILE" --embed-certs=true >/dev/null &&
  KUBECONFIG="$3" kubectl config set-credentials sa --token="$token" >/dev/null &&
  KUBECONFIG="$3" kubectl config set-context sa --cluster=e2e --user=sa >/dev/null &&
  KUBECONFIG="$3" kubectl config use-context sa >/dev/null || return 1
  echo "kubeconfig as $(KUBECONFIG="$3" kubectl auth whoami -o jsonpath='{.status.userInfo.username}')"
}

# apply_rbac RENDERED: the chart's CRDs, ServiceAccount and RBAC, for real.
apply_rbac() {
  "${CHECK[@]}" select "$1" CustomResourceDefinition ServiceAccount ClusterRole \
    ClusterRoleBinding Role RoleBinding > "$1.rbac" || return 1
  kubectl apply --server-side --force-conflicts --field-manager=chart-test -f "$1.rbac" > "$1.applied" ||
    { cat "$1.applied"; return 1; }
  sed 's/^/  /' "$1.applied"
  kubectl wait --for condition=established --timeout=60s crd/mcpservers.mcpgov.io \
    crd/agents.mcpgov.io crd/policies.mcpgov.io crd/grants.mcpgov.io >/dev/null
}

build_operator() {
  local t0
  t0=$(now_ms)
  cargo build --locked -q -p mcpgov || { echo "cargo build failed"; return 1; }
  echo "cargo build -p mcpgov: $(( ($(now_ms) - t0) / 1000 ))s"
  BIN="$CARGO_TARGET_DIR/debug/mcpgov"
}

# rendered_args RENDERED: the Deployment's args, one a line, for a local run: without
# the subcommand and --listen, crawling off (the example's MCP server does not run), and
# without the leader-election flags if this build of the operator lacks them.
rendered_args() {
  local has_le=0
  "$BIN" operator --help | grep -q -- '--leader-election' && has_le=1
  python3 - "$1" "$has_le" <<'PY'
import sys, yaml
dep = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]
args = dep["spec"]["template"]["spec"]["containers"][0]["args"][1:]
i = args.index("--listen"); del args[i:i + 2]
args[args.index("--crawl-concurrency") + 1] = "0"
if sys.argv[2] == "0" and "--leader-election" in args:
    print("the operator has no --leader-election yet: run without it", file=sys.stderr)
    i = args.index("--leader-election"); del args[i:i + 5]
print("\n".join(args))
PY
}

# operator_estate KUBECONFIG ESTATE_NS LOG OPERATOR-ARGS...: run the operator with that
# kubeconfig, apply examples/quickstart into ESTATE_NS as the admin, wait for its result.
operator_estate() {
  local kc="$1" ens="$2" log="$3"; shift 3
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "mcpgov operator --listen 127.0.0.1:$port $*"
  # debug for mcpgov: failed Event publications are logged at debug level only.
  KUBECONFIG="$kc" RUST_LOG="info,mcpgov=debug" POD_NAME=mcpgov-chart-test POD_NAMESPACE="$RB_NS" \
    "$BIN" operator --listen "127.0.0.1:$port" "$@" >"$log" 2>&1 &
  op_pid=$!
  until_ok "operator /readyz as the ServiceAccount" 60 curl -sf "http://127.0.0.1:$port/readyz" ||
    { tail -n 30 "$log"; return 1; }

  # The estate, as the admin (the example hard-codes namespace: quickstart).
  sed "s/namespace: quickstart$/namespace: $ens/" examples/quickstart/governance.yaml > "$WORK/gov-$ens.yaml"
  sed "s/namespace: quickstart$/namespace: $ens/" examples/quickstart/catalog.yaml > "$WORK/cat-$ens.yaml"
  kubectl apply --server-side -f "$WORK/gov-$ens.yaml" | sed 's/^/  /'
  "$BIN" catalog apply --catalog "$WORK/cat-$ens.yaml" || return 1

  until_ok "Agent $ens/vibe-coder has status.violations=1" 90 \
    jsonpath_is agent/vibe-coder "$ens" '{.status.violations}' 1 || { tail -n 30 "$log"; return 1; }
  until_ok "bundle ConfigMap $ens/vibe-coder-mcpgov-bundle exists" 60 \
    kubectl get configmap vibe-coder-mcpgov-bundle -n "$ens" || { tail -n 30 "$log"; return 1; }
  kubectl get configmap vibe-coder-mcpgov-bundle -n "$ens" \
    -o jsonpath='  bundle labels {.metadata.labels}, {.metadata.annotations.mcpgov\.io/bundle-sha256}{"\n"}'
  until_ok "Event ViolationFound in $ens (events create)" 30 has_event "$ens" ViolationFound || return 1
  local obj
  for obj in mcpserver/policy-gateway policy/drafts-deny grant/vibe-coder-notes; do
    until_ok "$obj Ready=True (its status written)" 30 \
      jsonpath_is "$obj" "$ens" '{.status.conditions[?(@.type=="Ready")].status}' True || return 1
  done
}

stop_operator() {
  local log="$1"
  kill "$op_pid"; wait "$op_pid" 2>/dev/null; op_pid=""
  if grep -i "forbidden" "$log"; then echo "the operator log has 'forbidden'"; return 1; fi
  echo "ok: no 'forbidden' in the operator log ($(wc -l < "$log") lines)"
}

# can_i KUBECONFIG < lines "want verb resource args...": asked as that kubeconfig's user.
can_i() {
  local kc="$1" bad=0 want verb res args got mark
  while read -r want verb res args; do
    [[ -z "$want" || "$want" == \#* ]] && continue
    # shellcheck disable=SC2086
    got="$(KUBECONFIG="$kc" kubectl auth can-i "$verb" "$res" $args 2>/dev/null)"
    [[ -z "$got" ]] && got=no
    if [[ "$got" == "$want" ]]; then mark=ok; else mark=WRONG; bad=1; fi
    printf '  %-5s can-i %-11s %-50s %-35s -> %s\n' "$mark" "$verb" "$res" "$args" "$got"
  done
  return $bad
}

t_rbac_real() {
  [[ -f "$STATE/env" ]] || { echo "no control plane"; return 1; }
  local out="$WORK/render-rbac.yaml" kc="$WORK/sa.kubeconfig" log="$WORK/operator.log"
  "$HELM" template "$RELEASE" "$CHART" --namespace "$RB_NS" --kube-version "$KUBE_VERSION" \
    --set governanceNamespace="$RB_NS" > "$out" || return 1
  kubectl create namespace "$RB_NS" >/dev/null || return 1
  kubectl create namespace quickstart >/dev/null || return 1
  apply_rbac "$out" || return 1
  sa_kubeconfig mcpgov "$RB_NS" "$kc" || return 1
  build_operator || return 1
  local -a args
  mapfile -t args < <(rendered_args "$out")
  # The Deployment's own flags (leader election included).
  operator_estate "$kc" quickstart "$log" "${args[@]}" || return 1
  if printf '%s\n' "${args[@]}" | grep -qx -- --leader-election; then
    local holder
    holder="$(kubectl get lease mcpgov-leader -n "$RB_NS" -o jsonpath='{.spec.holderIdentity}')"
    [[ "$holder" == mcpgov-chart-test* ]] || { echo "Lease holder is '$holder'"; return 1; }
    echo "ok: Lease $RB_NS/mcpgov-leader created and held by $holder (the leader-election Role)"
  fi
  stop_operator "$log" || return 1

  # Nothing broader than needed, asked as the ServiceAccount itself.
  can_i "$kc" <<EOF
yes list   agents.mcpgov.io                                     -A
yes watch  mcpservers.mcpgov.io                                 -A
yes get    grants.mcpgov.io                                     -n=quickstart
yes patch  agents.mcpgov.io                                     -n=quickstart --subresource=status
yes update policies.mcpgov.io                                   -n=quickstart --subresource=status
yes create configmaps                                           -n=quickstart
yes delete configmaps                                           -n=quickstart
yes get    secrets                                              -n=quickstart
yes create events                                               -n=quickstart
yes create events.events.k8s.io                                 -n=quickstart
yes create leases.coordination.k8s.io                           -n=$RB_NS
yes update leases.coordination.k8s.io/mcpgov-leader             -n=$RB_NS
no  list   secrets                                              -n=quickstart
no  watch  secrets                                              -A
no  create secrets                                              -n=quickstart
no  create deployments.apps                                     -n=quickstart
no  create pods                                                 -n=quickstart
no  delete agents.mcpgov.io                                     -n=quickstart
no  patch  agents.mcpgov.io                                     -n=quickstart
no  update agents.mcpgov.io                                     -n=quickstart
no  create policies.mcpgov.io                                   -n=quickstart
no  patch  mcpservers.mcpgov.io                                 -n=quickstart
no  delete customresourcedefinitions.apiextensions.k8s.io       -A
no  list   namespaces                                           -A
no  get    nodes                                                -A
no  list   leases.coordination.k8s.io                           -n=$RB_NS
no  update leases.coordination.k8s.io/other-lease               -n=$RB_NS
no  delete leases.coordination.k8s.io/mcpgov-leader             -n=$RB_NS
no  create leases.coordination.k8s.io                           -n=quickstart
no  create clusterrolebindings.rbac.authorization.k8s.io        -A
no  bind   clusterroles.rbac.authorization.k8s.io               -A
no  escalate roles.rbac.authorization.k8s.io                    -n=$RB_NS
no  impersonate serviceaccounts                                 -A
no  list   policyreports.wgpolicyk8s.io                         -A
no  create reports.openreports.io                               -n=quickstart
EOF
}

# policyReports on (a third release, reports in the PolicyReport API, its real CRD from
# e2e/report-crds.sh): the operator as that ServiceAccount writes the namespace's report
# and deletes it when the findings go, with no "forbidden"; the RBAC covers that API only.
t_rbac_reports() {
  [[ -f "$STATE/env" && -n "$BIN" ]] || { echo "needs the control plane and the operator build"; return 1; }
  local rel=reports rns=mcpgov-reports ens=team-reports crds
  local out="$WORK/render-reports-rbac.yaml" kc="$WORK/sa-reports.kubeconfig" log="$WORK/operator-reports.log"
  crds="$(bash e2e/report-crds.sh)" || return 1
  kubectl apply --server-side -f "$crds/policyreport.yaml" | sed 's/^/  /'
  kubectl wait --for condition=established --timeout=60s crd/policyreports.wgpolicyk8s.io >/dev/null || return 1
  "$HELM" template "$rel" "$CHART" --namespace "$rns" --kube-version "$KUBE_VERSION" \
    --set governanceNamespace="$ens",crds.install=false,policyReports=policyreport \
    --set replicaCount=1,leaderElection.enabled=false > "$out" || return 1
  kubectl create namespace "$rns" >/dev/null && kubectl create namespace "$ens" >/dev/null || return 1
  apply_rbac "$out" || return 1
  sa_kubeconfig reports-mcpgov "$rns" "$kc" || return 1
  local -a args
  mapfile -t args < <(rendered_args "$out")
  printf '%s\n' "${args[@]}" | grep -qx -- --policy-reports || { echo "no --policy-reports in the Deployment"; return 1; }
  operator_estate "$kc" "$ens" "$log" "${args[@]}" || return 1
  until_ok "PolicyReport $ens/mcpgov with the violation as its one fail (list, create)" 60 \
    jsonpath_is policyreports.wgpolicyk8s.io/mcpgov "$ens" '{.summary.fail}/{.results[0].result}' 1/fail ||
    { tail -n 30 "$log"; return 1; }
  kubectl delete grants.mcpgov.io vibe-coder-notes -n "$ens" >/dev/null || return 1
  until_ok "the report deleted once $ens has no findings (delete)" 60 \
    bash -c "! kubectl get policyreports.wgpolicyk8s.io mcpgov -n $ens" || { tail -n 30 "$log"; return 1; }
  stop_operator "$log" || return 1
  can_i "$kc" <<EOF
yes list   policyreports.wgpolicyk8s.io                         -A
yes create policyreports.wgpolicyk8s.io                         -n=$ens
yes patch  policyreports.wgpolicyk8s.io                         -n=$ens
yes delete policyreports.wgpolicyk8s.io                         -n=$ens
no  update policyreports.wgpolicyk8s.io                         -n=$ens
no  deletecollection policyreports.wgpolicyk8s.io               -n=$ens
no  create clusterpolicyreports.wgpolicyk8s.io                  -A
no  create reports.openreports.io                               -n=$ens
no  list   reports.openreports.io                               -A
EOF
}

# watchNamespace: the same rules bound in one namespace only (a second release, CRDs off).
t_rbac_watch_namespace() {
  [[ -f "$STATE/env" && -n "$BIN" ]] || { echo "needs the control plane and the operator build"; return 1; }
  local rel=scoped rns=mcpgov-scoped wns=team-x
  local out="$WORK/render-scoped.yaml" kc="$WORK/sa-scoped.kubeconfig" log="$WORK/operator-scoped.log"
  "$HELM" template "$rel" "$CHART" --namespace "$rns" --kube-version "$KUBE_VERSION" \
    --set watchNamespace="$wns",governanceNamespace="$wns",crds.install=false \
    --set replicaCount=1,leaderElection.enabled=false > "$out" || return 1
  if grep -q '^kind: ClusterRoleBinding' "$out"; then echo "a ClusterRoleBinding with watchNamespace set"; return 1; fi
  kubectl create namespace "$rns" >/dev/null && kubectl create namespace "$wns" >/dev/null || return 1
  apply_rbac "$out" || return 1
  sa_kubeconfig scoped-mcpgov "$rns" "$kc" || return 1
  local -a args
  mapfile -t args < <(rendered_args "$out")
  operator_estate "$kc" "$wns" "$log" "${args[@]}" || return 1
  stop_operator "$log" || return 1
  can_i "$kc" <<EOF
yes list   agents.mcpgov.io                                     -n=$wns
yes patch  agents.mcpgov.io                                     -n=$wns --subresource=status
yes create configmaps                                           -n=$wns
no  list   agents.mcpgov.io                                     -A
no  list   agents.mcpgov.io                                     -n=quickstart
no  create configmaps                                           -n=quickstart
no  get    secrets                                              -n=quickstart
no  create leases.coordination.k8s.io                           -n=$rns
EOF
}

# Render release $1 (one replica, scoped to watch namespace $3, with --set $4) into
# $WORK/render-$1.yaml, create namespaces $2 and $3, apply the rendering's RBAC and write
# $WORK/sa-$1.kubeconfig for its ServiceAccount ($1-mcpgov in $2).
scoped_release() {
  local rel="$1" rns="$2" wns="$3" set="$4"
  "$HELM" template "$rel" "$CHART" --namespace "$rns" --kube-version "$KUBE_VERSION" \
    --set watchNamespace="$wns",governanceNamespace="$wns",crds.install=false \
    --set replicaCount=1,leaderElection.enabled=false,"$set" > "$WORK/render-$rel.yaml" || return 1
  kubectl create namespace "$rns" >/dev/null && kubectl create namespace "$wns" >/dev/null || return 1
  apply_rbac "$WORK/render-$rel.yaml" || return 1
  sa_kubeconfig "$rel-mcpgov" "$rns" "$WORK/sa-$rel.kubeconfig"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The admission webhook's RBAC for real: the operator as the chart's ServiceAccount with
# the Deployment's admission flags makes the Secret, fills the caBundle of the chart's
# configuration (pointed at a local url: this control plane has no Service routing) and
# denies over TLS; nothing "forbidden", nothing broader.
t_rbac_admission() {
  [[ -f "$STATE/env" && -n "$BIN" ]] || { echo "needs the control plane and the operator build"; return 1; }
  local rel=adm rns=mcpgov-adm wns=team-adm
  local out="$WORK/render-adm.yaml" kc="$WORK/sa-adm.kubeconfig" log="$WORK/operator-adm.log"
  scoped_release "$rel" "$rns" "$wns" admission.enabled=true || return 1
  local port cfg="adm-mcpgov-$rns" secret=adm-mcpgov-admission-tls
  port=$(free_port)
  python3 - "$out" "$port" "$wns" > "$WORK/vwc-adm.yaml" <<'PY' || return 1
import sys, yaml
vwc = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ValidatingWebhookConfiguration"][0]
w = vwc["webhooks"][0]
w["clientConfig"] = {"url": f"https://127.0.0.1:{sys.argv[2]}/validate"}
w["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": sys.argv[3]}}
print(yaml.safe_dump(vwc))
PY
  kubectl apply --server-side --field-manager=chart-test -f "$WORK/vwc-adm.yaml" | sed 's/^/  /'
  local -a args
  mapfile -t args < <(rendered_args "$out" | python3 -c '
import sys
a = [x for x in sys.stdin.read().split("\n") if x]
a[a.index("--admission-listen") + 1] = "127.0.0.1:" + sys.argv[1]
a[a.index("--admission-hosts") + 1] = "127.0.0.1"
print("\n".join(a))' "$port")
  echo "mcpgov operator ${args[*]}"
  KUBECONFIG="$kc" RUST_LOG="info,mcpgov=debug" POD_NAME=mcpgov-chart-test POD_NAMESPACE="$rns" \
    "$BIN" operator --listen "127.0.0.1:0" "${args[@]}" >"$log" 2>&1 &
  op_pid=$!
  printf '%s\n' 'apiVersion: mcpgov.io/v1alpha1' 'kind: Grant' \
    "metadata: {name: expired, namespace: $wns}" \
    'spec: {agent: a, tools: ["s::t"], expectedExceptions: [{policy: p, reason: r, expires: "2020-01-01T00:00:00Z"}]}' \
    > "$WORK/expired.yaml"
  until_ok "kubectl apply of an expired exception denied over TLS" 60 \
    bash -c "! kubectl apply --dry-run=server -f '$WORK/expired.yaml' 2>'$WORK/denied.txt'" ||
    { tail -n 30 "$log"; return 1; }
  sed 's/^/  /' "$WORK/denied.txt"
  grep -q 'expected exception to p expired at' "$WORK/denied.txt" || return 1
  kubectl get secret "$secret" -n "$rns" -o jsonpath='  Secret {.metadata.name}: {.type}{"\n"}' || return 1
  stop_operator "$log" || return 1
  local rc=0
  can_i "$kc" <<CAN || rc=1
yes create secrets                                              -n=$rns
yes update secrets/$secret                                      -n=$rns
yes update validatingwebhookconfigurations.admissionregistration.k8s.io/$cfg
no  get    secrets/other                                        -n=$rns
no  create secrets                                              -n=$wns
no  update validatingwebhookconfigurations.admissionregistration.k8s.io/other
no  list   validatingwebhookconfigurations.admissionregistration.k8s.io
CAN
  kubectl delete -f "$WORK/vwc-adm.yaml" >/dev/null
  return $rc
}

# The MCP listener's RBAC for real: the operator as the chart's ServiceAccount with the
# Deployment's MCP flags reviews a caller's token (TokenReview) and what it may read
# (SubjectAccessReview): a caller's initialize is answered (not 503: a review the
# ServiceAccount may not create fails closed), a request without a token gets 401;
# nothing "forbidden", nothing broader.
t_rbac_mcp() {
  [[ -f "$STATE/env" && -n "$BIN" ]] || { echo "needs the control plane and the operator build"; return 1; }
  local rel=mcpq rns=mcpgov-mcpq wns=team-mcpq
  local out="$WORK/render-mcpq.yaml" kc="$WORK/sa-mcpq.kubeconfig" log="$WORK/operator-mcpq.log"
  scoped_release "$rel" "$rns" "$wns" mcp.enabled=true || return 1
  local port
  port=$(free_port)
  local -a args
  mapfile -t args < <(rendered_args "$out" | python3 -c '
import sys
a = [x for x in sys.stdin.read().split("\n") if x]
a[a.index("--mcp-listen") + 1] = "127.0.0.1:" + sys.argv[1]
print("\n".join(a))' "$port")
  echo "mcpgov operator ${args[*]}"
  KUBECONFIG="$kc" RUST_LOG="info,mcpgov=debug" POD_NAME=mcpgov-chart-test POD_NAMESPACE="$rns" \
    "$BIN" operator --listen "127.0.0.1:0" "${args[@]}" >"$log" 2>&1 &
  op_pid=$!
  kubectl create serviceaccount mcp-caller -n "$wns" >/dev/null || return 1
  local token init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chart-test","version":"1"}}}'
  token=$(kubectl create token mcp-caller -n "$wns" --audience mcpgov) || return 1
  mcp_status() {
    curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      "$@" -d "$init"
  }
  # Bash scopes dynamically: these see the locals above when until_ok calls them.
  mcp_answered() { [[ "$(mcp_status -H "Authorization: Bearer $token")" == 200 ]]; }
  until_ok "a caller's initialize answered 200 (its token reviewed as the ServiceAccount)" 60 mcp_answered ||
    { echo "last status: $(mcp_status -H "Authorization: Bearer $token")"; tail -n 30 "$log"; return 1; }
  local anon
  anon=$(mcp_status)
  echo "  without a token: $anon"
  [[ "$anon" == 401 ]] || return 1
  stop_operator "$log" || return 1
  can_i "$kc" <<CAN
yes create tokenreviews.authentication.k8s.io
yes create subjectaccessreviews.authorization.k8s.io
no  create localsubjectaccessreviews.authorization.k8s.io      -n=$wns
no  create serviceaccounts/token                               -n=$wns
no  list   secrets                                              -A
no  get    secrets                                              -n=kube-system
CAN
}

# Negative control: the same rules without ConfigMap writes. The operator must then
# fail to publish the bundle and say "forbidden", so the absence above means something.
t_rbac_negative_control() {
  [[ -f "$STATE/env" && -n "$BIN" ]] || { echo "needs the control plane and the operator build"; return 1; }
  local ns=team-neg kc="$WORK/sa-neg.kubeconfig" log="$WORK/operator-neg.log"
  kubectl create namespace "$ns" >/dev/null || return 1
  kubectl create serviceaccount crippled -n "$RB_NS" >/dev/null || return 1
  python3 - "$WORK/render-rbac.yaml" "$RB_NS" > "$WORK/crippled.yaml" <<'PY' || return 1
import sys, yaml
cr = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ClusterRole"
      and not any(k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in d["metadata"]["labels"])][0]
for r in cr["rules"]:
    if r["resources"] == ["configmaps"]:
        r["verbs"] = ["get", "list", "watch"]
cr["metadata"] = {"name": "mcpgov-crippled"}
crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
       "metadata": {"name": "mcpgov-crippled"},
       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mcpgov-crippled"},
       "subjects": [{"kind": "ServiceAccount", "name": "crippled", "namespace": sys.argv[2]}]}
yaml.safe_dump_all([cr, crb], sys.stdout)
PY
  kubectl apply -f "$WORK/crippled.yaml" | sed 's/^/  /'
  sa_kubeconfig crippled "$RB_NS" "$kc" || return 1
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  KUBECONFIG="$kc" RUST_LOG="info,mcpgov=debug" "$BIN" operator --listen "127.0.0.1:$port" \
    --namespace "$ns" --governance-namespace "$ns" --crawl-concurrency 0 >"$log" 2>&1 &
  op_pid=$!
  until_ok "operator /readyz (ConfigMaps still readable)" 60 curl -sf "http://127.0.0.1:$port/readyz" || return 1
  sed "s/namespace: quickstart$/namespace: $ns/" examples/quickstart/governance.yaml | kubectl apply --server-side -f - >/dev/null || return 1
  sed "s/namespace: quickstart$/namespace: $ns/" examples/quickstart/catalog.yaml > "$WORK/cat-$ns.yaml"
  "$BIN" catalog apply --catalog "$WORK/cat-$ns.yaml" || return 1
  until_ok "'forbidden' in the operator log" 60 grep -qi forbidden "$log" || return 1
  grep -i -m1 -o 'configmaps[^,]*forbidden[^"]*\|forbidden[^"]*' "$log" | head -n 1 | cut -c1-160
  if kubectl get configmap vibe-coder-mcpgov-bundle -n "$ns" >/dev/null 2>&1; then
    echo "the bundle was published without ConfigMap create"; return 1
  fi
  echo "ok: no bundle ConfigMap without the ConfigMap write verbs"
  kill "$op_pid"; wait "$op_pid" 2>/dev/null; op_pid=""
}

# ---------------------------------------------------------------- 6b. tenant RBAC
# The ClusterRoles aggregated into view/edit/admin, acting as users bound to those roles.
TN=team-rbac

# can_i_as USER NS < lines "want verb resource [args...]": asked by impersonation.
can_i_as() {
  local user="$1" ns="$2" bad=0 want verb res args got mark
  while read -r want verb res args; do
    [[ -z "$want" || "$want" == \#* ]] && continue
    # shellcheck disable=SC2086
    got="$(kubectl auth can-i "$verb" "$res" -n "$ns" --as="$user" $args 2>/dev/null)"
    [[ -z "$got" ]] && got=no
    if [[ "$got" == "$want" ]]; then mark=ok; else mark=WRONG; bad=1; fi
    printf '  %-5s %-11s can-i %-16s %-22s %-22s -> %s\n' "$mark" "$user" "$verb" "$res" "$args" "$got"
  done
  return $bad
}

# create_as USER NS < YAML: create for real as USER; kubectl's answer, indented.
create_as() {
  kubectl create -n "$2" --as="$1" -f - 2>&1 | sed 's/^/    /'
  return "${PIPESTATUS[0]}"
}

# aggregate_builtin: write what the clusterrole-aggregation controller would.
aggregate_builtin() {
  kubectl get clusterroles -o json > "$WORK/clusterroles.json" || return 1
  "${CHECK[@]}" aggregate "$WORK/clusterroles.json" > "$WORK/aggregated.json" || return 1
  kubectl replace -f "$WORK/aggregated.json" >/dev/null
}

# mcpgov_rules_in ROLE: how many rules of a ClusterRole name the mcpgov.io group.
mcpgov_rules_in() {
  kubectl get clusterrole "$1" -o json | python3 -c '
import json, sys
print(sum("mcpgov.io" in r.get("apiGroups", []) for r in json.load(sys.stdin).get("rules") or []))'
}

t_tenant_rbac() {
  [[ -f "$STATE/env" ]] || { echo "no control plane"; return 1; }
  local out="$WORK/render-tenant.yaml" u n
  render default > "$out" || return 1
  kubectl create namespace "$TN" >/dev/null && kubectl create namespace team-other >/dev/null || return 1
  for u in view edit admin; do
    kubectl create rolebinding "$u-user" -n "$TN" --clusterrole="$u" --user="$u-user" >/dev/null || return 1
  done
  kubectl create rolebinding edit-user -n team-other --clusterrole=edit --user=edit-user >/dev/null || return 1
  kubectl apply --server-side --force-conflicts --field-manager=chart-test -f crds/ >/dev/null || return 1
  kubectl wait --for condition=established --timeout=60s -f crds/ >/dev/null || return 1

  # Before: the built-in roles know nothing of mcpgov.io (the issue's symptom), even
  # aggregated. Earlier tests applied the chart's ClusterRoles (all of its RBAC): remove
  # those that aggregate, then rebuild the built-in roles from what is left.
  local level role
  for level in view edit admin; do
    for role in $(kubectl get clusterroles -o name \
        -l "app.kubernetes.io/name=mcpgov,rbac.authorization.k8s.io/aggregate-to-$level=true"); do
      kubectl delete "$role" | sed 's/^/  /'
    done
  done
  aggregate_builtin || return 1
  can_i_as edit-user "$TN" <<EOF || return 1
no  create agents.mcpgov.io
no  list   grants.mcpgov.io
EOF
  echo "ok: without the chart's roles an editor can neither create Agents nor list Grants"

  "${CHECK[@]}" select "$out" ClusterRole > "$out.all" || return 1
  python3 - "$out.all" > "$out.tenant" <<'PY' || return 1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and any(
    k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in d["metadata"].get("labels", {}))]
if len(docs) != 3:
    sys.exit(f"{len(docs)} tenant ClusterRoles rendered")
yaml.safe_dump_all(docs, sys.stdout)
PY
  kubectl apply -f "$out.tenant" | sed 's/^/  /'
  # Only kube-controller-manager aggregates, and this control plane has none: give it
  # a moment, say what happened, then do what its controller would.
  sleep 3
  n="$(mcpgov_rules_in edit)"
  if [[ "$n" == 0 ]]; then
    echo "  the built-in edit role has no mcpgov.io rule 3s later: no clusterrole-aggregation"
    echo "  controller here (no kube-controller-manager); aggregating as it would (check.py aggregate)"
    aggregate_builtin || return 1
  else
    echo "  the built-in edit role was aggregated by the control plane ($n mcpgov.io rules)"
  fi
  for u in view edit admin; do
    [[ "$(mcpgov_rules_in "$u")" -gt 0 ]] || { echo "built-in $u has no mcpgov.io rule"; return 1; }
  done
  echo "ok: view, edit and admin carry the chart's rules"

  can_i_as view-user "$TN" <<EOF || return 1
yes get    agents.mcpgov.io
yes list   mcpservers.mcpgov.io
yes watch  policies.mcpgov.io
yes list   grants.mcpgov.io
no  create agents.mcpgov.io
no  patch  grants.mcpgov.io
no  delete policies.mcpgov.io
no  patch  agents.mcpgov.io     --subresource=status
EOF
  can_i_as edit-user "$TN" <<EOF || return 1
yes list   mcpservers.mcpgov.io
yes list   policies.mcpgov.io
yes create agents.mcpgov.io
yes update agents.mcpgov.io
yes delete agents.mcpgov.io
yes create grants.mcpgov.io
yes patch  grants.mcpgov.io
yes deletecollection grants.mcpgov.io
no  create policies.mcpgov.io
no  patch  policies.mcpgov.io
no  delete policies.mcpgov.io
no  create mcpservers.mcpgov.io
no  patch  mcpservers.mcpgov.io
no  patch  agents.mcpgov.io     --subresource=status
no  update grants.mcpgov.io     --subresource=status
EOF
  can_i_as admin-user "$TN" <<EOF || return 1
yes create policies.mcpgov.io
yes delete policies.mcpgov.io
yes create mcpservers.mcpgov.io
yes patch  mcpservers.mcpgov.io
yes create agents.mcpgov.io
yes create grants.mcpgov.io
no  patch  agents.mcpgov.io     --subresource=status
no  patch  mcpservers.mcpgov.io --subresource=status
no  update policies.mcpgov.io   --subresource=status
EOF
  # A binding in one namespace reaches no other.
  can_i_as view-user team-other <<EOF || return 1
no  list   agents.mcpgov.io
EOF
  can_i_as edit-user mcpgov-system <<EOF || return 1
no  create agents.mcpgov.io
EOF

  # For real, as the API server decides each request.
  echo "  edit-user creates an Agent and a Grant:"
  create_as edit-user "$TN" <<'EOF' || return 1
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: bot}
spec: {profile: Strict}
---
apiVersion: mcpgov.io/v1alpha1
kind: Grant
metadata: {name: bot-tools}
spec: {agent: bot, tools: ["search::*"]}
EOF
  echo "  edit-user may not create a Policy:"
  if create_as edit-user "$TN" <<'EOF'
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: allow-all}
spec: {effect: Allow, governs: {tools: [{tool: "search::*"}]}}
EOF
  then echo "edit-user created a Policy"; return 1; fi
  echo "  edit-user may not write an Agent's status:"
  if kubectl patch agents.mcpgov.io bot -n "$TN" --as=edit-user --subresource=status --type=merge \
      -p '{"status":{"violations":0}}' > "$WORK/patch.log" 2>&1; then
    echo "edit-user wrote status"; return 1
  fi
  sed 's/^/    /' "$WORK/patch.log"
  echo "  admin-user creates a Policy and an MCPServer:"
  create_as admin-user "$TN" <<'EOF' || return 1
apiVersion: mcpgov.io/v1alpha1
kind: Policy
metadata: {name: no-secrets}
spec: {effect: Deny, governs: {resources: [{uri: "file:///secrets/**"}]}}
---
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: search}
spec: {endpoint: {url: "http://search.team-rbac.svc:8080/mcp"}, sharing: {namespaces: [team-other]}}
EOF
  echo "  view-user lists the four and creates nothing:"
  kubectl get mcpgov -n "$TN" --as=view-user -o name > "$WORK/view.list" || return 1
  sed 's/^/    /' "$WORK/view.list"
  [[ "$(wc -l < "$WORK/view.list")" == 4 ]] || { echo "view-user does not see 4 objects"; return 1; }
  if create_as view-user "$TN" <<'EOF'
apiVersion: mcpgov.io/v1alpha1
kind: Agent
metadata: {name: intruder}
spec: {}
EOF
  then echo "view-user created an Agent"; return 1; fi

  # Bound directly (no aggregation involved): each role is complete on its own.
  kubectl create rolebinding direct-edit -n "$TN" --clusterrole=mcpgov-edit --user=direct-edit >/dev/null || return 1
  kubectl create rolebinding direct-view -n "$TN" --clusterrole=mcpgov-view --user=direct-view >/dev/null || return 1
  can_i_as direct-edit "$TN" <<EOF || return 1
yes list   policies.mcpgov.io
yes create grants.mcpgov.io
no  create policies.mcpgov.io
no  create mcpservers.mcpgov.io
no  patch  agents.mcpgov.io     --subresource=status
no  list   configmaps
EOF
  can_i_as direct-view "$TN" <<EOF || return 1
yes list   mcpservers.mcpgov.io
no  create agents.mcpgov.io
EOF
}

# ---------------------------------------------------------------- 6c. gateway sidecar
SIDECAR=(python3 e2e/chart/sidecar.py)
GW_EXAMPLE=examples/gateway
# The README's snippet is a patch: the test applies it to this agent Deployment, and
# checks the result with this MCPServer (its header Secret is the snippet's).
SNIPPET_NS=gw-snippet
SNIPPET_BASE='
apiVersion: apps/v1
kind: Deployment
metadata: {name: my-agent, namespace: gw-snippet}
spec:
  selector: {matchLabels: {app: my-agent}}
  template:
    metadata: {labels: {app: my-agent}}
    spec:
      containers:
        - name: agent
          image: registry.example/my-agent:1.0
          securityContext:
            runAsNonRoot: true
            runAsUser: 10001
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
            seccompProfile: {type: RuntimeDefault}
'
SNIPPET_SERVER='
apiVersion: mcpgov.io/v1alpha1
kind: MCPServer
metadata: {name: tools, namespace: gw-snippet}
spec:
  endpoint:
    url: http://tools.gw-snippet.svc:8080/mcp
    headers: [{name: Authorization, valueFrom: {secretKeyRef: {name: tools-mcp-token, key: token}}}]
'

t_sidecar_static() {
  "${SIDECAR[@]}" check "$GW_EXAMPLE"/*.yaml || return 1
  echo "the checker notices broken sidecars (mutations of the example):"
  "${SIDECAR[@]}" selftest "$GW_EXAMPLE"/*.yaml || return 1
  "${SIDECAR[@]}" snippet "$CHART/README.md" > "$WORK/snippet.yaml" || return 1
  python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert d["spec"]["template"]["spec"]["initContainers"]' \
    "$WORK/snippet.yaml" || { echo "the README's snippet has no initContainers"; return 1; }
  echo "ok: the chart README's snippet extracted ($(wc -l < "$WORK/snippet.yaml") lines)"
  # The flags and environment variables given to the gateway are ones it has.
  cargo build --locked -q -p mcpgov-gateway -p mcpgov || { echo "cargo build failed"; return 1; }
  local gw_bin="$CARGO_TARGET_DIR/debug/mcpgov-gateway"
  "$gw_bin" --help > "$WORK/gateway-help.txt" || return 1
  echo "examples/gateway/deployment.yaml:"
  "${SIDECAR[@]}" flags "$GW_EXAMPLE/deployment.yaml" "$WORK/gateway-help.txt" || return 1
  sed 's/--credentials-dir=/--credential-dir=/' "$GW_EXAMPLE/deployment.yaml" > "$WORK/unknown-flag.yaml"
  if "${SIDECAR[@]}" flags "$WORK/unknown-flag.yaml" "$WORK/gateway-help.txt" >/dev/null; then
    echo "control: an unknown flag passed"; return 1
  fi
  echo "ok: control: an unknown flag (--credential-dir) is caught"
  # The binary itself, with the example's flags and environment, its mounts laid out
  # under a directory (the bundle the CLI compiles from the example's governance).
  mkdir -p "$WORK/gw-smoke" || return 1
  "${SIDECAR[@]}" smoke "$GW_EXAMPLE" "$gw_bin" "$CARGO_TARGET_DIR/debug/mcpgov" "$WORK/gw-smoke" || return 1
  python3 - "$WORK/snippet.yaml" > "$WORK/snippet-as-deployment.yaml" <<'PY' || return 1
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
d.update(apiVersion="apps/v1", kind="Deployment", metadata={"name": "snippet"})
yaml.safe_dump(d, sys.stdout)
PY
  echo "the README's snippet:"
  "${SIDECAR[@]}" flags "$WORK/snippet-as-deployment.yaml" "$WORK/gateway-help.txt"
}

# no_warnings LOG: kubectl printed no warning (Pod Security warns on workloads).
no_warnings() {
  if grep -i "warning" "$1"; then echo "warnings above"; return 1; fi
}

# pss_admitted PODS.yaml: each Pod is admitted under enforce=restricted, and the same
# Pod with privilege escalation allowed in every container is refused (enforcement on).
pss_admitted() {
  kubectl apply --dry-run=server -f "$1" > "$1.log" 2>&1 || { cat "$1.log"; echo "refused"; return 1; }
  no_warnings "$1.log" || return 1
  sed 's/^/  /' "$1.log"
  sed 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' "$1" > "$1.bad"
  if cmp -s "$1" "$1.bad"; then echo "control: nothing to mutate"; return 1; fi
  if kubectl apply --dry-run=server -f "$1.bad" > "$1.bad.log" 2>&1; then
    echo "control pod with allowPrivilegeEscalation=true admitted: enforcement is off"; return 1
  fi
  grep -o 'violates PodSecurity "restricted:[^"]*"' "$1.bad.log" | head -n 1 | sed 's/^/  control refused: /'
}

t_gateway_example() {
  [[ -f "$STATE/env" ]] || { echo "no control plane"; return 1; }
  # Agent, Grant, Policy and MCPServer need the CRDs.
  kubectl apply --server-side --force-conflicts --field-manager=chart-test -f crds/ >/dev/null || return 1
  kubectl wait --for condition=established --timeout=60s -f crds/ >/dev/null || return 1
  # The namespace for real (objects cannot be dry-run into a namespace that does not
  # exist); it enforces Pod Security "restricted".
  kubectl apply -f "$GW_EXAMPLE/namespace.yaml" | sed 's/^/  /'
  kubectl apply --dry-run=server -f "$GW_EXAMPLE/" > "$WORK/gw-dry.log" 2>&1 ||
    { cat "$WORK/gw-dry.log"; echo "dry-run of $GW_EXAMPLE refused"; return 1; }
  no_warnings "$WORK/gw-dry.log" || return 1
  sed 's/^/  /' "$WORK/gw-dry.log"
  local docs applied
  docs=$(python3 -c 'import sys, yaml; print(sum(1 for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d))' "$GW_EXAMPLE"/*.yaml)
  applied=$(grep -c '(server dry run)' "$WORK/gw-dry.log")
  [[ "$docs" == "$applied" ]] || { echo "$docs documents, $applied accepted"; return 1; }
  echo "ok: dry-run=server of $GW_EXAMPLE: all $docs objects accepted, no warnings"
  "${SIDECAR[@]}" pods "$GW_EXAMPLE/deployment.yaml" > "$WORK/gw-pod.yaml" || return 1
  pss_admitted "$WORK/gw-pod.yaml" || return 1
  echo "ok: the agent pod with its gateway is admitted under Pod Security restricted (enforce)"
}

t_gateway_snippet() {
  [[ -f "$STATE/env" && -s "$WORK/snippet.yaml" ]] || { echo "needs the control plane and the snippet"; return 1; }
  kubectl create namespace "$SNIPPET_NS" >/dev/null || return 1
  kubectl label namespace "$SNIPPET_NS" pod-security.kubernetes.io/enforce=restricted \
    pod-security.kubernetes.io/warn=restricted >/dev/null || return 1
  echo "$SNIPPET_BASE" | kubectl apply -f - | sed 's/^/  /'
  # As the README says to run it (strategic merge, kubectl's default), dry-run on the server.
  kubectl -n "$SNIPPET_NS" patch deployment my-agent --patch-file "$WORK/snippet.yaml" \
    --dry-run=server -o yaml > "$WORK/patched.yaml" 2> "$WORK/patch.log" ||
    { cat "$WORK/patch.log"; echo "the README's patch is refused"; return 1; }
  no_warnings "$WORK/patch.log" || return 1
  [[ -z "$(kubectl -n "$SNIPPET_NS" get deployment my-agent -o jsonpath='{.spec.template.spec.initContainers}')" ]] ||
    { echo "the dry-run changed the Deployment"; return 1; }
  echo "ok: kubectl patch --dry-run=server with the README's snippet accepted, no warnings (nothing stored)"
  echo "$SNIPPET_SERVER" > "$WORK/snippet-server.yaml"
  "${SIDECAR[@]}" check "$WORK/patched.yaml" "$WORK/snippet-server.yaml" || return 1
  "${SIDECAR[@]}" pods "$WORK/patched.yaml" > "$WORK/snippet-pod.yaml" || return 1
  pss_admitted "$WORK/snippet-pod.yaml" || return 1
  echo "ok: the patched agent pod is admitted under Pod Security restricted (enforce)"
}

# ---------------------------------------------------------------- 7. RBAC rules
t_print_rules() {
  render default > "$WORK/render-rules.yaml" || return 1
  "${CHECK[@]}" rules "$WORK/render-rules.yaml"
}

# ---------------------------------------------------------------- run
HELM=""
run "charts/mcpgov/files/crds.yaml in step with crds/ (sync-crds.sh --check)" t_crds_in_sync
run "helm from Go modules (cached)" t_helm
[[ -n "$HELM" ]] || { echo "$passed passed, $failed failed (no helm: stopped)"; exit 1; }
run "helm lint / lint --strict" t_lint
run "values.schema.json and README cover every value" "${CHECK[@]}" coverage "$CHART"
run "gateway sidecar (examples/gateway, the README's patch): static checks, flags the gateway knows" t_sidecar_static
run "templates use no lookup/rand/now" t_no_nondeterminism
for set in "${VALID_SETS[@]}"; do
  run "helm template -f values/$set.yaml --kube-version $KUBE_VERSION" t_template "$set"
done
run "the PrometheusRule rendered with a 36h expiry window passes promtool" t_rendered_rules
run "check.py notices broken renderings (mutations of the default one)" t_checker_catches
run "kubeVersion >=1.30.0-0 enforced" t_kube_version
SCHEMA_MSG="values don't meet the specifications of the schema"
run "schema rejects replicaCount: two, crawler.concurrency: -1, exceptionExpiryWindow: 7 days" \
  t_invalid invalid-types "$SCHEMA_MSG" "/replicaCount" "/crawler/concurrency" "/prometheusRule/exceptionExpiryWindow"
run "schema rejects logLevel: loud, image.pullPolicy: Sometimes" \
  t_invalid invalid-enum "$SCHEMA_MSG" "/logLevel" "/image/pullPolicy"
run "schema rejects an unknown key (leaderElection.enabeld)" \
  t_invalid invalid-unknown-key "$SCHEMA_MSG" "enabeld"
run "schema rejects policyReports: PolicyReport" \
  t_invalid invalid-policy-reports "$SCHEMA_MSG" "/policyReports"
run "chart refuses replicaCount 2 without leader election" \
  t_invalid invalid-replicas-without-election "needs leaderElection.enabled=true"
run "control plane (kube-apiserver + etcd) started" t_control_plane
if [[ -f "$STATE/env" ]]; then
  # shellcheck disable=SC1091
  source "$STATE/env"
fi
run "kubectl apply --dry-run=server of the full rendering; Pod Security restricted" t_dry_run
run "helm install / upgrade / uninstall for real; CRDs kept iff crds.keep" t_helm_lifecycle
run "RBAC for real: the operator as the chart's ServiceAccount; can-i" t_rbac_real
run "RBAC for real with watchNamespace: a RoleBinding in that namespace only" t_rbac_watch_namespace
run "admission webhook RBAC for real: Secret made, caBundle set, denial over TLS; can-i" t_rbac_admission
run "MCP listener RBAC for real: a caller's token and access reviewed as the ServiceAccount; can-i" t_rbac_mcp
run "negative control: without ConfigMap writes the log says 'forbidden'" t_rbac_negative_control
run "RBAC for real with policyReports: the report written and deleted as the ServiceAccount" t_rbac_reports
run "tenant RBAC: users bound to view/edit/admin (and the chart's roles directly)" t_tenant_rbac
run "examples/gateway: kubectl apply --dry-run=server; its pod under Pod Security restricted" t_gateway_example
run "chart README's sidecar patch: kubectl patch --dry-run=server; Pod Security restricted" t_gateway_snippet
run "rendered RBAC rules" t_print_rules

echo
echo "helm: $(cat "$WORK/helm-version" 2>/dev/null || echo unknown)"
echo "timings:"
printf '%s\n' "${timings[@]}"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
