"""A fake DeepSeek server that drives the real DSH (DeepSeek Harness) through a script.

It speaks just enough of DeepSeek's OpenAI-compatible chat completions
(`POST /chat/completions`, streaming SSE or plain JSON; DSH appends the path to
`DEEPSEEK_BASE_URL`) for a headless run, and answers `GET /models`.

A *script* is a list of turns, as in fake_model.py: `Reply(text)` answers with text and
ends the model's turn, `ToolCall(name, arguments)` asks DSH to call a tool (DSH names MCP
tools `mcp__<server>__<tool>`), and `Say(text, calls)` does both in one assistant message
(text, then tool-call blocks), the shape a real model usually sends. Each request of the
agent loop takes the next turn. DSH also sends two kinds of side request through the same
endpoint, told apart by their prompt and answered without taking a turn:

- the session title (system prompt "Create a concise title ..."): the next of `titles`;
- the compaction summary (its last user message says "... acting as a compaction engine
  ..."): the next of `summaries`.

`context_chars` emulates a small context window the way DeepSeek enforces one: a loop
request whose messages (system prompt and tool schemas not counted) exceed that many
characters gets DeepSeek's HTTP 400 "maximum context length" error, which DSH classifies as
a context overflow and answers by compacting the conversation and retrying. Such a request
takes no turn; it is recorded with `overflow=True`.

Every request is recorded (method, path, headers, JSON body). Like fake_model.py the server
refuses proxy requests (CONNECT or absolute URIs) and notes them in `proxy_attempts`.

Standard library only. Listens on 127.0.0.1 at a free port and, optionally, on a Unix socket
(for a client running in a private network namespace, see netns.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.clients.fake_model import (
    EXHAUSTED_REPLY,
    Recorded,
    RecordingHandler,
    Reply,
    ServedFake,
    ToolCall,
)

__all__ = ["OVERFLOW_MESSAGE", "DsTurn", "FakeDeepSeek", "Reply", "Say", "ToolCall"]


@dataclass(frozen=True)
class Say:
    """One assistant message with text and then tool calls (none: a plain reply)."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    #: streamed first as `reasoning_content`, as DeepSeek's thinking mode does
    reasoning: str = ""


DsTurn = Reply | ToolCall | Say

#: DeepSeek's wording for a request over the context window (DSH matches "maximum context length")
OVERFLOW_MESSAGE = (
    "This model's maximum context length is {limit} tokens. However, you requested {asked} "
    "tokens ({asked} in the messages, 0 in the completion). Please reduce the length of the "
    "messages or completion."
)
TITLE_MARK = "Create a concise title"
SUMMARY_MARK = "acting as a compaction engine"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict)
        )  # OpenAI content parts
    return ""


def message_chars(messages: Sequence[Any]) -> int:
    """What `context_chars` measures: the JSON size of the non-system messages."""
    return sum(
        len(json.dumps(m, ensure_ascii=False))
        for m in messages
        if isinstance(m, dict) and m.get("role") != "system"
    )


@dataclass
class DsRecorded(Recorded):
    """A recorded request, with what kind of request it was."""

    #: "loop" (took a turn), "overflow" (refused as too long), "title", "summary", "other"
    purpose: str = "other"

    @property
    def overflow(self) -> bool:
        return self.purpose == "overflow"


@dataclass
class _Answer:
    status: int
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    error: dict[str, Any] | None = None
    reasoning: str = ""


class FakeDeepSeek(ServedFake):
    """The server. Use as a context manager, or `start()` / `stop()`."""

    def __init__(
        self,
        script: Iterable[DsTurn] = (),
        *,
        unix_socket: Path | None = None,
        context_chars: int | None = None,
        titles: Iterable[str] = (),
        summaries: Iterable[str] = (),
    ) -> None:
        super().__init__(unix_socket=unix_socket)
        self.requests: list[DsRecorded] = []
        self.set_script(script, context_chars=context_chars, titles=titles, summaries=summaries)

    # -- script ----------------------------------------------------------------------------

    def set_script(
        self,
        script: Iterable[DsTurn],
        *,
        context_chars: int | None = None,
        titles: Iterable[str] = (),
        summaries: Iterable[str] = (),
    ) -> None:
        with self._lock:
            self._script: list[DsTurn] = list(script)
            self._next = 0
            self.context_chars = context_chars
            self._titles = list(titles)
            self._summaries = list(summaries)

    @property
    def turns_used(self) -> int:
        with self._lock:
            return self._next

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}fake"

    def record(self, entry: DsRecorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def recorded(self, purpose: str | None = None) -> list[DsRecorded]:
        with self._lock:
            found = list(self.requests)
        return [r for r in found if purpose is None or r.purpose == purpose]

    # -- chat completions ------------------------------------------------------------------

    def chat(self, body: dict[str, Any], entry: DsRecorded) -> _Answer:
        found = body.get("messages")
        messages: list[Any] = found if isinstance(found, list) else []
        messages = [m for m in messages if isinstance(m, dict)]
        system = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        last_user = next(
            (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        with self._lock:
            if system.lstrip().startswith(TITLE_MARK):
                entry.purpose = "title"
                title = self._titles.pop(0) if self._titles else "Fake session title"
                return _Answer(200, title)
            if SUMMARY_MARK in last_user:
                entry.purpose = "summary"
                summary = self._summaries.pop(0) if self._summaries else "(fake summary)"
                return _Answer(200, summary)
            size = message_chars(messages)
            if self.context_chars is not None and size > self.context_chars:
                entry.purpose = "overflow"
                limit = self.context_chars // 4
                message = OVERFLOW_MESSAGE.format(limit=limit, asked=size // 4)
                error = {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
                return _Answer(400, error={"error": error})
            entry.purpose = "loop"
            entry.turn = self._next
            turn = self._script[self._next] if self._next < len(self._script) else None
            self._next += 1
        entry.answer = turn if turn is not None else EXHAUSTED_REPLY
        if isinstance(turn, Say):
            return _Answer(200, turn.text, turn.calls, reasoning=turn.reasoning)
        if isinstance(turn, ToolCall):
            return _Answer(200, "", (turn,))
        if isinstance(turn, Reply):
            return _Answer(200, turn.text)
        return _Answer(200, EXHAUSTED_REPLY)

    def completion(self, body: dict[str, Any], answer: _Answer) -> dict[str, Any]:
        """The non-streaming response."""
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if answer.reasoning:
            message["reasoning_content"] = answer.reasoning
        if answer.calls:
            message["tool_calls"] = [
                self._call(call, i, with_index=False) for i, call in enumerate(answer.calls)
            ]
        return {
            "id": self.new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "deepseek-fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if answer.calls else "stop",
                }
            ],
            "usage": self._usage(body, answer),
        }

    def stream(self, body: dict[str, Any], answer: _Answer) -> bytes:
        """The SSE response: text in a few deltas, each tool call in two, usage, [DONE]."""
        base = {
            "id": self.new_id("chatcmpl-"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or "deepseek-fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            payload = {**base, "choices": [choice], **extra}
            return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        if answer.reasoning:
            out.append(chunk({"reasoning_content": answer.reasoning}))
        text = answer.text
        step = max(1, len(text) // 3 + 1)
        out += [chunk({"content": text[i : i + step]}) for i in range(0, len(text), step)]
        for i, call in enumerate(answer.calls):
            whole = self._call(call, i, with_index=True)
            arguments = whole["function"]["arguments"]
            half = len(arguments) // 2
            whole["function"]["arguments"] = arguments[:half]
            out.append(chunk({"tool_calls": [whole]}))
            rest = {"index": i, "function": {"arguments": arguments[half:]}}
            out.append(chunk({"tool_calls": [rest]}))
        finish = "tool_calls" if answer.calls else "stop"
        out.append(chunk({}, finish, usage=self._usage(body, answer)))
        out.append("data: [DONE]\n\n")
        return "".join(out).encode()

    def _call(self, call: ToolCall, index: int, *, with_index: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": call.call_id or self.new_id("call_"),
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": json.dumps(call.arguments, ensure_ascii=False),
            },
        }
        if with_index:
            out = {"index": index, **out}
        return out

    @staticmethod
    def _usage(body: dict[str, Any], answer: _Answer) -> dict[str, int]:
        prompt = max(1, len(json.dumps(body.get("messages"), ensure_ascii=False)) // 4)
        completion = max(1, (len(answer.text) + 40 * len(answer.calls)) // 4)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": 0,
            "prompt_cache_miss_tokens": prompt,
        }


class _Handler(RecordingHandler):
    server_version = "huiyi-fake-deepseek/1"
    recorded_type = DsRecorded

    @property
    def fake(self) -> FakeDeepSeek:
        return self.server.fake  # type: ignore[no-any-return]

    def do_GET(self) -> None:
        if self._proxied():
            return
        self._record(b"")
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": []})
        else:
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        if self._proxied():
            return
        entry = self._record(self._body())
        body = entry.body if isinstance(entry.body, dict) else {}
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        answer = self.fake.chat(body, entry)
        if answer.error is not None:
            self._json(answer.status, answer.error)
        elif body.get("stream"):
            self._send(200, self.fake.stream(body, answer), "text/event-stream")
        else:
            self._json(200, self.fake.completion(body, answer))


FakeDeepSeek.handler = _Handler
