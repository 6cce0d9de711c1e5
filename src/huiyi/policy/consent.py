"""Ask before recall: a read of another session's text is confirmed with the user first.

Optional (`Settings.ask_before_recall`, off by default) and only where the client declared the
MCP `elicitation` capability; with a client that did not, calls answer as if it were off.

Which calls ask, and the question's words, is the recall layer's (`recall.consent`): those
whose answer would show text of another session than the caller's current one.

One answer covers the rest of the reply, so a model that searches, expands and reads in one
reply asks the user once. How a reply is recognised (`reply_key`), best first:

1. as the caller's harness names it (`huiyi.harnesses.<name>.caller.reply_of`): Codex by the
   turn id every call of the reply carries, Claude Code by the `promptId` its transcript gives
   the reply of the call's `tool_use`;
2. anything else (DSH, older clients, a transcript line not yet on disk): the same client
   connection and caller session within `WINDOW_SECONDS` of the answer.

A declined or dismissed question covers the reply too: the model gets one plain answer saying
the user declined, and asking again in the same reply gets the same answer without a second
question. Two calls of one reply that arrive together wait for the one question (`Answers`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from huiyi.model import CallerContext
from huiyi.policy.caller import CallerFinder

__all__ = [
    "ACTIONS",
    "CLAIM_SECONDS",
    "WINDOW_SECONDS",
    "Action",
    "Answers",
    "action_of",
    "declined",
    "reply_key",
]

Action = Literal["accept", "decline", "cancel"]
#: what a client may answer to `elicitation/create`; anything else counts as "cancel"
ACTIONS: tuple[Action, ...] = ("accept", "decline", "cancel")
#: without a turn id, one answer covers the same connection and session for this long
WINDOW_SECONDS = 60.0
#: at most this many answers are remembered; the oldest go first
REMEMBERED = 1024
#: how long a call waits for the question another call of its reply has open: longer than
#: any front waits for the user (`front.ASK_SECONDS`)
CLAIM_SECONDS = 300.0


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
    meta: Mapping[str, Any] | None, caller: CallerContext, client: str, finder: CallerFinder
) -> tuple[str, float]:
    """The key of the reply `meta`'s call belongs to and how long an answer for it lasts: as
    the caller's harness names its replies (`CallerFinder.reply_of`), else the same client
    connection and caller session within `WINDOW_SECONDS`."""
    named = finder.reply_of(meta, caller)
    if named is not None:
        return named
    who = caller.session_id or caller.workspace or ""
    return f"window:{client}:{who}", WINDOW_SECONDS


# -- the answers given so far ------------------------------------------------------------------


@dataclass(slots=True)
class _Answer:
    action: Action | None  # None while the question is open
    until: float


class Answers:
    """The user's answers per reply, for every call the MCP tools serve (any thread).

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
