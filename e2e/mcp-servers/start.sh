#!/usr/bin/env bash
# start.sh NAME[@INSTANCE] PORT [ARGS...]: start a real MCP server on
# 127.0.0.1:PORT in the background and wait until it answers MCP.
#
# NAME (see README.md for what each is):
#   everything-http   server-everything, streamable HTTP       POST/GET/DELETE /mcp
#   everything-sse    server-everything, HTTP+SSE              GET /sse, POST /message
#   filesystem-http   supergateway(server-filesystem), stateful streamable HTTP  /mcp
#   filesystem-sse    supergateway(server-filesystem), HTTP+SSE  GET /sse, POST /message
#   memory-http       supergateway(server-memory), stateful streamable HTTP      /mcp
#   memory-sse        supergateway(server-memory), HTTP+SSE      GET /sse, POST /message
#   testserver        testserver.py (mcp 2.x): /mcp, and /sse + /messages/ unless --no-sse
# @INSTANCE (optional) runs several servers of one kind side by side
# (e.g. testserver@paged, testserver@auth); each has its own files.
# PORT: a port number, or 0 / auto for a free one (the URL printed tells).
# ARGS: appended to the server's command line (testserver flags, extra
# supergateway flags; everything ignores them).
#
# Prints the endpoint URL on stdout. Writes into the state dir
# ${MCPGOV_MCP_STATE:-/tmp/mcpgov-mcp}:  ID.pid, ID.log (stdout+stderr) and
# ID.env, sourceable: MCP_ID MCP_NAME MCP_PORT MCP_URL MCP_TRANSPORT MCP_PID
# (+ MCP_SSE_URL for testserver, MCP_FS_ROOT for filesystem-*), where ID is
# NAME[@INSTANCE] with @ turned into _.
#
# Already running with that ID: prints its URL and exits 0 (PORT is not
# checked). Fails (log tail on stderr, server stopped) if it does not answer
# an MCP initialize within MCPGOV_MCP_START_TIMEOUT seconds (default 60).
# Installs the servers first (install.sh: instant once cached).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${MCPGOV_MCP_STATE:-/tmp/mcpgov-mcp}"
TIMEOUT="${MCPGOV_MCP_START_TIMEOUT:-60}"

log() { printf '[mcp-servers/start] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

(($# >= 2)) || die "usage: start.sh NAME[@INSTANCE] PORT [ARGS...]   (see the header of this script)"
SPEC="$1" PORT="$2"
shift 2
NAME="${SPEC%%@*}"
ID="${SPEC//@/_}"
[[ "$ID" =~ ^[A-Za-z0-9._-]+$ ]] || die "bad name: $SPEC"

mkdir -p "$STATE"
PIDFILE="$STATE/$ID.pid" LOGFILE="$STATE/$ID.log" ENVFILE="$STATE/$ID.env"

# Serialize starts and stops of one ID (stop.sh, called from here, knows).
if [[ -z "${MCPGOV_MCP_LOCK_HELD:-}" ]] && command -v flock >/dev/null; then
  exec 8>"$STATE/$ID.lock"
  flock 8
  export MCPGOV_MCP_LOCK_HELD="$ID"
fi

alive() { # PID MARK: is PID running and still the process we started?
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "$2"
}

if [[ -f "$PIDFILE" && -f "$ENVFILE" ]]; then
  old_pid="$(sed -n 1p "$PIDFILE")" old_mark="$(sed -n 2p "$PIDFILE")"
  if alive "$old_pid" "$old_mark"; then
    # shellcheck disable=SC1090
    (source "$ENVFILE"; echo "$MCP_URL")
    exit 0
  fi
  log "$SPEC: stale state (pid $old_pid is gone); starting anew"
  "$HERE/stop.sh" "$SPEC" >/dev/null 2>&1 || true
fi

CACHE_DIR="$("$HERE/install.sh")"
NODE_MODULES="$CACHE_DIR/npm/node_modules"
VENV="$CACHE_DIR/venv"

if [[ "$PORT" == 0 || "$PORT" == auto ]]; then
  # A free port, asked of the kernel (small race with other starters; rare).
  PORT="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
fi
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || ((PORT < 1 || PORT > 65535)); then die "bad port: $PORT"; fi
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  die "port $PORT on 127.0.0.1 is already in use"
fi

BASE="http://127.0.0.1:$PORT"
# Node servers bind all interfaces and have no host flag: the preload makes
# every listen() in the process (and its children) bind 127.0.0.1.
NODE_PRELOAD="--require \"$HERE/loopback.cjs\""
NODE_ENV_OPTS="${NODE_OPTIONS:+$NODE_OPTIONS }$NODE_PRELOAD"
EVERYTHING="$NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM="$NODE_MODULES/@modelcontextprotocol/server-filesystem/dist/index.js"
MEMORY="$NODE_MODULES/@modelcontextprotocol/server-memory/dist/index.js"
SUPERGATEWAY="$NODE_MODULES/supergateway/dist/index.js"
NODE_BIN="$(command -v node)"

EXTRA_ENV=() CMD=() TRANSPORT="" URL="" PROBE_ARGS=() EXTRA_VARS=()
gateway() { # STDIO_COMMAND TRANSPORT
  if [[ "$2" == sse ]]; then
    CMD=("$NODE_BIN" "$SUPERGATEWAY" --stdio "$1" --outputTransport sse --port "$PORT"
         --ssePath /sse --messagePath /message --logLevel info "${@:3}")
    TRANSPORT=sse URL="$BASE/sse"
  else
    CMD=("$NODE_BIN" "$SUPERGATEWAY" --stdio "$1" --outputTransport streamableHttp --stateful
         --port "$PORT" --streamableHttpPath /mcp --logLevel info "${@:3}")
    TRANSPORT=streamableHttp URL="$BASE/mcp"
  fi
}

case "$NAME" in
  everything-http|everything-sse)
    mode=streamableHttp TRANSPORT=streamableHttp URL="$BASE/mcp"
    [[ "$NAME" == everything-sse ]] && mode=sse TRANSPORT=sse URL="$BASE/sse"
    EXTRA_ENV=(PORT="$PORT")
    CMD=("$NODE_BIN" "$EVERYTHING" "$mode")
    (($#)) && log "note: server-everything takes no flags; ignoring: $*"
    ;;
  filesystem-http|filesystem-sse)
    ROOT="${MCPGOV_FS_ROOT:-$STATE/$ID.root}"
    if [[ -z "${MCPGOV_FS_ROOT:-}" ]]; then
      rm -rf "$ROOT"
      mkdir -p "$ROOT/docs"
      printf 'hello from the mcpgov filesystem fixture\n' >"$ROOT/hello.txt"
      printf '# notes\n' >"$ROOT/docs/notes.md"
    fi
    EXTRA_VARS+=("MCP_FS_ROOT=$(printf %q "$ROOT")")
    stdio="$(printf '%q %q %q' "$NODE_BIN" "$FILESYSTEM" "$ROOT")"
    gateway "$stdio" "${NAME#filesystem-}" "$@"
    ;;
  memory-http|memory-sse)
    EXTRA_ENV=(MEMORY_FILE_PATH="$STATE/$ID.memory.jsonl")
    rm -f "$STATE/$ID.memory.jsonl"
    stdio="$(printf '%q %q' "$NODE_BIN" "$MEMORY")"
    gateway "$stdio" "${NAME#memory-}" "$@"
    ;;
  testserver)
    CMD=("$VENV/bin/python" "$HERE/testserver.py" --port "$PORT" "$@")
    TRANSPORT=streamableHttp URL="$BASE/mcp"
    EXTRA_VARS+=("MCP_SSE_URL=$BASE/sse")
    # The readiness probe needs the token, if the server wants one.
    prev=""
    for a in "$@"; do
      [[ "$prev" == --auth-token ]] && PROBE_ARGS+=(--token "$a")
      [[ "$a" == --auth-token=* ]] && PROBE_ARGS+=(--token "${a#--auth-token=}")
      prev="$a"
    done
    ;;
  *) die "unknown server '$NAME' (everything-http, everything-sse, filesystem-http, filesystem-sse, memory-http, memory-sse, testserver)" ;;
esac
[[ "$TRANSPORT" == sse ]] && PROBE_ARGS+=(--sse)

# The main script's path identifies our process in the pid file (so a
# recycled pid is never signalled).
MARK="${CMD[1]}"
: >"$LOGFILE"
# 8>&-: the server must not inherit (and so hold) the lock.
env -u MCPGOV_MCP_LOCK_HELD NODE_OPTIONS="$NODE_ENV_OPTS" ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"} \
  "${CMD[@]}" </dev/null >>"$LOGFILE" 2>&1 8>&- &
PID=$!
printf '%s\n%s\n' "$PID" "$MARK" >"$PIDFILE"

fail() {
  log "$SPEC: $*"
  log "--- last lines of $LOGFILE ---"
  tail -n 30 "$LOGFILE" >&2 || true
  "$HERE/stop.sh" "$SPEC" >/dev/null 2>&1 || true
  exit 1
}

# Poll: the port accepts connections, then an MCP initialize succeeds.
deadline=$((SECONDS + TIMEOUT))
stage=port
while :; do
  kill -0 "$PID" 2>/dev/null || fail "exited before it was ready"
  ((SECONDS < deadline)) || fail "not ready within ${TIMEOUT}s (waiting for: $stage)"
  if [[ "$stage" == port ]]; then
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then stage=initialize; continue; fi
  elif "$HERE/handshake.sh" "$URL" --init-only --timeout 10 ${PROBE_ARGS[@]+"${PROBE_ARGS[@]}"} >/dev/null 2>"$STATE/$ID.probe.err"; then
    break
  fi
  sleep 0.1
done
rm -f "$STATE/$ID.probe.err"

{
  echo "MCP_ID=$ID"
  echo "MCP_NAME=$NAME"
  echo "MCP_PORT=$PORT"
  echo "MCP_URL=$URL"
  echo "MCP_TRANSPORT=$TRANSPORT"
  echo "MCP_PID=$PID"
  for v in ${EXTRA_VARS[@]+"${EXTRA_VARS[@]}"}; do echo "$v"; done
} >"$ENVFILE"
log "$SPEC ready: $URL (pid $PID, log $LOGFILE)"
echo "$URL"
