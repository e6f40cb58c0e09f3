#!/usr/bin/env bash
# The local demo: build mcpgov and run the offline governance check on every example,
# then show the evidence and the bundle for the quickstart agent.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
cargo build --locked -q -p mcpgov
mcpgov="$CARGO_TARGET_DIR/debug/mcpgov"

for ex in quickstart cross-server multi-tenant; do
  echo "== mcpgov check -f examples/$ex"
  "$mcpgov" check -f "examples/$ex" || true
  echo
done

echo "== mcpgov query unsafe-tools ci-bot -f examples/cross-server"
"$mcpgov" query unsafe-tools ci-bot -f examples/cross-server
echo
echo "== mcpgov bundle vibe-coder -f examples/quickstart | sha256sum"
"$mcpgov" bundle vibe-coder -f examples/quickstart | sha256sum
