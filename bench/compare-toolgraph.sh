#!/usr/bin/env bash
# Run Toolgraph (Python) and mcpgov on the same generated estate, print median timings
# and ratios, and fail when their answers differ.
#   bench/compare-toolgraph.sh [small|medium|large] [runs]      (default: medium 3)
# Above 60 agents (large: 500) the all-agent bundle step is timed on 20 agents and
# extrapolated (the table says so). One large run took 13 min on 2 busy cores (a third
# of it the answer checks), so large is run with RUNS=1.
# Env: MCPGOV_CACHE (default ~/.cache/mcpgov) holds the Toolgraph venv and the estate;
#      CARGO_TARGET_DIR (default $MCPGOV_CACHE/target); TOOLGRAPH_PYTHON (a Python >= 3.12);
#      SEED (default 42).
set -euo pipefail
SIZE=${1:-medium}
RUNS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CACHE=${MCPGOV_CACHE:-$HOME/.cache/mcpgov}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$CACHE/target}
VENV=$CACHE/toolgraph-venv

if [ ! -x "$VENV/bin/toolgraph" ] || ! "$VENV/bin/toolgraph" --version | grep -q '0\.4\.0'; then
  PY=${TOOLGRAPH_PYTHON:-}
  if [ -z "$PY" ]; then
    for c in "$HOME"/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.12*/bin/python python3.13 python3.12; do
      if command -v "$c" >/dev/null 2>&1; then PY=$c; fi
    done
  fi
  [ -n "$PY" ] || { echo "need Python >= 3.12 (set TOOLGRAPH_PYTHON)" >&2; exit 2; }
  echo "installing toolgraph[ladybug]==0.4.0 into $VENV" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q "toolgraph[ladybug]==0.4.0"
fi

echo "building mcpgov (release)" >&2
(cd "$ROOT" && cargo build --release -q -p mcpgov)
MCPGOV=$CARGO_TARGET_DIR/release/mcpgov

EST=$CACHE/bench-estate-$SIZE
rm -rf "$EST"
"$VENV/bin/python" "$HERE/gen_estate.py" "$EST" "$SIZE" --seed "${SEED:-42}" \
  --python "$VENV/bin/python" --server-script "$HERE/bench_server.py" >/dev/null
echo "estate $SIZE written; $RUNS run(s)" >&2
REV=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "not a git checkout")
echo "machine: $(nproc) cores ($(uname -m)), $("$VENV/bin/toolgraph" --version), $("$MCPGOV" --version) ($REV)"
exec "$VENV/bin/python" "$HERE/compare.py" "$EST" "$RUNS" "$VENV/bin/toolgraph" "$MCPGOV"
