"""A fake model server that drives the real Claude Code and Codex CLIs through a script.

It speaks just enough of the Anthropic Messages API (`POST /v1/messages`, streaming SSE or
plain JSON, `POST /v1/messages/count_tokens`) and of the OpenAI Responses API
(`POST /v1/responses`, streaming SSE) for a headless run, and answers `GET /v1/models`.

A *script* is a list of turns: `Reply(text)` answers with text, `ToolCall(name, arguments)`
asks the client to call a tool. Each request of the client's main loop (the one that offers
tools) takes the next turn; a turn is never re-sent, so a tool call is followed by whatever
comes next once the client has sent the tool's result back. Side requests (Claude Code's
title generation and the like: no `tools`) get a short fixed reply and take no turn.

Every request is recorded (method, path, headers, JSON body), so a test can read what the
client sent back to the model. The server also acts as the client's HTTP(S) proxy: a
`CONNECT host:port` (or an absolute-URI request) is recorded in `proxy_attempts` and refused
with 403, so any traffic a client tries to send elsewhere is seen and goes nowhere.

Standard library only. Listens on 127.0.0.1 at a free port and, optionally, on a Unix
socket (the real-client runs reach it through that socket from a private network namespace).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model calls one tool. `name` is the tool's name as the client presents it to the
    model (Claude Code: `mcp__huiyi__session_list`; Codex: see `namespace`)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Codex 0.171 offers MCP tools grouped in a namespace (`mcp__huiyi`) whose functions are
    #: named without it (`session_list`); its function call names both.
    namespace: str | None = None
    #: tool call id; generated when empty
    call_id: str = ""


@dataclass(frozen=True)
class ToolSearch:
    """Codex only: the model searches the deferred tools (a client-executed `tool_search_call`);
    Codex answers with a `tool_search_output` and offers the tools found on the next request.
    (Claude Code's ToolSearch is an ordinary tool: `ToolCall("ToolSearch", {"query": ...})`.)"""

    query: str
    limit: int | None = None
    call_id: str = ""


@dataclass(frozen=True)
class Summary:
    """The model writes the summary a compaction asks for. Only a compaction request takes
    this turn: Claude Code's (a main request whose last user message asks for a summary; the
    answer goes inside `<summary>` tags, or Claude asks again) and Codex's (a request without
    tools whose last user item is its checkpoint prompt; see `is_compaction`). Anything else
    asking while a Summary is next gets the side reply and leaves the Summary in place."""

    text: str


Turn = Reply | ToolCall | ToolSearch | Summary

#: what each client's request to summarise the conversation says (Claude Code 2.1, Codex 0.171)
COMPACTION_PROMPTS = (
    "Your task is to create a detailed summary of the conversation so far",
    "You are performing a CONTEXT CHECKPOINT COMPACTION",
)

#: what a side request (no tools offered) gets
SIDE_REPLY = "ok"
#: what the main loop gets once the script has run out
EXHAUSTED_REPLY = "(fake model: script exhausted)"


@dataclass
class Recorded:
    """One HTTP request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    raw: bytes
    at: float
    #: index of the scripted turn this request was answered with; None for side requests
    turn: int | None = None
    #: what was sent back (the Turn, or a string for side and exhausted replies)
    answer: object = None

    @property
    def is_main(self) -> bool:
        return self.turn is not None

    @property
    def is_compaction(self) -> bool:
        """A request to summarise the conversation for a compaction (see `Summary`)."""
        return is_compaction(self.body)


def _chunked(rfile: Any) -> bytes:
    out = bytearray()
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return bytes(out)
        out += rfile.read(size)
        rfile.readline()


def _decode(raw: bytes, encoding: str) -> bytes:
    """gzip/deflate request bodies; anything else (zstd: Codex compresses only for OpenAI's
    own backend) is kept as it came and recorded with `body=None`."""
    if encoding in ("gzip", "deflate"):
        return zlib.decompress(raw, 47)
    return raw


def sse(events: Iterable[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(
        f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events
    ).encode()


def _last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (Messages API) or user input item (Responses API)."""
    items = body.get("messages") or body.get("input") or []
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "".join(
            str(part.get("text", "")) for part in content or [] if isinstance(part, dict)
        )
    return ""


def is_compaction(body: Any) -> bool:
    """Whether a request asks the model to summarise the conversation for a compaction."""
    if not isinstance(body, dict):
        return False
    text = _last_user_text(body)
    return any(prompt in text for prompt in COMPACTION_PROMPTS)


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


class ServedFake:
    """A fake server's life cycle: one HTTP server on 127.0.0.1 (and, when asked, one on a
    Unix socket), each on its own thread, answering through `handler`. Use as a context
    manager, or `start()` / `stop()`."""

    handler: type[BaseHTTPRequestHandler]

    def __init__(self, *, unix_socket: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.proxy_attempts: list[str] = []
        self.unix_socket = unix_socket
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        self.port = 0

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> Self:
        tcp = _TCPServer(("127.0.0.1", 0), self.handler)
        tcp.fake = self
        self.port = tcp.server_address[1]
        self._servers.append(tcp)
        if self.unix_socket is not None:
            with contextlib.suppress(FileNotFoundError):
                self.unix_socket.unlink()
            unix = _UnixServer(str(self.unix_socket), self.handler)
            unix.fake = self
            self._servers.append(unix)
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers.clear()
        self._threads.clear()
        if self.unix_socket is not None:
            with contextlib.suppress(FileNotFoundError):
                self.unix_socket.unlink()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _text(turn: object) -> str:
    """The text a turn answers with; a summary in the tags Claude Code looks for."""
    if isinstance(turn, Summary):
        return f"<analysis>The conversation, in order.</analysis>\n<summary>{turn.text}</summary>"
    return turn.text if isinstance(turn, Reply) else str(turn)


class FakeModel(ServedFake):
    """The fake Anthropic Messages / OpenAI Responses server that replays a script."""

    def __init__(self, script: Iterable[Turn] = (), *, unix_socket: Path | None = None) -> None:
        super().__init__(unix_socket=unix_socket)
        self._script: list[Turn] = list(script)
        self._next = 0
        self.requests: list[Recorded] = []

    # -- script ----------------------------------------------------------------------------

    def set_script(self, script: Iterable[Turn]) -> None:
        with self._lock:
            self._script = list(script)
            self._next = 0

    @property
    def turns_used(self) -> int:
        with self._lock:
            return self._next

    def _take(self) -> tuple[int, Turn | None]:
        with self._lock:
            index = self._next
            self._next += 1
            turn = self._script[index] if index < len(self._script) else None
            return index, turn

    def _answer(self, body: dict[str, Any]) -> tuple[int | None, object]:
        """Which turn a request gets: a main request (one offering tools) the next scripted
        turn, a side request the side reply; but when a `Summary` is next, only a compaction
        request takes it, whichever kind it is (Claude Code asks with tools, Codex without)."""
        with self._lock:
            upcoming = self._script[self._next] if self._next < len(self._script) else None
        summary_next = isinstance(upcoming, Summary)
        if not (is_compaction(body) if summary_next else body.get("tools")):
            return None, SIDE_REPLY
        index, scripted = self._take()
        return index, scripted if scripted is not None else EXHAUSTED_REPLY

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}fake"

    # -- what was recorded -----------------------------------------------------------------

    def record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def recorded(self, path: str | None = None, *, main: bool | None = None) -> list[Recorded]:
        with self._lock:
            found = list(self.requests)
        return [
            r
            for r in found
            if (path is None or r.path.split("?")[0] == path)
            and (main is None or r.is_main == main)
        ]

    # -- Anthropic Messages API --------------------------------------------------------------

    def messages(self, body: dict[str, Any]) -> tuple[int | None, object, dict[str, Any]]:
        index, turn = self._answer(body)
        if isinstance(turn, ToolCall):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": turn.call_id or self.new_id("toolu_01"),
                "name": turn.name,
                "input": turn.arguments,
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": _text(turn)}
            stop = "end_turn"
        message = {
            "id": self.new_id("msg_01"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-fake",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": _estimate_tokens(body.get("messages")),
                "output_tokens": _estimate_tokens(block),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        return index, turn, message

    @staticmethod
    def messages_sse(message: dict[str, Any]) -> bytes:
        start = dict(message, content=[], stop_reason=None)
        start["usage"] = dict(message["usage"], output_tokens=1)
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
        ]
        for i, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                empty = dict(block, input={})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                empty = dict(block, text="")
                delta = {"type": "text_delta", "text": block["text"]}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": empty},
                ),
                ("ping", {"type": "ping"}),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": i}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return sse(events)

    # -- OpenAI Responses API ----------------------------------------------------------------

    def responses(self, body: dict[str, Any]) -> tuple[int | None, object, dict[str, Any]]:
        index, turn = self._answer(body)
        if isinstance(turn, ToolSearch):
            arguments: dict[str, Any] = {"query": turn.query}
            if turn.limit is not None:
                arguments["limit"] = turn.limit
            item: dict[str, Any] = {
                "type": "tool_search_call",
                "id": self.new_id("tsc_"),
                "status": "completed",
                "call_id": turn.call_id or self.new_id("call_"),
                "execution": "client",
                "arguments": arguments,
            }
        elif isinstance(turn, ToolCall):
            item = {
                "type": "function_call",
                "id": self.new_id("fc_"),
                "status": "completed",
                "call_id": turn.call_id or self.new_id("call_"),
                "name": turn.name,
                "arguments": json.dumps(turn.arguments, ensure_ascii=False),
            }
            if turn.namespace:
                item["namespace"] = turn.namespace
        else:
            # Codex keeps the whole reply as the summary: no tags for it
            text = turn.text if isinstance(turn, Summary) else _text(turn)
            item = {
                "type": "message",
                "id": self.new_id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        tokens_in = _estimate_tokens(body.get("input"))
        tokens_out = _estimate_tokens(item)
        response = {
            "id": self.new_id("resp_"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model") or "gpt-fake",
            "output": [item],
            "usage": {
                "input_tokens": tokens_in,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": tokens_out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens_in + tokens_out,
            },
        }
        return index, turn, response

    @staticmethod
    def responses_sse(response: dict[str, Any]) -> bytes:
        created = dict(response, status="in_progress", output=[], usage=None)
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": created}),
            ("response.in_progress", {"type": "response.in_progress", "response": created}),
        ]
        for i, item in enumerate(response["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                added = dict(item, status="in_progress", content=[])
                part = {"type": "output_text", "text": "", "annotations": []}
                ids = {"item_id": item["id"], "output_index": i, "content_index": 0}
                events += [
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": i, "item": added},
                    ),
                    (
                        "response.content_part.added",
                        {"type": "response.content_part.added", **ids, "part": part},
                    ),
                    (
                        "response.output_text.delta",
                        {"type": "response.output_text.delta", **ids, "delta": text},
                    ),
                    (
                        "response.output_text.done",
                        {"type": "response.output_text.done", **ids, "text": text},
                    ),
                    (
                        "response.content_part.done",
                        {
                            "type": "response.content_part.done",
                            **ids,
                            "part": dict(part, text=text),
                        },
                    ),
                ]
            elif item["type"] == "tool_search_call":
                added = dict(item, status="in_progress")
                events.append(
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": i, "item": added},
                    )
                )
            else:
                added = dict(item, status="in_progress", arguments="")
                ids = {"item_id": item["id"], "output_index": i}
                events += [
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": i, "item": added},
                    ),
                    (
                        "response.function_call_arguments.delta",
                        {
                            "type": "response.function_call_arguments.delta",
                            **ids,
                            "delta": item["arguments"],
                        },
                    ),
                    (
                        "response.function_call_arguments.done",
                        {
                            "type": "response.function_call_arguments.done",
                            **ids,
                            "arguments": item["arguments"],
                        },
                    ),
                ]
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": i, "item": item},
                )
            )
        events.append(("response.completed", {"type": "response.completed", "response": response}))
        return sse(events)


class RecordingHandler(BaseHTTPRequestHandler):
    """What every fake server's handler shares: quiet logs, the request body, replies,
    recording each request (as `recorded_type`) and refusing proxy requests."""

    protocol_version = "HTTP/1.1"
    server_version = "huiyi-fake-model/1"
    server: Any
    recorded_type: type[Recorded] = Recorded

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> Any:
        return self.server.fake

    # -- plumbing --------------------------------------------------------------------------

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = _chunked(self.rfile)
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return _decode(raw, self.headers.get("Content-Encoding", "").lower())

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", self.fake.new_id("req_"))
        self.send_header("x-request-id", self.fake.new_id("req_"))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _json(self, status: int, data: object) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode(), "application/json")

    def _record(self, raw: bytes) -> Any:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        entry = self.recorded_type(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
            at=time.time(),
        )
        self.fake.record(entry)
        return entry

    def _proxied(self) -> bool:
        """A proxy request (CONNECT, or an absolute URI): note where it wanted to go, refuse."""
        if self.command != "CONNECT" and not self.path.startswith(("http://", "https://")):
            return False
        with self.fake._lock:
            self.fake.proxy_attempts.append(f"{self.command} {self.path}")
        self.close_connection = True
        self.send_response(403, "no traffic leaves this test")
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        return True

    def do_CONNECT(self) -> None:
        self._proxied()


class _Handler(RecordingHandler):
    @property
    def fake(self) -> FakeModel:
        return self.server.fake  # type: ignore[no-any-return]

    # -- verbs -----------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        if not self._proxied():
            self._record(b"")
            self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        if self._proxied():
            return
        self._record(b"")
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/models"):
            # the OpenAI-shaped list; Codex's own catalogue format has "models" instead
            self._json(200, {"object": "list", "data": [], "models": []})
        else:
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

    def do_POST(self) -> None:
        if self._proxied():
            return
        raw = self._body()
        entry = self._record(raw)
        body = entry.body if isinstance(entry.body, dict) else {}
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": _estimate_tokens(body)})
        elif path.endswith("/messages"):
            entry.turn, entry.answer, message = self.fake.messages(body)
            if body.get("stream"):
                self._send(200, FakeModel.messages_sse(message), "text/event-stream")
            else:
                self._json(200, message)
        elif path.endswith("/responses"):
            entry.turn, entry.answer, response = self.fake.responses(body)
            if body.get("stream", True):
                self._send(200, FakeModel.responses_sse(response), "text/event-stream")
            else:
                self._json(200, response)
        else:
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})


class _TCPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeModel

    def server_bind(self) -> None:  # skip ThreadingHTTPServer's getfqdn() lookup
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    fake: FakeModel

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, _ = self.socket.accept()
        return conn, ("unix", 0)


# -- reading what the clients sent back ------------------------------------------------------


def tool_results(requests: Iterable[Recorded]) -> Iterator[dict[str, Any]]:
    """Claude: every `tool_result` block in the messages of the recorded requests."""
    for req in requests:
        body = req.body if isinstance(req.body, dict) else {}
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                yield from (b for b in content if b.get("type") == "tool_result")


def tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def function_call_outputs(requests: Iterable[Recorded]) -> Iterator[dict[str, Any]]:
    """Codex: every `function_call_output` input item of the recorded requests."""
    for req in requests:
        body = req.body if isinstance(req.body, dict) else {}
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                yield item


def tool_names(request: Recorded) -> list[str]:
    """The tools a request offers the model in `tools`, namespaced ones (Codex) as
    `<namespace>__<function>`. Deferred tools are not there: Claude Code announces them in a
    system message, Codex returns them from a tool search."""
    body = request.body if isinstance(request.body, dict) else {}
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            prefix = tool.get("name", "")
            names += [f"{prefix}__{t.get('name')}" for t in tool.get("tools") or []]
        elif "name" in tool:
            names.append(tool["name"])
        elif isinstance(tool.get("function"), dict):
            names.append(tool["function"].get("name", ""))
    return names


FakeModel.handler = _Handler
