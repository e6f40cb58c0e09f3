#!/usr/bin/env bash
# stop.sh NAME[@INSTANCE]... | --all: stop MCP servers started by start.sh.
#
# SIGTERM to the server and, after it, to any of its child processes left
# (supergateway's stdio children); SIGKILL to whatever is still there after
# MCPGOV_MCP_STOP_TIMEOUT seconds (default 10). Removes ID.pid, ID.env and
# the fixtures start.sh made (filesystem root, memory file); keeps ID.log
# unless MCPGOV_MCP_KEEP_LOGS=0. Stopping what is not running is fine.
set -euo pipefail

STATE="${MCPGOV_MCP_STATE:-/tmp/mcpgov-mcp}"
TIMEOUT="${MCPGOV_MCP_STOP_TIMEOUT:-10}"

log() { printf '[mcp-servers/stop] %s\n' "$*" >&2; }

(($#)) || { log "usage: stop.sh NAME[@INSTANCE]... | --all"; exit 2; }

ids=()
if [[ "$1" == --all ]]; then
  for f in "$STATE"/*.pid; do [[ -e "$f" ]] && ids+=("$(basename "$f" .pid)"); done
else
  for spec in "$@"; do ids+=("${spec//@/_}"); done
fi

# All descendants of PID (children first-level first), from /proc.
descendants() {
  local kids k
  kids="$(cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+$' || true)"
  for k in $kids; do echo "$k"; descendants "$k"; done
}

cmdline() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }

stop_one() {
  local id="$1" pidfile="$STATE/$1.pid" pid mark p i deadline any
  local -a pids=() cmds=()
  if [[ -f "$pidfile" ]]; then
    pid="$(sed -n 1p "$pidfile")" mark="$(sed -n 2p "$pidfile")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && [[ "$(cmdline "$pid")" == *"$mark"* ]]; then
      # Note the tree (and each command line) first: once the server is gone,
      # its children are re-parented, and a pid is only signalled while it
      # still runs the same command (never a recycled pid).
      while read -r p; do pids+=("$p"); cmds+=("$(cmdline "$p")"); done < <(echo "$pid"; descendants "$pid")
      still() { [[ "$(cmdline "${pids[$1]}")" == "${cmds[$1]}" && -n "${cmds[$1]}" ]]; }
      kill -TERM "$pid" 2>/dev/null || true
      deadline=$((SECONDS + TIMEOUT))
      while still 0 && ((SECONDS < deadline)); do sleep 0.05; done
      # Children the server did not take down itself.
      for ((i = 1; i < ${#pids[@]}; i++)); do still "$i" && kill -TERM "${pids[$i]}" 2>/dev/null; done
      while ((SECONDS < deadline)); do
        any=0
        for ((i = 0; i < ${#pids[@]}; i++)); do still "$i" && any=1; done
        ((any)) || break
        sleep 0.05
      done
      for ((i = 0; i < ${#pids[@]}; i++)); do
        if still "$i"; then
          log "$id: pid ${pids[$i]} ignored SIGTERM; killing"
          kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
      done
      log "stopped $id (pid $pid)"
    fi
  fi
  rm -f "$pidfile" "$STATE/$id.env" "$STATE/$id.probe.err" "$STATE/$id.memory.jsonl"
  rm -rf "$STATE/$id.root"
  [[ "${MCPGOV_MCP_KEEP_LOGS:-1}" == 0 ]] && rm -f "$STATE/$id.log"
  return 0
}

for id in "${ids[@]}"; do
  if [[ "${MCPGOV_MCP_LOCK_HELD:-}" != "$id" ]] && command -v flock >/dev/null && [[ -d "$STATE" ]]; then
    (
      exec 8>"$STATE/$id.lock"
      flock 8
      stop_one "$id"
    )
  else
    stop_one "$id"
  fi
done
