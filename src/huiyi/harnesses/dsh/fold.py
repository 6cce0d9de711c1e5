"""The logical layer of DSH session logs: parsed lines in, `Event`s out, the surface folded.

DSH says what the model can still see with `surfaceOp`s on its events (append, replace, drop):
this fold turns each line into an event and applies those ops, so every event is CURRENT or
SHADOWED (pushed out by a compaction), or LOG_ONLY. What it must remember between reads (header
facts, the surface as a list of seqs, the next expected seq, recent tool-call names) lives in
`Cursor.state`: small, plain JSON, so an incremental read continues the fold exactly.

Semantics: events copied from a parent (`seq < seedLength`) are folded but not emitted;
user, assistant and tool-result events are CURRENT or SHADOWED by the fold, everything else is
LOG_ONLY. A surface event without any `surfaceOp` (older logs) counts as appended.

Malformed lines: each line goes through `base.take_record`. An event is read whole (its seq, its
time and what its handler makes of `data`) before the fold changes, so a line that raises is
skipped as `malformed-record` and the fold goes on as if it had never been there. A `seq` that
is not an integer in 0..2**53, or a `time` that is not epoch ms of 1970..9999, makes the line
malformed: the index could not hold it (or show it as a date).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huiyi.harnesses.dsh.frames import Line
from huiyi.model import Event, Kind, Surface
from huiyi.sources.base import (
    BAD_RECORD,
    LINE_TOO_LONG,
    RECORD_AT,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    SessionChunk,
    SessionUpdate,
    Where,
    name_text,
    path_key,
    valid_seq,
    valid_time,
)
from huiyi.sources.jsonl import clean_text, parse_record
from huiyi.text.toolcalls import tool_call_line

__all__ = [
    "BAD_SURFACE_OP",
    "Fold",
    "arguments_text",
    "call_id",
    "json_record",
    "mapping",
    "text_value",
    "tool_result",
]

#: a surface op this fold cannot apply (counted, the event kept as it was)
BAD_SURFACE_OP = "bad-surface-op"
#: the source name DSH's sessions carry in the index
SOURCE = "dsh"
_MAX_CALL_IDS = 256
_SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
_CHUNK_ROWS = {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
# Ordinary records that carry no conversation: skipped silently, never counted as unknown.
# The first group is what docs/formats/dsh.md names; the second holds the rest of DSH's own event
# vocabulary (`KNOWN_SESSION_EVENT_TYPES` of DSH 0.1.0-rc.8, `packages/core/session`); the
# first four of it were seen in every session of a real DSH run (tests/fixtures/dsh/).
_IGNORED = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "assistant/chunk",
        "request/header",
        "request/context",
        "agent/inbox/spliced",
        "session/end-seed",
        "compaction/start",
        "compaction/end",
        "compaction/prune",
        # DSH's vocabulary, besides the above and the indexed types
        "permission/preset",
        "sandbox/mode",
        "approval/policy",
        "session/title-llm-request",
        "agent-preset/selected",
        "approval/asked",
        "approval/decided",
        "command/done",
        "command/run",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "plan/mode",
        "schedule/change",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "web/deepseek-search-llm-request",
    }
)


@dataclass(slots=True)
class _Parts:
    """What an event handler found: everything an `Event` needs but its place in the log."""

    kind: Kind
    role: str
    text: str
    injected: bool = False
    tool_name: str | None = None
    #: (call id, tool name) of the calls it made, for naming their results later
    calls: tuple[tuple[str | None, str], ...] = ()
    #: a `session/title` whose title is no string
    title_unreadable: bool = False


class Fold:
    """Turns parsed lines into events and folds the surface, continuing from `state`."""

    def __init__(self, path: Path, state: dict[str, Any], skipped: Counter[str]) -> None:
        self.path, self.skipped = path, skipped
        session = state.get("session")
        self.session: dict[str, Any] | None = dict(session) if isinstance(session, dict) else None
        self.surface: list[int] = [s for s in state.get("surface", []) if _is_int(s)]
        # surface seqs never emitted (no text): nothing to report when they are shadowed
        self.mute: set[int] = {s for s in state.get("mute", []) if _is_int(s)}
        self.next_seq: int = _int(state.get("next"), 0)
        calls = state.get("calls")
        self.calls: dict[str, str] = dict(calls) if isinstance(calls, dict) else {}
        self.last_time: int = _int(state.get("time"), 0)
        self.refused: str | None = None
        self.touched = False
        self.title: str | None = None
        self.title_unreadable = False
        self.updated: int | None = None
        self.events: dict[int, Event] = {}
        self.where: dict[int, Where] = {}
        self.changes: dict[int, Surface] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], _Parts | None]] = {
            "user/message": self._user,
            "assistant/message": self._assistant,
            "tool/call": self._tool_call,
            "tool/result": self._tool_result,
            "compaction/summary": self._summary,
            "session/title": self._title,
            "todo/write": self._todos,
        }

    @property
    def seed(self) -> int:
        return int(self.session["seed"]) if self.session else 0

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "surface": list(self.surface),
            "mute": sorted(self.mute),
            "next": self.next_seq,
            "calls": dict(self.calls),
            "time": self.last_time,
        }
        if self.session is not None:
            state["session"] = dict(self.session)
        return state

    def chunk(self) -> SessionChunk | None:
        if self.session is None or not self.touched:
            return None
        info = self.session
        update = SessionUpdate(
            id=info["id"],
            source=SOURCE,
            cwd=info.get("cwd"),
            title=self.title,
            created=info.get("created"),
            updated=self.updated,
            parent=info.get("parent"),
            is_subagent=bool(info.get("subagent")),
            title_unreadable=self.title_unreadable,
        )
        events = [self.events[seq] for seq in sorted(self.events)]
        return SessionChunk(
            session=update, events=events, surface=dict(self.changes), where=self.where
        )

    # -- lines

    def line(self, raw: Line) -> None:
        if raw is not None and not raw.strip():
            return
        obj = self._parse(raw)
        self.touched = True
        if self.session is None:
            self._header(obj)
        elif obj is not None:
            self._event(obj)

    def _parse(self, raw: Line) -> dict[str, Any] | None:
        if raw is None:
            self.skipped[LINE_TOO_LONG] += 1
            return None
        return parse_record(raw, self.skipped, blank_ok=False)

    def _header(self, obj: dict[str, Any] | None) -> None:
        if obj is None or obj.get("type") != "session":
            if obj is not None:
                self.skipped[BAD_RECORD] += 1
            self.refused = (
                f"{path_key(self.path)} is not a DSH session log: its first line is no header"
            )
            return
        version = obj.get("version", 0)
        if version != 0:
            self.skipped[UNSUPPORTED_VERSION] += 1
            shown = repr(version)[:40] if isinstance(version, int | float | str) else "(none)"
            self.refused = (
                f"{path_key(self.path)} uses DSH session format version {shown}; "
                "huiyi reads version 0"
            )
            return
        depth = _int(obj.get("delegationDepth"), 0)
        created = obj.get("createdAt")
        self.session = {
            "id": _opt_str(obj.get("id")) or name_text(self.path.parent.name),
            "cwd": _opt_str(obj.get("cwd")),
            "created": valid_time(_int(created, -1)),
            "parent": _opt_str(obj.get("parentSession")),
            "subagent": obj.get("origin") == "subagent" or depth >= 1,
            "seed": max(_int(obj.get("seedLength"), 0), 0),
        }

    def _event(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if not isinstance(kind, str):
            self.skipped[BAD_RECORD] += 1
            return
        data = mapping(obj.get("data"))
        if kind in _CHUNK_ROWS:
            members = data.get(_CHUNK_ROWS[kind])
            count = len(members) if isinstance(members, list) else 0
            end = valid_seq(_seq(obj.get("seq0"), self.next_seq) + count)
            self.next_seq = max(self.next_seq, end)
            return
        # the event is read whole (seq, time, what its handler finds) before the fold changes
        seq = _seq(obj.get("seq"), self.next_seq)
        time = _time(obj.get("time"), self.last_time)
        handler = None if kind in _IGNORED else self._handlers.get(kind)
        parts = handler(data) if handler is not None else None
        self.next_seq = max(self.next_seq, seq + 1)
        self.last_time = max(self.last_time, time)
        seeded = seq < self.seed
        if not seeded and kind != "session/end-seed":
            self.updated = time if self.updated is None else max(self.updated, time)
        if kind in _IGNORED:
            return
        if handler is None:
            # DSH marks an event that older readers may skip with `"ignorable": true`
            if obj.get("ignorable") is not True:
                self.skipped[BAD_RECORD if kind == "session" else UNKNOWN_TYPE] += 1
            return
        if parts is not None:
            self._take(parts)
        emitted = not seeded and parts is not None and bool(parts.text.strip())
        surface = Surface.LOG_ONLY
        if kind in _SURFACE_TYPES:
            self._fold(seq, obj.get("surfaceOp"))
            surface = Surface.CURRENT
            if not emitted and not seeded:
                self.mute.add(seq)
        if emitted and parts is not None:
            self.events[seq] = Event(
                session=self.session["id"] if self.session else "",
                seq=seq,
                time=time,
                kind=parts.kind,
                role=parts.role,
                text=parts.text,
                surface=surface,
                injected=parts.injected,
                tool_name=parts.tool_name,
            )
            where = RECORD_AT.get()
            if where is not None:
                self.where[seq] = where

    def _fold(self, seq: int, op: Any) -> None:
        """Apply one surface op: push `seq`, or let it replace a span of the surface."""
        if op is None or op == "append":
            self.surface.append(seq)
            return
        if isinstance(op, dict) and op.get("op") == "replace":
            start, end = op.get("start"), op.get("end")
            if _is_int(start) and _is_int(end) and start in self.surface:
                first = self.surface.index(start)
                if end in self.surface[first:]:
                    last = self.surface.index(end, first)
                    replaced = self.surface[first : last + 1]
                    self.surface[first : last + 1] = [seq]
                    for gone in replaced:
                        self._shadow(gone)
                    return
        self.skipped[BAD_SURFACE_OP] += 1
        self.surface.append(seq)

    def _take(self, parts: _Parts) -> None:
        """What an event teaches beyond its text: the names of its calls, the title."""
        for call_id, name in parts.calls:
            self._remember(call_id, name)
        if parts.kind is Kind.TITLE:
            if parts.title_unreadable:
                self.title_unreadable = True
            else:
                self.title, self.title_unreadable = parts.text, False

    def _shadow(self, seq: int) -> None:
        if seq in self.events:
            self.events[seq] = self.events[seq]._replace(surface=Surface.SHADOWED)
        elif seq in self.mute:
            self.mute.discard(seq)
        elif seq >= self.seed:
            self.changes[seq] = Surface.SHADOWED

    def _remember(self, call_id: str | None, name: str) -> None:
        if not call_id or not name:
            return
        self.calls.pop(call_id, None)
        self.calls[call_id] = name
        while len(self.calls) > _MAX_CALL_IDS:
            del self.calls[next(iter(self.calls))]

    # -- one handler per indexed event type: what `data` says, read without changing the fold

    def _user(self, data: dict[str, Any]) -> _Parts:
        source = data.get("source")
        human = source is None or (isinstance(source, dict) and source.get("kind") == "user")
        text = "\n".join(_texts(data.get("content")))
        return _Parts(Kind.USER, "user", text, injected=not human)

    def _assistant(self, data: dict[str, Any]) -> _Parts | None:
        """Text (reasoning skipped) with its calls as `tool_call_line`s after it; a message
        with calls only is a TOOL_CALL event, `NAME ARGUMENTS` per call."""
        message = data.get("message")
        content = (message if isinstance(message, dict) else data).get("content")
        texts = _texts(content)
        calls: list[tuple[str, str]] = []
        ids: list[tuple[str | None, str]] = []
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool-call":
                name = text_value(block.get("name"))
                ids.append((_opt_str(block.get("id")), name))
                calls.append((name, arguments_text(block.get("arguments"))))
        if any(text.strip() for text in texts):
            text = "\n".join(texts)
            if calls:  # keep the calls, after the text, one stable line each
                text += "\n\n" + "\n".join(tool_call_line(n, a) for n, a in calls)
            return _Parts(Kind.ASSISTANT, "assistant", text, calls=tuple(ids))
        if calls:
            text = "\n".join(f"{name} {arguments}".strip() for name, arguments in calls)
            first = calls[0][0] or None
            return _Parts(Kind.TOOL_CALL, "assistant", text, tool_name=first, calls=tuple(ids))
        return None

    def _tool_call(self, data: dict[str, Any]) -> _Parts:
        name = text_value(data.get("name"))
        text = f"{name} {arguments_text(data.get('arguments'))}".strip()
        calls = ((call_id(data), name),)
        return _Parts(Kind.TOOL_CALL, "assistant", text, tool_name=name or None, calls=calls)

    def _tool_result(self, data: dict[str, Any]) -> _Parts:
        call_id, texts = tool_result(data)
        error = data.get("error")
        if isinstance(error, dict):
            details = [
                clean_text(str(error[key]))
                for key in ("name", "code")
                if error.get(key) is not None
            ]
            if details:
                texts.append("error: " + " ".join(details))
        name = self.calls.get(call_id) if call_id else None
        return _Parts(Kind.TOOL_RESULT, "tool", "\n".join(texts), tool_name=name)

    def _summary(self, data: dict[str, Any]) -> _Parts:
        return _Parts(Kind.SUMMARY, "system", "\n".join(_texts(data.get("summary"))))

    def _title(self, data: dict[str, Any]) -> _Parts:
        title = data.get("title")
        if not isinstance(title, str):
            return _Parts(Kind.TITLE, "system", "", title_unreadable=True)
        return _Parts(Kind.TITLE, "system", clean_text(title))

    def _todos(self, data: dict[str, Any]) -> _Parts:
        todos = data.get("todos")
        lines = [
            f"[{text_value(todo.get('status')) or '?'}] {text_value(todo.get('content'))}"
            for todo in (todos if isinstance(todos, list) else [])
            if isinstance(todo, dict)
        ]
        return _Parts(Kind.OTHER, "assistant", "\n".join(lines))


def json_record(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # ValueError includes UnicodeDecodeError
        return None
    return obj if isinstance(obj, dict) else None


def _texts(content: Any) -> list[str]:
    """The text of a content value: a bare string, or the `text` blocks of a block list."""
    if isinstance(content, str):
        return [clean_text(content)]
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            texts.append(clean_text(block))
        elif isinstance(block, dict) and block.get("type", "text") == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(clean_text(text))
    return texts


def tool_result(data: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The call id and text of a `tool/result`, current or legacy (`{callId, content}`) shape."""
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    results = [
        block
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict) and block.get("type") == "tool-result"
    ] or [data]
    call_id = _opt_str(results[0].get("toolCallId")) or _opt_str(results[0].get("callId"))
    return call_id, [text for result in results for text in _texts(result.get("content"))]


def call_id(data: dict[str, Any]) -> str | None:
    for key in ("id", "toolCallId", "callId"):
        value = _opt_str(data.get(key))
        if value:
            return value
    return None


def arguments_text(value: Any) -> str:
    """Tool arguments as the raw JSON string DSH logs (re-encoded if they came parsed)."""
    if value is None:
        return ""
    return clean_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def text_value(value: Any) -> str:
    """A string field, its lone surrogates replaced (`jsonl.clean_text`); else ""."""
    return clean_text(value) if isinstance(value, str) else ""


def _opt_str(value: Any) -> str | None:
    """A non-empty string field, cleaned like `text_value`; else None."""
    return clean_text(value) if isinstance(value, str) and value else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value: Any, default: int) -> int:
    return int(value) if _is_int(value) else default


def _seq(value: Any, default: int) -> int:
    """An event's seq: `value`, or `default` (the next expected) when there is none. A seq
    that is no integer in 0..`MAX_SEQ` raises, which skips the line as malformed."""
    if value is None:
        return valid_seq(default)
    if not _is_int(value):
        raise TypeError(f"seq is a {type(value).__name__}, not an integer")
    return valid_seq(value)


def _time(value: Any, default: int) -> int:
    """An event's time: `value`, or `default` (the last time seen) when there is none. A time
    that is no integer epoch ms of 1970..9999 raises, which skips the line as malformed."""
    if value is None:
        return default
    time = valid_time(value) if _is_int(value) else None
    if time is None:
        raise ValueError("time is not epoch milliseconds of 1970..9999")
    return time
