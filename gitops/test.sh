#!/usr/bin/env bash
# Tests of gitops/: the Argo CD health checks and Flux's readings of the mcpgov.io kinds,
# run by the libraries those tools run them with (gitops/health/: gopher-lua, kstatus from
# sigs.k8s.io/cli-utils, cel-go) over captured status fixtures, static checks, and the
# freshness of argocd/argocd-cm-patch.yaml. No cluster needed.
#
# Needs python3, and Go to build mcpgov-health the first time (build-health.sh caches
# it). Last line: `N passed, N failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

passed=0
failed=0
# Runs a checker that ends with `RESULT <name> passed=N failed=N`, adds its counts.
tally() {
  local out rc=0 line
  out="$("$@" 2>&1)" || rc=$?
  printf '%s\n' "$out" | grep -v '^RESULT ' || true
  line="$(printf '%s\n' "$out" | grep '^RESULT ' | tail -n1)"
  if [[ "$line" =~ passed=([0-9]+)\ failed=([0-9]+) ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
    if ((rc != 0 && BASH_REMATCH[2] == 0)); then failed=$((failed + 1)); fi
  else
    echo "FAIL $* ended without a result (exit $rc)"
    failed=$((failed + 1))
  fi
}

echo "== health.lua files and argocd-cm-patch.yaml are what render-cm.sh renders from src/"
if bash argocd/render-cm.sh --check; then
  echo "ok   argocd/health/*/health.lua and argocd-cm-patch.yaml are fresh"
  passed=$((passed + 1))
else
  echo "FAIL argocd/ generated health checks are stale"
  failed=$((failed + 1))
fi

echo "== static checks"
tally python3 test/check_static.py .

echo "== mcpgov-health (gitops/health/; built once, then cached)"
if health="$(bash build-health.sh)"; then
  "$health" versions | sed 's/^/   /'
  echo "== the harness: Argo CD's Lua sandbox, hostile scripts, expressions and fixtures"
  tally "$health" selftest
  echo "== Argo CD: the argocd-cm-patch.yaml health checks in gopher-lua"
  tally "$health" lua .
  echo "== Flux: kstatus (sigs.k8s.io/cli-utils)"
  tally "$health" kstatus .
  echo "== Flux 2.5+: the proposed healthCheckExprs in cel-go"
  tally "$health" cel .
else
  echo "FAIL mcpgov-health did not build"
  failed=$((failed + 1))
fi

echo
echo "$passed passed, $failed failed"
((failed == 0))
