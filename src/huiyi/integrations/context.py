"""Finding the caller of an MCP tool: which workspace, and which session, is asking.

The MCP server is one long-lived process that several agent sessions may call, and most
harnesses tell it nothing about who is calling (DSH sends no roots, no session id, no cwd). So
each call is attributed by the first rule that matches, in this order:

1. `forced`: `--workspace DIR` or `HUIYI_WORKSPACE` set by whoever configured the server. It
   wins over everything; a session found in the logs (rule 2) still supplies the session id,
   but only when that session belongs to the forced workspace.
2. `dsh-log`: among the DSH session logs modified in the last `MAX_AGE_SECONDS` (the newest
   `MAX_LOGS` of them), the ONE whose log ends with an unanswered `tool/call` named
   `mcp__<server>__<tool>` with the same arguments (compared as parsed JSON). DSH makes that
   call durable on disk before it runs the tool, so the caller's log always qualifies; zero or
   several qualifying sessions mean "not found", never a guess. The log header gives the
   session id and the cwd.
   `claude-log`: the newest Claude Code transcript in the project folder of the server's cwd
   (Claude Code starts stdio servers there) whose last assistant reply has an unanswered
   `tool_use` named `mcp__<server>__<tool>` with the same input.
3. `mcp-roots`: the first `file://` root the client offers.
4. `cwd`: the server's working directory.

Everything here is plain file reading with no MCP types, so every rule is testable on fixture
logs; the server passes in the tool name, the raw arguments, its server name and the roots.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from huiyi.config import Settings
from huiyi.recall.scope import CallerContext
from huiyi.sources.dsh import DshReader, pending_tool_calls, read_header
from huiyi.workspace import workspace_of

__all__ = [
    "HOW_CLAUDE",
    "HOW_CWD",
    "HOW_DSH",
    "HOW_ROOTS",
    "MAX_AGE_SECONDS",
    "MAX_LOGS",
    "CallerFinder",
    "ToolCall",
    "claude_caller",
    "dsh_caller",
    "same_arguments",
    "workspace_from_roots",
]

#: How a context was found (`CallerContext.how`); a forced workspace names its own origin
#: (`--workspace` or `HUIYI_WORKSPACE`), with `+dsh-log` / `+claude-log` when a session was
#: found in the logs as well.
HOW_DSH = "dsh-log"
HOW_CLAUDE = "claude-log"
HOW_ROOTS = "mcp-roots"
HOW_CWD = "cwd"

#: Only this many of the most recently modified logs are examined per harness.
MAX_LOGS = 50
#: A caller's log was written just before the call; older logs are not examined.
MAX_AGE_SECONDS = 15 * 60
#: How much of a Claude Code transcript's end is read to find its last reply.
CLAUDE_TAIL_BYTES = 2 << 20


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One MCP tool call as the server received it: the tool and its raw arguments."""

    server: str
    tool: str
    arguments: Mapping[str, Any] | None = None

    @property
    def qualified_name(self) -> str:
        """The name harnesses give the tool in their logs: `mcp__<server>__<tool>`."""
        return f"mcp__{self.server}__{self.tool}"


@dataclass(frozen=True, slots=True)
class _Found:
    session_id: str
    cwd: str | None
    how: str

    def context(self) -> CallerContext:
        return CallerContext(_workspace(self.cwd), self.session_id, self.how)


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
            except ValueError:
                return False
    if logged is None:
        logged = {}
    return bool(logged == (dict(given) if given else {}))


def _workspace(cwd: str | None) -> str | None:
    if not cwd or not os.path.isabs(os.path.expanduser(cwd)):
        return None
    return workspace_of(cwd) or None


def _recent(paths: Iterable[Path], *, limit: int, max_age: float, now: float) -> list[Path]:
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


# -- DSH -------------------------------------------------------------------------------------


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
    logs = _recent(DshReader(dsh_home).discover(), limit=limit, max_age=max_age, now=now)
    found: dict[str, _Found] = {}
    for path in logs:
        pending = pending_tool_calls(path)
        if not any(
            name == call.qualified_name and same_arguments(args, call.arguments)
            for name, args in pending
        ):
            continue
        header = read_header(path)
        if header is None or not isinstance(header.get("id"), str):
            continue
        cwd = header.get("cwd")
        found[header["id"]] = _Found(header["id"], cwd if isinstance(cwd, str) else None, HOW_DSH)
    if len(found) != 1:
        return None
    return next(iter(found.values())).context()


# -- Claude Code -----------------------------------------------------------------------------


def _project_names(cwd: str) -> list[str]:
    """Claude Code's project folder names for `cwd`: the documented encoding (`/`, `.`, `:`
    and `\\` become `-`) and the one newer builds use (every non-alphanumeric becomes `-`)."""
    names = [re.sub(r"[/.:\\]", "-", cwd), re.sub(r"[^A-Za-z0-9]", "-", cwd)]
    return list(dict.fromkeys(names))


def _claude_transcripts(claude_dirs: Sequence[Path], cwd: str) -> Iterator[Path]:
    for claude_dir in claude_dirs:
        for name in _project_names(cwd):
            project = claude_dir / "projects" / name
            try:
                entries = list(project.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.suffix == ".jsonl":
                    yield entry
                elif entry.is_dir():
                    yield from (entry / "subagents").glob("agent-*.jsonl")


def _tail_records(path: Path, max_bytes: int = CLAUDE_TAIL_BYTES) -> list[dict[str, Any]]:
    """The JSON records on the complete lines of the last `max_bytes` of a transcript."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is cut
    lines = lines[:-1]  # what follows the last newline is still being written
    records: list[dict[str, Any]] = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _pending_tool_uses(records: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """Tool uses of the last assistant reply that have no result yet, and the latest cwd.

    Returns `({tool_use id: (name, input)}, cwd)`. A typed user prompt ends the turn, and a
    new reply (another `message.id`) only comes once the previous reply's tools answered.
    """
    pending: dict[str, Any] = {}
    reply: object = None
    cwd: str | None = None
    for record in records:
        if isinstance(record.get("cwd"), str):
            cwd = record["cwd"]
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "assistant":
            if message.get("id") != reply:
                reply = message.get("id")
                pending.clear()
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    pending[str(block.get("id"))] = (block.get("name"), block.get("input"))
        elif record.get("type") == "user" and not record.get("isMeta"):
            blocks = content if isinstance(content, list) else []
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            if not results:
                pending.clear()
                reply = None
            for block in results:
                pending.pop(str(block.get("tool_use_id")), None)
    return pending, cwd


def claude_caller(
    call: ToolCall,
    claude_dirs: Sequence[Path],
    cwd: str,
    *,
    limit: int = MAX_LOGS,
    max_age: float = MAX_AGE_SECONDS,
    now: float | None = None,
) -> CallerContext | None:
    """The newest Claude Code session of `cwd`'s project whose last reply calls `call`."""
    now = time.time() if now is None else now
    transcripts = _recent(
        _claude_transcripts(claude_dirs, cwd), limit=limit, max_age=max_age, now=now
    )
    for path in transcripts:
        pending, record_cwd = _pending_tool_uses(_tail_records(path))
        if any(
            name == call.qualified_name and same_arguments(given, call.arguments)
            for name, given in pending.values()
        ):
            return _Found(path.stem, record_cwd or cwd, HOW_CLAUDE).context()
    return None


# -- roots and the whole order ---------------------------------------------------------------


def workspace_from_roots(roots: Sequence[str]) -> str | None:
    """The workspace of the first `file://` root URI, if any."""
    for uri in roots:
        parsed = urlparse(str(uri))
        if parsed.scheme != "file":
            continue
        path = url2pathname(unquote(parsed.path))
        workspace = _workspace(path)
        if workspace:
            return workspace
    return None


@dataclass(slots=True)
class CallerFinder:
    """Applies the rules in order for one server process (see the module docstring).

    `forced` is the `--workspace` / `HUIYI_WORKSPACE` directory and `forced_how` which of the
    two it came from; `cwd` is the server's working directory.
    """

    server: str
    dsh_home: Path
    claude_dirs: Sequence[Path]
    cwd: str
    forced: str | None = None
    forced_how: str = "HUIYI_WORKSPACE"
    _forced_workspace: str | None = field(default=None, init=False)

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        *,
        cwd: str,
        server: str = "huiyi",
        forced: str | None = None,
        forced_how: str = "HUIYI_WORKSPACE",
    ) -> CallerFinder:
        """The finder for a server started in `cwd` over the harness homes `settings` name."""
        return cls(
            server=server,
            dsh_home=settings.dsh_home,
            claude_dirs=settings.claude_dirs,
            cwd=cwd,
            forced=forced,
            forced_how=forced_how,
        )

    def __post_init__(self) -> None:
        if self.forced is not None:
            path = os.path.abspath(os.path.expanduser(self.forced))
            self._forced_workspace = workspace_of(path)

    def from_logs(self, tool: str, arguments: Mapping[str, Any] | None) -> CallerContext | None:
        """Rules 1 and 2: a forced workspace, or the caller's session found in the logs."""
        call = ToolCall(self.server, tool, arguments)
        found = dsh_caller(call, self.dsh_home) or claude_caller(call, self.claude_dirs, self.cwd)
        if self._forced_workspace is None:
            return found
        if found is not None and found.workspace == self._forced_workspace:
            return CallerContext(
                self._forced_workspace, found.session_id, f"{self.forced_how}+{found.how}"
            )
        return CallerContext(self._forced_workspace, None, self.forced_how)

    def fallback(self, roots: Sequence[str] = ()) -> CallerContext:
        """Rules 3 and 4: the client's first file root, else the server's working directory."""
        workspace = workspace_from_roots(roots)
        if workspace is not None:
            return CallerContext(workspace, None, HOW_ROOTS)
        return CallerContext(_workspace(self.cwd), None, HOW_CWD)

    def resolve(
        self, tool: str, arguments: Mapping[str, Any] | None, roots: Sequence[str] = ()
    ) -> CallerContext:
        """All rules in order."""
        return self.from_logs(tool, arguments) or self.fallback(roots)
