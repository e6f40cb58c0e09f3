#!/usr/bin/env python3
"""Synthetic stdio MCP server for the Toolgraph comparison.

Usage: bench_server.py ESTATE_JSON SERVER_NAME — exposes the tools that
gen_estate.py listed for SERVER_NAME. The tools only echo their argument.
"""
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
    server = MCPServer(name)
    for tool in tools:
        server.add_tool(_echo(tool), name=tool, description=f"Synthetic tool {tool} of {name}.")
    return server


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2]).run()
