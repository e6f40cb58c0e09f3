#!/usr/bin/env bash
# Tests of gitops/: the Argo CD health checks run by real Lua interpreters over captured
# status fixtures, the same fixtures read the way Flux (kstatus) reads them, and the
# freshness of argocd/argocd-cm-patch.yaml. No cluster needed.
#
# Needs python3 and Debian's lua5.4 (or lua5.3) and lua5.1 (Argo CD's gopher-lua speaks
# Lua 5.1): installed here with apt-get when missing. Last line: `N passed, N failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

modern=""
for l in lua5.4 lua5.3; do
  if command -v "$l" >/dev/null; then modern="$l"; break; fi
done
if [[ -z "$modern" ]] || ! command -v lua5.1 >/dev/null; then
  if ! command -v apt-get >/dev/null || [[ "$(id -u)" != 0 ]]; then
    echo "lua5.4 and lua5.1 are needed: apt-get install lua5.4 lua5.1 (as root)" >&2
    exit 1
  fi
  echo "== installing lua5.4 and lua5.1 (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq lua5.4 lua5.1 >/dev/null
  modern="${modern:-lua5.4}"
fi

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

echo "== argocd-cm-patch.yaml is what render-cm.sh renders"
if bash argocd/render-cm.sh --check; then
  echo "ok   argocd/argocd-cm-patch.yaml is fresh"
  passed=$((passed + 1))
else
  echo "FAIL argocd/argocd-cm-patch.yaml is stale"
  failed=$((failed + 1))
fi

echo "== static checks"
tally python3 test/check_static.py .

for l in "$modern" lua5.1; do
  echo "== Argo CD health checks under $l"
  tally "$l" test/run.lua .
done

echo "== kstatus (Flux) and the proposed healthCheckExprs"
tally python3 test/kstatus.py .

echo
echo "$passed passed, $failed failed"
((failed == 0))
