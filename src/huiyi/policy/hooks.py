"""Harness hooks, served by the core: what `huiyi hook <harness> <Event>` answers.

Claude Code, Codex and DSH's Claude-Code bridge run a command at fixed points of a session and
hand it one JSON object on stdin (`session_id`, `cwd`, `transcript_path`, and per event
`source`, `prompt`, ...). The command (`transports/hook_command.py`) hands that object here
along the one route, through the warm service or in its own process, read into a `HookCall`
by the harness's own hook form (`harnesses.hookform`), and prints what comes back. Here:

- **SessionStart**: the memory block (the user store and this workspace's, with the budget
  header; `safety.exit.deliver_notes`: redacted, the same bytes for the same files, so prompt
  caches hold), and the compaction anchor while it is active. A resumed session (`source:
  "resume"`) still holds the block it was given: it comes again only when due (changed, or a
  compaction dropped it), as with a prompt. After a compaction (Claude sends
  `source: "compact"`) the harness may not have written the compaction to its log yet: the hook
  waits for it, at most `COMPACT_WAIT_SECONDS`.
- **UserPromptSubmit**: at most one injection, within `maxInjectChars`: a trigger word's recall,
  else the gate's (`recall.auto.prompt_recall`), else the compaction anchor while it is active
  and SessionStart did not just offer it (a resumed session runs both before its first turn;
  the anchor SessionStart offered is that turn's). Each prompt is one turn of the anchor's
  count. A trigger word that recalls nothing tells the model why in one line (nothing matches,
  no sessions yet, nothing compacted away), as every other empty answer does.
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

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huiyi.errors import BusyError, UsageError
from huiyi.files import SessionBook
from huiyi.harnesses import by_name
from huiyi.harnesses.hookform import CONTEXT_EVENTS, EVENTS, HookCall
from huiyi.model import CallerContext
from huiyi.safety.exit import deliver_notes, looks_delivered
from huiyi.workspace import workspace_of

if TYPE_CHECKING:
    from huiyi.api import Anchors, Huiyi
    from huiyi.config import Settings

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
GIVEN_FILE = "hooks-given.json"
#: sessions whose deliveries are remembered, the most recently served first
GIVEN_SESSIONS = 500
#: injected texts remembered per session (to know them again in a prompt)
GIVEN_TEXTS = 8
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


class Given:
    """What the hooks put in front of each session's model, kept across the hook processes of
    that session (`files.SessionBook`): a digest of the memory block it last got and the
    compaction it got it after, and the last few texts injected, so that one of them coming
    back as a "prompt" is known for huiyi's own (a harness that queues hook context as input,
    as DSH's bridge does with SessionStart's, runs UserPromptSubmit on it)."""

    def __init__(self, home: Path) -> None:
        self.book = SessionBook(
            home / GIVEN_FILE, keep=GIVEN_SESSIONS, what="what the hooks gave each session"
        )

    def block_due(self, session_id: str, block: str, compaction: int | None, now: int) -> bool:
        """Whether the memory `block` is due for the session now (never given, changed since,
        or a compaction newer than the one it was given after), noted as given when it is."""
        digest = _digest(block)
        with self.book.entry(session_id, now) as (record, _known):
            after = record.get("compaction")
            newer = compaction is not None and (not isinstance(after, int) or compaction > after)
            if record.get("block") == digest and not newer:
                return False
            record["block"] = digest
            record["compaction"] = compaction
            return True

    def gave(self, session_id: str, text: str, now: int) -> None:
        """Remember an injected text (its length and digest), the newest `GIVEN_TEXTS` kept."""
        with self.book.entry(session_id, now) as (record, _known):
            texts = [t for t in record.get("texts", []) if _pair(t)]
            record["texts"] = [*texts, [len(text), _digest(text)]][-GIVEN_TEXTS:]

    def strip(self, session_id: str, prompt: str) -> str:
        """The prompt without the texts the hooks injected into this session (whole, at its
        start or its end, as a harness joins queued messages); what is left is the person's."""
        record = self.book.read().get(session_id, {})
        pairs = [t for t in record.get("texts", []) if _pair(t)]
        changed = True
        while changed and prompt:
            changed = False
            for length, digest in pairs:
                for piece, rest in (
                    (prompt[:length], prompt[length:]),
                    (prompt[-length:], prompt[:-length]),
                ):
                    if len(piece) == length and _digest(piece) == digest:
                        prompt, changed = rest.strip(), True
                        break
        return prompt


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _pair(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int)
        and value[0] > 0
        and isinstance(value[1], str)
    )


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
        self._given: Given | None = None

    @property
    def anchors(self) -> Anchors:
        if self._anchors is None:
            self._anchors = self.hy.anchors(now=self._now)
        return self._anchors

    def handle(self, call: HookCall) -> HookAnswer:
        """Serve one hook (see the module docstring for what each event does)."""
        answer = HookAnswer()
        caller = caller_of(call)
        adapter = by_name(call.harness)
        if call.event == "Stop":
            self._ingest(call, answer, STOP_LOCK_SECONDS)
        elif call.event == "PreCompact":
            self._ingest(call, answer, LOCK_SECONDS)
            self.anchors.note(caller)
        elif not self.hy.settings.enabled:
            pass  # automatic recall is off: nothing goes to the model
        elif call.event == "SessionStart":
            self._ingest(call, answer, LOCK_SECONDS)
            if adapter.memory_with_first_prompt:
                return answer  # its answer would come after the first request: the prompt brings it
            if call.source == "compact":
                self._await_compaction(call, caller, answer)
            answer.context = self._session_start(call, caller)
        else:
            self._ingest(call, answer, LOCK_SECONDS)
            answer.context = self._prompt(call, caller)
        if answer.context and caller.session_id:
            self.given.gave(caller.session_id, answer.context, self._now())
        return answer

    @property
    def given(self) -> Given:
        if self._given is None:
            self._given = Given(self.hy.settings.home)
        return self._given

    def _now(self) -> int:
        return int(self.clock() * 1000)

    # -- the events ------------------------------------------------------------------------

    def _memory(self, call: HookCall, caller: CallerContext, *, always: bool) -> str | None:
        """The memory block for this session: at its start (`always`), else only when due
        (never given, changed, or dropped by a compaction since). Never for a subagent (the
        model's own worker), nor the stores the harness already reads as a digest."""
        session = self.hy.current_session(caller)
        if session is not None and session.is_subagent:
            return None
        adapter = by_name(call.harness)
        leave_out: frozenset[str] = frozenset()
        if adapter.reads_digests:
            digested: Callable[[Settings, str | None], frozenset[str]] = adapter.part(
                "agents"
            ).digested
            leave_out = digested(self.hy.settings, caller.workspace)
        block = self.hy.agent_memory(caller).render(leave_out=leave_out)
        if not block:
            return None
        if caller.session_id is not None:
            due = self.given.block_due(
                caller.session_id, block, self.anchors.latest(caller), self._now()
            )
            if not (due or always):
                return None
        return deliver_notes(block).text

    def _session_start(self, call: HookCall, caller: CallerContext) -> str | None:
        parts = []
        block = self._memory(call, caller, always=call.source != "resume")
        if block is not None:
            parts.append(block)
        anchor = self.anchors.offer(caller, prompt=False, offer=True)
        if anchor is not None:
            parts.append(anchor)
        return "\n\n".join(parts) or None

    def _prompt(self, call: HookCall, caller: CallerContext) -> str | None:
        prompt = call.prompt or ""
        if caller.session_id is not None:
            prompt = self.given.strip(caller.session_id, prompt)
        if not prompt.strip() or looks_delivered(prompt):
            return None  # huiyi's own text, queued back as input: no turn of the person's
        parts = []
        block = self._memory(call, caller, always=False)
        if block is not None:
            parts.append(block)
        found, nothing = self.hy.prompt_outcome(caller, prompt)
        anchor = self.anchors.offer(caller, prompt=True, offer=found is None)
        recalled = found if found is not None else anchor
        if recalled is not None:
            parts.append(recalled)
        if nothing is not None:  # a trigger word asked and nothing came: the model is told why
            parts.append(nothing)
        return "\n\n".join(parts) or None

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
