"""Reading changed log files, in this process or in worker processes for a big first index.

The writer is SQLite's single connection; everything before it (decompressing, parsing,
tokenising, and whatever else of the writer's work does not depend on the index: uid keys,
codes, the deduplication of a read's events, the redacted first user message, private markers,
the packed cursor state, and the packing of texts once the index has a dictionary) can run
elsewhere. `read_all` yields each file's `Outcome` in order, from forked worker processes when
many files changed, else inline. Fork only: spawn and forkserver re-run the caller's
`__main__`, and forking is only safe while the process runs no other thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import signal
import threading
import traceback
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.model import Event, Kind
from huiyi.safety.privacy import has_marker
from huiyi.safety.redact import redact
from huiyi.sources.base import Cursor, Reader, SessionChunk, SessionUpdate, Where, open_log
from huiyi.store import textpack
from huiyi.store.codes import kind_code, role_code, surface_code
from huiyi.store.textindex import Streams, index_texts, is_indexed

#: how many of a file's first bytes are checked (by digest) to notice that it was replaced
HEAD_BYTES = 1024
#: what `files.head` keeps of them (a head of another length is the bytes, see `same_head`)
HEAD_DIGEST_BYTES = 16


@dataclass(slots=True)
class Job:
    path: Path
    st: os.stat_result
    file_id: int | None
    reset: bool
    cursor: Cursor


#: One event as the writer needs it (`prepare`): seq, uid key (`uid_key`), time, kind code,
#: role code, text (bytes: packed by a reader process, as `events.text` keeps it), surface
#: code, injected (0 or 1), tool name, kind, and its text index streams (None when it is not
#: indexed), and where its record lives in the log (`sources.base.Where`, None when the reader
#: does not say; no-copy mode keeps it). A plain tuple: it crosses from a reader process to
#: the writer cheaply (an `Event` cost a Python call to pickle and another to unpickle, a tenth
#: of a first index's CPU), and the writer only adds the row id and packs a text not packed yet.
Row = tuple[
    int,
    bytes | None,
    int,
    int | str,
    int | str,
    str | bytes,
    int | str,
    int,
    str | None,
    str,
    Streams | None,
    Where | None,
]


class Prepared(NamedTuple):
    """One session's news from one read, made ready to write (`prepare`)."""

    session: SessionUpdate
    #: its events, one per seq (a later emission of a seq wins, a uid keeps its first seq)
    rows: list[Row]
    #: surface codes for events of earlier reads (`SessionChunk.surface`)
    surface: dict[int, int | str]
    shadow_before: int | None
    #: the first user message this read brought: what `sessions.first_user` keeps of it
    #: (redacted, cut to `FIRST_USER_CHARS`) and whether it carries a private marker
    first_user: tuple[str, bool] | None
    #: whether a TITLE event or a title this read saw carries a private marker
    marked_title: bool


class Read(NamedTuple):
    """What reading one file gives the writer: the `ReadResult`, its chunks prepared."""

    offset: int
    #: the cursor state as `files.state` keeps it (`pack_state`)
    state: str | bytes
    skipped: Counter[str]
    refused: str | None
    #: `files.head` (`read_head`)
    head: bytes
    chunks: list[Prepared]
    #: the read stopped at its budget: the writer writes it and reads the file on from `offset`
    more: bool = False


Outcome = Read | OSError

#: a first index of at least this many changed files reads and tokenises in worker processes
PARALLEL_MIN_FILES = 32
_START_METHODS = multiprocessing.get_all_start_methods()
#: how much of a session's first user message `sessions.first_user` keeps
FIRST_USER_CHARS = 200


def read_job(
    reader: Reader, path: Path, cursor: Cursor, pack: textpack.Pack | None = None
) -> Outcome:
    """Read, tokenise and prepare one file; runs in a worker process for big batches, which
    also packs the texts (`pack`) once the writer has shared its dictionary."""
    try:
        result = reader.read(path, cursor)
        head = read_head(path, result.offset)
    except OSError as exc:
        return exc
    return Read(
        result.offset,
        pack_state(result.state),
        result.skipped,
        result.refused,
        head,
        [prepare(chunk, pack) for chunk in result.chunks],
        result.more,
    )


def prepare(chunk: SessionChunk, pack: textpack.Pack | None = None) -> Prepared:
    """Everything the writer needs from one chunk that does not depend on the index: its
    events deduplicated, coded and tokenised; what its first user message and titles teach."""
    update = chunk.session
    by_seq: dict[int, tuple[Event, bytes | None]] = {}
    seen_uids: dict[bytes, int] = {}
    for event in chunk.events:
        # a later emission of the same seq wins; a uid keeps its first seq
        key = uid_key(update.source, event.uid) if event.uid else None
        if key is not None and seen_uids.setdefault(key, event.seq) != event.seq:
            continue
        by_seq[event.seq] = (event, key)
    rows: list[Row] = [
        (
            event.seq,
            key,
            event.time,
            kind_code(event.kind),
            role_code(event.role),
            event.text if pack is None else pack(event.text),
            surface_code(event.surface),
            int(event.injected),
            event.tool_name,
            event.kind.value,
            index_texts(event) if is_indexed(event) else None,
            chunk.where.get(event.seq),
        )
        for event, key in by_seq.values()
    ]
    first_user = next(
        (e.text for e in chunk.events if e.kind is Kind.USER and not e.injected and e.text.strip()),
        None,
    )
    return Prepared(
        update,
        rows,
        {seq: surface_code(surface) for seq, surface in chunk.surface.items()},
        chunk.shadow_before,
        None
        if first_user is None
        else (redact(first_user).text[:FIRST_USER_CHARS], has_marker(first_user)),
        any(e.kind is Kind.TITLE and has_marker(e.text) for e in chunk.events)
        or any(has_marker(title) for title in update.titles_seen),
    )


def uid_key(source: str, uid: str) -> bytes:
    """What `events.uid` holds for a harness's record id: 8 bytes of BLAKE2b of `source:uid`.

    Every Claude event carries a uid (a record uuid, `msg_...`, `toolu_...`), and kept as text
    (`claude:` and 36 characters) they and their unique index were a large share of an index.
    Two different uids share a key with a chance of 2**-64 per pair (about 3e-8 among a million
    events); such an event would be taken for a copy and dropped. Migration m007 turned the text
    uids of earlier indexes into these keys.
    """
    return text_uid_key(f"{source}:{uid}")


def text_uid_key(text_uid: str) -> bytes:
    """The key of a uid kept whole before m007 (`source:uid`): a repair salvaging the events of
    an older damaged index keys them as ingestion does now."""
    return hashlib.blake2b(text_uid.encode(), digest_size=8).digest()


def planned_workers(files: int, workers: int | None) -> int:
    """Reader processes for `files` changed files (`workers` when the caller chose).

    Reading, tokenising and preparing a file costs more CPU than writing it, so one reader per
    core (at least one, at most 3), none for a small batch: the readers and the writer share
    the cores, and none waits for the other. A second reader on two cores makes a first index
    faster for a little more memory (each reader's pages are mostly shared with the writer it
    was forked from); `benchmarks/bench_index.py` measures both.
    """
    if workers is not None:
        return workers
    if files < PARALLEL_MIN_FILES:
        return 0
    return max(1, min(os.cpu_count() or 1, 3))


#: a dictionary as the writer shares it with the readers: its number and bytes
Dictionary = tuple[int, bytes]


class Outcomes:
    """The outcomes of `jobs` in job order, read in this process (the writer packs every
    text). `_Workers` reads them in worker processes."""

    def __init__(self, reader: Reader, jobs: list[Job]) -> None:
        self.reader = reader
        self.jobs = jobs

    def __iter__(self) -> Iterator[Outcome]:
        for job in self.jobs:
            yield read_job(self.reader, job.path, job.cursor)

    def share(self, dictionary: Dictionary) -> None:
        """Let the readers pack texts with the index's dictionary from their next file on (once:
        later calls change nothing)."""


def read_all(
    reader: Reader, jobs: list[Job], workers: int, dictionary: Dictionary | None = None
) -> Outcomes:
    """Outcomes in job order: in this process (`workers=0`), or from `workers` processes,
    which pack the texts with `dictionary` (or one shared later) as they read."""
    # Only `fork` starts workers without re-running the caller's `__main__` (spawn and
    # forkserver do, which would break any script that calls `Huiyi().index()` unguarded),
    # and forking is only safe while this process runs no other thread (the MCP server does).
    if workers < 1 or threading.active_count() > 1 or "fork" not in _START_METHODS:
        return Outcomes(reader, jobs)
    return _Workers(reader, jobs, min(workers, len(jobs)), dictionary)


class _Failed:
    """What a worker sends instead of an outcome when reading a file raised: the exception
    (None when it cannot be pickled) and its traceback as text."""

    def __init__(self, exc: BaseException | None, text: str) -> None:
        self.exc = exc
        self.text = text

    def error(self, path: Path) -> BaseException:
        """The exception to raise in the writer (the worker's own, when it could be sent)."""
        where = f"reading {path} in a reader process:\n{self.text}"
        if self.exc is None:
            return RuntimeError(where)
        self.exc.add_note(where)
        return self.exc


class _Workers(Outcomes):
    """Forked reader processes, each reading every `n`-th job, and the outcomes in job order.

    A `multiprocessing.Pool` sent its results to a thread of this process, which unpickled
    them while holding the GIL the writer needs, and a reader whose result did not fit the
    pipe waited for that thread: reader and writer took turns more than they ran side by side
    (the writer waited a third of a first index). Here each worker sends its outcomes down a
    pipe of its own, enlarged to `PIPE_BYTES`, from its only thread: it runs ahead of the
    writer until that much waits in the pipe (which bounds what waits), and this process
    unpickles an outcome only when it writes it. The jobs reach the workers by `fork`, and so
    does the index's dictionary when it has one; a dictionary trained meanwhile (a first index
    trains one after its first texts) goes down a second pipe to each (`share`), and from
    their next file on the workers pack the texts: packing is a tenth of the writer's work.
    """

    def __init__(
        self, reader: Reader, jobs: list[Job], n: int, dictionary: Dictionary | None
    ) -> None:
        super().__init__(reader, jobs)
        self.n, self.dictionary = n, dictionary
        self.pipes: list[Any] = []
        self.inboxes: list[Any] = []
        self.procs: list[Any] = []
        self.shared = dictionary is not None
        self.inbox_room = PIPE_BYTES

    def _start(self) -> None:
        """Fork the workers (when the outcomes are first asked for, as the writer begins)."""
        context = multiprocessing.get_context("fork")
        reader, jobs, n, dictionary = self.reader, self.jobs, self.n, self.dictionary
        for i in range(n):
            receive, send = context.Pipe(duplex=False)
            inbox, post = context.Pipe(duplex=False)
            _enlarge(send)
            self.inbox_room = min(self.inbox_room, _enlarge(post))
            proc = context.Process(
                target=_work, args=(reader, jobs[i::n], send, inbox, dictionary), daemon=True
            )
            proc.start()
            send.close()
            inbox.close()
            self.pipes.append(receive)
            self.inboxes.append(post)
            self.procs.append(proc)

    def __iter__(self) -> Iterator[Outcome]:
        try:
            self._start()
            for index in range(len(self.jobs)):
                got = self._next(index % self.n)
                if isinstance(got, _Failed):
                    raise got.error(self.jobs[index].path)
                yield got
        finally:
            for proc in self.procs:
                if proc.is_alive():
                    proc.terminate()
                proc.join()
            for pipe in (*self.pipes, *self.inboxes):
                pipe.close()

    def share(self, dictionary: Dictionary) -> None:
        # A worker reads its inbox only between files, and may be waiting meanwhile for this
        # process to read its outcomes: the dictionary must fit the inbox, or both would wait.
        # Where it does not (a system without resizable pipes), this process packs every text.
        if self.shared or len(dictionary[1]) + SHARE_OVERHEAD > self.inbox_room:
            return
        self.shared = True
        self.dictionary = dictionary  # workers not forked yet take it with their jobs
        for post in self.inboxes:
            with contextlib.suppress(OSError):  # a worker that has ended reads no more
                post.send(dictionary)

    def _next(self, worker: int) -> Outcome | _Failed:
        pipe = self.pipes[worker]
        try:
            got: Outcome | _Failed = pipe.recv()
        except EOFError:  # the worker ended without sending it (killed)
            self.procs[worker].join()
            code = self.procs[worker].exitcode
            raise RuntimeError(f"a reader process ended early (exit code {code})") from None
        return got


#: bytes a worker's pipe holds (Linux lets a process enlarge its pipes up to 1 MB): how far,
#: in pickled outcomes, a worker reads ahead of the writer
PIPE_BYTES = 1 << 20
#: room a shared dictionary's message takes besides its bytes (pickle and the pipe's header)
SHARE_OVERHEAD = 1024


def _enlarge(conn: Any) -> int:
    """Give a pipe `PIPE_BYTES` of room where the system allows it (Linux), else leave it;
    returns the room it has (0 when the system does not say)."""
    import fcntl  # POSIX only, as `fork` is: workers never start elsewhere

    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    if set_size is None or get_size is None:
        return 0
    with contextlib.suppress(OSError):
        fcntl.fcntl(conn.fileno(), set_size, PIPE_BYTES)
    try:
        return int(fcntl.fcntl(conn.fileno(), get_size))
    except OSError:
        return 0


def _work(
    reader: Reader, jobs: list[Job], out: Any, inbox: Any, dictionary: Dictionary | None
) -> None:
    # Ctrl-C is the writer's to handle (it ends the readers): none prints a traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pack = None if dictionary is None else textpack.packer(*dictionary)
    for job in jobs:
        if pack is None and inbox.poll():
            with contextlib.suppress(EOFError):  # the writer has stopped: so will this
                pack = textpack.packer(*inbox.recv())
        try:
            out.send(read_job(reader, job.path, job.cursor, pack))
        except Exception as exc:  # sent to the writer, which raises it
            text = "".join(traceback.format_exception(exc))
            try:
                out.send(_Failed(exc, text))
            except Exception:  # the exception itself could not be pickled
                out.send(_Failed(None, text))
            break
    out.close()


def read_head(path: Path, upto: int) -> bytes:
    """What `files.head` keeps of a file consumed up to byte `upto`: a digest of its first
    `HEAD_BYTES` (fewer when it is shorter), or nothing for a file not read yet.

    A digest, not the bytes: 16 bytes tell a replaced file as surely as 1,024 do, and the bytes
    of every file took room in the index. Migration m007 turned the bytes kept by earlier
    indexes into their digests.
    """
    if upto <= 0:
        return b""
    with open_log(path) as fh:
        return _digest(fh.read(min(upto, HEAD_BYTES)))


def same_head(path: Path, upto: int, head: bytes) -> bool:
    """Whether `path` still starts as it did when it was consumed up to `upto` (`read_head`)."""
    if not head:
        return True
    if len(head) != HEAD_DIGEST_BYTES:
        # the bytes themselves, written after m007 by a huiyi process started before it
        head = _digest(head)
    try:
        return read_head(path, upto) == head
    except OSError:
        return False


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=HEAD_DIGEST_BYTES).digest()


# -- what `files.state` keeps of a reader's cursor state ---------------------------------------

#: the first byte of a packed state (`pack_state`); a state kept as text is its JSON
_PACKED = b"\x01"
#: deflate's preset dictionary for packed states: the keys and values most cursor states hold
#: (a Claude transcript's first, the largest). Frozen: packed states are read with it.
_STATE_WORDS = (
    b'"pending":{},"surface":[],"mute":[],"next":,"session":{"id":"","subagent":false,'
    b'"prompts":[],"sidechain":false,"parent":null,"reply":null,"reply":{"id":"msg_","seq":,'
    b'"time":,"texts":["'
    b'"calls":{"":"Read","":"Bash","":"Edit","":"Grep","":"Write","":"Glob","":"TodoWrite"},'
    b'"seen":"","title":"","titles":{"ai-title":"","custom-title":""},"created":,"updated":,'
    b'{"seq":,"cwd":"'
)


def pack_state(state: dict[str, Any]) -> str | bytes:
    """What `files.state` keeps of a reader's cursor state: its JSON, deflated (`_PACKED` and
    raw deflate with `_STATE_WORDS` as the preset dictionary) when that is shorter.

    The Claude reader's states hold the digests of recent record uuids and tool ids, and the
    reply being assembled: as text they were most of the `files` table, and deflating makes them
    smaller. `unpack_state` reads both forms, and the text states of earlier indexes stay as
    they are until their file is read again.
    """
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    packer = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=_STATE_WORDS)
    packed = _PACKED + packer.compress(text.encode()) + packer.flush()
    return packed if len(packed) < len(text) else text


def unpack_state(kept: str | bytes) -> dict[str, Any]:
    """The cursor state `pack_state` kept (text or packed)."""
    if isinstance(kept, bytes) and kept[:1] == _PACKED:
        unpacker = zlib.decompressobj(-15, zdict=_STATE_WORDS)
        kept = unpacker.decompress(kept[1:]) + unpacker.flush()
    state: dict[str, Any] = json.loads(kept)
    return state
