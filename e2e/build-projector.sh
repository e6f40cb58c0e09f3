#!/usr/bin/env bash
# Build (once) and cache mcpgov-projector (e2e/projector/): the kubelet's own ConfigMap
# volume code (k8s.io/kubernetes/pkg/volume/{configmap,util}) projecting one ConfigMap
# into a directory, for e2e tests that have an API server but no kubelet.
#
# The binary lands in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/bin/mcpgov-projector, stamped
# with a digest of e2e/projector's sources (go.mod carries the Kubernetes pin); it is
# rebuilt only when that digest changes. build-control-plane.sh calls this script, so
# whoever starts the control plane has it.
#
# Knobs: MCPGOV_BUILD_JOBS (default 1), MCPGOV_KEEP_GO_CACHE=1 keeps the Go caches
#        under $MCPGOV_CACHE/go/ after a successful build.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJ="$HERE/projector"
CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
BIN="$CACHE/bin"
OUT_BIN="$BIN/mcpgov-projector"
JOBS="${MCPGOV_BUILD_JOBS:-1}"

log() { printf '[build-projector] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# One Kubernetes pin for the whole suite: the projector must be the kubelet of the
# release whose apiserver the tests run.
kube_version="$(sed -n 's/^KUBE_VERSION="\(v[^"]*\)".*/\1/p' "$HERE/build-control-plane.sh")"
[[ -n "$kube_version" ]] || die "no KUBE_VERSION in build-control-plane.sh"
staging_version="v0.${kube_version#v1.}"
grep -qx "	k8s.io/kubernetes $kube_version" "$PROJ/go.mod" \
  || die "e2e/projector/go.mod does not require k8s.io/kubernetes $kube_version (the apiserver's pin); see e2e/README.md to bump it"
if grep -E '^	k8s\.io/[^ ]+ => k8s\.io/[^ ]+ v' "$PROJ/go.mod" | grep -vq " $staging_version\$"; then
  die "e2e/projector/go.mod replaces a staging module with a version other than $staging_version"
fi

# What the binary is built from, in a stable order; the sources are small.
digest="$(cd "$PROJ" && LC_ALL=C sha256sum go.mod go.sum ./*.go | sha256sum | cut -c1-32)"

# Asking the binary (rather than a stamp file) also proves the -X ldflag took.
current() { [[ -x "$OUT_BIN" ]] && [[ "$("$OUT_BIN" --source-digest 2>/dev/null)" == "$digest" ]]; }
current && exit 0

command -v go >/dev/null || die "the Go toolchain (go) is required to build mcpgov-projector"
mkdir -p "$BIN"
# Serialize concurrent builders. Its own lock file: build-control-plane.sh holds its
# lock while it calls us.
if command -v flock >/dev/null; then
  exec 8>"$CACHE/.build-projector.lock"
  flock 8
  current && exit 0
fi

# Same private caches as build-control-plane.sh (a cold run shares its downloads);
# go.sum is checked (-mod=readonly), nothing is written into the checkout.
export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
export GOMAXPROCS="$JOBS"
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"

OUT="$(mktemp -d "$CACHE/.projector.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT
start=$SECONDS
log "building mcpgov-projector (k8s.io/kubernetes $kube_version; slow the first time: ~7 min on one free core)"
(cd "$PROJ" && go build -p "$JOBS" -trimpath -ldflags "-s -w -X main.sourceDigest=$digest" -o "$OUT/mcpgov-projector" .)
mv -f "$OUT/mcpgov-projector" "$OUT_BIN"
current || die "the built mcpgov-projector does not report digest $digest"

if [[ "${MCPGOV_KEEP_GO_CACHE:-0}" != 1 ]]; then
  go clean -modcache >/dev/null 2>&1 || true
  rm -rf "$CACHE/go"
fi
log "done in $((SECONDS - start))s: $OUT_BIN"
