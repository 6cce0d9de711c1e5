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
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.harnesses.dsh.reader import DshReader, pending_tool_calls, read_header
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

__all__ = ["HOW", "by_any_log", "dsh_caller"]

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
