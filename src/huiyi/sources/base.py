"""The contract between log readers and the index.

A reader knows one harness's files: where they are (`discover`) and how to turn new bytes into
sessions and events (`read`). It never touches SQL. Reading is incremental: the store keeps a
`Cursor` per file (byte offset plus a small JSON-able `state` the reader owns) and hands it back
on the next read. When a file shrank, changed inode or changed its first bytes, the store
discards what it indexed from that file and calls `read` again with a fresh `Cursor()`.

A read returns a `ReadResult`: for each session touched, a `SessionChunk` with metadata, new
events (upserted by `(session, seq)`, so a later read may rewrite an event it emitted before,
for example a reply whose parts arrive in two reads) and surface changes for events emitted
earlier (compaction shadows them). Bad input is never fatal: each skipped line or frame is
counted in `skipped` under a short reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from huiyi.model import Event, SessionUpdate, Surface

#: Lines longer than this are skipped and counted as "line-too-long".
MAX_LINE_BYTES = 8 * 1024 * 1024

# Reasons used in `ReadResult.skipped` (readers may add their own short kebab-case reasons).
INVALID_JSON = "invalid-json"
INVALID_UTF8 = "invalid-utf8"
UNKNOWN_TYPE = "unknown-type"
TORN_FRAME = "torn-frame"
LINE_TOO_LONG = "line-too-long"
BAD_RECORD = "bad-record"
UNREADABLE = "unreadable"
UNSUPPORTED_VERSION = "unsupported-version"


@dataclass(slots=True)
class Cursor:
    """Where the previous read of one file stopped."""

    offset: int = 0
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SessionChunk:
    session: SessionUpdate
    events: list[Event] = field(default_factory=list)
    #: explicit surface changes for events of this session (possibly emitted in earlier reads)
    surface: dict[int, Surface] = field(default_factory=dict)
    #: every CURRENT event of this session with seq < shadow_before becomes SHADOWED
    shadow_before: int | None = None


@dataclass(slots=True)
class ReadResult:
    chunks: list[SessionChunk] = field(default_factory=list)
    #: byte offset up to which the file was consumed (the next read starts here)
    offset: int = 0
    #: the reader's memory for the next read; must be JSON-serialisable and small
    state: dict[str, Any] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    #: set when the whole file was refused (e.g. unsupported format version); says why
    refused: str | None = None


class Reader(Protocol):
    """One harness's logs."""

    source: ClassVar[str]

    def roots(self) -> list[Path]:
        """Directories this reader looks in (whether or not they exist)."""
        ...

    def discover(self) -> Iterable[Path]:
        """Every log file under the roots; a vanished root yields nothing."""
        ...

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        """Read `path` from `cursor`; never raises for bad content, only for I/O errors."""
        ...
