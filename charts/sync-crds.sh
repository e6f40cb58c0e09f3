#!/usr/bin/env bash
# Helm cannot read files outside a chart, so the chart carries a copy of the repo's CRDs
# (crds/mcpgov.io.yaml -> charts/mcpgov/files/crds.yaml), rendered by
# templates/crds.yaml. Run this after `mcpgov crds > crds/mcpgov.io.yaml`.
#   charts/sync-crds.sh          refresh the copy
#   charts/sync-crds.sh --check  exit 1 (with a diff) when the copy is stale
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../crds/mcpgov.io.yaml"
dst="$here/mcpgov/files/crds.yaml"

[[ -f "$src" ]] || { echo "sync-crds: missing source crds/mcpgov.io.yaml" >&2; exit 2; }
case "${1:-}" in
  --check)
    if [[ -f "$dst" ]] && cmp -s "$src" "$dst"; then
      echo "sync-crds: charts/mcpgov/files/crds.yaml is up to date"
      exit 0
    fi
    echo "sync-crds: charts/mcpgov/files/crds.yaml is stale; run charts/sync-crds.sh" >&2
    if [[ -f "$dst" ]]; then diff -u "$dst" "$src" | head -n 40 >&2 || true; fi
    exit 1
    ;;
  "")
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst"
    echo "sync-crds: copied crds/mcpgov.io.yaml to charts/mcpgov/files/crds.yaml"
    ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac
