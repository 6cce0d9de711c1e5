"""A tiny stdio MCP server that shows what a real client sends in its MCP calls.

    python probe_mcp.py LOG_PATH

It offers one read-only tool, `echo(text)`, whose result is the JSON of the call's
`arguments` and `_meta`, and appends every JSON-RPC message it receives to LOG_PATH (one
JSON object per line), so a test can read the `_meta` of `tools/call`, the client's
`initialize` (capabilities, clientInfo) and whatever else the client asks.
Standard library only; newline-delimited JSON-RPC on stdin/stdout as MCP's stdio transport.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = {
    "name": "echo",
    "description": "Echo the text back, with the request's _meta (a test probe).",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message or method is None:
        return None  # a notification, or a response to something we never ask
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "probe", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        seen = {"arguments": params.get("arguments"), "_meta": params.get("_meta")}
        result = {"content": [{"type": "text", "text": json.dumps(seen, ensure_ascii=False)}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main(log_path: str) -> int:
    with open(log_path, "a", encoding="utf-8") as log:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            log.write(json.dumps(message, ensure_ascii=False) + "\n")
            log.flush()
            reply = answer(message) if isinstance(message, dict) else None
            if reply is not None:
                sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
