#!/usr/bin/env bash
# Install (once) promtool, taken from Debian's `prometheus` package without installing
# the package or its server: `apt-get download` fetches the .deb, `dpkg-deb -x` unpacks
# it into a temporary folder and only its usr/bin/promtool (a Go binary needing nothing
# but libc) is kept, as ${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/bin/promtool.
#
# A second run is a no-op while the cached promtool runs; MCPGOV_PROMTOOL_FORCE=1
# re-extracts. `apt-get update` runs only when apt knows no candidate for the package.
# Prints the promtool path as its last line on stdout.
set -euo pipefail

bin="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/bin"
promtool="$bin/promtool"

log() { printf '[alerts/install-promtool] %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

if [[ "${MCPGOV_PROMTOOL_FORCE:-}" != 1 && -x "$promtool" ]] &&
    "$promtool" --version >/dev/null 2>&1; then
    echo "$promtool"
    exit 0
fi

command -v apt-get >/dev/null || die "apt-get is required (promtool comes from Debian's prometheus package)"
command -v dpkg-deb >/dev/null || die "dpkg-deb is required"

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
if [[ -z "$(candidate)" || "$(candidate)" == "(none)" ]]; then
    log "apt-get update (no candidate for prometheus yet)"
    apt-get update -qq >&2 || die "apt-get update failed"
fi
version="$(candidate)"
[[ -n "$version" && "$version" != "(none)" ]] || die "apt knows no prometheus package"

start=$SECONDS
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# apt fetches as the unprivileged _apt user where it can; let it write here.
chmod 0777 "$work"
log "apt-get download prometheus=$version"
(cd "$work" && apt-get download -qq "prometheus=$version" >&2) || die "apt-get download failed"
deb="$(ls "$work"/prometheus_*.deb 2>/dev/null | head -n1)"
[[ -n "$deb" ]] || die "no .deb after apt-get download"

dpkg-deb -x "$deb" "$work/root" || die "dpkg-deb -x failed"
[[ -x "$work/root/usr/bin/promtool" ]] || die "the package holds no usr/bin/promtool"
mkdir -p "$bin"
# Copy then rename, so a concurrent run never sees half a binary.
cp "$work/root/usr/bin/promtool" "$promtool.tmp.$$"
chmod 0755 "$promtool.tmp.$$"
mv -f "$promtool.tmp.$$" "$promtool"

"$promtool" --version >/dev/null 2>&1 || die "the extracted promtool does not run"
log "$("$promtool" --version 2>&1 | head -n1), in $((SECONDS - start))s"
echo "$promtool"
