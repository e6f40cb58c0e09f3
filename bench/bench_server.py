#!/usr/bin/env python3
"""Synthetic MCP server(s) for the benchmarks, on the `mcp` 2.x SDK.

stdio (the Toolgraph comparison):
    bench_server.py ESTATE_JSON SERVER_NAME
exposes the tools that gen_estate.py listed for SERVER_NAME.

streamable HTTP (the operator bench):
    bench_server.py --http PORT [--host 127.0.0.1] ESTATE_JSON [SERVER_NAME...]
hosts every server of ESTATE_JSON (or only those named) in one process, each at
`/SERVER_NAME/mcp`, on 127.0.0.1 only by default. Prints `READY <port>` on stdout once
the socket accepts connections (`--http 0` picks a free port and the line tells which).

The tools only echo their argument.
"""
import argparse
import asyncio
import contextlib
import json
import sys

from mcp.server.mcpserver import MCPServer


def _echo(tool: str):
    def call(arg: str) -> str:
        return f"{tool}:{arg}"
    return call


def build(estate_path: str, name: str) -> MCPServer:
    with open(estate_path) as f:
        tools = json.load(f)[name]
    return build_from(name, tools)


def build_from(name: str, tools: list) -> MCPServer:
    server = MCPServer(name)
    for tool in tools:
        server.add_tool(_echo(tool), name=tool, description=f"Synthetic tool {tool} of {name}.")
    return server


def http_app(estate_path: str, names: list):
    """One Starlette app serving each server at /NAME/mcp; its lifespan runs every
    server's session manager."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

    with open(estate_path) as f:
        estate = json.load(f)
    unknown = [n for n in names if n not in estate]
    if unknown:
        sys.exit(f"bench_server: not in {estate_path}: {', '.join(unknown)}")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    routes, servers = [], []
    for name in names or sorted(estate):
        server = build_from(name, estate[name])
        app = server.streamable_http_app(streamable_http_path=f"/{name}/mcp", transport_security=security)
        routes.extend(app.routes)
        servers.append(server)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with contextlib.AsyncExitStack() as stack:
            for s in servers:
                await stack.enter_async_context(s.session_manager.run())
            yield

    return Starlette(routes=routes, lifespan=lifespan), len(servers)


async def serve_http(args) -> None:
    import socket

    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class NoDelay(H11Protocol):
        """h11 with TCP_NODELAY: uvicorn writes the head and the body of a response in
        two sends, and with Nagle on, a small body waits for the client's delayed ACK
        (40 ms on Linux). Node's http server sets it by default."""

        def connection_made(self, transport):
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)

    app, count = http_app(args.estate, args.servers)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.http))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2,
                            backlog=1024, http=NoDelay)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    print(f"READY {sock.getsockname()[1]} ({count} servers)", flush=True)
    await task


def main() -> None:
    if "--http" not in sys.argv[1:]:
        build(sys.argv[1], sys.argv[2]).run()
        return
    import logging

    # One "session manager started" line per server is noise at 50 servers.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, required=True, metavar="PORT", help="serve streamable HTTP on PORT")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("estate", metavar="ESTATE_JSON")
    ap.add_argument("servers", nargs="*", metavar="SERVER_NAME", help="default: every server of the estate")
    args = ap.parse_args()
    asyncio.run(serve_http(args))


if __name__ == "__main__":
    main()
