"""The generic JSONL import format (`huiyi index --jsonl PATH`), documented in
`docs/generic-jsonl.md`.

It exists so that any other tool's history can be indexed after a few lines of conversion, so
it is small and forgiving: one JSON object per line; optional `session` header lines name a
session and give its cwd and title; message lines carry `role` and `text` and whatever else
they know (`time`, `seq`, `kind`, `tool`, `injected`, `compacted`, `uid`); a `compaction`
line shadows everything before it. A file without headers is one session whose id comes from
its path and whose cwd is a line's `cwd` or the file's folder.

Seqs may be given; where they are not, each session counts on from its last seq (the counters
live in the cursor state), so the same bytes always get the same seqs and appending works.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from huiyi.model import Kind, Surface
from huiyi.sources.base import (
    BAD_RECORD,
    MAX_SEQ,
    UNKNOWN_TYPE,
    SessionChunk,
    SessionUpdate,
    name_text,
    valid_seq,
)
from huiyi.sources.fold import JsonlReader, News
from huiyi.sources.jsonl import as_str, clean_text, jsonl_files, parse_time

#: role -> (kind, injected by default)
ROLES: dict[str, tuple[Kind, bool]] = {
    "user": (Kind.USER, False),
    "assistant": (Kind.ASSISTANT, False),
    "tool": (Kind.TOOL_RESULT, False),
    "system": (Kind.USER, True),
}
KINDS: dict[str, Kind] = {
    k.value: k for k in (Kind.USER, Kind.ASSISTANT, Kind.TOOL_CALL, Kind.TOOL_RESULT, Kind.SUMMARY)
}
#: Numbers below this are taken as epoch seconds, not milliseconds (1e11 ms is March 1973).
_SECONDS_BELOW = 100_000_000_000


class GenericReader(JsonlReader):
    """Reads files in the generic format: each path is a file or a folder of `*.jsonl`."""

    source: ClassVar[str] = "jsonl"

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__(paths, _Log)

    def discover(self) -> Iterator[Path]:
        for root in self.roots():
            if root.is_dir():
                yield from jsonl_files(root)
            elif root.exists():  # a file, or a FIFO or device the index counts as no file
                yield root


def default_session_id(path: Path) -> str:
    """The id of a headerless file's session: its stem plus a short hash of its full path, so
    two `history.jsonl` in different folders stay apart."""
    digest = hashlib.sha1(os.path.abspath(path).encode("utf-8", "surrogateescape"))
    return f"{name_text(path.stem)}-{digest.hexdigest()[:8]}"


def parse_generic_time(value: object) -> int | None:
    """Epoch ms, epoch seconds (numbers below 1e11) or an ISO 8601 string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 0 < abs(value) < _SECONDS_BELOW:
        return parse_time(value * 1000)
    return parse_time(value)


class _News(News):
    """One session's news from this read, with what it taught about the session's row."""

    def __init__(self, update: SessionUpdate) -> None:
        super().__init__(update.id)
        self.update = update


class _Log:
    """What one file has taught us so far; `state()` round-trips it through the cursor."""

    def __init__(self, path: Path, state: dict[str, Any], skipped: Counter[str]) -> None:
        self.path = path
        self.skipped = skipped
        self.next_seq: dict[str, int] = state.get("sessions", {})
        self.current: str | None = state.get("current")
        self.last_time: int | None = state.get("time")
        self.news: dict[str, _News] = {}

    def state(self) -> dict[str, Any]:
        return {"sessions": self.next_seq, "current": self.current, "time": self.last_time}

    # -- records ---------------------------------------------------------------------------

    def chunks(self) -> list[SessionChunk]:
        return [news.chunk(news.update) for news in self.news.values()]

    def feed(self, record: dict[str, Any]) -> None:
        rtype = record.get("type", "message")
        if rtype == "session":
            self._header(record)
        elif rtype == "message":
            self._message(record)
        elif rtype == "compaction":
            self._compaction(record)
        else:
            self.skipped[UNKNOWN_TYPE] += 1

    def _header(self, record: dict[str, Any]) -> None:
        session_id = as_str(record.get("id"))
        if session_id is None:
            self.skipped[BAD_RECORD] += 1
            return
        cwd = as_str(record.get("cwd"))
        title = as_str(record.get("title"))
        created = parse_generic_time(record.get("created"))
        parent = as_str(record.get("parent"))
        subagent = record.get("subagent")
        self.current = session_id
        update = self._session(session_id, cwd).update
        update.title = title or update.title
        update.created = created or update.created
        update.parent = parent or update.parent
        if isinstance(subagent, bool):
            update.is_subagent = subagent

    def _message(self, record: dict[str, Any]) -> None:
        role = record.get("role")
        text = record.get("text")
        kind_name = record.get("kind")
        if (
            not isinstance(role, str)
            or role not in ROLES
            or not isinstance(text, str)
            or (kind_name is not None and kind_name not in KINDS)
        ):
            self.skipped[BAD_RECORD] += 1
            return
        kind, injected = ROLES[role]
        if isinstance(kind_name, str):
            kind = KINDS[kind_name]
        if isinstance(record.get("injected"), bool):
            injected = record["injected"]
        surface = Surface.SHADOWED if record.get("compacted") is True else Surface.CURRENT
        place = self._place(record)
        if place is None:
            self.skipped[BAD_RECORD] += 1
            return
        news = self._session(place.session, place.cwd)
        self._add(news, place, kind, role, clean_text(text), injected=injected, surface=surface)

    def _compaction(self, record: dict[str, Any]) -> None:
        summary = record.get("summary")
        place = self._place(record)
        if place is None:
            self.skipped[BAD_RECORD] += 1
            return
        news = self._session(place.session, place.cwd)
        news.shadow_before = max(place.seq, news.shadow_before or 0)
        if isinstance(summary, str):
            self._add(news, place, Kind.SUMMARY, "user", clean_text(summary), injected=True)

    # -- helpers ---------------------------------------------------------------------------

    def _place(self, record: dict[str, Any]) -> _Place | None:
        """Where a message or compaction line goes, read whole before anything changes (see
        `base.take_record`); None when its `session` or `seq` cannot be used."""
        session = record.get("session")
        given = record.get("seq")
        if session is not None and as_str(session) is None:
            return None
        if given is not None and not (
            isinstance(given, int) and not isinstance(given, bool) and 0 <= given <= MAX_SEQ
        ):
            return None
        session_id = as_str(session) or self.current or default_session_id(self.path)
        seq = valid_seq(self.next_seq.get(session_id, 0)) if given is None else given
        return _Place(
            session=session_id,
            cwd=as_str(record.get("cwd")),
            seq=seq,
            time=parse_generic_time(record.get("time")),
            tool=as_str(record.get("tool")),
            uid=as_str(record.get("uid")),
        )

    def _session(self, session_id: str, cwd: str | None) -> _News:
        news = self.news.get(session_id)
        if news is None:
            update = SessionUpdate(id=session_id, source=GenericReader.source)
            news = self.news[session_id] = _News(update)
            if session_id not in self.next_seq:  # first sight: the file's folder until told
                self.next_seq[session_id] = 0
                update.cwd = os.path.abspath(self.path.parent)
        if cwd is not None:
            news.update.cwd = cwd
        return news

    def _time(self, time: int | None) -> int:
        if time is None:
            time = self.last_time
        if time is None:  # no time anywhere yet: the file's age is the best guess
            time = self.path.stat().st_mtime_ns // 1_000_000
        self.last_time = time
        return time

    def _add(
        self,
        news: _News,
        place: _Place,
        kind: Kind,
        role: str,
        text: str,
        *,
        injected: bool,
        surface: Surface = Surface.CURRENT,
    ) -> None:
        if not text.strip():
            return
        session_id = news.update.id
        self.next_seq[session_id] = max(self.next_seq[session_id], place.seq + 1)
        time = self._time(place.time)
        update = news.update
        update.created = min(time, update.created) if update.created is not None else time
        update.updated = max(time, update.updated) if update.updated is not None else time
        news.add(
            place.seq,
            time,
            kind,
            role,
            text,
            injected=injected,
            tool_name=place.tool,
            uid=place.uid,
            surface=surface,
        )


@dataclass(slots=True)
class _Place:
    """Where a message or compaction line goes: its session and cwd, its seq (given, or the
    session's next), its time (None: the previous line's), its tool and uid."""

    session: str
    cwd: str | None
    seq: int
    time: int | None
    tool: str | None
    uid: str | None
