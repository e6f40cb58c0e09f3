#!/usr/bin/env bash
# The one test command (README, CI): formatting, lints, unit/property/golden tests, then
# the end-to-end suite against a real kube-apiserver + etcd started here.
# `scripts/test.sh --fast` is the inner loop: fmt, clippy and the unit tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
# Build output lives outside the checkout so a second run (and a fresh clone) is fast.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust (rustup) first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
# Real MCP servers from npm and PyPI (pinned; cached after the first run): the gateway's
# integration tests (in `cargo test`) and the e2e suite stand the gateway and the crawler
# in front of them.
start=$(date +%s)
bash e2e/mcp-servers/install.sh >/dev/null
echo "MCP test servers installed in $(( $(date +%s) - start ))s"
echo "== unit, property, golden and gateway integration tests"
# Includes core's RFC 8785 comparison with the `rfc8785` package from PyPI: the test
# installs it (hash-pinned) into a cached venv via core/tests/rfc8785-python/install.sh.
cargo test --locked
if [[ "${1:-}" == --fast ]]; then
  echo "fast run: release build, GitOps, alerts, e2e, chart and conformance suites skipped"
  exit 0
fi

echo "== release build (the images' build script) and the Dockerfile's stages"
out=$(mktemp -d)
bash scripts/build-release.sh "$out" >/dev/null 2>&1
"$out/mcpgov" crds | diff -q - crds/mcpgov.io.yaml >/dev/null
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
[[ "$("$out/mcpgov-gateway" --version)" == "mcpgov-gateway $version" ]] ||
  { echo "mcpgov-gateway --version does not print $version"; exit 1; }
# No Docker engine here: the stages are checked as text (gateway stage, operator last,
# non-root, binaries the script built), and the check must catch broken Dockerfiles.
python3 scripts/check-dockerfile.py Dockerfile "$out"
python3 scripts/check-dockerfile.py --selftest Dockerfile "$out" >/dev/null
rm -rf "$out"
echo "release binaries build; the operator serves the committed CRDs, the gateway is $version"

echo "== gateway benchmark, smoke run (keeps it working; figures: bash bench/gateway-bench.sh)"
bash bench/gateway-bench.sh --quick >/dev/null

echo "== GitOps health: Argo CD Lua (gopher-lua), kstatus and Flux CEL over captured status"
bash gitops/test.sh

echo "== alert rules (promtool check + unit tests)"
bash e2e/alerts/test.sh

echo "== end-to-end: real kube-apiserver + etcd"
export MCPGOV_E2E_DIR="${MCPGOV_E2E_DIR:-/tmp/mcpgov-e2e-test-$$}"
# A cold cache builds kube-apiserver and etcd from source: use every core here.
export MCPGOV_BUILD_JOBS="${MCPGOV_BUILD_JOBS:-$(nproc)}"
stop() {
  MCPGOV_MCP_STATE="$MCPGOV_E2E_DIR/mcp-servers" bash e2e/mcp-servers/stop.sh --all >/dev/null 2>&1 || true
  bash e2e/stop-control-plane.sh "$MCPGOV_E2E_DIR" >/dev/null 2>&1 || true
}
trap stop EXIT
start=$(date +%s)
bash e2e/start-control-plane.sh "$MCPGOV_E2E_DIR" >/dev/null
echo "control plane up in $(( $(date +%s) - start ))s"
# shellcheck disable=SC1091
source "$MCPGOV_E2E_DIR/env"
kubectl apply --server-side --field-manager=mcpgov-install -f crds/ >/dev/null
kubectl wait --for condition=established --timeout=60s -f crds/ >/dev/null
# The operator and the gateway (e2e/tests/gateway.rs runs it in front of real servers).
cargo build --locked -q -p mcpgov -p mcpgov-gateway
export MCPGOV_MCP_STATE="$MCPGOV_E2E_DIR/mcp-servers"
export MCPGOV_BIN="$CARGO_TARGET_DIR/debug/mcpgov"
export MCPGOV_GATEWAY_BIN="$CARGO_TARGET_DIR/debug/mcpgov-gateway"
export MCPGOV_E2E_LOGS="$MCPGOV_E2E_DIR/operator-logs"
start=$(date +%s)
if ! cargo test --locked -p mcpgov-e2e; then
  for f in "$MCPGOV_E2E_LOGS"/*.log; do echo "--- $f"; tail -n 40 "$f"; done
  exit 1
fi
echo "e2e suite ran in $(( $(date +%s) - start ))s"

echo "== Helm chart: lint, templates, server-side dry-run, RBAC for real"
start=$(date +%s)
MCPGOV_BUILD_JOBS="$MCPGOV_BUILD_JOBS" bash e2e/chart/test.sh
echo "chart suite ran in $(( $(date +%s) - start ))s"

echo "== MCP conformance suite (client scenarios) against the crawler"
bash e2e/conformance/run.sh

echo "== MCP conformance suite (server scenarios) against mcpgov serve (the tools-only ones must pass)"
bash e2e/conformance/run-serve.sh

echo "== MCP conformance suite (server scenarios): server-everything direct vs through the gateway"
# Builds mcpgov-gateway and its allow-all-bundle example (free when already built).
bash e2e/conformance/run-server.sh
# The comparison must notice a gateway that hides a tool.
hidden=$(CONFORMANCE_HIDE_TOOL=echo bash e2e/conformance/run-server.sh tools-list 2>&1) && rc=0 || rc=$?
if [[ $rc -ne 1 ]] || ! grep -q '^tools-list .*DIFFERENT$' <<<"$hidden"; then
  echo "$hidden" >&2
  echo "run-server.sh did not tell a gateway hiding echo from one hiding nothing" >&2
  exit 1
fi
