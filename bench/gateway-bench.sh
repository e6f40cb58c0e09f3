#!/usr/bin/env bash
# The gateway's figures (issue 11): direct versus through the gateway on loopback,
# interleaved in one run, against the bench's own 100-tool MCP server; the decision in
# process; the `..data` swap; throughput on one core; RSS idle and under 200 sessions.
# Prints a table and writes bench/GATEWAY-RESULTS.md and bench/gateway-results.json.
#
# Usage: bench/gateway-bench.sh [--quick] [gateway-bench args...]
#   (release build; ~40 s to 1.5 min of measuring; driver: gateway/examples/gateway-bench/)
#   --quick: a ~10 s smoke run on the debug build (wrong answers fail it, figures never
#   do); writes nothing. scripts/test.sh runs it so the bench keeps compiling and working.
#
# Needs taskset (util-linux) and 2 cores for the full run: the throughput rounds use a
# gateway pinned to CPU 1 and move the client and the upstream to CPU 0 (`--no-pin`,
# `--gateway-cpu N`, `--client-cpu N`); the other phases pin nothing. Run it when the
# machine is quiet: the report states the load and the gateway's run-queue wait.
# Knobs: MCPGOV_BENCH_OUT_DIR=DIR writes the two files there instead of bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

log() { printf '[gateway-bench] %s\n' "$*" >&2; }

if [[ "${1:-}" == --quick ]]; then
  shift
  cargo build --locked -q -p mcpgov-gateway --bin mcpgov-gateway --example gateway-bench
  "$CARGO_TARGET_DIR/debug/examples/gateway-bench" --quick \
    --gateway "$CARGO_TARGET_DIR/debug/mcpgov-gateway" "$@"
  # Per-call enforcement (issue 13): the decision with argument resolution, bundle size.
  exec cargo run --locked -q -p mcpgov-engine --example percall_bench -- --quick
fi

log "building the release gateway and the driver"
cargo build --release --locked -q -p mcpgov-gateway --bin mcpgov-gateway --example gateway-bench
out="${MCPGOV_BENCH_OUT_DIR:-bench}"
log "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
command="bash bench/gateway-bench.sh${*:+ $*}"
"$CARGO_TARGET_DIR/release/examples/gateway-bench" \
  --gateway "$CARGO_TARGET_DIR/release/mcpgov-gateway" \
  --command "$command" --revision "$(git describe --always --dirty 2>/dev/null || echo unknown)" \
  --out-json "$out/gateway-results.json" --out-md "$out/GATEWAY-RESULTS.md" "$@"
# Per-call enforcement (issue 13): appended as the last section of the results.
log "per-call enforcement figures"
cargo run --release --locked -q -p mcpgov-engine --example percall_bench -- --append-md "$out/GATEWAY-RESULTS.md"
