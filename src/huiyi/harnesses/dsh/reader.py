"""Reader for DeepSeek Harness (DSH) session logs, as described in `formats/dsh.md`.

A DSH log is `<home>/sessions/--<project>--/<session-id>/session.jsonl.zstd` (`session.jsonl`
with compression off): a header line, then one JSON event per line. The compressed form is a
concatenation of independent zstd frames, one per write batch, so reading has two layers:

* The physical layer, in `huiyi.harnesses.dsh.frames`, turns bytes into lines and says how far the
  file was consumed. Only whole units (a complete frame, or a newline-terminated line) are
  consumed, so `ReadResult.offset` always sits on a unit boundary and the next read starts
  cleanly; over-long lines are dropped while they stream, and corrupt frames are counted and
  skipped there. It is a separate module because it knows bytes and zstd, not DSH events.
* The logical layer, here (`_Fold`), turns lines into `Event`s and folds the `surfaceOp`s that
  say what the model can still see. What it must remember between reads (header facts, the
  surface as a list of seqs, the next expected seq, recent tool-call names) lives in
  `Cursor.state`: small, plain JSON, so an incremental read continues the fold exactly.

This module also finds the logs (`DshReader.discover`) and answers the small lookups other
parts need without a full read (`read_header`, `pending_tool_calls`).

Torn frames: a crash mid-write leaves a final frame that never ends. The reader does not
consume it: the offset stays at its start and none of its lines are emitted, because emitting
them now would fold their surface ops a second time once the frame is finished. DSH later
truncates a torn frame and appends a repair frame at that very place, which is exactly where
our offset waits. A file being written looks torn for a moment, so `torn-frame` is counted
(once) only when a later read finds the same torn tail unchanged.

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
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from huiyi.config import Settings
from huiyi.harnesses.dsh.frames import CORRUPT_FRAME, Line, Unit, ZstdFrames, all_lines, jsonl_lines
from huiyi.model import Event, Kind, Surface
from huiyi.sources.base import (
    BAD_RECORD,
    LINE_TOO_LONG,
    TORN_FRAME,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    Cursor,
    ReadResult,
    SessionChunk,
    SessionUpdate,
    take_record,
    valid_seq,
    valid_time,
)
from huiyi.sources.jsonl import clean_text, parse_record

__all__ = [
    "BAD_SURFACE_OP",
    "CALL_MARK",
    "CORRUPT_FRAME",
    "EMPTY_FILE",
    "LOG_NAMES",
    "DshReader",
    "pending_tool_call",
    "pending_tool_calls",
    "read_header",
    "split_tool_calls",
    "tool_call_line",
]

#: File names of a session log, compressed first.
LOG_NAMES = ("session.jsonl.zstd", "session.jsonl")

# Skip reasons of this reader, in addition to the shared ones in `base` (and
# `CORRUPT_FRAME`, counted by the frame decoder in `frames`).
EMPTY_FILE = "empty-file"
BAD_SURFACE_OP = "bad-surface-op"

_MAX_CALL_IDS = 256
_SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
_CHUNK_ROWS = {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
# Ordinary records that carry no conversation: skipped silently, never counted as unknown.
# The first group is what formats/dsh.md names; the second holds the rest of DSH's own event
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
# Events after which an unanswered tool call can no longer be the one running now.
_TURN_BOUNDARIES = frozenset({"user/message", "turn/start", "turn/end", "session/end-seed"})
_PENDING_MARKERS = tuple(f'"{t}"'.encode() for t in ("tool/call", "tool/result", *_TURN_BOUNDARIES))


class DshReader:
    """Every session log under one DSH home (the caller resolves `$DSH_HOME` / `~/.dsh`)."""

    source: ClassVar[str] = "dsh"

    def __init__(self, home: Path) -> None:
        self.home = home

    def roots(self) -> list[Path]:
        return [self.home / "sessions"]

    def discover(self) -> Iterable[Path]:
        for root in self.roots():
            for project in _listdir(root):
                for session in _listdir(project):
                    logs = [session / name for name in LOG_NAMES if _is_file(session / name)]
                    if len(logs) > 1:  # compression was switched: the newer log is the live one
                        logs.sort(key=_mtime, reverse=True)
                    yield from logs[:1]

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        refused = cursor.state.get("refused")
        if isinstance(refused, str):
            return ReadResult(offset=cursor.offset, state=dict(cursor.state), refused=refused)
        offset, state = cursor.offset, cursor.state
        if offset > 0 and not isinstance(state.get("session"), dict):
            offset, state = 0, {}  # the state was lost: the fold must start from the header
        result = ReadResult(offset=offset)
        fold = _Fold(path, state, result.skipped)
        torn_tail: list[int] | None = None
        with path.open("rb") as file:
            if offset == 0 and os.fstat(file.fileno()).st_size == 0:
                result.skipped[EMPTY_FILE] += 1
            frames: ZstdFrames | None = None
            units: Iterable[Unit]
            if path.name.endswith(".zstd"):
                units = frames = ZstdFrames(file, offset, result.skipped)
            else:
                units = jsonl_lines(file, offset)
            for lines, end in units:
                for raw in lines:
                    take_record(fold.line, raw, result.skipped)
                    if fold.refused:
                        break
                result.offset = end
                if fold.refused:
                    break
            if frames is not None and frames.torn_end is not None:
                torn_tail = [result.offset, frames.torn_end]
        if fold.refused:
            result.refused = fold.refused
            result.state = {"refused": fold.refused}
            return result
        result.state = fold.state()
        if torn_tail is not None:
            # [offset, file end, counted]: count a torn tail once, when a later read finds it
            # unchanged (a frame still being written looks torn for a moment)
            previous = state.get("torn") or [None, None, False]
            unchanged = previous[:2] == torn_tail
            if unchanged and not previous[2]:
                result.skipped[TORN_FRAME] += 1
            result.state["torn"] = [*torn_tail, unchanged]
        chunk = fold.chunk()
        if chunk is not None:
            result.chunks.append(chunk)
        return result


def read_header(path: Path) -> dict[str, Any] | None:
    """The header line of a session log as JSON, or None when there is none (or no file)."""
    try:
        for raw in all_lines(path):
            if raw is None:
                return None
            if not raw.strip():
                continue
            header = _loads(raw)
            return header if header is not None and header.get("type") == "session" else None
    except OSError:
        return None
    return None


def pending_tool_calls(path: Path) -> list[tuple[str, str]]:
    """Tool calls of the current turn that have no result yet, oldest first.

    Each is `(name, raw arguments string)`. A user message or a turn boundary ends the turn,
    so a call left unanswered by a crash long ago is not reported. A missing or unreadable
    file has none.
    """
    pending: dict[str, tuple[str, str]] = {}
    try:
        for raw in all_lines(path):
            if raw is None or not any(marker in raw for marker in _PENDING_MARKERS):
                continue
            obj = _loads(raw)
            if obj is not None:
                take_record(partial(_pending_step, pending), obj, Counter())
    except OSError:
        return []
    return list(pending.values())


def _pending_step(pending: dict[str, tuple[str, str]], obj: dict[str, Any]) -> None:
    """What one line of a log does to the calls waiting for their result (read whole first)."""
    kind, data = obj.get("type"), _dict(obj.get("data"))
    if kind == "tool/call":
        call_id = _call_id(data) or f"#seq{obj.get('seq')}"
        call = (_str(data.get("name")), _arguments(data.get("arguments")))
        pending.pop(call_id, None)
        pending[call_id] = call
    elif kind == "tool/result":
        pending.pop(_tool_result(data)[0] or "", None)
    elif isinstance(kind, str) and kind in _TURN_BOUNDARIES:
        pending.clear()


def pending_tool_call(path: Path) -> tuple[str, str] | None:
    """The latest unanswered tool call `(name, raw arguments)` the log ends with, or None.

    The MCP server uses it to find the DSH session calling it: the one whose log ends with an
    unanswered `tool/call` named `mcp__<server>__<tool>` with the same arguments.
    """
    calls = pending_tool_calls(path)
    return calls[-1] if calls else None


# --- discovery helpers ------------------------------------------------------------------------


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _listdir(directory: Path) -> list[Path]:
    """Sorted entries of a directory; a missing or vanished one has none."""
    try:
        return sorted(entry for entry in directory.iterdir() if entry.is_dir())
    except OSError:
        return []


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # e.g. a folder we may not enter
        return False


# --- logical layer ----------------------------------------------------------------------------


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


class _Fold:
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
            source=DshReader.source,
            cwd=info.get("cwd"),
            title=self.title,
            created=info.get("created"),
            updated=self.updated,
            parent=info.get("parent"),
            is_subagent=bool(info.get("subagent")),
            title_unreadable=self.title_unreadable,
        )
        events = [self.events[seq] for seq in sorted(self.events)]
        return SessionChunk(session=update, events=events, surface=dict(self.changes))

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
            self.refused = f"{self.path} is not a DSH session log: its first line is no header"
            return
        version = obj.get("version", 0)
        if version != 0:
            self.skipped[UNSUPPORTED_VERSION] += 1
            shown = repr(version)[:40] if isinstance(version, int | float | str) else "(none)"
            self.refused = (
                f"{self.path} uses DSH session format version {shown}; huiyi reads version 0"
            )
            return
        depth = _int(obj.get("delegationDepth"), 0)
        created = obj.get("createdAt")
        self.session = {
            "id": _opt_str(obj.get("id")) or self.path.parent.name,
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
        data = _dict(obj.get("data"))
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
                name = _str(block.get("name"))
                ids.append((_opt_str(block.get("id")), name))
                calls.append((name, _arguments(block.get("arguments"))))
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
        name = _str(data.get("name"))
        text = f"{name} {_arguments(data.get('arguments'))}".strip()
        calls = ((_call_id(data), name),)
        return _Parts(Kind.TOOL_CALL, "assistant", text, tool_name=name or None, calls=calls)

    def _tool_result(self, data: dict[str, Any]) -> _Parts:
        call_id, texts = _tool_result(data)
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
            f"[{_str(todo.get('status')) or '?'}] {_str(todo.get('content'))}"
            for todo in (todos if isinstance(todos, list) else [])
            if isinstance(todo, dict)
        ]
        return _Parts(Kind.OTHER, "assistant", "\n".join(lines))


# --- tool calls inside an assistant message's text ---------------------------------------------

#: An assistant message with text keeps its tool-call blocks in the event text, after the
#: message: one line `[tool call: NAME] ARGUMENTS` per call (ARGUMENTS the call's JSON, on one
#: line, its long string values shortened). A message with calls only is a TOOL_CALL event
#: whose text is `NAME ARGUMENTS` per call, as DSH logged them.
CALL_MARK = "[tool call: "
_CALL_LINE = re.compile(r"\[tool call: ([^\]\n]*)\] ?(.*)")
_CALL_ARGS_CHARS = 600  #: arguments longer than this (or spread over lines) are shortened
_CALL_VALUE_CHARS = 200  #: ... by cutting every string value to this many characters


def tool_call_line(name: str, arguments: str) -> str:
    """The line that stands for one tool call in an assistant event's text."""
    args = arguments.strip()
    if len(args) > _CALL_ARGS_CHARS or "\n" in args:
        args = _shorten_arguments(args)
    return f"{CALL_MARK}{name}] {args}".rstrip()


def split_tool_calls(text: str) -> tuple[str, list[tuple[str, str]]]:
    """An assistant event's text as (message text, [(name, arguments), ...]).

    Only the run of call lines that ends the text counts, so a message that merely quotes
    such a line keeps it."""
    lines = text.split("\n")
    calls: list[tuple[str, str]] = []
    while lines:
        match = _CALL_LINE.fullmatch(lines[-1])
        if match is None:
            break
        calls.append((match.group(1), match.group(2)))
        lines.pop()
    if not calls:
        return text, []
    return "\n".join(lines).rstrip("\n"), calls[::-1]


def _shorten_arguments(raw: str) -> str:
    try:
        return json.dumps(_shorten_values(json.loads(raw)), ensure_ascii=False)
    except (ValueError, RecursionError):  # no JSON, or too deep to walk: shorten it as text
        flat = " ".join(raw.split())
        return flat if len(flat) <= _CALL_ARGS_CHARS else flat[: _CALL_ARGS_CHARS - 1] + "…"


def _shorten_values(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _CALL_VALUE_CHARS else value[: _CALL_VALUE_CHARS - 1] + "…"
    if isinstance(value, list):
        return [_shorten_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _shorten_values(v) for k, v in value.items()}
    return value


# --- small helpers ------------------------------------------------------------------------------


def _loads(raw: bytes) -> dict[str, Any] | None:
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


def _tool_result(data: dict[str, Any]) -> tuple[str | None, list[str]]:
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


def _call_id(data: dict[str, Any]) -> str | None:
    for key in ("id", "toolCallId", "callId"):
        value = _opt_str(data.get(key))
        if value:
            return value
    return None


def _arguments(value: Any) -> str:
    """Tool arguments as the raw JSON string DSH logs (re-encoded if they came parsed)."""
    if value is None:
        return ""
    return clean_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    """A string field, its lone surrogates replaced (`jsonl.clean_text`); else ""."""
    return clean_text(value) if isinstance(value, str) else ""


def _opt_str(value: Any) -> str | None:
    """A non-empty string field, cleaned like `_str`; else None."""
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


def reader(settings: Settings) -> DshReader:
    """This harness's logs, where `settings` say they are."""
    return DshReader(settings.dsh_home)
