"""Which Codex session is calling a tool: Codex names it in each call's `_meta`.

Codex sends `_meta.sessionId` (also `threadId` and `x-codex-turn-metadata.session_id`): the
rollout of that id names the session's cwd in its `session_meta` line. Every call of one model
reply carries `x-codex-turn-metadata.turn_id`, which is how ask-before-recall tells one reply
from the next (`reply_of`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huiyi.harnesses.pending import ID, REPLY_ID, TURN_SECONDS, LookIn, ToolCall, found
from huiyi.model import CallerContext
from huiyi.sources.base import open_log

__all__ = ["HOW", "by_meta", "codex_caller", "reply_of"]

HOW = "codex-session"


def _session_id(meta: Mapping[str, Any]) -> str | None:
    turn = meta.get("x-codex-turn-metadata")
    candidates = [meta.get("sessionId"), meta.get("threadId")]
    if isinstance(turn, Mapping):
        candidates += [turn.get("session_id"), turn.get("thread_id")]
    for value in candidates:
        if isinstance(value, str) and ID.fullmatch(value):
            return value
    return None


def codex_caller(session_id: str, codex_home: Path) -> CallerContext | None:
    """The Codex session with this id: its rollout's `session_meta` names its cwd."""
    if not ID.fullmatch(session_id):
        return None
    for folder in ("sessions", "archived_sessions"):
        for path in (codex_home / folder).rglob(f"rollout-*{session_id}.jsonl"):
            meta = _rollout_meta(path)
            if meta is not None and meta.get("id") == session_id:
                cwd = meta.get("cwd")
                return found(session_id, cwd if isinstance(cwd, str) else None, HOW)
    return None


def _rollout_meta(path: Path) -> Mapping[str, Any] | None:
    """The `session_meta` payload on a rollout's first line."""
    try:
        with open_log(path) as handle:
            first = handle.readline(4 << 20)
        record = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(record, dict) or record.get("type") != "session_meta":
        return None
    return payload if isinstance(payload, dict) else None


def by_meta(call: ToolCall, meta: Mapping[str, Any], look: LookIn) -> CallerContext | None:
    """The caller the call's `_meta` names."""
    session_id = _session_id(meta)
    if session_id is None or look.codex_home is None:
        return None
    return codex_caller(session_id, look.codex_home)


def reply_of(
    meta: Mapping[str, Any], caller: CallerContext, look: LookIn
) -> tuple[str, float] | None:
    """The reply a call belongs to: its turn's id, which every call of the reply carries."""
    turn = meta.get("x-codex-turn-metadata")
    turn_id = turn.get("turn_id") if isinstance(turn, Mapping) else None
    if isinstance(turn_id, str) and REPLY_ID.fullmatch(turn_id):
        return f"codex-turn:{turn_id}", TURN_SECONDS
    return None
