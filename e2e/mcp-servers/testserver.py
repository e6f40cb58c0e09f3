#!/usr/bin/env python3
"""A configurable MCP server for mcpgov's e2e tests, on the `mcp` 2.x SDK.

Serves streamable HTTP at /mcp and (unless --no-sse) the legacy HTTP+SSE
transport at /sse (GET, stream) + /messages/ (POST), on 127.0.0.1 only.
Prints `READY <port>` on stdout once the socket accepts connections
(`--port 0` picks a free port and the line tells which).

Built on the low-level `mcp.server.Server` (not `MCPServer`, the 2.x name of
FastMCP) because the tests need control over tools/list that the high-level
API does not give: cursors, broken cursors, hangs, lists read from a file.

`--hostile MODE` makes tools/list on /mcp misbehave the way a hostile server
would (a page far over any cap, a huge error message full of escape bytes,
nesting deeper than any parser allows); everything else stays the SDK's.

Run it with the venv that install.sh builds:
    "$CACHE/mcp-servers/venv/bin/python" testserver.py --port 0 --tools 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.lowlevel import NotificationOptions
from mcp.server.sse import SseServerTransport
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.routing import Mount, Route

REALM = "mcpgov-test"
HOSTILE_MODES = ("huge-list", "huge-error", "deep-json", "escapes")
# Escape bytes a hostile server hides in strings: ANSI colour and screen
# clearing, a bell, a carriage return that overwrites the line, a fake log
# line after a newline, and a right-to-left override.
EVIL = "\x1b[31mRED\x1b[0m\x1b[2J\x07\rfake\nlevel=error msg=forged\u202egnp.exe"
REPEAT_CURSOR = "repeat-forever"
PADDING = "lorem ipsum dolor sit amet "


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port; 0 = any free one (default)")
    p.add_argument("--name", default="mcpgov-testserver", help="serverInfo.name")
    p.add_argument("--server-version", default="1.0.0", help="serverInfo.version")
    p.add_argument("--tools", type=int, default=3, metavar="N", help="number of tools tool_000.. (default 3)")
    p.add_argument("--page-size", type=int, default=0, metavar="K",
                   help="paginate tools/list, K tools per page (default 0: one page)")
    p.add_argument("--repeat-cursor", action="store_true",
                   help="tools/list always returns the same nextCursor (a pagination loop)")
    p.add_argument("--hang-list", action="store_true", help="tools/list never answers")
    p.add_argument("--slow-list", type=float, default=0, metavar="SECONDS",
                   help="tools/list answers after SECONDS (a slow first crawl)")
    p.add_argument("--auth-token", metavar="T",
                   help="require `Authorization: Bearer T` on every HTTP request (401 otherwise)")
    p.add_argument("--big-descriptions", type=int, default=0, metavar="BYTES",
                   help="pad each tool description to BYTES bytes")
    p.add_argument("--variant-file", metavar="PATH",
                   help="read the tool list from this JSON file at every tools/list")
    p.add_argument("--notify-on-change", action="store_true",
                   help="with --variant-file: send notifications/tools/list_changed to every "
                        "live session when the file changes (polled every 200 ms)")
    p.add_argument("--no-resources", action="store_true",
                   help="no resources, templates or prompts: those list methods answer -32601")
    p.add_argument("--no-sse", action="store_true", help="do not serve the SSE transport at /sse")
    p.add_argument("--stateless", action="store_true", help="streamable HTTP without sessions")
    p.add_argument("--json-response", action="store_true",
                   help="streamable HTTP answers with application/json instead of an SSE stream")
    p.add_argument("--hostile", choices=HOSTILE_MODES, metavar="MODE",
                   help="tools/list on /mcp answers like a hostile server: " + ", ".join(HOSTILE_MODES))
    p.add_argument("--hostile-tools", type=int, default=400_000, metavar="N",
                   help="huge-list: tools in the one page (default 400000, about 15 MB)")
    p.add_argument("--hostile-bytes", type=int, default=2 * 1024 * 1024, metavar="BYTES",
                   help="huge-error: size of the error message (default 2 MiB)")
    p.add_argument("--hostile-depth", type=int, default=100_000, metavar="N",
                   help="deep-json: nesting depth of the input schema (default 100000)")
    p.add_argument("--hostile-sse", action="store_true",
                   help="send the hostile answer as one SSE event instead of a JSON body")
    args = p.parse_args(argv)
    if args.tools < 0 or args.page_size < 0 or args.big_descriptions < 0:
        p.error("--tools, --page-size and --big-descriptions must not be negative")
    if args.notify_on_change and not args.variant_file:
        p.error("--notify-on-change needs --variant-file")
    return args


# --- tools -------------------------------------------------------------------

def pad(text: str, size: int) -> str:
    """`text` padded (or cut) to exactly `size` bytes of ASCII; unchanged if size is 0."""
    if size <= 0:
        return text
    if len(text) >= size:
        return text[:size]
    filler = (PADDING * (size // len(PADDING) + 1))[: size - len(text) - 1]
    return f"{text} {filler}"


def annotations_for(i: int) -> types.ToolAnnotations:
    # A fixed rotation so tests can predict each tool's hints:
    # i % 3 == 0 read-only, 1 destructive, 2 neither (a non-destructive write).
    kind = i % 3
    if kind == 0:
        return types.ToolAnnotations(title=f"Tool {i:03d}", read_only_hint=True, open_world_hint=False)
    if kind == 1:
        return types.ToolAnnotations(title=f"Tool {i:03d}", read_only_hint=False, destructive_hint=True,
                                     idempotent_hint=False, open_world_hint=True)
    return types.ToolAnnotations(title=f"Tool {i:03d}", read_only_hint=False, destructive_hint=False,
                                 idempotent_hint=True, open_world_hint=False)


def generated_tools(n: int, desc_bytes: int) -> list[types.Tool]:
    kinds = ("reads", "deletes", "updates")
    tools = []
    for i in range(n):
        tools.append(types.Tool(
            name=f"tool_{i:03d}",
            title=f"Tool {i:03d}",
            description=pad(f"Test tool number {i}; it {kinds[i % 3]} the test fixture.", desc_bytes),
            input_schema={
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "Text to echo back"},
                    "count": {"type": "integer", "minimum": 0, "description": "How many times"},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
            annotations=annotations_for(i),
        ))
    return tools


def tools_from_file(path: str, desc_bytes: int) -> list[types.Tool]:
    """A JSON list of wire-format tools, or an object with a "tools" list."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict):
            data = data.get("tools", [])
        if not isinstance(data, list):
            raise ValueError("expected a list of tools or {\"tools\": [...]}")
        tools = []
        for item in data:
            item = dict(item)
            item.setdefault("inputSchema", {"type": "object"})
            tool = types.Tool.model_validate(item)
            if desc_bytes:
                tool.description = pad(tool.description or tool.name, desc_bytes)
            tools.append(tool)
        return tools
    except (OSError, ValueError) as e:  # json/pydantic errors are ValueErrors
        raise MCPError(code=types.INTERNAL_ERROR, message=f"cannot read variant file {path}: {e}") from None


# --- list-changed notifications -----------------------------------------------

POLL_SECONDS = 0.2
MAX_TRACKED_SESSIONS = 1000


class ChangeNotifier:
    """--notify-on-change: tells clients when the variant file changes.

    Two eras, two routes. Handshake sessions (`initialize`: streamable HTTP with
    a session id, and SSE) get the notification on their standalone channel (the
    GET stream, the SSE stream); they are remembered from their tools/list
    requests, keyed by the transport's session id. 2026-07-28 clients have no
    standing channel: they open a `subscriptions/listen` stream, served by the
    SDK's `ListenHandler`, and the notifier publishes on its bus.
    """

    def __init__(self, path: str):
        self.path = path
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # session key -> the latest request's ServerSession (its standalone channel
        # is the connection's, so any request of the session will do).
        self.sessions: dict[str, Any] = {}

    def track(self, ctx: Any) -> None:
        request = getattr(ctx, "request", None)
        if request is None:
            return
        key = request.headers.get("mcp-session-id") or request.query_params.get("session_id")
        if not key:
            return  # stateless or 2026-07-28: nothing to push to outside a request
        self.sessions.pop(key, None)
        self.sessions[key] = ctx.session
        while len(self.sessions) > MAX_TRACKED_SESSIONS:
            self.sessions.pop(next(iter(self.sessions)))

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    async def run(self) -> None:
        last = self._stamp()
        while True:
            await asyncio.sleep(POLL_SECONDS)
            now = self._stamp()
            if now == last:
                continue
            last = now
            print(f"testserver: {self.path} changed; notifying "
                  f"{len(self.sessions)} session(s) and listen streams", file=sys.stderr, flush=True)
            await self.bus.publish(ToolsListChanged())
            for key, session in list(self.sessions.items()):
                try:
                    await session.send_tool_list_changed()
                except Exception as e:  # a gone session: forget it
                    print(f"testserver: session {key}: {e!r}", file=sys.stderr, flush=True)
                    self.sessions.pop(key, None)


class NotifyingServer(Server[Any]):
    """A Server whose handshake announces `tools.listChanged` (for --notify-on-change)."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)


# --- server ------------------------------------------------------------------

def build_server(args: argparse.Namespace, notifier: ChangeNotifier | None = None) -> Server[Any]:
    static_tools = generated_tools(args.tools, args.big_descriptions)

    def current_tools() -> list[types.Tool]:
        if args.variant_file:
            return tools_from_file(args.variant_file, args.big_descriptions)
        return static_tools

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if notifier is not None:
            notifier.track(ctx)
        if args.hang_list:
            await anyio.sleep_forever()
        if args.slow_list:
            await anyio.sleep(args.slow_list)
        tools = current_tools()
        cursor = params.cursor if params else None
        if args.repeat_cursor:
            size = args.page_size or len(tools)
            return types.ListToolsResult(tools=tools[:size], next_cursor=REPEAT_CURSOR)
        if not args.page_size:
            return types.ListToolsResult(tools=tools)
        start = 0
        if cursor is not None:
            # Opaque to clients; "p<offset>" here. Anything else is refused.
            if not (cursor.startswith("p") and cursor[1:].isdigit()):
                raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor: {cursor!r}")
            start = int(cursor[1:])
        end = start + args.page_size
        next_cursor = f"p{end}" if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        names = {t.name for t in current_tools()}
        if params.name not in names:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool: {params.name}")
        arguments = params.arguments or {}
        text = str(arguments.get("text", ""))
        count = arguments.get("count", 1)
        count = count if isinstance(count, int) and 0 <= count <= 100 else 1
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{params.name}: {text * count}")],
            structured_content={"tool": params.name, "arguments": arguments},
        )

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}

    if not args.no_resources:
        resources = [
            types.Resource(name="readme", title="Read me", uri="test://static/readme",
                           description="A plain-text fixture", mime_type="text/plain"),
            types.Resource(name="config", title="Config", uri="test://static/config.json",
                           description="A JSON fixture", mime_type="application/json"),
        ]
        contents = {
            "test://static/readme": ("text/plain", "mcpgov test server\n"),
            "test://static/config.json": ("application/json", json.dumps({"tools": args.tools})),
        }
        templates = [
            types.ResourceTemplate(name="item", title="Item by id", uri_template="test://items/{id}",
                                   description="One item, by id", mime_type="text/plain"),
        ]
        prompts = [
            types.Prompt(name="greeting", title="Greeting", description="Says hello to someone",
                         arguments=[types.PromptArgument(name="who", description="Whom to greet", required=True)]),
        ]

        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=resources)

        async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(resource_templates=templates)

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            uri = str(params.uri)
            if uri in contents:
                mime, text = contents[uri]
            elif uri.startswith("test://items/"):
                mime, text = "text/plain", f"item {uri.rsplit('/', 1)[-1]}\n"
            else:
                raise MCPError(code=-32002, message=f"resource not found: {uri}")
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

        async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
            return types.ListPromptsResult(prompts=prompts)

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            if params.name != "greeting":
                raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt: {params.name}")
            who = (params.arguments or {}).get("who", "world")
            return types.GetPromptResult(
                description="A greeting",
                messages=[types.PromptMessage(role="user",
                                              content=types.TextContent(type="text", text=f"Say hello to {who}."))],
            )

        handlers.update(on_list_resources=list_resources, on_list_resource_templates=list_templates,
                        on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    # Without those handlers the SDK answers the methods with -32601 (Method
    # not found) and leaves resources/prompts out of the capabilities.

    if notifier is not None:
        # Served, it also makes 2026-07-28 capabilities announce listChanged.
        handlers["on_subscriptions_listen"] = notifier.listen
        return NotifyingServer(args.name, version=args.server_version,
                               instructions="Test server for mcpgov's e2e suite.", **handlers)
    return Server(args.name, version=args.server_version,
                  instructions="Test server for mcpgov's e2e suite.", **handlers)


class SseEndpoint:
    """GET /sse: the legacy HTTP+SSE transport's event stream (an ASGI app)."""

    def __init__(self, server: Server[Any], transport: SseServerTransport):
        self.server = server
        self.transport = transport

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async with self.transport.connect_sse(scope, receive, send) as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())


class BearerGate:
    """ASGI middleware: every HTTP request needs `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"bearer {token}".encode()
        self.token = token.encode()

    def _authorized(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                return scheme.lower() == b"bearer" and credential.strip() == self.token
        return False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "invalid_token",
                           "error_description": "missing or wrong bearer token"}).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", f'Bearer realm="{REALM}", error="invalid_token"'.encode()),
            ],
        })
        await send({"type": "http.response.body", "body": body})


class Hostile:
    """ASGI middleware: `tools/list` POSTed to /mcp gets a hostile answer
    (`--hostile MODE`); every other request goes to the SDK unchanged.

    huge-list   one page of --hostile-tools minimal tools (400000: ~15 MB)
    huge-error  a JSON-RPC error whose message is --hostile-bytes long and
                full of escape bytes
    deep-json   a tool whose inputSchema nests --hostile-depth arrays
    escapes     60 tools whose titles, descriptions and annotation titles carry
                escape bytes, with 4 KiB descriptions (over the status budget)

    The body is built once and sent in 1 MiB chunks, so a client that gives
    up early stops the transfer.
    """

    CHUNK = 1 << 20

    def __init__(self, app: Any, args: argparse.Namespace):
        self.app = app
        self.mode = args.hostile
        self.sse = args.hostile_sse
        if self.mode == "huge-list":
            items = ",".join('{"name":"t%06d","inputSchema":{}}' % i for i in range(args.hostile_tools))
            self.result = ('{"tools":[' + items + "]}").encode()
        elif self.mode == "huge-error":
            unit = EVIL + " "
            message = (unit * (args.hostile_bytes // len(unit.encode()) + 1))[: args.hostile_bytes]
            self.error = json.dumps({"code": -32603, "message": message}).encode()
        elif self.mode == "deep-json":
            depth = args.hostile_depth
            schema = "[" * depth + "]" * depth
            self.result = ('{"tools":[{"name":"deep","inputSchema":{"type":"object","x":' + schema + "}}]}").encode()
        else:
            desc = pad(f"A tool that {EVIL} misbehaves.", 4096)
            tools = [{"name": f"evil_{i:02d}", "title": f"Evil {i} {EVIL}", "description": desc,
                      "inputSchema": {"type": "object"},
                      "annotations": {"title": f"{EVIL} {i}", "readOnlyHint": True}} for i in range(60)]
            self.result = json.dumps({"tools": tools}).encode()

    def body_for(self, request_id: Any) -> bytes:
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
        if self.mode == "huge-error":
            return head + b',"error":' + self.error + b"}"
        return head + b',"result":' + self.result + b"}"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != "/mcp":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "tools/list" and "id" in request:
            await self.answer(request["id"], send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def answer(self, request_id: Any, send: Any) -> None:
        payload = self.body_for(request_id)
        if self.sse:
            payload = b"event: message\ndata: " + payload + b"\n\n"
        content_type = b"text/event-stream" if self.sse else b"application/json"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type),
                                (b"content-length", str(len(payload)).encode())]})
        for start in range(0, len(payload), self.CHUNK):
            end = start + self.CHUNK
            await send({"type": "http.response.body", "body": payload[start:end],
                        "more_body": end < len(payload)})


def build_app(args: argparse.Namespace, notifier: ChangeNotifier | None = None) -> Any:
    server = build_server(args, notifier)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    routes: list[Any] = []
    if not args.no_sse:
        sse = SseServerTransport("/messages/", security_settings=security)
        routes = [Route("/sse", endpoint=SseEndpoint(server, sse), methods=["GET"]),
                  Mount("/messages/", app=sse.handle_post_message)]
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=args.json_response,
        stateless_http=args.stateless,
        transport_security=security,
        custom_starlette_routes=routes,
    )
    if args.hostile:
        app = Hostile(app, args)
    return BearerGate(app, args.auth_token) if args.auth_token else app


async def serve(args: argparse.Namespace) -> int:
    notifier = ChangeNotifier(args.variant_file) if args.notify_on_change else None
    config = uvicorn.Config(build_app(args, notifier), host=args.host, port=args.port, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    watcher = asyncio.create_task(notifier.run()) if notifier is not None else None
    while not server.started:
        if task.done():
            await task
            print("testserver: failed to start", file=sys.stderr)
            return 1
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    print(f"READY {port}", flush=True)
    await task
    if watcher is not None:
        watcher.cancel()
    return 0


def main() -> int:
    args = parse_args(sys.argv[1:])
    # uvicorn handles SIGINT and SIGTERM: both shut down gracefully (2 s at most).
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
