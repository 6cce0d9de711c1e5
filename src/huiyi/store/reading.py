"""Reading changed log files, in this process or in worker processes for a big first index.

The writer is SQLite's single connection; everything before it (decompressing, parsing,
tokenising) can run elsewhere. `read_all` yields each file's `Outcome` in order, from a pool of
forked workers when many files changed, else inline. Fork only: spawn and forkserver re-run
the caller's `__main__`, and forking is only safe while the process runs no other thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import multiprocessing
import os
import threading
import traceback
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huiyi.sources.base import Cursor, Reader, ReadResult
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


#: what reading one file gives: the result, its head bytes and per-chunk FTS streams
Read = tuple[ReadResult, bytes, list[list[Streams | None]]]
Outcome = Read | OSError

#: a first index of at least this many changed files reads and tokenises in worker processes
PARALLEL_MIN_FILES = 32
_START_METHODS = multiprocessing.get_all_start_methods()


def read_job(reader: Reader, path: Path, cursor: Cursor) -> Outcome:
    """Read and tokenise one file; runs in a worker process for big batches."""
    try:
        result = reader.read(path, cursor)
        head = read_head(path, result.offset)
    except OSError as exc:
        return exc
    streams = [
        [index_texts(e) if is_indexed(e) else None for e in chunk.events] for chunk in result.chunks
    ]
    return result, head, streams


def _read_star(args: tuple[Reader, Path, Cursor]) -> Outcome:
    return read_job(*args)


def planned_workers(files: int, workers: int | None) -> int:
    """Reader processes for `files` changed files (`workers` when the caller chose).

    Reading and tokenising a file costs about as much CPU as writing it, and the writer is one
    process: so one reader per core beside the writer's (at least one, at most 3), none for a
    small batch. On 2 cores a second reader only took CPU from the writer and held 48 MB more.
    """
    if workers is not None:
        return workers
    if files < PARALLEL_MIN_FILES:
        return 0
    return max(1, min((os.cpu_count() or 1) - 1, 3))


def read_all(reader: Reader, jobs: list[Job], workers: int) -> Iterator[Outcome]:
    """Outcomes in job order: in this process (`workers=0`), or from `workers` processes."""
    # Only `fork` starts workers without re-running the caller's `__main__` (spawn and
    # forkserver do, which would break any script that calls `Huiyi().index()` unguarded),
    # and forking is only safe while this process runs no other thread (the MCP server does).
    if workers < 1 or threading.active_count() > 1 or "fork" not in _START_METHODS:
        for job in jobs:
            yield read_job(reader, job.path, job.cursor)
        return
    yield from _Workers(reader, jobs, min(workers, len(jobs)))


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


class _Workers:
    """Forked reader processes, each reading every `n`-th job, and the outcomes in job order.

    A `multiprocessing.Pool` sent its results to a thread of this process, which unpickled
    them while holding the GIL the writer needs, and a reader whose result did not fit the
    pipe waited for that thread: reader and writer took turns more than they ran side by side
    (the writer waited a third of a first index). Here each worker sends its outcomes down a
    pipe of its own, enlarged to `PIPE_BYTES`, from its only thread: it runs ahead of the
    writer until that much waits in the pipe (which bounds what waits), and this process
    unpickles an outcome only when it writes it. The jobs reach the workers by `fork`.
    """

    def __init__(self, reader: Reader, jobs: list[Job], n: int) -> None:
        context = multiprocessing.get_context("fork")
        self.jobs = jobs
        self.pipes: list[Any] = []
        self.procs: list[Any] = []
        for i in range(n):
            receive, send = context.Pipe(duplex=False)
            _enlarge(send)
            proc = context.Process(target=_work, args=(reader, jobs[i::n], send), daemon=True)
            proc.start()
            send.close()
            self.pipes.append(receive)
            self.procs.append(proc)

    def __iter__(self) -> Iterator[Outcome]:
        n = len(self.procs)
        try:
            for index in range(len(self.jobs)):
                got = self._next(index % n)
                if isinstance(got, _Failed):
                    raise got.error(self.jobs[index].path)
                yield got
        finally:
            for proc in self.procs:
                if proc.is_alive():
                    proc.terminate()
                proc.join()
            for pipe in self.pipes:
                pipe.close()

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


def _enlarge(conn: Any) -> None:
    """Give a pipe `PIPE_BYTES` of room where the system allows it (Linux), else leave it."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(conn.fileno(), set_size, PIPE_BYTES)


def _work(reader: Reader, jobs: list[Job], out: Any) -> None:
    for job in jobs:
        try:
            out.send(read_job(reader, job.path, job.cursor))
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
    were 2.3 MB of a 57 MB index of 2,290 Claude transcripts. Migration m007 turned the bytes
    kept by earlier indexes into their digests.
    """
    if upto <= 0:
        return b""
    with path.open("rb") as fh:
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
    reply being assembled: as text they were most of the `files` table (3.2 of 42.5 MB at
    104k messages); deflated, a third less. `unpack_state` reads both forms, and the text
    states of earlier indexes stay as they are until their file is read again.
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
