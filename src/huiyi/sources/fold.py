"""How the JSONL readers (Claude, Codex, generic) turn one file into sessions, read after read.

A reader's format module supplies a *fold*: an object built from the cursor `state` of the
previous read, fed this read's records one by one, then asked for the `state` to keep and the
`chunks` to index (`SessionFold`). `JsonlReader` runs that loop over `JsonLines` once for all
three, so a format module is only about its records. Each record goes through
`base.take_record`, so `feed` takes everything it needs from a record before it changes
anything: a record that raises half way is skipped as `malformed-record` and leaves the fold
as it was.

The memory a fold keeps between reads of one file has one home per shape:

- `FileSession` is a file that is one session (Claude transcripts, Codex rollouts). It keeps the
  running seq counter (these formats number nothing, so events are counted per file and the
  same bytes always get the same seqs, however the reads were cut) and the session's facts so
  far, saved under the keys `seq`, `cwd`, `created` and `updated`. A subclass adds the keys of
  its own format in `__init__` and `state()`.
- `News` is one session's news from this read (events by seq, where compaction cut), which
  `FileSession` is built on and the generic fold keeps one of per session.

`FileSession` also pairs tool calls with their results (`emit_call`, `emit_result`) so that
huiyi's own traffic is marked `own` on both sides (see `sources.base`): a call to one of its
tools is known by name, and a result holding its envelope also marks the call it answers, even
one emitted by an earlier read (it is emitted again under its seq, which the store upserts).
For that, short calls still waiting for their result are kept under the key `pending`.

The saved keys are a stored format: an index written by an earlier version hands them back on
its next read, so a key may be added, or replaced by a new key while the old one is still read
(the Claude reader's `uuids` by `seen`), but never renamed or given a new meaning.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from huiyi.model import Event, Kind, Surface
from huiyi.sources.base import (
    MAX_LINE_BYTES,
    READ_BYTES,
    READ_RECORDS,
    RECORD_AT,
    Cursor,
    ReadResult,
    SessionChunk,
    SessionUpdate,
    Where,
    is_own_output,
    is_own_tool,
    open_log,
    take_record,
)
from huiyi.sources.jsonl import JsonLines, parse_record, remember

#: Calls waiting for their result that a read remembers (oldest forgotten first), and the
#: longest call text remembered: huiyi's tools take short arguments, so a longer call is
#: never one of them and costs the state nothing.
MAX_PENDING = 32
MAX_PENDING_CHARS = 2_000


class SessionFold(Protocol):
    """What one file's records build up (its sessions), carried between reads in `state`."""

    def feed(self, record: dict[str, Any]) -> None: ...

    def state(self) -> dict[str, Any]: ...

    def chunks(self) -> list[SessionChunk]: ...


#: Builds a fold from the file, the previous read's state (its own copy) and the skip counter.
Fold = Callable[[Path, dict[str, Any], Counter[str]], SessionFold]


class JsonlReader:
    """A `Reader` of one JSONL format: a subclass names its `source`, hands its roots and its
    fold to `__init__` and says how files are found under the roots (`discover`)."""

    source: ClassVar[str]

    def __init__(self, roots: Iterable[Path], fold: Fold) -> None:
        self._roots = list(roots)
        self._fold = fold

    def roots(self) -> list[Path]:
        return list(self._roots)

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        """Feed the records after `cursor` through the fold; bad lines are counted by
        `JsonLines`, unusable records by the fold and malformed ones by `take_record`, so no
        content makes a read fail."""
        result = ReadResult(offset=cursor.offset)
        fold = self._fold(path, copy.deepcopy(cursor.state), result.skipped)
        lines = JsonLines(path, cursor.offset, result.skipped)
        stop_at = cursor.offset + READ_BYTES
        token = RECORD_AT.set(None)
        try:
            for taken, record in enumerate(lines, 1):
                RECORD_AT.set((lines.start, 0, lines.offset - lines.start))
                take_record(fold.feed, record, result.skipped)
                if lines.offset >= stop_at or taken >= READ_RECORDS:
                    result.more = True  # the index writes this much, then reads on
                    break
            RECORD_AT.set(None)
            result.offset = lines.offset
            result.state = fold.state()
            result.chunks = fold.chunks()
        finally:
            RECORD_AT.reset(token)
        return result

    def read_at(self, path: Path, where: Where) -> list[Event]:
        """The events of the one record at `where` (a `Where` a read filed its events under),
        read after the file's first record, which may be a header the record needs (a Codex
        rollout's session id): two lines read, whatever the file's size. An event the fold
        makes of several records may come out otherwise than a whole read makes it, so the
        caller checks what it gets (no-copy mode compares digests). Raises `OSError` only."""
        offset, _, span = where
        skipped: Counter[str] = Counter()
        with open_log(path) as handle:
            first = handle.readline(MAX_LINE_BYTES + 1) if offset > 0 else b""
            handle.seek(offset)
            line = handle.read(span)
        if not line.endswith(b"\n") or len(line) != span:
            return []
        fold = self._fold(path, {}, skipped)
        token = RECORD_AT.set(None)
        try:
            for at, raw in ((0, first), (offset, line)):
                if not raw.endswith(b"\n"):
                    continue
                record = parse_record(raw[:-1], skipped, at_start=at == 0)
                if record is not None:
                    RECORD_AT.set((at, 0, len(raw)))
                    take_record(fold.feed, record, skipped)
            chunks = fold.chunks()
        except AssertionError:
            return []  # a record the fold cannot take out of its file (no session known yet)
        finally:
            RECORD_AT.reset(token)
        return [event for chunk in chunks for event in chunk.events]


class News:
    """One session's news from this read: its events by seq (a later event under the same seq
    replaces the earlier one, as the store upserts it) and where compaction cut it."""

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id
        self.events: dict[int, Event] = {}
        self.shadow_before: int | None = None
        self.where: dict[int, Where] = {}

    def add(
        self,
        seq: int,
        time: int,
        kind: Kind,
        role: str,
        text: str,
        *,
        injected: bool = False,
        tool_name: str | None = None,
        uid: str | None = None,
        surface: Surface = Surface.CURRENT,
        own: bool = False,
    ) -> None:
        assert self.session_id is not None, "an event needs its session"
        self.events[seq] = Event(
            session=self.session_id,
            seq=seq,
            time=time,
            kind=kind,
            role=role,
            text=text,
            surface=surface,
            injected=injected,
            tool_name=tool_name,
            uid=uid,
            own=own,
        )
        where = RECORD_AT.get()
        if where is not None:
            self.where[seq] = where

    def chunk(self, update: SessionUpdate) -> SessionChunk:
        events = [self.events[seq] for seq in sorted(self.events)]
        return SessionChunk(
            session=update, events=events, shadow_before=self.shadow_before, where=self.where
        )


class FileSession(News):
    """A file that is one session, as far as it has been read; `state()` round-trips it through
    the cursor (see the module docstring for the keys)."""

    source: ClassVar[str]

    def __init__(
        self, session_id: str | None, state: dict[str, Any], skipped: Counter[str]
    ) -> None:
        super().__init__(session_id)
        self.skipped = skipped
        self.seq: int = state.get("seq", 0)
        self.cwd: str | None = state.get("cwd")
        self.created: int | None = state.get("created")
        self.updated: int | None = state.get("updated")
        #: short tool calls waiting for their result: call id -> [seq, time, text, name, uid]
        self.pending: dict[str, list[Any]] = state.get("pending", {})
        #: whether this read brought any record of the session
        self.touched = False

    def state(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "cwd": self.cwd,
            "created": self.created,
            "updated": self.updated,
            "pending": self.pending,
        }

    def chunks(self) -> list[SessionChunk]:
        """This read's news: none until there is something worth a session row."""
        if self.session_id is None or not self.has_news():
            return []
        update = SessionUpdate(
            id=self.session_id,
            source=self.source,
            cwd=self.cwd,
            created=self.created,
            updated=self.updated,
        )
        self.describe(update)
        return [self.chunk(update)]

    def has_news(self) -> bool:
        """Whether this read is worth a session row (by default: it read a record)."""
        return self.touched

    def describe(self, update: SessionUpdate) -> None:
        """Fill in what the format knows beyond cwd and times (title, parent, subagent)."""

    def note_time(self, time: int | None) -> int:
        """The time of a record stamped `time` (`jsonl.parse_time` of its stamp), which widens
        the session's created..updated; a record without a usable stamp (None) takes the last
        time known (0 before any)."""
        if time is None:
            return self.updated or self.created or 0
        if self.created is None:
            self.created = time
        self.updated = time if self.updated is None else max(self.updated, time)
        return time

    def next_seq(self) -> int:
        seq = self.seq
        self.seq += 1
        return seq

    def emit(
        self,
        kind: Kind,
        role: str,
        text: str,
        time: int,
        *,
        injected: bool = False,
        tool_name: str | None = None,
        uid: str | None = None,
        seq: int | None = None,
        own: bool = False,
    ) -> bool:
        """Add an event under the next seq (or, with `seq`, replace that one); blank text, or
        no session known yet, adds nothing and takes no seq."""
        if not text.strip() or self.session_id is None:
            return False
        if seq is None:
            seq = self.next_seq()
        self.add(
            seq, time, kind, role, text, injected=injected, tool_name=tool_name, uid=uid, own=own
        )
        return True

    def emit_call(
        self, call_id: str | None, name: str, text: str, time: int, *, uid: str | None = None
    ) -> bool:
        """A TOOL_CALL; one to huiyi's own tools is marked `own`, another short one waits in
        `pending` for a result that may show it was huiyi's after all."""
        seq = self.seq
        own = is_own_tool(name)
        emitted = self.emit(
            Kind.TOOL_CALL, "assistant", text, time, tool_name=name, uid=uid, own=own
        )
        if emitted and call_id is not None and not own and len(text) <= MAX_PENDING_CHARS:
            remember(self.pending, call_id, [seq, time, text, name, uid], MAX_PENDING)
        return emitted

    def emit_result(
        self,
        call_id: str | None,
        name: str | None,
        text: str,
        time: int,
        *,
        uid: str | None = None,
    ) -> bool:
        """A TOOL_RESULT; huiyi's own (by its tool's name or its envelope) is marked `own`, and
        so is the call it answers, emitted again under its seq."""
        own = is_own_tool(name) or is_own_output(text)
        call = self.pending.pop(call_id, None) if call_id is not None else None
        if own and call is not None:
            seq, call_time, call_text, call_name, call_uid = call
            self.emit(
                Kind.TOOL_CALL,
                "assistant",
                call_text,
                call_time,
                tool_name=call_name,
                uid=call_uid,
                seq=seq,
                own=True,
            )
        return self.emit(Kind.TOOL_RESULT, "tool", text, time, tool_name=name, uid=uid, own=own)

    def compact(self) -> None:
        """Compaction: what came before leaves the model's view (the next seq on is current).
        Calls still waiting are forgotten, so a call emitted again is never made current."""
        self.shadow_before = self.seq
        self.pending.clear()
