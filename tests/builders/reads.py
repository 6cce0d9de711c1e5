"""Reading logs the way the index does, for source tests.

`Replay` applies `ReadResult`s with the store's rules (events upserted by session and seq,
`shadow_before` shadowing earlier CURRENT events, session facts merged), so a test can say
what a person would see after several reads. `read_growing` feeds a file to a reader the way
a live session grows it: a prefix at a time, cut anywhere, mid-line included.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from huiyi.model import Event, Surface
from huiyi.sources.base import MAX_LINE_BYTES, Cursor, Reader, ReadResult, SessionUpdate

#: A line a little over the reader limit (about 20 MB is what a pasted blob can reach).
HUGE_LINE_BYTES = 20 * 1024 * 1024


class Replay:
    """The index as the store would hold it after applying some reads of one file."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, int], Event] = {}
        self.sessions: dict[str, SessionUpdate] = {}
        self.skipped: Counter[str] = Counter()
        self.cursor = Cursor()
        self._uids: dict[str, tuple[str, int]] = {}

    def apply(self, result: ReadResult) -> ReadResult:
        for chunk in result.chunks:
            sid = chunk.session.id
            self._merge(chunk.session)
            for event in chunk.events:
                assert event.session == sid
                if event.uid is not None:  # one uid, one event: the store drops later copies
                    assert self._uids.setdefault(event.uid, (sid, event.seq)) == (sid, event.seq)
                self.events[(sid, event.seq)] = event
            for seq, surface in chunk.surface.items():
                self.events[(sid, seq)] = self.events[(sid, seq)]._replace(surface=surface)
            if chunk.shadow_before is not None:
                for (session, seq), event in self.events.items():
                    current = event.surface == Surface.CURRENT
                    if session == sid and seq < chunk.shadow_before and current:
                        self.events[(session, seq)] = event._replace(surface=Surface.SHADOWED)
        self.skipped.update(result.skipped)
        self.cursor = Cursor(offset=result.offset, state=result.state)
        return result

    def read(self, reader: Reader, path: Path) -> ReadResult:
        """Read `path` on from where the previous read stopped, and apply the result."""
        return self.apply(reader.read(path, self.cursor))

    def _merge(self, update: SessionUpdate) -> None:
        old = self.sessions.get(update.id)
        if old is None:
            self.sessions[update.id] = dataclasses.replace(update)
            return
        for f in dataclasses.fields(update):
            value = getattr(update, f.name)
            if value is not None and not (f.name == "created" and old.created is not None):
                setattr(old, f.name, value)

    def rows(self, session: str | None = None) -> list[tuple[int, str, str, str]]:
        """(seq, kind, text, surface) per event, in seq order."""
        return [
            (e.seq, e.kind.value, e.text, e.surface.value)
            for (sid, _), e in sorted(self.events.items())
            if session is None or sid == session
        ]


def read_growing(reader: Reader, path: Path, data: bytes, step: int) -> Replay:
    """Grow `path` to `data` `step` bytes at a time, reading after every step."""
    replay = Replay()
    path.write_bytes(b"")
    for end in [*range(step, len(data), step), len(data)]:
        path.write_bytes(data[:end])
        replay.read(reader, path)
    return replay


def read_whole(reader: Reader, path: Path) -> Replay:
    replay = Replay()
    replay.read(reader, path)
    return replay


def bad_line(reason: str, unknown_record: bytes) -> bytes:
    """One complete line that a reader must skip and count under `reason`."""
    lines = {
        "invalid-json": b'{"type": "user", "message": \n',
        "invalid-utf8": b'{"type": "user", "text": "caf\xe9"}\n',
        "bad-record": b"[1, 2, 3]\n",
        "unknown-type": unknown_record + b"\n",
    }
    if reason == "line-too-long":
        filler = b"a" * max(HUGE_LINE_BYTES, MAX_LINE_BYTES + 1)
        return b'{"type": "user", "text": "' + filler + b'"}\n'
    return lines[reason]


BAD_REASONS = ("invalid-json", "invalid-utf8", "bad-record", "unknown-type", "line-too-long")


def events_of(results: Iterable[ReadResult]) -> list[Event]:
    return [e for r in results for c in r.chunks for e in c.events]
