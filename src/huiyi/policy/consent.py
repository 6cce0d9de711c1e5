"""Ask before recall: a read of another session's text is confirmed with the user first.

Optional (`Settings.ask_before_recall`, off by default) and only where the client declared the
MCP `elicitation` capability; with a client that did not, calls answer as if it were off.

Which calls ask: those whose answer would show text of another session than the caller's
current one (`question` says what will be read, or None):

- `recall_history` with a query, when the caller's workspace holds another session (with no
  query it shows the caller's own compacted part; with no known workspace the call is narrowed
  to the caller's own session);
- `session_list`, when the workspace holds another session (titles are text too);
- `recall_expand` and `session_read` of a session other than the caller's, when the caller may
  read it (an id it may not read gets the usual not-found answer, without a question).

One answer covers the rest of the reply, so a model that searches, expands and reads in one
reply asks the user once. How a reply is recognised (`reply_key`), best first:

1. Codex: `_meta["x-codex-turn-metadata"]["turn_id"]`, the id of the turn every call of the
   reply carries;
2. Claude Code: `_meta["claudecode/toolUseId"]` names the `tool_use` in the caller's transcript;
   the user records of a reply (the typed prompt and every tool result) share one `promptId`,
   and the last one written before that `tool_use` is the reply's;
3. anything else (DSH, older clients, a transcript line not yet on disk): the same client
   connection and caller session within `WINDOW_SECONDS` of the answer.

A declined or dismissed question covers the reply too: the model gets one plain answer saying
the user declined, and asking again in the same reply gets the same answer without a second
question. Two calls of one reply that arrive together wait for the one question (`Answers`).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from huiyi.errors import NotFoundError
from huiyi.policy.caller import CLAUDE_TOOL_USE_KEY, _tail_records
from huiyi.recall.render import clean, one_line, when
from huiyi.recall.scope import CallerContext, Scope
from huiyi.search.engine import session_title

__all__ = [
    "ACTIONS",
    "CLAIM_SECONDS",
    "WINDOW_SECONDS",
    "Action",
    "Answers",
    "action_of",
    "claude_prompt_id",
    "declined",
    "question",
    "reply_key",
]

Action = Literal["accept", "decline", "cancel"]
#: what a client may answer to `elicitation/create`; anything else counts as "cancel"
ACTIONS: tuple[Action, ...] = ("accept", "decline", "cancel")
#: without a turn id, one answer covers the same connection and session for this long
WINDOW_SECONDS = 60.0
#: answers tied to a turn id are forgotten after this long (a reply is long over by then)
TURN_SECONDS = 6 * 3600.0
#: at most this many answers are remembered; the oldest go first
REMEMBERED = 1024
#: how long a call waits for the question another call of its reply has open: longer than
#: any front waits for the user (`front.ASK_SECONDS`)
CLAIM_SECONDS = 300.0
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_QUERY_SHOWN = 80


# -- what the question says ------------------------------------------------------------------


def question(
    conn: sqlite3.Connection, caller: CallerContext, tool: str, arguments: Mapping[str, Any]
) -> str | None:
    """What to ask the user before `tool` runs with `arguments` for `caller`, or None when its
    answer shows only the caller's own session (or nothing the caller may read)."""
    if caller.workspace is None:
        return None  # narrowed to the caller's own session
    scope = Scope(conn, caller)
    where = f"this workspace ({caller.workspace})"
    if tool == "recall_history":
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip() or not _others(scope, caller):
            return None
        asked = one_line(clean(query)[0], _QUERY_SHOWN)
        what = f'search the earlier sessions of {where} for "{asked}" and show the agent the hits'
    elif tool == "session_list":
        if not _others(scope, caller, subagents=bool(arguments.get("includeSubagents"))):
            return None
        what = f"show the agent the list of sessions of {where} (titles, sizes, last activity)"
    elif tool in ("recall_expand", "session_read"):
        session_id = arguments.get("sessionId")
        if not isinstance(session_id, str) or session_id == caller.session_id:
            return None
        try:
            row = scope.open(session_id)
        except NotFoundError:
            return None  # the tool answers "no such session" as it would anyway
        title = one_line(clean(session_title(row))[0], _QUERY_SHOWN)
        updated = when(row.session.updated)
        what = f'show the agent the session "{title}" (last active {updated}) of {where}'
    else:
        return None
    return f"huiyi wants to {what}. Allow? Your answer covers the rest of this reply."


def _others(scope: Scope, caller: CallerContext, *, subagents: bool = False) -> bool:
    """Whether the caller's scope holds a session other than its own."""
    rows = scope.sessions(include_subagents=subagents, limit=2)
    return any(row.session.id != caller.session_id for row in rows)


def action_of(value: object) -> Action:
    """A client's answer as one of `ACTIONS`: anything unknown (or no answer) is "cancel"."""
    for action in ACTIONS:
        if value == action:
            return action
    return "cancel"


def declined(tool: str, action: str) -> str:
    """The plain answer of a call the user did not allow (`action`: decline or cancel)."""
    did = (
        "the user declined to let huiyi read"
        if action == "decline"
        else "the user dismissed the question whether huiyi may read"
    )
    return (
        f"{tool}: {did} this workspace's other sessions in this reply, so nothing was read. "
        "Carry on without them; the user will be asked again in a later reply."
    )


# -- which reply a call belongs to -------------------------------------------------------------


def reply_key(
    meta: Mapping[str, Any] | None,
    caller: CallerContext,
    client: str,
    claude_dirs: Sequence[Path],
) -> tuple[str, float]:
    """The key of the reply `meta`'s call belongs to and how long an answer for it lasts (see
    the module docstring for the order)."""
    meta = meta or {}
    turn = meta.get("x-codex-turn-metadata")
    turn_id = turn.get("turn_id") if isinstance(turn, Mapping) else None
    if isinstance(turn_id, str) and _ID.fullmatch(turn_id):
        return f"codex-turn:{turn_id}", TURN_SECONDS
    tool_use_id = meta.get(CLAUDE_TOOL_USE_KEY)
    if isinstance(tool_use_id, str) and caller.session_id:
        prompt = claude_prompt_id(tool_use_id, caller.session_id, claude_dirs)
        if prompt is not None:
            return f"claude-prompt:{prompt}", TURN_SECONDS
    who = caller.session_id or caller.workspace or ""
    return f"window:{client}:{who}", WINDOW_SECONDS


def claude_prompt_id(tool_use_id: str, session_id: str, claude_dirs: Sequence[Path]) -> str | None:
    """The `promptId` of the reply whose `tool_use` has this id, from session `session_id`'s
    transcript: the last one on a user record before that `tool_use`. None when the line is not
    on disk (yet) or the build writes no prompt ids."""
    if not _ID.fullmatch(tool_use_id) or not _ID.fullmatch(session_id):
        return None
    for claude_dir in claude_dirs:
        for path in (claude_dir / "projects").glob(f"*/{session_id}.jsonl"):
            prompt: str | None = None
            for record in _tail_records(path):
                if record.get("type") == "user" and isinstance(record.get("promptId"), str):
                    prompt = record["promptId"]
                elif record.get("type") == "assistant" and _uses(record, tool_use_id):
                    return prompt if prompt is not None and _ID.fullmatch(prompt) else None
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


# -- the answers given so far ------------------------------------------------------------------


@dataclass(slots=True)
class _Answer:
    action: Action | None  # None while the question is open
    until: float


class Answers:
    """The user's answers per reply, for every call a `Calls` serves (any thread).

    `claim(key)` returns the answer already given for that reply, waiting while another call of
    the same reply has the question open; None means "ask": the caller asks and then `give`s
    the answer (always, even when asking failed: "cancel")."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Condition()
        self._answers: OrderedDict[str, _Answer] = OrderedDict()

    def claim(self, key: str, lasts: float, wait: float = CLAIM_SECONDS) -> Action | None:
        with self._lock:
            deadline = self._clock() + wait
            while True:
                found = self._answers.get(key)
                now = self._clock()
                if found is not None and found.until <= now:
                    del self._answers[key]
                    found = None
                if found is None:
                    self._answers[key] = _Answer(None, now + lasts)
                    while len(self._answers) > REMEMBERED:
                        self._answers.popitem(last=False)
                    return None
                if found.action is not None:
                    return found.action
                if now >= deadline:
                    return "cancel"  # the other call's question is still open
                self._lock.wait(deadline - now)

    def give(self, key: str, action: Action, lasts: float) -> None:
        with self._lock:
            self._answers[key] = _Answer(action, self._clock() + lasts)
            self._answers.move_to_end(key)
            self._lock.notify_all()
