"""The fake model server on its own (no client): scripts, streaming shapes, the proxy trap."""

from __future__ import annotations

import http.client
import json
from typing import Any

from tests.clients.fake_model import (
    EXHAUSTED_REPLY,
    SIDE_REPLY,
    FakeModel,
    Reply,
    Summary,
    ToolCall,
    ToolSearch,
    Turn,
    function_call_outputs,
    tool_names,
    tool_result_text,
    tool_results,
)


def _post(fake: FakeModel, path: str, body: dict[str, Any]) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def _events(stream: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]


def test_messages_follow_the_script_and_side_requests_take_no_turn() -> None:
    script: list[Turn] = [
        ToolCall("mcp__huiyi__session_list", {"limit": 5}, call_id="toolu_1"),
        Reply("好"),
    ]
    with FakeModel(script) as fake:
        main = {"model": "m", "tools": [{"name": "Bash"}], "messages": [], "stream": True}
        status, kind, body = _post(fake, "/v1/messages?beta=true", main)
        assert (status, kind) == (200, "text/event-stream")
        events = _events(body)
        assert events[0]["type"] == "message_start"
        start = next(e for e in events if e["type"] == "content_block_start")
        assert start["content_block"]["name"] == "mcp__huiyi__session_list"
        delta = next(e for e in events if e["type"] == "content_block_delta")
        assert json.loads(delta["delta"]["partial_json"]) == {"limit": 5}
        assert events[-2]["delta"]["stop_reason"] == "tool_use"

        side = json.loads(_post(fake, "/v1/messages", {"model": "m", "messages": []})[2])
        assert side["content"] == [{"type": "text", "text": SIDE_REPLY}]

        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
        main["messages"] = [{"role": "user", "content": [result]}]
        main["stream"] = False
        reply = json.loads(_post(fake, "/v1/messages", main)[2])
        assert reply["content"][0]["text"] == "好"
        assert json.loads(_post(fake, "/v1/messages", main)[2])["content"][0]["text"] == (
            EXHAUSTED_REPLY
        )
        counted = json.loads(_post(fake, "/v1/messages/count_tokens", main)[2])
        assert counted["input_tokens"] > 0
        assert [r.turn for r in fake.recorded()] == [0, None, 1, 2, None]
        (block,) = tool_results(fake.recorded(main=True)[1:2])
        assert tool_result_text(block) == "ok"


def test_responses_stream_tool_search_function_call_and_text() -> None:
    script: list[Turn] = [
        ToolSearch("huiyi", call_id="c0"),
        ToolCall("session_list", {"limit": 2}, namespace="mcp__huiyi", call_id="c1"),
        Reply("done"),
    ]
    with FakeModel(script) as fake:
        body: dict[str, Any] = {"model": "m", "tools": [{"type": "function", "name": "x"}]}
        items = []
        for _ in script:
            status, kind, stream = _post(fake, "/v1/responses", body)
            assert (status, kind) == (200, "text/event-stream")
            events = _events(stream)
            assert events[0]["type"] == "response.created"
            assert events[-1]["type"] == "response.completed"
            (done,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
            items.append(done)
        assert items[0]["type"] == "tool_search_call"
        assert items[0]["arguments"] == {"query": "huiyi"}
        assert items[1]["namespace"] == "mcp__huiyi"
        assert json.loads(items[1]["arguments"]) == {"limit": 2}
        assert items[2]["content"][0]["text"] == "done"

        body["input"] = [{"type": "function_call_output", "call_id": "c1", "output": "r"}]
        _post(fake, "/v1/responses", body)
        assert [o["output"] for o in function_call_outputs(fake.recorded())] == ["r"]
        ns = {"type": "namespace", "name": "mcp__huiyi", "tools": [{"name": "session_list"}]}
        body["tools"].append(ns)
        _post(fake, "/v1/responses", body)
        assert tool_names(fake.recorded()[-1]) == ["x", "mcp__huiyi__session_list"]


def test_a_summary_goes_only_to_the_compaction_request_of_either_client() -> None:
    claude_ask = "Your task is to create a detailed summary of the conversation so far, ..."
    codex_ask = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary"
    script: list[Turn] = [Summary("we chose quokka"), Reply("after"), Summary("again")]
    with FakeModel(script) as fake:
        tools = [{"name": "Bash"}]
        ordinary = {"model": "m", "tools": tools, "messages": [{"role": "user", "content": "hi"}]}
        assert json.loads(_post(fake, "/v1/messages", ordinary)[2])["content"][0]["text"] == (
            SIDE_REPLY
        )
        ask = dict(ordinary, messages=[{"role": "user", "content": claude_ask}])
        text = json.loads(_post(fake, "/v1/messages", ask)[2])["content"][0]["text"]
        assert "<summary>we chose quokka</summary>" in text
        assert json.loads(_post(fake, "/v1/messages", ordinary)[2])["content"][0]["text"] == (
            "after"
        )
        # Codex asks without tools; the summary comes back as it is, without tags
        item = {"role": "user", "content": [{"type": "input_text", "text": codex_ask}]}
        codex = {"model": "m", "input": [item], "stream": False}
        output = json.loads(_post(fake, "/v1/responses", codex)[2])["output"]
        assert output[0]["content"][0]["text"] == "again"
        assert [(r.turn, r.is_compaction) for r in fake.recorded()] == [
            (None, False),
            (0, True),
            (1, False),
            (2, True),
        ]


def test_proxy_requests_are_recorded_and_refused() -> None:
    with FakeModel() as fake:
        conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
        conn.set_tunnel("telemetry.example", 443)
        try:
            conn.request("GET", "/")
        except OSError as exc:
            assert "403" in str(exc)
        else:  # pragma: no cover - the tunnel must fail
            raise AssertionError("CONNECT was not refused")
        finally:
            conn.close()
        assert fake.proxy_attempts == ["CONNECT telemetry.example:443"]
        assert fake.recorded() == []
