"""The team server's MCP endpoint, driven by the MCP SDK's own Streamable HTTP client against
a real server and a real PostgreSQL: the four recall tools, the device token as the bearer,
and what a call sees bounded by that token's read grants."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from huiyi.hub import Hub
from tests.test_team import post, server, token

__all__ = ["server"]  # the fixture, used by name

WS = "github.com/acme/api"
OTHER = "github.com/acme/other"


def push(
    url: str, pusher: str, push_id: str, workspace: str, session: str, texts: list[str]
) -> None:
    body = {
        "push": push_id,
        "tombstones": [],
        "sessions": [
            {
                "id": session,
                "source": "dsh",
                "workspace": workspace,
                "title": f"{session} title",
                "events": [
                    {
                        "seq": n,
                        "time": 1_700_000_000_000 + n,
                        "kind": "user" if n % 2 else "assistant",
                        "role": "user" if n % 2 else "assistant",
                        "text": text,
                        "surface": "current",
                    }
                    for n, text in enumerate(texts, 1)
                ],
            }
        ],
    }
    assert post(url, "/v1/push", pusher, json.dumps(body).encode())[0] == 200


@asynccontextmanager
async def client(url: str, bearer: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {bearer}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, str]:
    result = await session.call_tool(name, arguments)
    text = "".join(getattr(part, "text", "") for part in result.content)
    return bool(result.is_error), text


def test_an_agent_recalls_teammates_sessions_over_mcp_within_its_grants(
    server: tuple[Hub, str],
) -> None:
    hub, url = server
    ana = token(hub, "ana", "laptop", reads=(WS,), pushes=(WS, OTHER))
    push(
        url,
        ana,
        "p-000001",
        WS,
        "ana-1",
        [
            "why does the zanzibar nightly job time out?",
            "the zanzibar job waits on the cache warmup; raising the timeout fixed it",
            "and the retry budget?",
            "three retries, then it pages the on-call",
        ],
    )
    push(url, ana, "p-000002", OTHER, "ana-2", ["the zanzibar secret roadmap", "noted"])
    device_id, reader = hub.add_device("cy", "laptop", reads=(WS,), pushes=())

    async def main() -> None:
        async with client(url, reader) as session:
            tools = await session.list_tools()
            assert {t.name for t in tools.tools} == {
                "recall_history",
                "recall_expand",
                "session_list",
                "session_read",
            }
            failed, text = await call(session, "recall_history", query="zanzibar timeout")
            assert not failed
            hits = json.loads(text)["hits"]
            assert {h["session_id"] for h in hits} == {"ana-1"}
            assert all(h["origin"] == "ana@laptop" for h in hits)
            failed, text = await call(
                session, "recall_expand", sessionId="ana-1", seq=hits[0]["seq"], after=1
            )
            assert not failed and "cache warmup" in text
            failed, text = await call(session, "session_list")
            assert not failed
            assert [s["session"] for s in json.loads(text)["sessions"]] == ["ana-1"]
            failed, text = await call(session, "session_read", sessionId="ana-1", last=2)
            assert not failed
            assert [e["seq"] for e in json.loads(text)["events"]] == [3, 4]
            # another workspace than the grants: refused, and nothing of it shown
            for name, args in [
                ("recall_history", {"query": "zanzibar", "workspace": OTHER}),
                ("session_read", {"sessionId": "ana-2", "workspace": OTHER}),
            ]:
                failed, text = await call(session, name, **args)
                assert failed and "no such workspace" in text and "roadmap" not in text
            # the session of another workspace, asked for under the granted one: not found
            failed, text = await call(session, "session_read", sessionId="ana-2")
            assert failed and "roadmap" not in text
            # revoked mid-session: the next request is refused (401) before any tool runs
            assert hub.revoke(device_id)
            with pytest.raises(MCPError) as refused:
                await call(session, "recall_history", query="zanzibar")
            assert "zanzibar" not in str(refused.value) and reader not in str(refused.value)

    anyio.run(main)
    actions = [(row.action, row.workspace) for row in hub.audit(limit=50)]
    assert ("search", WS) in actions and ("list", WS) in actions and ("read", WS) in actions


def test_the_mcp_endpoint_refuses_a_request_without_a_live_token(
    server: tuple[Hub, str],
) -> None:
    _hub, url = server
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    for bearer in [None, "not-a-token-not-a-token-not-a-token"]:
        sent = dict(headers)
        if bearer is not None:
            sent["authorization"] = f"Bearer {bearer}"
        answer = httpx2.post(f"{url}/mcp", json=initialize, headers=sent, timeout=30)
        assert answer.status_code == 401
        assert "device token" in answer.json()["error"]
