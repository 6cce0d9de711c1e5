"""Harness hooks, served by the core: what `huiyi hook <harness> <Event>` answers.

Claude Code, Codex and DSH's Claude-Code bridge run a command at fixed points of a session and
hand it one JSON object on stdin (`session_id`, `cwd`, `transcript_path`, and per event
`source`, `prompt`, ...). The command (`transports/hook_command.py`) hands that object here
along the one route, through the warm service or in its own process, read into a `HookCall`
by the harness's own hook form (`harnesses.hookform`), and prints what comes back. Here:

- **SessionStart**: the memory block (the user store and this workspace's, with the budget
  header; `safety.exit.deliver_notes`: redacted, the same bytes for the same files, so prompt
  caches hold), and the compaction anchor while it is active. After a compaction (Claude sends
  `source: "compact"`) the harness may not have written the compaction to its log yet: the hook
  waits for it, at most `COMPACT_WAIT_SECONDS`.
- **UserPromptSubmit**: at most one injection, within `maxInjectChars`: a trigger word's recall,
  else the gate's (`recall.auto.prompt_recall`), else the compaction anchor while it is active
  and SessionStart did not just offer it (a resumed session runs both before its first turn;
  the anchor SessionStart offered is that turn's). Each prompt is one turn of the anchor's
  count.
- **PreCompact**: the log is indexed at once, so everything about to be shadowed is in the index,
  and the last seq seen is noted in the anchor state.
- **Stop**: this session's log (`transcript_path`, and nothing else) is indexed at once, so the
  next search sees the turn that just ended.

With `enabled` off nothing is injected (Stop and PreCompact still index). Who is asking comes
from the input alone: the workspace of its `cwd` (the git root above it) and its `session_id`,
a `CallerContext` that the recall scope never widens. Recall here is lexical and fuzzy only
(`semantic=False`): a hook never waits on the embedding model, and it waits at most
`LOCK_SECONDS` for the index writer lock before answering from what is indexed.

Which anchor is due in which session is the recall layer's (`recall.anchors`): it keeps the
per-session state in `HUIYI_HOME/hooks-state.json` across the hook processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from huiyi.errors import BusyError, UsageError
from huiyi.harnesses import by_name
from huiyi.harnesses.hookform import CONTEXT_EVENTS, EVENTS, HookCall
from huiyi.model import CallerContext
from huiyi.safety.exit import deliver_notes
from huiyi.workspace import workspace_of

if TYPE_CHECKING:
    from huiyi.api import Anchors, Huiyi

__all__ = [
    "COMPACT_WAIT_SECONDS",
    "CONTEXT_EVENTS",
    "EVENTS",
    "LOCK_SECONDS",
    "HookAnswer",
    "HookCall",
    "Hooks",
    "caller_of",
    "parse",
]

#: how long a hook waits for the index writer lock (then it answers from what is indexed)
LOCK_SECONDS = 0.5
#: Stop waits longer: its whole job is to index the turn that just ended
STOP_LOCK_SECONDS = 2.0
#: how long SessionStart after a compaction waits for the compaction to reach the log (Claude
#: Code flushes its transcript about every 100 ms)
COMPACT_WAIT_SECONDS = 1.0
COMPACT_POLL_SECONDS = 0.05


def parse(harness: str, event: str, payload: object) -> HookCall:
    """A hook's input read by its harness's form; a `UsageError` says what is wrong with it
    (an unknown harness or event, a field of the wrong type)."""
    return by_name(harness).hooks.read(harness, event, payload)


def caller_of(call: HookCall) -> CallerContext:
    """Who is asking: the workspace of `cwd` (when absolute) and the session id."""
    workspace = workspace_of(call.cwd) if call.cwd and os.path.isabs(call.cwd) else ""
    return CallerContext(workspace or None, call.session_id, how="hook")


class HookAnswer:
    """What the model gets (None: print nothing), and what went wrong on the way without
    stopping the hook (it goes to the hook log)."""

    __slots__ = ("context", "notes")

    def __init__(self, context: str | None = None) -> None:
        self.context = context
        self.notes: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        return {"context": self.context, "notes": list(self.notes)}


class Hooks:
    """Serves hooks for one `Huiyi` (one HUIYI_HOME)."""

    def __init__(
        self,
        hy: Huiyi,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.hy = hy
        self.clock = clock
        self.sleep = sleep
        self._anchors: Anchors | None = None

    @property
    def anchors(self) -> Anchors:
        if self._anchors is None:
            self._anchors = self.hy.anchors(now=lambda: int(self.clock() * 1000))
        return self._anchors

    def handle(self, call: HookCall) -> HookAnswer:
        """Serve one hook (see the module docstring for what each event does)."""
        answer = HookAnswer()
        caller = caller_of(call)
        if call.event == "Stop":
            self._ingest(call, answer, STOP_LOCK_SECONDS)
        elif call.event == "PreCompact":
            self._ingest(call, answer, LOCK_SECONDS)
            self.anchors.note(caller)
        elif not self.hy.settings.enabled:
            pass  # automatic recall is off: nothing goes to the model
        elif call.event == "SessionStart":
            self._ingest(call, answer, LOCK_SECONDS)
            if call.source == "compact":
                self._await_compaction(call, caller, answer)
            answer.context = self._session_start(caller)
        else:
            self._ingest(call, answer, LOCK_SECONDS)
            answer.context = self._prompt(call, caller)
        return answer

    # -- the events ------------------------------------------------------------------------

    def _session_start(self, caller: CallerContext) -> str | None:
        parts = []
        block = self.hy.agent_memory(caller).render()
        if block:
            parts.append(deliver_notes(block).text)
        anchor = self.anchors.offer(caller, prompt=False, offer=True)
        if anchor is not None:
            parts.append(anchor)
        return "\n\n".join(parts) or None

    def _prompt(self, call: HookCall, caller: CallerContext) -> str | None:
        found = self.hy.prompt_recall(caller, call.prompt or "")
        anchor = self.anchors.offer(caller, prompt=True, offer=found is None)
        return found if found is not None else anchor

    def _await_compaction(self, call: HookCall, caller: CallerContext, answer: HookAnswer) -> None:
        """After a compaction, wait (briefly) until the log shows one the state has not seen."""
        arrived = self.anchors.arrival(caller)
        if arrived is None:
            return
        deadline = time.monotonic() + COMPACT_WAIT_SECONDS
        while not arrived():
            if time.monotonic() >= deadline:
                answer.notes.append("the compaction was not in the log yet; no anchor at start")
                return
            self.sleep(COMPACT_POLL_SECONDS)
            self._ingest(call, answer, LOCK_SECONDS)

    # -- plumbing ----------------------------------------------------------------------------

    def _ingest(self, call: HookCall, answer: HookAnswer, lock_seconds: float) -> None:
        """Index what is new in the hook's transcript; a missing one (a session that has not
        written yet) is skipped, a busy writer means answering from what is indexed."""
        if call.transcript is None or not os.path.isfile(call.transcript):
            return
        source = by_name(call.harness).source
        try:
            self.hy.index_log(source, call.transcript, lock_timeout=lock_seconds)
        except BusyError:
            answer.notes.append("the index was busy; answered from what was indexed")
        except UsageError as exc:  # a transcript outside the harness's folders: not read
            answer.notes.append(str(exc))
