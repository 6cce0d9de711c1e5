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
from pathlib import Path
from typing import Any, ClassVar

from huiyi.model import Kind, SessionUpdate, Surface
from huiyi.sources.base import BAD_RECORD, UNKNOWN_TYPE, SessionChunk
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
            if root.is_file():
                yield root
            else:
                yield from jsonl_files(root)


def default_session_id(path: Path) -> str:
    """The id of a headerless file's session: its stem plus a short hash of its full path, so
    two `history.jsonl` in different folders stay apart."""
    digest = hashlib.sha1(os.path.abspath(path).encode("utf-8", "surrogateescape"))
    return f"{path.stem}-{digest.hexdigest()[:8]}"


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
        self.current = session_id
        news = self._session(session_id, as_str(record.get("cwd")))
        update = news.update
        update.title = as_str(record.get("title")) or update.title
        update.created = parse_generic_time(record.get("created")) or update.created
        update.parent = as_str(record.get("parent")) or update.parent
        if isinstance(record.get("subagent"), bool):
            update.is_subagent = record["subagent"]

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
        news = self._target(record)
        if news is None:
            return
        self._add(news, record, kind, role, clean_text(text), injected=injected, surface=surface)

    def _compaction(self, record: dict[str, Any]) -> None:
        news = self._target(record)
        if news is None:
            return
        seq = self._seq(news.update.id, record, consume=False)
        if seq is None:
            return
        news.shadow_before = max(seq, news.shadow_before or 0)
        summary = record.get("summary")
        if isinstance(summary, str):
            self._add(news, record, Kind.SUMMARY, "user", clean_text(summary), injected=True)

    # -- helpers ---------------------------------------------------------------------------

    def _target(self, record: dict[str, Any]) -> _News | None:
        """The session a message or compaction line belongs to."""
        session = record.get("session")
        if session is not None and as_str(session) is None:
            self.skipped[BAD_RECORD] += 1
            return None
        session_id = as_str(session) or self.current or default_session_id(self.path)
        return self._session(session_id, as_str(record.get("cwd")))

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

    def _seq(self, session_id: str, record: dict[str, Any], *, consume: bool) -> int | None:
        given = record.get("seq")
        if given is None:
            seq = self.next_seq[session_id]
        elif isinstance(given, int) and not isinstance(given, bool) and given >= 0:
            seq = given
        else:
            self.skipped[BAD_RECORD] += 1
            return None
        if consume:
            self.next_seq[session_id] = max(self.next_seq[session_id], seq + 1)
        return seq

    def _time(self, record: dict[str, Any]) -> int:
        time = parse_generic_time(record.get("time"))
        if time is None:
            time = self.last_time
        if time is None:  # no time anywhere yet: the file's age is the best guess
            time = self.path.stat().st_mtime_ns // 1_000_000
        self.last_time = time
        return time

    def _add(
        self,
        news: _News,
        record: dict[str, Any],
        kind: Kind,
        role: str,
        text: str,
        *,
        injected: bool,
        surface: Surface = Surface.CURRENT,
    ) -> None:
        if not text.strip():
            return
        seq = self._seq(news.update.id, record, consume=True)
        if seq is None:
            return
        time = self._time(record)
        update = news.update
        update.created = min(time, update.created) if update.created is not None else time
        update.updated = max(time, update.updated) if update.updated is not None else time
        news.add(
            seq,
            time,
            kind,
            role,
            text,
            injected=injected,
            tool_name=as_str(record.get("tool")),
            uid=as_str(record.get("uid")),
            surface=surface,
        )
