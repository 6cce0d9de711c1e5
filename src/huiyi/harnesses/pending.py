"""What the harnesses' caller lookups share: the tool call they look for in a log, where to
look, how arguments compare, and which logs are recent enough to hold a pending call.

An MCP server serves every session of a harness, and some harnesses (DSH) say nothing about
which session is calling; each harness's `caller` module finds the caller in its own logs
(`huiyi.policy.caller` asks them in order). They answer with a `CallerContext`, whose `how`
says which rule bound the call.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.model import CallerContext
from huiyi.workspace import workspace_of

__all__ = [
    "ID",
    "MAX_AGE_SECONDS",
    "MAX_LOGS",
    "REPLY_ID",
    "TURN_SECONDS",
    "LookIn",
    "ToolCall",
    "found",
    "recent",
    "same_arguments",
    "workspace",
]

#: Only this many of the most recently modified logs are examined per harness.
MAX_LOGS = 50
#: A caller's log was written just before the call; older logs are not examined.
MAX_AGE_SECONDS = 15 * 60
#: what a session, thread or tool-use id a client names must look like to be looked up
ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: what a turn or prompt id must look like to key one reply's consent answer
REPLY_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
#: consent answers tied to a reply's id are forgotten after this long (the reply is long over)
TURN_SECONDS = 6 * 3600.0


class ToolCall(NamedTuple):
    """One MCP tool call as the server received it: the tool and its raw arguments."""

    server: str
    tool: str
    arguments: Mapping[str, Any] | None = None

    @property
    def qualified_name(self) -> str:
        """The name harnesses give the tool in their logs: `mcp__<server>__<tool>`."""
        return f"mcp__{self.server}__{self.tool}"


class LookIn(NamedTuple):
    """Where a server's callers may be found: its working directory and the harnesses'
    homes, as its settings name them."""

    cwd: str
    dsh_home: Path
    claude_dirs: Sequence[Path]
    codex_home: Path | None = None
    #: how long a lookup by Claude Code's tool-use id waits for the transcript line
    claude_wait: float = 1.5


def same_arguments(logged: object, given: Mapping[str, Any] | None) -> bool:
    """Whether arguments a harness logged (raw JSON text or parsed) are the ones we were given.

    Compared as parsed JSON, so spacing, key order and escapes do not matter; missing, empty
    and `{}` arguments are all the same empty object. Unparsable text matches nothing.
    """
    if isinstance(logged, str | bytes):
        if not logged.strip():
            logged = {}
        else:
            try:
                logged = json.loads(logged)
            except (ValueError, RecursionError):
                return False
    if logged is None:
        logged = {}
    return bool(logged == (dict(given) if given else {}))


def workspace(cwd: str | None) -> str | None:
    """The workspace of an absolute `cwd` (the git root above it), else None."""
    if not cwd or not os.path.isabs(os.path.expanduser(cwd)):
        return None
    return workspace_of(cwd) or None


def found(session_id: str, cwd: str | None, how: str) -> CallerContext:
    """The caller a lookup found: its session and the workspace of its cwd."""
    return CallerContext(workspace(cwd), session_id, how)


def recent(paths: Iterable[Path], *, limit: int, max_age: float, now: float) -> list[Path]:
    """The `limit` most recently modified of `paths` changed within `max_age` seconds."""
    stamped: list[tuple[float, Path]] = []
    for path in paths:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if now - mtime <= max_age:
            stamped.append((mtime, path))
    stamped.sort(key=lambda item: item[0], reverse=True)
    return [path for _mtime, path in stamped[:limit]]
