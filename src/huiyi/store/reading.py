"""Reading changed log files, in this process or in worker processes for a big first index.

The writer is SQLite's single connection; everything before it (decompressing, parsing,
tokenising) can run elsewhere. `read_all` yields each file's `Outcome` in order, from a pool of
forked workers when many files changed, else inline. Fork only: spawn and forkserver re-run
the caller's `__main__`, and forking is only safe while the process runs no other thread.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import threading
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
#: files handed to the workers at a time (bounds the results waiting to be written)
WINDOW = 256


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
    """Outcomes in job order: in this process (`workers=0`), or in a pool of `workers`."""
    # Only `fork` starts workers without re-running the caller's `__main__` (spawn and
    # forkserver do, which would break any script that calls `Huiyi().index()` unguarded),
    # and forking is only safe while this process runs no other thread (the MCP server does).
    if workers < 1 or threading.active_count() > 1 or "fork" not in _START_METHODS:
        for job in jobs:
            yield read_job(reader, job.path, job.cursor)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        # `imap` buffers every finished result until it is consumed: when the workers read
        # faster than this process writes, a big first index would pile up in memory. Windows
        # of files bound what waits (about WINDOW files' events).
        for start in range(0, len(jobs), WINDOW):
            window = jobs[start : start + WINDOW]
            yield from pool.imap(
                _read_star, ((reader, job.path, job.cursor) for job in window), chunksize=4
            )


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
