"""The fake DeepSeek server speaks what DSH's DeepSeek adapter reads (chat completions SSE)."""

from __future__ import annotations

import http.client
import json
from typing import Any

from tests.clients.fake_deepseek import DsTurn, FakeDeepSeek, Reply, Say, ToolCall, message_chars


def post(fake: FakeDeepSeek, body: dict[str, Any]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    try:
        conn.request("POST", "/chat/completions", json.dumps(body), {"Content-Type": "x/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def sse(payload: bytes) -> list[Any]:
    data = [ln[6:] for ln in payload.decode().split("\n") if ln.startswith("data: ")]
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


def text_of(payload: bytes) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in sse(payload))


def loop(text: str, *, stream: bool = True) -> dict[str, Any]:
    return {
        "stream": stream,
        "model": "deepseek-v4-flash",
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [
            {"role": "system", "content": "You are DSH"},
            {"role": "user", "content": text},
        ],
    }


def test_turns_stream_text_then_calls_and_side_requests_take_no_turn() -> None:
    call = ToolCall("mcp__huiyi__session_list", {"limit": 5}, call_id="c1")
    script: list[DsTurn] = [Say("先看看。", (call,), reasoning="think"), Reply("done")]
    with FakeDeepSeek(script, titles=["部署"], summaries=["## Summary"]) as fake:
        status, payload = post(fake, loop("hi"))
        assert status == 200
        chunks = sse(payload)
        deltas = [c["choices"][0]["delta"] for c in chunks]
        assert "".join(d.get("reasoning_content", "") for d in deltas) == "think"
        assert "".join(d.get("content") or "" for d in deltas) == "先看看。"
        calls = [t for d in deltas for t in d.get("tool_calls", [])]
        assert calls[0]["id"] == "c1" and calls[0]["function"]["name"] == call.name
        assert json.loads("".join(t["function"]["arguments"] for t in calls)) == {"limit": 5}
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
        assert chunks[-1]["usage"]["prompt_tokens"] > 0

        title = {
            "stream": True,
            "messages": [{"role": "system", "content": "Create a concise title"}],
        }
        assert text_of(post(fake, title)[1]) == "部署"
        summary = loop("You are now acting as a compaction engine for this AI coding assistant.")
        assert text_of(post(fake, summary)[1]) == "## Summary"

        status, payload = post(fake, loop("again", stream=False))
        assert json.loads(payload)["choices"][0]["message"]["content"] == "done"
        assert [(r.purpose, r.turn) for r in fake.recorded()] == [
            ("loop", 0),
            ("title", None),
            ("summary", None),
            ("loop", 1),
        ]


def test_a_request_over_the_context_window_gets_deepseek_s_overflow_error() -> None:
    body = loop("x" * 500)
    with FakeDeepSeek([Reply("ok")], context_chars=message_chars(body["messages"]) - 1) as fake:
        status, payload = post(fake, body)
        assert status == 400
        assert "maximum context length" in json.loads(payload)["error"]["message"]
        assert fake.turns_used == 0 and fake.recorded()[0].overflow
        fake.context_chars = None
        assert post(fake, body)[0] == 200
        assert fake.turns_used == 1
