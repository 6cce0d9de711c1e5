"""Which session's compaction anchor is due, kept across the hook processes that ask.

`recall.anchor` says what an anchor holds and how its turns are counted (`AnchorState`); a
hook runs in a new process each time, so the state of every session lives in one small JSON
file, `HUIYI_HOME/hooks-state.json` (`AnchorBook`), changed under its own lock (`lock.file_lock`)
and written atomically. Only sessions with something to remember (a compaction, or a note taken
before one) are kept, the `STATE_SESSIONS` most recently changed of them; an unreadable file is
an empty book (it is derived data).

`Anchors` answers the hooks' three questions for a caller's own session: the anchor to offer
now, if any (`offer`); what to remember right before a compaction (`note`); and whether the
compaction a harness announced has reached its log yet (`arrival`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from huiyi.files import SessionBook
from huiyi.model import CallerContext
from huiyi.recall.anchor import AnchorState, latest_compaction, render_anchor
from huiyi.recall.scope import Scope
from huiyi.store import queries
from huiyi.store.index import Index

__all__ = ["STATE_FILE", "STATE_LOCK_SECONDS", "STATE_SESSIONS", "AnchorBook", "Anchors"]

#: how long a hook waits for the anchor state's lock (held for a read and a small write)
STATE_LOCK_SECONDS = 2.0
STATE_FILE = "hooks-state.json"
#: anchor states kept, the most recently changed first
STATE_SESSIONS = 500


class AnchorBook:
    """The anchor states of every session, in one small JSON file (`files.SessionBook`)."""

    def __init__(self, home: Path) -> None:
        self.book = SessionBook(
            home / STATE_FILE,
            keep=STATE_SESSIONS,
            what="the hooks' anchor state",
            lock_seconds=STATE_LOCK_SECONDS,
        )
        self.path = self.book.path

    @contextlib.contextmanager
    def session(self, session_id: str, now: int) -> Iterator[tuple[AnchorState, bool]]:
        """The state of one session and whether it had one, saved if the block changed it."""
        with self.book.entry(session_id, now) as (record, known):
            state = AnchorState.from_dict(record)
            before = state.as_dict()
            yield state, known
            if state.as_dict() == before:
                return
            record.clear()
            if state.as_dict() != AnchorState().as_dict():
                record.update(state.as_dict())


class Anchors:
    """The compaction anchors of the sessions of one index, as its hooks ask for them."""

    def __init__(self, conn: Index, home: Path, max_chars: int, now: Callable[[], int]) -> None:
        """`max_chars`: the injection budget an anchor must fit; `now()`: epoch ms."""
        self.conn = conn
        self.book = AnchorBook(home)
        self.max_chars = max_chars
        self.now = now

    def _current(self, caller: CallerContext) -> queries.SessionRow | None:
        """The caller's own session, when it is indexed and visible to it."""
        if caller.session_id is None:
            return None
        return Scope(self.conn, caller).current()

    def offer(self, caller: CallerContext, *, prompt: bool, offer: bool) -> str | None:
        """The anchor text when it is active, not offered yet this turn and `offer`ed (False:
        something else takes the turn); `prompt`: a user prompt, which counts one turn, else
        a session start."""
        row = self._current(caller)
        if row is None or caller.session_id is None:
            return None
        compaction = latest_compaction(self.conn, row.sid, row.session.id)
        if compaction is None:
            return None
        with self.book.session(caller.session_id, self.now()) as (state, known):
            state.follow(compaction, self.now(), known=known)
            shown = state.at_prompt() if prompt else state.at_session_start()
        if not (shown and offer):
            return None
        anchor = render_anchor(compaction, self.max_chars)
        return anchor.text if anchor is not None else None

    def latest(self, caller: CallerContext) -> int | None:
        """The seq of the latest compaction of the caller's own session, None for none."""
        row = self._current(caller)
        if row is None:
            return None
        compaction = latest_compaction(self.conn, row.sid, row.session.id)
        return compaction.seq if compaction is not None else None

    def note(self, caller: CallerContext) -> None:
        """Right before a compaction: remember the last seq indexed, so the compaction that
        follows is told from any earlier one."""
        row = self._current(caller)
        if row is None or caller.session_id is None:
            return
        last = next(
            iter(self.conn.events(row.sid, row.session.id, newest_first=True, limit=1)),
            None,
        )
        with self.book.session(caller.session_id, self.now()) as (state, _known):
            state.noted = last.seq if last is not None else None

    def arrival(self, caller: CallerContext) -> Callable[[], bool] | None:
        """After a harness said it compacted: a test of whether the log shows a compaction the
        state has not seen (and, when one was noted before it, one written after that); None
        when the caller's session is not indexed, so there is nothing to wait for."""
        row = self._current(caller)
        if row is None or caller.session_id is None:
            return None
        with self.book.session(caller.session_id, self.now()) as (state, _known):
            seen, noted = state.compaction, state.noted
        sid, session_id = row.sid, row.session.id

        def arrived() -> bool:
            found = latest_compaction(self.conn, sid, session_id)
            return found is not None and found.seq != seen and (noted is None or found.seq > noted)

        return arrived
