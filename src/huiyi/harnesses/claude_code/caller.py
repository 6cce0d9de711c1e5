"""Which Claude Code session is calling a tool: the call's `_meta` names the `tool_use`, and
the transcript that holds it is the caller's.

1. `claude-tool-use` (`by_meta`): Claude Code sends `_meta["claudecode/toolUseId"]` with each
   call. The transcript whose `tool_use` block carries that exact id is the caller's. Claude
   queues its transcript writes (about 100 ms), so the line may not be on disk yet: the lookup
   waits for it, at most `CLAUDE_WAIT_SECONDS`.
2. `claude-log` (`by_own_log`; older builds, no tool-use id): the newest transcript in the
   project folder of the server's cwd whose last reply has an unanswered `tool_use` named
   `mcp__<server>__<tool>` with the same input.

For ask-before-recall, the user records of one reply (the typed prompt and every tool result)
share one `promptId`; the last one written before the call's `tool_use` is the reply's key
(`reply_of`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from huiyi.harnesses.pending import (
    ID,
    MAX_AGE_SECONDS,
    MAX_LOGS,
    REPLY_ID,
    TURN_SECONDS,
    LookIn,
    ToolCall,
    found,
    recent,
    same_arguments,
)
from huiyi.model import CallerContext
from huiyi.sources.base import name_text, open_log

__all__ = [
    "CLAUDE_TOOL_USE_KEY",
    "CLAUDE_WAIT_SECONDS",
    "HOW_PENDING",
    "HOW_TOOL_USE",
    "by_meta",
    "by_own_log",
    "claude_caller",
    "claude_caller_by_id",
    "claude_prompt_id",
    "reply_of",
    "tail_records",
]

HOW_TOOL_USE = "claude-tool-use"
HOW_PENDING = "claude-log"
#: How long a call waits for Claude Code to write the `tool_use` line that made it.
CLAUDE_WAIT_SECONDS = 1.5
#: How often the transcript is looked at again meanwhile.
CLAUDE_POLL_SECONDS = 0.05
#: the `_meta` key that carries the calling `tool_use`'s id
CLAUDE_TOOL_USE_KEY = "claudecode/toolUseId"
#: How much of a transcript's end is read to find its last reply.
CLAUDE_TAIL_BYTES = 2 << 20


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


def tail_records(path: Path, max_bytes: int = CLAUDE_TAIL_BYTES) -> list[dict[str, Any]]:
    """The JSON records on the complete lines of the last `max_bytes` of a transcript."""
    try:
        with open_log(path) as handle:
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
    transcripts = recent(
        _claude_transcripts(claude_dirs, cwd), limit=limit, max_age=max_age, now=now
    )
    for path in transcripts:
        pending, record_cwd = _pending_tool_uses(tail_records(path))
        if any(
            name == call.qualified_name and same_arguments(given, call.arguments)
            for name, given in pending.values()
        ):
            return found(name_text(path.stem), record_cwd or cwd, HOW_PENDING)
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
            with open_log(path) as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - CLAUDE_TAIL_BYTES))
                tail = handle.read()
        except OSError:
            continue
        if needle not in tail:
            continue
        cwd: str | None = None
        holds = False
        for record in tail_records(path):
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
                    holds = True
        if holds:
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
    if not ID.fullmatch(tool_use_id):
        return None
    deadline = time.monotonic() + wait
    while True:
        now = time.time()
        near = recent(
            _claude_transcripts(claude_dirs, cwd), limit=MAX_LOGS, max_age=max_age, now=now
        )
        holder = _transcript_with(tool_use_id, near)
        if holder is None:
            anywhere = recent(
                _all_claude_transcripts(claude_dirs), limit=MAX_LOGS, max_age=max_age, now=now
            )
            holder = _transcript_with(tool_use_id, (p for p in anywhere if p not in near))
        if holder is not None:
            path, record_cwd = holder
            return found(name_text(path.stem), record_cwd or cwd, HOW_TOOL_USE)
        if time.monotonic() >= deadline:
            return None
        time.sleep(CLAUDE_POLL_SECONDS)


def claude_prompt_id(tool_use_id: str, session_id: str, claude_dirs: Sequence[Path]) -> str | None:
    """The `promptId` of the reply whose `tool_use` has this id, from session `session_id`'s
    transcript: the last one on a user record before that `tool_use`. None when the line is not
    on disk (yet) or the build writes no prompt ids."""
    if not REPLY_ID.fullmatch(tool_use_id) or not REPLY_ID.fullmatch(session_id):
        return None
    for claude_dir in claude_dirs:
        for path in (claude_dir / "projects").glob(f"*/{session_id}.jsonl"):
            prompt: str | None = None
            for record in tail_records(path):
                if record.get("type") == "user" and isinstance(record.get("promptId"), str):
                    prompt = record["promptId"]
                elif record.get("type") == "assistant" and _uses(record, tool_use_id):
                    return prompt if prompt is not None and REPLY_ID.fullmatch(prompt) else None
    return None


def _uses(record: Mapping[str, Any], tool_use_id: str) -> bool:
    message = record.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return any(
        isinstance(block, Mapping)
        and block.get("type") == "tool_use"
        and block.get("id") == tool_use_id
        for block in (content if isinstance(content, list) else [])
    )


def by_meta(call: ToolCall, meta: Mapping[str, Any], look: LookIn) -> CallerContext | None:
    """The caller whose transcript holds the `tool_use` the call's `_meta` names."""
    tool_use_id = meta.get(CLAUDE_TOOL_USE_KEY)
    if not isinstance(tool_use_id, str):
        return None
    return claude_caller_by_id(tool_use_id, look.claude_dirs, look.cwd, wait=look.claude_wait)


def by_own_log(call: ToolCall, meta: Mapping[str, Any], look: LookIn) -> CallerContext | None:
    """For a call that names no `tool_use` (older builds): the session of the server's project
    whose last reply calls it."""
    if meta.get(CLAUDE_TOOL_USE_KEY) is not None:
        return None
    return claude_caller(call, look.claude_dirs, look.cwd)


def reply_of(
    meta: Mapping[str, Any], caller: CallerContext, look: LookIn
) -> tuple[str, float] | None:
    """The reply a call belongs to: the `promptId` before its `tool_use` in the transcript."""
    tool_use_id = meta.get(CLAUDE_TOOL_USE_KEY)
    if not isinstance(tool_use_id, str) or not caller.session_id:
        return None
    prompt = claude_prompt_id(tool_use_id, caller.session_id, look.claude_dirs)
    return None if prompt is None else (f"claude-prompt:{prompt}", TURN_SECONDS)
