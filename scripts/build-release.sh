#!/usr/bin/env bash
# Build the release binary the image ships: `scripts/build-release.sh OUTDIR`.
# The Dockerfile runs exactly this, so the image build is tested without a Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/build-release.sh OUTDIR}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/target}"
cargo build --release --locked -p mcpgov
mkdir -p "$out"
install -m 0755 "$CARGO_TARGET_DIR/release/mcpgov" "$out/mcpgov"
"$out/mcpgov" --version
