#!/usr/bin/env bash
# Rewrite plugins/krew/mcpgov.yaml for a release: the version, each platform's archive
# URI and its sha256, computed from the archives in DIR
# (mcpgov-VERSION-OS-ARCH.tar.gz, each holding the `mcpgov` binary at its root).
# Usage: bash plugins/krew/update.sh v0.2.0 dist/   (prints nothing; edits in place)
set -euo pipefail
version=${1:?usage: update.sh VERSION DIR}
dir=${2:?usage: update.sh VERSION DIR}
manifest=${MANIFEST:-"$(dirname "$0")/mcpgov.yaml"}
case "$version" in v[0-9]*) ;; *) echo "version must look like v1.2.3" >&2; exit 2 ;; esac
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
os='' arch=''
while IFS= read -r line; do
  case "$line" in
    *"version: v"*) line="${line%%version:*}version: $version" ;;
    *"os: "*) os=${line##*os: } ;;
    *"arch: "*) arch=${line##*arch: } ;;
    *"uri: "*)
      name="mcpgov-$version-$os-$arch.tar.gz"
      line="${line%%uri:*}uri: https://github.com/mcpgov/mcpgov/releases/download/$version/$name"
      ;;
    *"sha256: "*)
      name="mcpgov-$version-$os-$arch.tar.gz"
      if [ ! -f "$dir/$name" ]; then echo "missing $dir/$name" >&2; exit 1; fi
      sum=$(sha256sum "$dir/$name" | cut -d' ' -f1)
      line="${line%%sha256:*}sha256: \"$sum\""
      ;;
  esac
  printf '%s\n' "$line" >>"$tmp"
done <"$manifest"
cp "$tmp" "$manifest"
