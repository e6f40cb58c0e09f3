#!/usr/bin/env bash
# Build (once) and cache mcpgov-health (gitops/health/): the GitOps health checks run by
# the libraries Argo CD and Flux use (gopher-lua, kstatus from sigs.k8s.io/cli-utils,
# cel-go), pinned in gitops/health/go.mod. Prints the binary's path on stdout.
#
# The binary lands in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/bin/mcpgov-health, stamped
# with a digest of gitops/health's sources and go.mod/go.sum; it is rebuilt only when
# that digest changes. gitops/test.sh calls this script.
#
# Knobs: MCPGOV_BUILD_JOBS (default 1), MCPGOV_KEEP_GO_CACHE=1 keeps the Go caches
#        under $MCPGOV_CACHE/go-health/ after a successful build.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/health"
CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
BIN="$CACHE/bin"
OUT_BIN="$BIN/mcpgov-health"
JOBS="${MCPGOV_BUILD_JOBS:-1}"

log() { printf '[build-health] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# What the binary is built from, in a stable order; the sources are small.
digest="$(cd "$SRC" && LC_ALL=C sha256sum go.mod go.sum ./*.go | sha256sum | cut -c1-32)"

# Asking the binary (rather than a stamp file) also proves the -X ldflag took.
current() { [[ -x "$OUT_BIN" ]] && [[ "$("$OUT_BIN" --source-digest 2>/dev/null)" == "$digest" ]]; }
if current; then echo "$OUT_BIN"; exit 0; fi

command -v go >/dev/null || die "the Go toolchain (go) is required to build mcpgov-health"
mkdir -p "$BIN"
# Serialize concurrent builders (two test runs at once).
if command -v flock >/dev/null; then
  exec 8>"$CACHE/.build-health.lock"
  flock 8
  if current; then echo "$OUT_BIN"; exit 0; fi
fi

# Private caches of its own (deleting them cannot disturb a control-plane build sharing
# $CACHE/go); go.sum is checked (-mod=readonly), nothing is written into the checkout.
GOC="$CACHE/go-health"
export GOMODCACHE="$GOC/mod"
export GOCACHE="$GOC/build"
export GOMAXPROCS="$JOBS"
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"

OUT="$(mktemp -d "$CACHE/.health.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT
start=$SECONDS
log "building mcpgov-health (gopher-lua, cli-utils, cel-go; about 2 min of CPU the first time)"
(cd "$SRC" && go build -p "$JOBS" -trimpath -ldflags "-s -w -X main.sourceDigest=$digest" -o "$OUT/mcpgov-health" .)
mv -f "$OUT/mcpgov-health" "$OUT_BIN"
current || die "the built mcpgov-health does not report digest $digest"

if [[ "${MCPGOV_KEEP_GO_CACHE:-0}" != 1 ]]; then
  go clean -modcache >/dev/null 2>&1 || true
  rm -rf "$GOC"
fi
log "done in $((SECONDS - start))s: $OUT_BIN"
echo "$OUT_BIN"
