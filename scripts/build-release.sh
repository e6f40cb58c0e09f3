#!/usr/bin/env bash
# Build the release binaries the images ship: `scripts/build-release.sh OUTDIR` puts the
# operator (`mcpgov`) and the gateway sidecar (`mcpgov-gateway`) in OUTDIR.
# The Dockerfile runs exactly this, so the image build is tested without a Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/build-release.sh OUTDIR}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
cargo build --release --locked -p mcpgov -p mcpgov-gateway
mkdir -p "$out"
for bin in mcpgov mcpgov-gateway; do
  install -m 0755 "$CARGO_TARGET_DIR/release/$bin" "$out/$bin"
  "$out/$bin" --version
done
