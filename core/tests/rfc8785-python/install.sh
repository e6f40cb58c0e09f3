#!/usr/bin/env bash
# Install (once) a venv with the hash-pinned `rfc8785` package from PyPI, for the test
# that compares our canonical JSON with it (core/tests/rfc8785_python.rs). It lands in
# ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/rfc8785-venv; a STAMP records the pins and the
# Python used, so a second run only checks it. Prints the venv's python on stdout.
# Knobs: MCPGOV_PYTHON=/path/to/python3 picks the interpreter (>= 3.8 with venv).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
VENV="$CACHE/rfc8785-venv"
STAMP="$VENV/STAMP"

log() { printf '[rfc8785-python/install] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

PYTHON="${MCPGOV_PYTHON:-$(command -v python3 || true)}"
[[ -n "$PYTHON" ]] || die "python3 is required (set MCPGOV_PYTHON)"
"$PYTHON" -c 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 8) else 1)' \
  >/dev/null 2>&1 || die "$PYTHON is not a Python >= 3.8 with the venv module (apt-get install python3-venv)"
want="$("$PYTHON" -c 'import sys; print("python=%d.%d.%d" % sys.version_info[:3])'; sha256sum <"$HERE/requirements.txt")"

ok() {
  [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] &&
    "$VENV/bin/python" -c 'import rfc8785' >/dev/null 2>&1
}

mkdir -p "$CACHE"
# Serialise concurrent installers (two test binaries, two checkouts).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.rfc8785-venv.lock"
  flock 9
fi
if ! ok; then
  log "installing $(grep -v '^#' "$HERE/requirements.txt" | cut -d' ' -f1) with $PYTHON"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" >&2 || die "$PYTHON -m venv failed"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet --no-input \
    --require-hashes --no-deps -r "$HERE/requirements.txt" >&2 || die "pip install failed"
  echo "$want" >"$STAMP"
fi
echo "$VENV/bin/python"
