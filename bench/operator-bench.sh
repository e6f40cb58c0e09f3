#!/usr/bin/env bash
# The operator's figures on the real control plane (issue 6): a generated estate applied
# to a local kube-apiserver + etcd, its MCP servers served on loopback, the release
# operator crawling and reconciling it. Prints a table and, for `large`, writes
# bench/OPERATOR-RESULTS.md.
#
# Usage: bench/operator-bench.sh [small|medium|large]     (default large)
#
# Everything runs in a temporary directory that is removed on exit: its own control
# plane (e2e/start-control-plane.sh), the estate (bench/gen_estate.py --endpoint-base),
# the servers (bench/bench_server.py --http, in the e2e MCP venv), the operator's log.
#
# Knobs: MCPGOV_BENCH_OUT=FILE writes the report there (any size);
#        MCPGOV_BENCH_ARGS="..." more arguments for the driver (e2e/src/bin/operator-bench.rs),
#          e.g. "--changes 20 --resync-seconds 30 -- --crawl-concurrency 16" (after `--`:
#          operator flags);
#        MCPGOV_BENCH_KEEP=1 keeps the directory (logs) and prints where it is;
#        MCPGOV_BENCH_BIN=FILE runs this operator binary (or a wrapper that profiles it,
#          e.g. under heaptrack or perf; its RSS figures are then the wrapper's).
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-large}"
case "$size" in small | medium | large) ;; *)
  echo "usage: $0 [small|medium|large]" >&2
  exit 2
  ;;
esac
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

log() { printf '[operator-bench] %s\n' "$*" >&2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/mcpgov-operator-bench.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  bash e2e/stop-control-plane.sh "$work/control-plane" >/dev/null 2>&1 || true
  if [[ "${MCPGOV_BENCH_KEEP:-0}" == 1 ]]; then
    log "kept $work (operator log in logs/, servers.err)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

log "building the release operator and the driver"
cargo build --release --locked -q -p mcpgov --bin mcpgov
cargo build --release --locked -q -p mcpgov-e2e --bin operator-bench

log "MCP venv (e2e/mcp-servers/install.sh)"
python="$(bash e2e/mcp-servers/install.sh)/venv/bin/python"

log "control plane"
bash e2e/start-control-plane.sh "$work/control-plane" >/dev/null
# shellcheck disable=SC1091
source "$work/control-plane/env"
kubectl apply --server-side --field-manager=mcpgov-install -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s -f crds/ >/dev/null

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log "estate $size, servers on 127.0.0.1:$port"
python3 bench/gen_estate.py "$work/estate" "$size" --endpoint-base "http://127.0.0.1:$port" >/dev/null
"$python" bench/bench_server.py --http "$port" "$work/estate/toolgraph/estate.json" \
  >"$work/servers.out" 2>"$work/servers.err" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q '^READY' "$work/servers.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/servers.err" >&2; exit 1; }
  sleep 0.2
done
grep -q '^READY' "$work/servers.out" || { log "the MCP servers never became ready"; exit 1; }
log "$(head -n1 "$work/servers.out")"

out="${MCPGOV_BENCH_OUT:-}"
if [[ -z "$out" && "$size" == large ]]; then
  out="bench/OPERATOR-RESULTS.md"
fi
command="bash bench/operator-bench.sh $size"
[[ -n "${MCPGOV_BENCH_ARGS:-}" ]] && command="MCPGOV_BENCH_ARGS=\"$MCPGOV_BENCH_ARGS\" $command"
mkdir -p "$work/logs"
# shellcheck disable=SC2086 # MCPGOV_BENCH_ARGS is a list of words
MCPGOV_BIN="${MCPGOV_BENCH_BIN:-$CARGO_TARGET_DIR/release/mcpgov}" MCPGOV_E2E_LOGS="$work/logs" \
  "$CARGO_TARGET_DIR/release/operator-bench" --estate "$work/estate" --with-apply \
  --command "$command" --revision "$(git describe --always --dirty 2>/dev/null || echo unknown)" \
  ${out:+--out "$out"} ${MCPGOV_BENCH_ARGS:-}
