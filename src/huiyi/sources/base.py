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

One record is one unit of failure. A reader hands each record to `take_record`, which turns
what a record of the wrong shape raises from code written for the right one (a `type` that is a
list, an object where a string belongs, nesting too deep to walk, a number out of range) into
one `malformed-record` skip, and the reader goes on with the next. For that to leave the
reader's state as it was, a reader takes everything it needs from a record before it changes
anything. Numbers that reach the index are bounded here (`valid_seq`, `valid_time`): SQLite
holds 64 bits, and a time is shown as a date.

huiyi never recalls itself: its own MCP tool calls and their results (recalled history in its
untrusted-data envelope) are kept as events, so seqs and compaction stay as the harness logged
them, but never indexed. `is_own_traffic` recognises them from one event alone (tool name or
result text), so every reader gets it without knowing about it; a reader that can pair a result
with its call (by call id) also marks the call `Event.own` when only the result gave it away.

A hostile machine is the normal case: a logs tree may hold a FIFO, a link to `/dev/zero`, a
socket or a name that is not UTF-8. `open_log` is how every reader opens a log: without
blocking, and only when what it opened is a regular file (`NotRegularFile` otherwise), so a
FIFO never hangs a read and a device never feeds one forever. `name_text` and `path_key` give
any name (bytes the file system holds, decoded with surrogate escapes) a text SQLite can keep.
A read is bounded too: a reader stops after `READ_BYTES` or `READ_RECORDS` at a record
boundary and says `ReadResult.more`, and the index writes what it read before it reads on, so
memory stays bounded however large a log grows.
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol, TypeVar

from huiyi.model import Event, Kind, Surface
from huiyi.safety.envelope import MARKER_NAME, notice

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
MALFORMED_RECORD = "malformed-record"
#: A discovered path that is no regular file once links are resolved (a FIFO, a device, a socket).
NOT_REGULAR = "not-a-regular-file"

#: A read stops at the first record boundary after this many bytes (decompressed, for a
#: compressed log) or this many records, and the index writes what it read before it reads on.
READ_BYTES = 16 * 1024 * 1024
READ_RECORDS = 20_000

#: What code written for a well-formed record raises on a malformed one. `take_record` turns
#: these into a skipped record; anything else (an I/O error, a bug's `AssertionError`) is not
#: the record's fault and propagates.
RECORD_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    ValueError,
    LookupError,
    AttributeError,
    RecursionError,
    OverflowError,
)
#: The largest seq a reader emits: 2**53, exact as a JSON number anywhere, far inside SQLite's
#: 64-bit integers.
MAX_SEQ = 2**53
#: Times are epoch milliseconds from 1970 up to the start of 9999-12-31 (UTC), so they fit
#: SQLite and are a date of year 9999 or earlier in every time zone.
MIN_TIME = 0
MAX_TIME = int(datetime(9999, 12, 31, tzinfo=UTC).timestamp() * 1000)

#: The tools huiyi's MCP server offers, whatever name the user gave the server.
OWN_TOOLS = (
    "recall_history",
    "recall_expand",
    "session_list",
    "session_read",
    "memory",
    "memory_search",
)
#: `mcp__<server>__<tool>`: how Claude Code and DSH name an MCP tool (and Codex, once its
#: `namespace` is joined to the name).
_OWN_TOOL_NAME = re.compile(rf"mcp__.+__(?:{'|'.join(OWN_TOOLS)})")
#: The envelope's opening marker on a line of its own (`safety.envelope.wrap`).
_OWN_MARKER = re.compile(rf"^<<<{MARKER_NAME}_[0-9a-f]{{8,64}}>>>$", re.MULTILINE)
#: The envelope's notice line, whatever its label; a harness may put a line or two before it.
_OWN_NOTICE = re.compile(
    "^" + re.escape(notice("LABEL")).replace("LABEL", r"[^\n]{1,200}"), re.MULTILINE
)
#: How far into a result the notice may start (Codex puts `Wall time: ...\nOutput:` first).
_NOTICE_WITHIN = 600


class NotRegularFile(OSError):
    """A log path that is a FIFO, a device, a socket or a folder once links are resolved."""

    def __init__(self, path: Path, mode: int) -> None:
        super().__init__(f"not a regular file ({file_kind(mode)})")
        self.strerror = str(self)
        self.filename = str(path)


def file_kind(mode: int) -> str:
    """What `st_mode` says a path is, in a person's words."""
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return kind
    return "not a file"


def open_log(path: Path) -> IO[bytes]:
    """Open a log for reading, following links, and only if it is a regular file.

    `O_NONBLOCK` keeps the open itself from waiting for a FIFO's writer; the kind is checked on
    the open descriptor (`fstat`), so a file swapped for a FIFO or a device link between
    discovery and this open is refused too (`NotRegularFile`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def name_text(name: str) -> str:
    """`name` as text SQLite and a terminal can hold: bytes of a name that are not UTF-8 (kept
    by Python as surrogate escapes) shown as `\\xNN`. A valid name comes back unchanged."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def path_key(path: Path) -> str:
    """The text the index keeps a log's path under (`name_text` of the whole path)."""
    return name_text(str(path))


def is_own_tool(name: str | None) -> bool:
    """Whether a tool name is one of huiyi's MCP tools (`mcp__<any server>__recall_history`)."""
    return name is not None and _OWN_TOOL_NAME.fullmatch(name) is not None


def is_own_output(text: str) -> bool:
    """Whether a tool result is huiyi's own output: its notice near the start, or its envelope
    marker on a line of its own."""
    return (
        _OWN_NOTICE.search(text, 0, _NOTICE_WITHIN) is not None
        or _OWN_MARKER.search(text) is not None
    )


def is_own_traffic(event: Event) -> bool:
    """A call to one of huiyi's tools or a result of one: never indexed as conversation."""
    if event.own:
        return True
    if event.kind not in (Kind.TOOL_CALL, Kind.TOOL_RESULT):
        return False
    return is_own_tool(event.tool_name) or (
        event.kind is Kind.TOOL_RESULT and is_own_output(event.text)
    )


_Record = TypeVar("_Record")

#: Where a record lives in its log: the byte offset of its line (of its zstd frame, for a
#: compressed log), the offset of the line in the frame's text (0 in a plain log) and the bytes
#: it spans (its newline included). No-copy mode keeps it to read the one record again.
Where = tuple[int, int, int]
#: The record a reader is feeding its fold now: a fold files each event it emits under it
#: (`SessionChunk.where`). Set by the reader around each record; None outside a read.
RECORD_AT: ContextVar[Where | None] = ContextVar("RECORD_AT", default=None)


def take_record(apply: Callable[[_Record], object], record: _Record, skipped: Counter[str]) -> bool:
    """`apply(record)`; a record whose shape makes it raise one of `RECORD_ERRORS` is counted
    once, as `malformed-record`, instead (what `apply` counted before it raised is taken back).

    Returns whether the record was taken. The caller's `apply` must change its state only
    after everything that can raise on the record, so a skipped record leaves no trace.
    """
    counted = dict(skipped)  # a plain copy: Counter.copy costs more than a record's read
    try:
        apply(record)
    except RECORD_ERRORS:
        skipped.clear()
        skipped.update(counted)
        skipped[MALFORMED_RECORD] += 1
        return False
    return True


def valid_seq(value: int) -> int:
    """`value` if it can be a seq (0..`MAX_SEQ`); else `ValueError`, which skips the record."""
    if not 0 <= value <= MAX_SEQ:
        raise ValueError(f"seq out of range: {value}")
    return value


def valid_time(value: int | float) -> int | None:
    """Epoch ms as an int when within `MIN_TIME`..`MAX_TIME`, else None (NaN included)."""
    return int(value) if MIN_TIME <= value <= MAX_TIME else None


@dataclass(slots=True)
class SessionUpdate:
    """What one read of a log learned about a session; `None` means "not known from this read".
    The store turns it into a `huiyi.model.Session`."""

    id: str
    source: str
    cwd: str | None = None
    title: str | None = None
    created: int | None = None
    updated: int | None = None
    parent: str | None = None
    is_subagent: bool | None = None
    title_unreadable: bool = False
    #: every title this read saw, the ones later replaced too: a private marker in any of
    #: them keeps the session private (readers that log titles as TITLE events need not fill it)
    titles_seen: tuple[str, ...] = ()


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
    #: where the record each event was emitted from lives (`Where`), by seq; an event a fold
    #: emitted from what several records taught is filed under the last of them
    where: dict[int, Where] = field(default_factory=dict, compare=False)


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
    #: the read stopped at its budget (`READ_BYTES`, `READ_RECORDS`) before the file's end
    more: bool = False


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
