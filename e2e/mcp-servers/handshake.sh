#!/usr/bin/env bash
# handshake.sh URL [options]: a minimal MCP client in curl, for smoke checks
# and for tests that want a server's answers without an SDK.
#
#   streamable HTTP (default): POST initialize, POST notifications/initialized,
#     POST tools/list (following nextCursor), DELETE the session; the
#     Mcp-Session-Id and MCP-Protocol-Version headers are sent once known.
#   --sse: URL is a legacy SSE endpoint (GET); the `endpoint` event names the
#     POST URL, and the answers arrive on the event stream.
#
# Options:
#   --sse              URL is an SSE endpoint
#   --token T          send `Authorization: Bearer T`
#   --protocol V       protocolVersion to offer (default 2025-11-25)
#   --max-pages N      stop following nextCursor after N pages (default 50)
#   --timeout S        per-request deadline in seconds (default 10)
#   --init-only        stop after initialize (+ initialized): readiness probe
#
# Prints one JSON line on stdout:
#   {"transport","url","protocolVersion","serverInfo","capabilities",
#    "sessionId","tools","pages","truncated","toolNames"}
# Exits non-zero (message on stderr) if a step fails. Needs curl and node.
set -euo pipefail

die() { printf 'handshake: %s\n' "$*" >&2; exit 1; }

URL="" SSE=0 TOKEN="" PROTO="2025-11-25" MAX_PAGES=50 TIMEOUT=10 INIT_ONLY=0
while (($#)); do
  case "$1" in
    --sse) SSE=1 ;;
    --token) TOKEN="${2:?--token needs a value}"; shift ;;
    --protocol) PROTO="${2:?--protocol needs a value}"; shift ;;
    --max-pages) MAX_PAGES="${2:?--max-pages needs a value}"; shift ;;
    --timeout) TIMEOUT="${2:?--timeout needs a value}"; shift ;;
    --init-only) INIT_ONLY=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z "$URL" ]] || die "one URL only"; URL="$1" ;;
  esac
  shift
done
[[ -n "$URL" ]] || die "usage: handshake.sh URL [--sse] [--token T] [--protocol V] [--init-only]"
command -v curl >/dev/null || die "curl is required"
command -v node >/dev/null || die "node is required"

TMP="$(mktemp -d)"
STREAM_PID=""
cleanup() {
  if [[ -n "$STREAM_PID" ]]; then kill "$STREAM_PID" 2>/dev/null || true; wait "$STREAM_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# pick ID < body: the JSON-RPC message with that id from a JSON body, a JSON
# batch or an SSE body (data: lines); exit 1 if absent.
pick() {
  node -e '
    const id = Number(process.argv[1]);
    const s = require("fs").readFileSync(0, "utf8");
    const msgs = [];
    const t = s.trimStart();
    if (t.startsWith("{") || t.startsWith("[")) {
      try { const v = JSON.parse(t); (Array.isArray(v) ? v : [v]).forEach((m) => msgs.push(m)); } catch {}
    } else {
      for (const ev of s.split(/\r?\n\r?\n/)) {
        const data = ev.split(/\r?\n/).filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data) { try { msgs.push(JSON.parse(data)); } catch {} }
      }
    }
    const m = msgs.find((m) => m && m.id === id);
    if (!m) process.exit(1);
    process.stdout.write(JSON.stringify(m));
  ' "$1"
}

# field JSON EXPR: evaluate EXPR (JS, `m` is the parsed JSON) and print it
# (strings raw, other values as JSON, undefined as nothing).
field() {
  node -e '
    const m = JSON.parse(process.argv[1]);
    const v = eval(process.argv[2]);
    if (v !== undefined) process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));
  ' "$1" "$2"
}

AUTH=()
[[ -n "$TOKEN" ]] && AUTH=(-H "Authorization: Bearer $TOKEN")

init_body() {
  printf '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"mcpgov-handshake","version":"1.0.0"}}}' "$PROTO"
}
list_body() { # ID [CURSOR]
  if [[ -n "${2:-}" ]]; then
    printf '{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"cursor":%s}}' "$1" "$(node -e 'process.stdout.write(JSON.stringify(process.argv[1]))' "$2")"
  else
    printf '{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}' "$1"
  fi
}
INITIALIZED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

SESSION="" NEGOTIATED=""
# --- streamable HTTP ----------------------------------------------------------
# post BODY: POST to $URL; sets CODE, leaves headers in $TMP/h, body in $TMP/b.
post() {
  local hdrs=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
  [[ -n "$SESSION" ]] && hdrs+=(-H "Mcp-Session-Id: $SESSION")
  [[ -n "$NEGOTIATED" ]] && hdrs+=(-H "MCP-Protocol-Version: $NEGOTIATED")
  CODE="$(curl -sS -N --max-time "$TIMEOUT" -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' -X POST \
    "${hdrs[@]}" ${AUTH[@]+"${AUTH[@]}"} --data-binary "$1" "$URL")" || die "POST $URL failed (curl exit $?)"
}

# --- SSE -------------------------------------------------------------------------
ENDPOINT=""
sse_open() {
  : >"$TMP/stream"
  curl -sS -N --max-time 300 -H 'Accept: text/event-stream' ${AUTH[@]+"${AUTH[@]}"} \
    -D "$TMP/sh" "$URL" >"$TMP/stream" 2>"$TMP/stream.err" &
  STREAM_PID=$!
  local deadline=$((SECONDS + TIMEOUT)) path=""
  while ((SECONDS < deadline)); do
    path="$(awk '/^event: *endpoint/ {e=1; next} e && /^data:/ {sub(/^data: ?/, ""); sub(/\r$/, ""); print; exit}' "$TMP/stream")"
    [[ -n "$path" ]] && break
    kill -0 "$STREAM_PID" 2>/dev/null || die "GET $URL ended without an endpoint event: $(head -c 300 "$TMP/sh" "$TMP/stream" "$TMP/stream.err" | tr '\n' ' ')"
    sleep 0.05
  done
  [[ -n "$path" ]] || die "no endpoint event from $URL within ${TIMEOUT}s"
  # Resolve the (usually relative) endpoint against the SSE URL.
  ENDPOINT="$(node -e 'process.stdout.write(new URL(process.argv[1], process.argv[2]).href)' "$path" "$URL")"
  SESSION="$(node -e 'process.stdout.write(new URL(process.argv[1]).searchParams.get("sessionId") || new URL(process.argv[1]).searchParams.get("session_id") || "")' "$ENDPOINT")"
}
sse_post() { # BODY
  CODE="$(curl -sS --max-time "$TIMEOUT" -o "$TMP/b" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' ${AUTH[@]+"${AUTH[@]}"} --data-binary "$1" "$ENDPOINT")" \
    || die "POST $ENDPOINT failed (curl exit $?)"
  [[ "$CODE" == 2* ]] || die "POST $ENDPOINT: HTTP $CODE: $(head -c 300 "$TMP/b")"
}
sse_wait() { # ID -> prints the answer
  local deadline=$((SECONDS + TIMEOUT)) msg
  while ((SECONDS < deadline)); do
    if msg="$(pick "$1" <"$TMP/stream")"; then printf '%s' "$msg"; return 0; fi
    kill -0 "$STREAM_PID" 2>/dev/null || die "SSE stream closed while waiting for answer $1"
    sleep 0.05
  done
  die "no answer to request $1 within ${TIMEOUT}s"
}

# request ID BODY -> prints the JSON-RPC answer
request() {
  if ((SSE)); then
    sse_post "$2"; sse_wait "$1"
  else
    post "$2"
    [[ "$CODE" == 200 ]] || die "HTTP $CODE for request $1: $(tr -d '\r' <"$TMP/h" | grep -i '^www-authenticate' || true) $(head -c 300 "$TMP/b")"
    pick "$1" <"$TMP/b" || die "no JSON-RPC answer with id $1 in: $(head -c 300 "$TMP/b")"
  fi
}
notify() {
  if ((SSE)); then sse_post "$1"; else
    post "$1"; [[ "$CODE" == 2* ]] || die "HTTP $CODE for a notification: $(head -c 300 "$TMP/b")"
  fi
}

((SSE)) && sse_open

INIT="$(request 1 "$(init_body)")"
[[ -z "$(field "$INIT" 'm.error')" ]] || die "initialize failed: $INIT"
NEGOTIATED="$(field "$INIT" 'm.result.protocolVersion')"
if ((! SSE)); then
  SESSION="$(tr -d '\r' <"$TMP/h" | awk -F': *' 'tolower($1) == "mcp-session-id" {print $2; exit}')"
fi
notify "$INITIALIZED"

TOOLS='[]' PAGES=0 TRUNCATED=false
if ((! INIT_ONLY)); then
  cursor="" id=2
  while :; do
    ANSWER="$(request "$id" "$(list_body "$id" "$cursor")")"
    [[ -z "$(field "$ANSWER" 'm.error')" ]] || die "tools/list failed: $ANSWER"
    PAGES=$((PAGES + 1))
    TOOLS="$(node -e 'const a = JSON.parse(process.argv[1]), m = JSON.parse(process.argv[2]);
      process.stdout.write(JSON.stringify(a.concat(m.result.tools.map((t) => t.name))))' "$TOOLS" "$ANSWER")"
    cursor="$(field "$ANSWER" 'm.result.nextCursor')"
    [[ -z "$cursor" ]] && break
    if ((PAGES >= MAX_PAGES)); then TRUNCATED=true; break; fi
    id=$((id + 1))
  done
fi

if ((! SSE)) && [[ -n "$SESSION" ]]; then
  curl -sS --max-time "$TIMEOUT" -o /dev/null -X DELETE -H "Mcp-Session-Id: $SESSION" \
    -H "MCP-Protocol-Version: $NEGOTIATED" ${AUTH[@]+"${AUTH[@]}"} "$URL" || true
fi

node -e '
  const [init, tools, pages, truncated, session, transport, url] = process.argv.slice(1);
  const r = JSON.parse(init).result, names = JSON.parse(tools);
  process.stdout.write(JSON.stringify({
    transport, url, protocolVersion: r.protocolVersion, serverInfo: r.serverInfo,
    capabilities: r.capabilities, sessionId: session || null,
    tools: names.length, pages: Number(pages), truncated: truncated === "true", toolNames: names,
  }) + "\n");
' "$INIT" "$TOOLS" "$PAGES" "$TRUNCATED" "$SESSION" "$( ((SSE)) && echo sse || echo streamableHttp)" "$URL"
