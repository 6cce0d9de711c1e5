"""Harness hooks, served by the core: what `huiyi hook <harness> <Event>` answers.

Claude Code, Codex and DSH's Claude-Code bridge run a command at fixed points of a session and
hand it one JSON object on stdin (`session_id`, `cwd`, `transcript_path`, and per event
`source`, `prompt`, ...). The command is the stdlib front (`hook_front.py`); it passes that
object here, through the warm service or in its own process, and prints what comes back. Here:

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

Per-session anchor state (`recall.anchor.AnchorState`) lives in `HUIYI_HOME/hooks-state.json`,
changed under its own lock (`lock.file_lock`) and written atomically; only sessions with
something to remember (a compaction, or a PreCompact note) are kept, the `STATE_SESSIONS` most
recently changed of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from huiyi.errors import BusyError, HuiyiError, UsageError
from huiyi.lock import file_lock
from huiyi.memory.store import atomic_write
from huiyi.recall.anchor import AnchorState, latest_compaction, render_anchor
from huiyi.recall.scope import CallerContext, Scope
from huiyi.safety.budget import AUTO_RECALL_SECONDS
from huiyi.safety.exit import deliver_notes
from huiyi.store import queries
from huiyi.workspace import workspace_of

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = [
    "COMPACT_WAIT_SECONDS",
    "CONTEXT_EVENTS",
    "EVENTS",
    "HARNESSES",
    "LOCK_SECONDS",
    "AnchorBook",
    "HookAnswer",
    "HookCall",
    "Hooks",
    "answer",
]

#: `huiyi hook` harness names, and the source whose reader reads each one's logs
HARNESSES = {"claude-code": "claude", "codex": "codex", "dsh": "dsh"}
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop")
#: the events whose answer the harness puts in front of the model
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
#: how long a hook waits for the index writer lock (then it answers from what is indexed)
LOCK_SECONDS = 0.5
#: Stop waits longer: its whole job is to index the turn that just ended
STOP_LOCK_SECONDS = 2.0
#: how long SessionStart after a compaction waits for the compaction to reach the log (Claude
#: Code flushes its transcript about every 100 ms)
COMPACT_WAIT_SECONDS = 1.0
COMPACT_POLL_SECONDS = 0.05
#: how long a hook waits for the anchor state's lock (held for a read and a small write)
STATE_LOCK_SECONDS = 2.0
STATE_FILE = "hooks-state.json"
#: anchor states kept, the most recently changed first
STATE_SESSIONS = 500

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HookCall:
    """One hook, as the harness described it on stdin."""

    harness: str
    event: str
    session_id: str | None = None
    cwd: str | None = None
    transcript: str | None = None
    prompt: str | None = None
    #: SessionStart only: startup, resume, clear or compact
    source: str | None = None

    @classmethod
    def parse(cls, harness: object, event: object, payload: object) -> HookCall:
        """The hook's input checked; a `UsageError` says what is wrong with it."""
        if harness not in HARNESSES:
            raise UsageError(f"unknown harness {harness!r}; use one of {', '.join(HARNESSES)}")
        if event not in EVENTS:
            raise UsageError(f"unknown hook event {event!r}; huiyi serves {', '.join(EVENTS)}")
        assert isinstance(harness, str) and isinstance(event, str)
        if not isinstance(payload, Mapping):
            raise UsageError("the hook input must be a JSON object")
        named = payload.get("hook_event_name")
        if named is not None and named != event:
            raise UsageError(f"the hook input is for {str(named)[:40]!r}, not for {event}")
        values: dict[str, str | None] = {}
        for key in ("session_id", "cwd", "transcript_path", "prompt", "source"):
            value = payload.get(key)
            if value is not None and not isinstance(value, str):
                raise UsageError(f"the hook input's {key} must be a string")
            values[key] = value or None
        return cls(
            harness,
            event,
            session_id=values["session_id"],
            cwd=values["cwd"],
            transcript=values["transcript_path"],
            prompt=values["prompt"],
            source=values["source"],
        )

    def caller(self) -> CallerContext:
        """Who is asking: the workspace of `cwd` (when absolute) and the session id."""
        workspace = workspace_of(self.cwd) if self.cwd and os.path.isabs(self.cwd) else ""
        return CallerContext(workspace or None, self.session_id, how="hook")


@dataclass(slots=True)
class HookAnswer:
    """What the model gets (None: print nothing), and what went wrong on the way without
    stopping the hook (it goes to the hook log)."""

    context: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"context": self.context, "notes": list(self.notes)}


class AnchorBook:
    """The anchor states of every session in one small JSON file, changed under a lock."""

    def __init__(self, home: Path) -> None:
        self.path = home / STATE_FILE
        self.lock_path = home / (STATE_FILE + ".lock")

    @contextlib.contextmanager
    def session(self, session_id: str, now: int) -> Iterator[tuple[AnchorState, bool]]:
        """The state of one session and whether it had one, saved if the block changed it."""
        with file_lock(self.lock_path, timeout=STATE_LOCK_SECONDS, what="the hooks' anchor state"):
            states = self._read()
            known = session_id in states
            state = AnchorState.from_dict(states.get(session_id))
            before = state.as_dict()
            yield state, known
            if state.as_dict() == before or state.as_dict() == AnchorState().as_dict():
                return
            state.seen = now
            states[session_id] = state.as_dict()
            newest = sorted(states.items(), key=lambda item: item[1].get("seen", 0), reverse=True)
            kept = dict(newest[:STATE_SESSIONS])
            atomic_write(self.path, json.dumps(kept, sort_keys=True).encode("utf-8"))

    def _read(self) -> dict[str, dict[str, Any]]:
        """Every session's state; an unreadable file is an empty book (it is derived data)."""
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}


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
        self.book = AnchorBook(hy.settings.home)
        self.clock = clock
        self.sleep = sleep

    def handle(self, call: HookCall) -> HookAnswer:
        """Serve one hook (see the module docstring for what each event does)."""
        answer = HookAnswer()
        if call.event == "Stop":
            self._ingest(call, answer, STOP_LOCK_SECONDS)
        elif call.event == "PreCompact":
            self._ingest(call, answer, LOCK_SECONDS)
            self._note(call)
        elif not self.hy.settings.enabled:
            pass  # automatic recall is off: nothing goes to the model
        elif call.event == "SessionStart":
            self._ingest(call, answer, LOCK_SECONDS)
            if call.source == "compact":
                self._await_compaction(call, answer)
            answer.context = self._session_start(call)
        else:
            self._ingest(call, answer, LOCK_SECONDS)
            answer.context = self._prompt(call)
        return answer

    # -- the events ------------------------------------------------------------------------

    def _session_start(self, call: HookCall) -> str | None:
        caller = call.caller()
        parts = []
        block = self.hy.memory_of(caller).render()
        if block:
            parts.append(deliver_notes(block).text)
        anchor = self._anchor(call, prompt=False, offer=True)
        if anchor is not None:
            parts.append(anchor)
        return "\n\n".join(parts) or None

    def _prompt(self, call: HookCall) -> str | None:
        from huiyi.recall.auto import prompt_recall

        recall = self.hy.recall(call.caller(), seconds=AUTO_RECALL_SECONDS, semantic=False)
        found = prompt_recall(recall, call.prompt or "", self.hy.settings.triggers)
        anchor = self._anchor(call, prompt=True, offer=found is None)
        return found.text if found is not None else anchor

    def _note(self, call: HookCall) -> None:
        """PreCompact: remember the last seq indexed before the compaction."""
        row = self._current(call)
        if row is None or call.session_id is None:
            return
        last = next(
            iter(queries.events(self.hy.conn, row.sid, row.session.id, newest_first=True, limit=1)),
            None,
        )
        with self.book.session(call.session_id, self._now()) as (state, _known):
            state.noted = last.seq if last is not None else None

    # -- the anchor --------------------------------------------------------------------------

    def _anchor(self, call: HookCall, *, prompt: bool, offer: bool) -> str | None:
        """The anchor text when it is active, not offered yet this turn and `offer`ed (False:
        something else takes the turn); `prompt`: a user prompt, which counts one turn, else
        SessionStart."""
        row = self._current(call)
        if row is None or call.session_id is None:
            return None
        compaction = latest_compaction(self.hy.conn, row.sid, row.session.id)
        if compaction is None:
            return None
        with self.book.session(call.session_id, self._now()) as (state, known):
            state.follow(compaction, self._now(), known=known)
            shown = state.at_prompt() if prompt else state.at_session_start()
        if not (shown and offer):
            return None
        anchor = render_anchor(compaction, self.hy.settings.max_inject_chars)
        return anchor.text if anchor is not None else None

    def _await_compaction(self, call: HookCall, answer: HookAnswer) -> None:
        """After a compaction, wait (briefly) until the log shows one the state has not seen
        (and, when PreCompact noted the last seq before it, one written after that)."""
        row = self._current(call)
        if row is None or call.session_id is None:
            return
        with self.book.session(call.session_id, self._now()) as (state, _known):
            seen, noted = state.compaction, state.noted
        deadline = time.monotonic() + COMPACT_WAIT_SECONDS
        while not self._newer(row.sid, row.session.id, seen, noted):
            if time.monotonic() >= deadline:
                answer.notes.append("the compaction was not in the log yet; no anchor at start")
                return
            self.sleep(COMPACT_POLL_SECONDS)
            self._ingest(call, answer, LOCK_SECONDS)

    def _newer(self, sid: int, session_id: str, seen: int | None, noted: int | None) -> bool:
        found = latest_compaction(self.hy.conn, sid, session_id)
        return found is not None and found.seq != seen and (noted is None or found.seq > noted)

    # -- plumbing ----------------------------------------------------------------------------

    def _current(self, call: HookCall) -> queries.SessionRow | None:
        """The caller's own session, when it is indexed and visible to it."""
        if call.session_id is None:
            return None
        return Scope(self.hy.conn, call.caller()).current()

    def _ingest(self, call: HookCall, answer: HookAnswer, lock_seconds: float) -> None:
        """Index what is new in the hook's transcript; a missing one (a session that has not
        written yet) is skipped, a busy writer means answering from what is indexed."""
        if call.transcript is None or not os.path.isfile(call.transcript):
            return
        try:
            self.hy.index_log(HARNESSES[call.harness], call.transcript, lock_timeout=lock_seconds)
        except BusyError:
            answer.notes.append("the index was busy; answered from what was indexed")
        except UsageError as exc:  # a transcript outside the harness's folders: not read
            answer.notes.append(str(exc))

    def _now(self) -> int:
        return int(self.clock() * 1000)


def answer(
    hooks: Hooks, run: Callable[[Callable[[], HookAnswer]], HookAnswer], request: object
) -> dict[str, Any]:
    """The reply to one hook request `{"harness", "event", "input"}`: `{"context", "notes"}`,
    or `{"error": line}`. `run` runs the work where the index connection lives.

    It never raises: this is the top of a hook, which fails open (the front logs the error and
    prints nothing); a bug's traceback goes to stderr (the service's log)."""
    request = request if isinstance(request, Mapping) else {}
    try:
        call = HookCall.parse(request.get("harness"), request.get("event"), request.get("input"))
        return run(lambda: hooks.handle(call)).as_dict()
    except HuiyiError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # the top of a hook: it fails open, the bug is printed
        traceback.print_exc(file=sys.stderr)
        return {"error": f"internal error: {type(exc).__name__}: {exc}"}
