#!/usr/bin/env bash
# Builds helm from its Go module into the mcpgov cache (once) and prints its path.
# Instant when the pinned version is already cached.
set -euo pipefail

HELM_VERSION="${MCPGOV_HELM_VERSION:-v3.22.0}"
CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
BIN="$CACHE/bin"
HELM="$BIN/helm"
STAMP="$BIN/helm.version"

mkdir -p "$BIN"
if [[ -x "$HELM" && -f "$STAMP" && "$(cat "$STAMP")" == "$HELM_VERSION" ]]; then
    echo "$HELM"
    exit 0
fi

command -v go >/dev/null || { echo "build-helm: go is not on PATH" >&2; exit 1; }
echo "build-helm: building helm $HELM_VERSION (go $(go env GOVERSION)) into $BIN" >&2
start=$(date +%s)
# Two shared cores: one package at a time, one OS thread for the compiler.
GOBIN="$BIN" GOFLAGS="-p=1 -buildvcs=false" GOMAXPROCS=1 CGO_ENABLED=0 \
    go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
echo "$HELM_VERSION" > "$STAMP"
echo "build-helm: done in $(( $(date +%s) - start ))s" >&2
echo "$HELM"
