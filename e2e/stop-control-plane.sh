#!/usr/bin/env bash
# Stop the loopback control plane started by start-control-plane.sh and
# remove its state (certs, kubeconfig, logs, etcd data). Safe to run twice.
#
# Usage: e2e/stop-control-plane.sh [STATE_DIR]   (same default as start)
# MCPGOV_KEEP_STATE=1 stops the processes but keeps STATE_DIR (logs) around.
set -euo pipefail

STATE="${1:-${MCPGOV_E2E_DIR:-/tmp/mcpgov-e2e}}"

log() { printf '[stop-control-plane] %s\n' "$*" >&2; }

if [[ ! -d "$STATE" ]]; then
  log "nothing to stop ($STATE does not exist)"
  exit 0
fi
# Refuse to delete a directory that start-control-plane.sh did not make.
if [[ ! -e "$STATE/.mcpgov-e2e" && -n "$(ls -A "$STATE")" ]]; then
  log "error: $STATE is not a mcpgov e2e state dir (no .mcpgov-e2e marker); not touching it"
  exit 1
fi

# Stop the process recorded in $STATE/$1.pid, but only if that pid still runs
# binary $1 (never kill a recycled pid). TERM first, KILL after 10 s.
stop_proc() {
  local name="$1" pid
  pid="$(cat "$STATE/$name.pid" 2>/dev/null)" || return 0
  [[ -n "$pid" ]] || return 0
  local cmd
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 0   # already gone
  [[ "$cmd" == *"$name"* ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.1
  done
  log "$name (pid $pid) ignored SIGTERM; killing"
  kill -KILL "$pid" 2>/dev/null || true
}

# apiserver first, so it does not spend its last seconds retrying etcd.
stop_proc kube-apiserver
stop_proc etcd

# The etcd data dir lives outside STATE (in tmpfs); only remove what we made.
data="$(cat "$STATE/etcd-data-dir" 2>/dev/null || true)"
if [[ -n "$data" && "$(basename "$data")" == mcpgov-etcd.* ]]; then
  rm -rf "$data"
fi
if [[ "${MCPGOV_KEEP_STATE:-0}" == 1 ]]; then
  rm -f "$STATE"/*.pid
  log "kept $STATE (logs, certs) for inspection"
else
  rm -rf "$STATE"
  log "removed $STATE"
fi
