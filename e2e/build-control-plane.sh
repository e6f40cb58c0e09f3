#!/usr/bin/env bash
# Build (once) and cache the control-plane binaries the e2e tests run:
# kube-apiserver, kubectl and etcd, compiled from source with the Go toolchain
# because only package registries (here: the Go module proxy) are reachable.
#
# Everything lands in ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}: binaries in bin/,
# the throwaway build modules in src/, and (only while building) private Go
# module/build caches in go/. A second run with the same pins is instant.
#
# It then runs build-projector.sh (the kubelet's ConfigMap projection for the e2e
# tests), which is likewise instant when its cached binary is current.
#
# Knobs: MCPGOV_BUILD_JOBS (default 1: the dev machines have 2 shared cores),
#        MCPGOV_KEEP_GO_CACHE=1 keeps go/ after a successful build.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- Pinned versions (bump here; the cache rebuilds what changed) -----------
KUBE_VERSION="v1.37.2"   # k8s.io/kubernetes tag: kube-apiserver + kubectl
ETCD_VERSION="v3.7.3"    # go.etcd.io/etcd/server/v3 (k8s 1.37 pairs with etcd 3.7)

CACHE="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}"
BIN="$CACHE/bin"
SRC="$CACHE/src"
JOBS="${MCPGOV_BUILD_JOBS:-1}"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

# Is the cached binary there and of the pinned version? Asking the binary
# itself (rather than trusting a stamp file) also proves the -X ldflags took.
have_apiserver() { [[ -x "$BIN/kube-apiserver" ]] && [[ "$("$BIN/kube-apiserver" --version 2>/dev/null)" == "Kubernetes $KUBE_VERSION" ]]; }
# (Output is captured, not piped into grep -q: with pipefail an early-exiting
# grep would turn the writer's SIGPIPE into a failure.)
have_kubectl()   { [[ -x "$BIN/kubectl" ]] && grep -qx "Client Version: $KUBE_VERSION" <<<"$("$BIN/kubectl" version --client 2>/dev/null)"; }
have_etcd()      { [[ -x "$BIN/etcd" ]] && grep -qx "etcd Version: ${ETCD_VERSION#v}" <<<"$("$BIN/etcd" --version 2>/dev/null)"; }

write_versions() {
  # Sourceable record of what bin/ holds, for tests and the demo.
  cat >"$BIN/VERSIONS" <<EOF
KUBE_VERSION=$KUBE_VERSION
ETCD_VERSION=$ETCD_VERSION
EOF
}

if have_apiserver && have_kubectl && have_etcd; then
  [[ -f "$BIN/VERSIONS" ]] || write_versions
  exec "$HERE/build-projector.sh"
fi

command -v go >/dev/null || { log "error: the Go toolchain (go) is required to build the control plane"; exit 1; }
mkdir -p "$BIN" "$SRC"

# Serialize concurrent builders (two test runs starting at once).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.build.lock"
  flock 9
  if have_apiserver && have_kubectl && have_etcd; then write_versions; exec 9>&-; exec "$HERE/build-projector.sh"; fi
fi

# Private Go caches so nothing is written outside $CACHE; static binaries;
# few jobs so one core stays free for whoever else shares the machine.
export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
export GOMAXPROCS="$JOBS"
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
GOBUILD=(go build -p "$JOBS" -trimpath)

# Build into a temp dir and move into place, so an interrupted build never
# leaves a half-written binary that looks cached.
OUT="$(mktemp -d "$CACHE/.out.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

# Value of a string field in `go mod download -json` output.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" | head -n1; }

build_kubernetes() {
  local pkgs=("$@")
  local mod="$SRC/kubernetes-$KUBE_VERSION"
  local staging_version="v0.${KUBE_VERSION#v1.}"   # v1.37.2 -> v0.37.2
  mkdir -p "$mod"

  # k8s.io/kubernetes's go.mod points its staging modules (k8s.io/api, ...)
  # at ./staging/..., which `go install` refuses. Re-point each of them at
  # its published v0.Y.Z twin; the list comes from that release's go.mod.
  local dl gomod info
  dl="$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"
  gomod="$(json_field GoMod <<<"$dl")"
  info="$(json_field Info <<<"$dl")"
  [[ -f "$gomod" ]] || { log "error: could not download k8s.io/kubernetes@$KUBE_VERSION"; echo "$dl" >&2; exit 1; }

  local staging
  staging="$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$gomod")"
  [[ -n "$staging" ]] || { log "error: no staging replaces found in $gomod"; exit 1; }

  {
    echo "module mcpgov.local/build-kubernetes"
    echo
    sed -n 's/^go \(.*\)$/go \1/p' "$gomod"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    local m
    for m in $staging; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$mod/go.mod"

  # Stamp the real version into both version packages, as hack/lib/version.sh
  # does, so /version and `kubectl version` report it. The build date is the
  # tag's commit time (from the proxy), which keeps builds reproducible.
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  local build_date
  build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info")"
  local ldflags="-s -w" pkg kv key val
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    # The proxy does not tell the tag's commit; blank beats "$Format:%H$".
    for kv in "gitVersion=$KUBE_VERSION" "gitMajor=1" "gitMinor=$minor" "gitCommit=" \
              "gitTreeState=clean" "buildDate=${build_date:-1970-01-01T00:00:00Z}"; do
      key="${kv%%=*}"; val="${kv#*=}"
      ldflags+=" -X $pkg.$key=$val"
    done
  done

  log "building ${pkgs[*]} @ $KUBE_VERSION (slow: ~10 min on one free core)"
  (cd "$mod" && "${GOBUILD[@]}" -ldflags "$ldflags" -o "$OUT/" "${pkgs[@]}")
  mv -f "$OUT"/* "$BIN/"
}

build_etcd() {
  local mod="$SRC/etcd-$ETCD_VERSION"
  mkdir -p "$mod"
  local dl gomod
  dl="$(cd "$mod" && go mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION")"
  gomod="$(json_field GoMod <<<"$dl")"
  [[ -f "$gomod" ]] || { log "error: could not download etcd server $ETCD_VERSION"; echo "$dl" >&2; exit 1; }
  # The upstream main module (go.etcd.io/etcd/v3) uses local replaces too, so
  # wrap the server's etcdmain in a three-line main instead.
  cat >"$mod/go.mod" <<EOF
module mcpgov.local/build-etcd

$(sed -n 's/^go .*$/&/p' "$gomod")

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  cat >"$mod/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  log "building etcd $ETCD_VERSION"
  (cd "$mod" && "${GOBUILD[@]}" -ldflags "-s -w" -o "$OUT/etcd" .)
  mv -f "$OUT/etcd" "$BIN/"   # keep it even if the long kube build is interrupted
}

start=$SECONDS
have_etcd || build_etcd
kube_pkgs=()
have_apiserver || kube_pkgs+=(k8s.io/kubernetes/cmd/kube-apiserver)
have_kubectl   || kube_pkgs+=(k8s.io/kubernetes/cmd/kubectl)
(( ${#kube_pkgs[@]} == 0 )) || build_kubernetes "${kube_pkgs[@]}"

if ! (have_apiserver && have_kubectl && have_etcd); then
  log "error: built binaries do not report the pinned versions"; exit 1
fi
write_versions
# While the module and build caches are warm: the projector shares most of them.
MCPGOV_KEEP_GO_CACHE=1 "$HERE/build-projector.sh"

# The Go caches are only needed to build; drop them (GBs) unless asked not to.
if [[ "${MCPGOV_KEEP_GO_CACHE:-0}" != 1 ]]; then
  go clean -modcache >/dev/null 2>&1 || true
  rm -rf "$CACHE/go"
fi
log "done in $((SECONDS - start))s: binaries in $BIN"
