#!/usr/bin/env bash
# Fetch (once) and cache the report CRDs the e2e tests install: the OpenReports Report
# CRD from the Go module github.com/openreports/reports-api, and the wgpolicyk8s.io
# v1alpha2 PolicyReport CRD as Kyverno's Go module ships it (github.com/kyverno/kyverno,
# config/crds/policyreport). Only the Go module proxy is reachable, so both come through
# the Go toolchain (`go mod download`), as the control plane's sources do.
#
# Prints the directory holding policyreport.yaml and openreports.yaml on stdout.
# The files land in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/report-crds/<pins>/; a second
# run with the same pins is instant. MCPGOV_KEEP_GO_CACHE=1 keeps the module cache.
set -euo pipefail

# --- Pinned versions (bump here) ---------------------------------------------
OPENREPORTS_VERSION="v0.2.1"   # github.com/openreports/reports-api
KYVERNO_VERSION="v1.19.1"      # github.com/kyverno/kyverno (ships the PolicyReport CRD)

CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
OUT="$CACHE/report-crds/openreports-$OPENREPORTS_VERSION-kyverno-$KYVERNO_VERSION"

log() { printf '[report-crds] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

have() { [[ -s "$OUT/policyreport.yaml" && -s "$OUT/openreports.yaml" ]]; }
if have; then echo "$OUT"; exit 0; fi

command -v go >/dev/null || die "the Go toolchain (go) is required to fetch the report CRDs"
mkdir -p "$CACHE"
if command -v flock >/dev/null; then
  exec 7>"$CACHE/.report-crds.lock"
  flock 7
  if have; then echo "$OUT"; exit 0; fi
fi

# A private module cache: deleting it cannot disturb another build's.
GOC="$CACHE/go-report-crds"
export GOMODCACHE="$GOC/mod"
export GOCACHE="$GOC/build"
export GOFLAGS="-mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# `go mod download -json` prints the module's unpacked directory as "Dir".
dir_of() {
  local json
  json="$(cd "$GOC" && go mod download -json "$1")" || die "could not download $1: $json"
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json" | head -n1
}

mkdir -p "$GOC"
log "fetching the report CRDs (OpenReports $OPENREPORTS_VERSION, Kyverno $KYVERNO_VERSION)"
open_dir="$(dir_of "github.com/openreports/reports-api@$OPENREPORTS_VERSION")"
kyverno_dir="$(dir_of "github.com/kyverno/kyverno@$KYVERNO_VERSION")"
open_crd="$open_dir/config/crd/openreports.io_reports.yaml"
policy_crd="$kyverno_dir/config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml"
[[ -s "$open_crd" ]] || die "no $open_crd in the module"
[[ -s "$policy_crd" ]] || die "no $policy_crd in the module"

tmp="$(mktemp -d "$CACHE/.report-crds.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cp "$open_crd" "$tmp/openreports.yaml"
cp "$policy_crd" "$tmp/policyreport.yaml"
grep -q '^  name: reports.openreports.io$' "$tmp/openreports.yaml" || die "unexpected OpenReports CRD"
grep -q '^  name: policyreports.wgpolicyk8s.io$' "$tmp/policyreport.yaml" || die "unexpected PolicyReport CRD"
mkdir -p "$(dirname "$OUT")"
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT

if [[ "${MCPGOV_KEEP_GO_CACHE:-0}" != 1 ]]; then
  go clean -modcache >/dev/null 2>&1 || true
  rm -rf "$GOC"
fi
echo "$OUT"
