"""Which DSH session is calling a tool: DSH says nothing about its caller, so its logs must.

Among the DSH session logs modified in the last `MAX_AGE_SECONDS` (the newest `MAX_LOGS` of
them), the ONE whose log ends with an unanswered `tool/call` named `mcp__<server>__<tool>` with
the same arguments (compared as parsed JSON) is the caller. DSH makes that call durable before it
runs the tool, so the caller's log always qualifies; zero or several qualifying sessions mean
"not found", never a guess. What a log holds is cached by its size and mtime, so an unchanged
log is not decompressed again.

Asked after the client's MCP roots (`by_any_log`): a client that offers roots is no DSH.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.harnesses.dsh.fold import (
    arguments_text,
    call_id,
    json_record,
    mapping,
    text_value,
    tool_result,
)
from huiyi.harnesses.dsh.frames import all_lines
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.harnesses.pending import (
    MAX_AGE_SECONDS,
    MAX_LOGS,
    LookIn,
    ToolCall,
    found,
    recent,
    same_arguments,
)
from huiyi.model import CallerContext
from huiyi.sources.base import take_record

__all__ = [
    "HOW",
    "by_any_log",
    "dsh_caller",
    "pending_tool_call",
    "pending_tool_calls",
    "read_header",
]

HOW = "dsh-log"


class _Look(NamedTuple):
    """What one DSH log says about a pending call, valid while its size and mtime hold."""

    size: int
    mtime_ns: int
    pending: tuple[tuple[str, str], ...]
    header: Mapping[str, Any] | None


_CACHE: dict[Path, _Look] = {}
_CACHE_MAX = 512


def _look(path: Path) -> _Look | None:
    """The pending calls and header of a DSH log, from the cache when it did not change."""
    try:
        st = path.stat()
    except OSError:
        return None
    cached = _CACHE.get(path)
    if cached is not None and (cached.size, cached.mtime_ns) == (st.st_size, st.st_mtime_ns):
        return cached
    pending = tuple(pending_tool_calls(path))
    look = _Look(st.st_size, st.st_mtime_ns, pending, read_header(path) if pending else None)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[path] = look
    return look


def dsh_caller(
    call: ToolCall,
    dsh_home: Path,
    *,
    limit: int = MAX_LOGS,
    max_age: float = MAX_AGE_SECONDS,
    now: float | None = None,
) -> CallerContext | None:
    """The DSH session making `call`, when exactly one recent log ends with it pending."""
    now = time.time() if now is None else now
    logs = recent(DshReader(dsh_home).discover(), limit=limit, max_age=max_age, now=now)
    callers: dict[str, CallerContext] = {}
    for path in logs:
        look = _look(path)
        if look is None or not any(
            name == call.qualified_name and same_arguments(args, call.arguments)
            for name, args in look.pending
        ):
            continue
        header = look.header
        if header is None or not isinstance(header.get("id"), str):
            continue
        cwd = header.get("cwd")
        callers[header["id"]] = found(header["id"], cwd if isinstance(cwd, str) else None, HOW)
    if len(callers) != 1:
        return None
    return next(iter(callers.values()))


def by_any_log(call: ToolCall, meta: Mapping[str, Any], look: LookIn) -> CallerContext | None:
    """The caller rule this harness offers after the roots: its pending call in a log."""
    return dsh_caller(call, look.dsh_home)


# -- what a log says without a full read --------------------------------------------------

# Events after which an unanswered tool call can no longer be the one running now.
_TURN_BOUNDARIES = frozenset({"user/message", "turn/start", "turn/end", "session/end-seed"})
_PENDING_MARKERS = tuple(f'"{t}"'.encode() for t in ("tool/call", "tool/result", *_TURN_BOUNDARIES))


def read_header(path: Path) -> dict[str, Any] | None:
    """The header line of a session log as JSON, or None when there is none (or no file)."""
    try:
        for raw in all_lines(path):
            if raw is None:
                return None
            if not raw.strip():
                continue
            header = json_record(raw)
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
            obj = json_record(raw)
            if obj is not None:
                take_record(partial(_pending_step, pending), obj, Counter())
    except OSError:
        return []
    return list(pending.values())


def _pending_step(pending: dict[str, tuple[str, str]], obj: dict[str, Any]) -> None:
    """What one line of a log does to the calls waiting for their result (read whole first)."""
    kind, data = obj.get("type"), mapping(obj.get("data"))
    if kind == "tool/call":
        key = call_id(data) or f"#seq{obj.get('seq')}"
        call = (text_value(data.get("name")), arguments_text(data.get("arguments")))
        pending.pop(key, None)
        pending[key] = call
    elif kind == "tool/result":
        pending.pop(tool_result(data)[0] or "", None)
    elif isinstance(kind, str) and kind in _TURN_BOUNDARIES:
        pending.clear()


def pending_tool_call(path: Path) -> tuple[str, str] | None:
    """The latest unanswered tool call `(name, raw arguments)` the log ends with, or None.

    The MCP server uses it to find the DSH session calling it: the one whose log ends with an
    unanswered `tool/call` named `mcp__<server>__<tool>` with the same arguments.
    """
    calls = pending_tool_calls(path)
    return calls[-1] if calls else None
