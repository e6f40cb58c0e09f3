#!/usr/bin/env bash
# verify.sh [NAME...]: smoke-check the MCP servers end to end. For each one:
# start it on a free port, run the curl handshake (initialize, initialized,
# tools/list), check that every listening socket of its process tree is on
# 127.0.0.1 only, stop it. Prints one line per server and a closing
# "N passed, N failed"; exits non-zero if any failed.
# Default: every server kind, plus testserver over SSE and with a few flags.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${MCPGOV_MCP_STATE:-/tmp/mcpgov-mcp}"
export MCPGOV_MCP_STATE="$STATE"

# name|start args|handshake args (@SSE = use MCP_SSE_URL)|expected tool count (- = any > 0)
CASES=(
  "everything-http|||-"
  "everything-sse||--sse|-"
  "filesystem-http|||14"
  "filesystem-sse||--sse|14"
  "memory-http|||9"
  "memory-sse||--sse|9"
  "testserver|||3"
  "testserver@sse||@SSE|3"
  "testserver@paged|--tools 25 --page-size 10||25"
  "testserver@auth|--auth-token verify-token|--token verify-token|3"
)
if (($#)); then
  sel=()
  for want in "$@"; do for c in "${CASES[@]}"; do [[ "${c%%|*}" == "$want" ]] && sel+=("$c"); done; done
  CASES=("${sel[@]}")
fi

"$HERE/install.sh" >/dev/null || { echo "install failed"; exit 1; }

# Local addresses of every TCP listener of PID and its descendants.
listeners() {
  local pids p
  pids="$(echo "$1"; pgrep -P "$1" 2>/dev/null; for p in $(pgrep -P "$1" 2>/dev/null); do pgrep -P "$p"; done)"
  for p in $pids; do
    ss -ltnpH 2>/dev/null | awk -v pat="pid=$p," 'index($0, pat) {print $4}'
  done | sort -u
}

passed=0 failed=0
for c in "${CASES[@]}"; do
  IFS='|' read -r spec start_args hs_args want <<<"$c"
  id="${spec//@/_}"
  # shellcheck disable=SC2086
  if ! url="$("$HERE/start.sh" "$spec" 0 $start_args 2>"$STATE/$id.start.err")"; then
    echo "FAIL $spec: start: $(tail -n 5 "$STATE/$id.start.err" | tr '\n' ' ')"
    failed=$((failed + 1)); continue
  fi
  rm -f "$STATE/$id.start.err"
  # shellcheck disable=SC1090
  source "$STATE/$id.env"
  if [[ "$hs_args" == @SSE ]]; then url="$MCP_SSE_URL" hs_args="--sse"; fi
  problems=()
  # shellcheck disable=SC2086
  if out="$("$HERE/handshake.sh" "$url" $hs_args 2>&1)"; then
    summary="$(node -e '
      const r = JSON.parse(process.argv[1]);
      process.stdout.write([r.protocolVersion, r.serverInfo.name + "@" + r.serverInfo.version, r.tools, r.pages, r.sessionId ? "session" : "no-session"].join(" "));
    ' "$out")"
    tools="$(node -e 'process.stdout.write(String(JSON.parse(process.argv[1]).tools))' "$out")"
    if [[ "$want" == - ]]; then ((tools > 0)) || problems+=("no tools"); else [[ "$tools" == "$want" ]] || problems+=("$tools tools, want $want"); fi
  else
    summary="" problems+=("handshake: $out")
  fi
  addrs="$(listeners "$MCP_PID" | tr '\n' ' ')"
  [[ -n "$addrs" ]] || problems+=("no listener found")
  for a in $addrs; do [[ "$a" == 127.0.0.1:* ]] || problems+=("listens on $a"); done
  "$HERE/stop.sh" "$spec" 2>/dev/null
  if ((${#problems[@]})); then
    echo "FAIL $spec $url: ${problems[*]}"
    failed=$((failed + 1))
  else
    echo "ok   $spec $url: protocol/server/tools/pages: $summary; listens: $addrs"
    passed=$((passed + 1))
  fi
done
echo "$passed passed, $failed failed"
((failed == 0))
