"""Finding the caller of an MCP tool: which workspace, and which session, is asking.

The MCP server is one long-lived process that several agent sessions may call. Some clients
say who is calling in the call's `_meta`, some offer MCP roots, and DSH says nothing at all.
So each call is attributed by the first rule that matches, in this order:

1. `forced`: `--workspace DIR` or `HUIYI_WORKSPACE` set by whoever configured the server. It
   wins for the workspace; a session found by the rules below still supplies the session id,
   but only when that session belongs to the forced workspace.
2. `claude-tool-use`: Claude Code sends `_meta["claudecode/toolUseId"]` with each call. The
   transcript whose `tool_use` block carries that exact id is the caller's. Claude queues its
   transcript writes (about 100 ms), so the line may not be on disk yet: the lookup waits for
   it, at most `CLAUDE_WAIT_SECONDS`.
3. `codex-session`: Codex sends `_meta.sessionId` (also `threadId` and
   `x-codex-turn-metadata.session_id`): the rollout of that id names the session's cwd.
4. `claude-log`: (older Claude builds, no tool-use id) the newest Claude Code transcript in the
   project folder of the server's cwd whose last reply has an unanswered `tool_use` named
   `mcp__<server>__<tool>` with the same input.
5. `mcp-roots`: the first `file://` root the client offers.
6. `dsh-log`: among the DSH session logs modified in the last `MAX_AGE_SECONDS` (the newest
   `MAX_LOGS` of them), the ONE whose log ends with an unanswered `tool/call` named
   `mcp__<server>__<tool>` with the same arguments (compared as parsed JSON). DSH makes that
   call durable before it runs the tool, so the caller's log always qualifies; zero or
   several qualifying sessions mean "not found", never a guess. What a log holds is cached by
   its size and mtime, so an unchanged log is not decompressed again.
7. `cwd`: the server's working directory.

Which rule bound a call is logged at debug level (logger `huiyi.caller`) and kept in
`CallerContext.how`. Everything here is plain file reading with no MCP types, so every rule is
testable on fixture logs.
"""

from __future__ import annotations

import json
import logging
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
from huiyi.harnesses.dsh.reader import DshReader, pending_tool_calls, read_header
from huiyi.recall.scope import CallerContext
from huiyi.workspace import workspace_of

__all__ = [
    "HOW_CLAUDE",
    "HOW_CLAUDE_ID",
    "HOW_CODEX",
    "HOW_CWD",
    "HOW_DSH",
    "HOW_ROOTS",
    "MAX_AGE_SECONDS",
    "MAX_LOGS",
    "CallerFinder",
    "ToolCall",
    "claude_caller",
    "claude_caller_by_id",
    "codex_caller",
    "dsh_caller",
    "same_arguments",
    "workspace_from_roots",
]

#: How a context was found (`CallerContext.how`); a forced workspace names its own origin
#: (`--workspace` or `HUIYI_WORKSPACE`), with `+dsh-log` / `+claude-log` when a session was
#: found in the logs as well.
HOW_CLAUDE_ID = "claude-tool-use"
HOW_CODEX = "codex-session"
HOW_CLAUDE = "claude-log"
HOW_ROOTS = "mcp-roots"
HOW_DSH = "dsh-log"
HOW_CWD = "cwd"

#: How long a call waits for Claude Code to write the `tool_use` line that made it.
CLAUDE_WAIT_SECONDS = 1.5
#: How often the transcript is looked at again meanwhile.
CLAUDE_POLL_SECONDS = 0.05
#: `_meta` keys (and their forms) that carry the calling session's id
CLAUDE_TOOL_USE_KEY = "claudecode/toolUseId"
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")

log = logging.getLogger("huiyi.caller")

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
            except (ValueError, RecursionError):
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


@dataclass(frozen=True, slots=True)
class _DshLook:
    """What one DSH log says about a pending call, valid while its size and mtime hold."""

    size: int
    mtime_ns: int
    pending: tuple[tuple[str, str], ...]
    header: Mapping[str, Any] | None


_DSH_CACHE: dict[Path, _DshLook] = {}
_DSH_CACHE_MAX = 512


def _dsh_look(path: Path) -> _DshLook | None:
    """The pending calls and header of a DSH log, from the cache when it did not change."""
    try:
        st = path.stat()
    except OSError:
        return None
    cached = _DSH_CACHE.get(path)
    if cached is not None and (cached.size, cached.mtime_ns) == (st.st_size, st.st_mtime_ns):
        return cached
    pending = tuple(pending_tool_calls(path))
    look = _DshLook(st.st_size, st.st_mtime_ns, pending, read_header(path) if pending else None)
    if len(_DSH_CACHE) >= _DSH_CACHE_MAX:
        _DSH_CACHE.pop(next(iter(_DSH_CACHE)))
    _DSH_CACHE[path] = look
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
    logs = _recent(DshReader(dsh_home).discover(), limit=limit, max_age=max_age, now=now)
    found: dict[str, _Found] = {}
    for path in logs:
        look = _dsh_look(path)
        if look is None or not any(
            name == call.qualified_name and same_arguments(args, call.arguments)
            for name, args in look.pending
        ):
            continue
        header = look.header
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
        except (ValueError, RecursionError):
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


def _all_claude_transcripts(claude_dirs: Sequence[Path]) -> Iterator[Path]:
    for claude_dir in claude_dirs:
        projects = claude_dir / "projects"
        yield from projects.glob("*/*.jsonl")
        yield from projects.glob("*/*/subagents/agent-*.jsonl")


def _transcript_with(tool_use_id: str, paths: Iterable[Path]) -> tuple[Path, str | None] | None:
    """The transcript (and its latest cwd) holding a `tool_use` block with this exact id."""
    needle = json.dumps(tool_use_id).encode("utf-8")
    for path in paths:
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - CLAUDE_TAIL_BYTES))
                tail = handle.read()
        except OSError:
            continue
        if needle not in tail:
            continue
        cwd: str | None = None
        found = False
        for record in _tail_records(path):
            if isinstance(record.get("cwd"), str):
                cwd = record["cwd"]
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_use"
                    and block.get("id") == tool_use_id
                ):
                    found = True
        if found:
            return path, cwd
    return None


def claude_caller_by_id(
    tool_use_id: str,
    claude_dirs: Sequence[Path],
    cwd: str,
    *,
    wait: float = CLAUDE_WAIT_SECONDS,
    max_age: float = MAX_AGE_SECONDS,
) -> CallerContext | None:
    """The Claude Code session whose transcript holds the `tool_use` with this id.

    The server's project folder is looked at first, then every recently written transcript;
    both again until `wait` runs out, because Claude writes the line a little after the call.
    """
    if not _ID.fullmatch(tool_use_id):
        return None
    deadline = time.monotonic() + wait
    while True:
        now = time.time()
        near = _recent(
            _claude_transcripts(claude_dirs, cwd), limit=MAX_LOGS, max_age=max_age, now=now
        )
        found = _transcript_with(tool_use_id, near)
        if found is None:
            anywhere = _recent(
                _all_claude_transcripts(claude_dirs), limit=MAX_LOGS, max_age=max_age, now=now
            )
            found = _transcript_with(tool_use_id, (p for p in anywhere if p not in near))
        if found is not None:
            path, record_cwd = found
            return _Found(path.stem, record_cwd or cwd, HOW_CLAUDE_ID).context()
        if time.monotonic() >= deadline:
            return None
        time.sleep(CLAUDE_POLL_SECONDS)


def _codex_session_id(meta: Mapping[str, Any]) -> str | None:
    turn = meta.get("x-codex-turn-metadata")
    candidates = [meta.get("sessionId"), meta.get("threadId")]
    if isinstance(turn, Mapping):
        candidates += [turn.get("session_id"), turn.get("thread_id")]
    for value in candidates:
        if isinstance(value, str) and _ID.fullmatch(value):
            return value
    return None


def codex_caller(session_id: str, codex_home: Path) -> CallerContext | None:
    """The Codex session with this id: its rollout's `session_meta` names its cwd."""
    if not _ID.fullmatch(session_id):
        return None
    for folder in ("sessions", "archived_sessions"):
        for path in (codex_home / folder).rglob(f"rollout-*{session_id}.jsonl"):
            meta = _codex_meta(path)
            if meta is not None and meta.get("id") == session_id:
                cwd = meta.get("cwd")
                return _Found(
                    session_id, cwd if isinstance(cwd, str) else None, HOW_CODEX
                ).context()
    return None


def _codex_meta(path: Path) -> Mapping[str, Any] | None:
    """The `session_meta` payload on a rollout's first line."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(4 << 20)
        record = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(record, dict) or record.get("type") != "session_meta":
        return None
    return payload if isinstance(payload, dict) else None


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
    two it came from; `cwd` is the server's working directory. The rules are also offered one
    by one (`by_client`, `by_roots`, `by_logs`, `settle`), so a server can ask the client for
    its roots only when the rules before them found nothing.
    """

    server: str
    dsh_home: Path
    claude_dirs: Sequence[Path]
    cwd: str
    forced: str | None = None
    forced_how: str = "HUIYI_WORKSPACE"
    codex_home: Path | None = None
    claude_wait: float = CLAUDE_WAIT_SECONDS
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
            codex_home=settings.codex_home,
        )

    def __post_init__(self) -> None:
        if self.forced is not None:
            path = os.path.abspath(os.path.expanduser(self.forced))
            self._forced_workspace = workspace_of(path)

    def by_client(
        self, tool: str, arguments: Mapping[str, Any] | None, meta: Mapping[str, Any] | None
    ) -> CallerContext | None:
        """Rules 2-4: what the client says in `_meta`, else Claude's pending tool use."""
        meta = meta or {}
        tool_use_id = meta.get(CLAUDE_TOOL_USE_KEY)
        if isinstance(tool_use_id, str):
            found = claude_caller_by_id(
                tool_use_id, self.claude_dirs, self.cwd, wait=self.claude_wait
            )
            if found is not None:
                return found
        codex_id = _codex_session_id(meta)
        if codex_id is not None and self.codex_home is not None:
            found = codex_caller(codex_id, self.codex_home)
            if found is not None:
                return found
        if tool_use_id is None:
            call = ToolCall(self.server, tool, arguments)
            return claude_caller(call, self.claude_dirs, self.cwd)
        return None

    def by_roots(self, roots: Sequence[str]) -> CallerContext | None:
        """Rule 5: the client's first file root."""
        workspace = workspace_from_roots(roots)
        return None if workspace is None else CallerContext(workspace, None, HOW_ROOTS)

    def by_logs(self, tool: str, arguments: Mapping[str, Any] | None) -> CallerContext | None:
        """Rule 6: the DSH session whose log ends with this very call pending."""
        return dsh_caller(ToolCall(self.server, tool, arguments), self.dsh_home)

    def settle(self, found: CallerContext | None) -> CallerContext:
        """Rules 1 and 7 around what the others found: a forced workspace keeps only a session
        found inside it; nothing found means the server's working directory."""
        if self._forced_workspace is not None:
            if found is not None and found.session_id and found.workspace == self._forced_workspace:
                found = CallerContext(
                    self._forced_workspace, found.session_id, f"{self.forced_how}+{found.how}"
                )
            else:
                found = CallerContext(self._forced_workspace, None, self.forced_how)
        elif found is None:
            found = CallerContext(_workspace(self.cwd), None, HOW_CWD)
        log.debug(
            "caller bound by %s: workspace %s, session %s",
            found.how,
            found.workspace,
            found.session_id,
        )
        return found

    def resolve(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        roots: Sequence[str] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> CallerContext:
        """All rules in order."""
        found = (
            self.by_client(tool, arguments, meta)
            or self.by_roots(roots)
            or self.by_logs(tool, arguments)
        )
        return self.settle(found)
