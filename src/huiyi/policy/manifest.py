"""What huiyi publishes over MCP, read without the MCP SDK: the tools, the instructions, the
capabilities, the server info and the handshake protocol versions.

`manifest.json` (next to this module, shipped in the package) is generated from the SDK server
itself (`python -m huiyi.transports.http_mcp`, which writes what the SDK's own client sees
from `HuiyiMCP(...).build()`), and a test fails when the two differ, so the stdio front, which
answers `tools/list` without importing the SDK, cannot drift from the SDK server. The tool
signatures in `mcp_server.py` stay the one source of the schemas; `calls.py` validates every
call's arguments against the schemas read here.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["MANIFEST_PATH", "manifest", "tool_schemas"]

MANIFEST_PATH = Path(__file__).with_name("manifest.json")


@cache
def manifest() -> dict[str, Any]:
    """The parsed `manifest.json`: `protocolVersions`, `capabilities`, `serverInfo`,
    `instructions` and `tools` (each in its wire form)."""
    data: dict[str, Any] = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    return data


def tool_schemas() -> dict[str, dict[str, Any]]:
    """Each published tool's input schema, by tool name."""
    return {tool["name"]: tool["inputSchema"] for tool in manifest()["tools"]}
