"""Reader for DeepSeek Harness (DSH) session logs, as described in `docs/formats/dsh.md`.

A DSH log is `<home>/sessions/--<project>--/<session-id>/session.jsonl.zstd` (`session.jsonl`
with compression off): a header line, then one JSON event per line. The compressed form is a
concatenation of independent zstd frames, one per write batch, so reading has two layers:

* The physical layer, in `huiyi.harnesses.dsh.frames`, turns bytes into lines and says where
  the next read resumes after each: a file offset on a frame (or line) boundary, plus how much
  of that frame's text is consumed when a read stopped inside one (the cursor's `inside`).
  Over-long lines are dropped while they stream, and corrupt or oversized frames are counted
  and skipped there. It is a separate module because it knows bytes and zstd, not DSH events.
  A read stops at its budget (`READ_RECORDS` lines or `READ_BYTES` of text) and the index
  reads on from there, so one huge frame never has to be held whole.
* The logical layer, in `fold.py` beside this module, turns lines into `Event`s and folds the
  `surfaceOp`s that say what the model can still see.

This module finds the logs (`DshReader.discover`) and reads one from its cursor; the small
lookups caller binding needs without a full read (`read_header`, `pending_tool_calls`) are in
`caller.py`.

Torn frames: a crash mid-write leaves a final frame that never ends. The reader does not
consume it: the offset stays at its start and none of its lines are emitted, because emitting
them now would fold their surface ops a second time once the frame is finished. DSH later
truncates a torn frame and appends a repair frame at that very place, which is exactly where
our offset waits. A file being written looks torn for a moment, so `torn-frame` is counted
(once) only when a later read finds the same torn tail unchanged.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import ClassVar

from huiyi.config import Settings
from huiyi.harnesses.dsh.fold import BAD_SURFACE_OP, SOURCE, Fold
from huiyi.harnesses.dsh.frames import (
    CORRUPT_FRAME,
    FRAME_TOO_LARGE,
    Line,
    Step,
    ZstdFrames,
    jsonl_lines,
)
from huiyi.model import Event
from huiyi.sources.base import (
    READ_BYTES,
    READ_RECORDS,
    RECORD_AT,
    TORN_FRAME,
    Cursor,
    ReadResult,
    Where,
    open_log,
    take_record,
)

__all__ = [
    "BAD_SURFACE_OP",
    "CORRUPT_FRAME",
    "EMPTY_FILE",
    "FRAME_TOO_LARGE",
    "LOG_NAMES",
    "DshReader",
    "reader",
]

#: File names of a session log, compressed first.
LOG_NAMES = ("session.jsonl.zstd", "session.jsonl")

#: A skip reason of this reader, besides the shared ones in `base`, `BAD_SURFACE_OP` (the fold's)
#: and `CORRUPT_FRAME` (the frame decoder's).
EMPTY_FILE = "empty-file"


class DshReader:
    """Every session log under one DSH home (the caller resolves `$DSH_HOME` / `~/.dsh`)."""

    source: ClassVar[str] = SOURCE

    def __init__(self, home: Path) -> None:
        self.home = home

    def roots(self) -> list[Path]:
        return [self.home / "sessions"]

    def discover(self) -> Iterable[Path]:
        for root in self.roots():
            for project in _listdir(root):
                for session in _listdir(project):
                    found = [session / name for name in LOG_NAMES if _exists(session / name)]
                    # a FIFO or a device under a log's name is handed on, to be counted as no
                    # regular file, only when no regular log is beside it
                    logs = [log for log in found if _is_file(log)] or found[:1]
                    if len(logs) > 1:  # compression was switched: the newer log is the live one
                        logs.sort(key=_mtime, reverse=True)
                    yield from logs[:1]

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        refused = cursor.state.get("refused")
        if isinstance(refused, str):
            return ReadResult(offset=cursor.offset, state=dict(cursor.state), refused=refused)
        offset, state = cursor.offset, cursor.state
        if offset > 0 and not isinstance(state.get("session"), dict):
            offset, state = 0, {}  # the state was lost: the fold must start from the header
        inside = state.get("inside", 0) if offset > 0 else 0
        inside = inside if isinstance(inside, int) and inside >= 0 else 0
        result = ReadResult(offset=offset)
        fold = Fold(path, state, result.skipped)
        torn_tail: list[int] | None = None
        with open_log(path) as file:
            if offset == 0 and os.fstat(file.fileno()).st_size == 0:
                result.skipped[EMPTY_FILE] += 1
            frames: ZstdFrames | None = None
            steps: Iterable[Step]
            if path.name.endswith(".zstd"):
                frames = ZstdFrames(file, offset, result.skipped, inside)
                steps = frames.steps()
            else:
                steps = jsonl_lines(file, offset)
            taken = read_bytes = 0
            token = RECORD_AT.set(None)
            try:
                for lines, end, within in steps:
                    for raw in lines:
                        # where the line lives: where the read stood before it (`Where`)
                        span = within - inside if within else end - result.offset
                        RECORD_AT.set((result.offset, inside, span))
                        take_record(fold.line, raw, result.skipped)
                        taken += 1
                        read_bytes += len(raw or b"")
                        if fold.refused:
                            break
                    result.offset, inside = end, within
                    if fold.refused:
                        break
                    if taken >= READ_RECORDS or read_bytes >= READ_BYTES:
                        result.more = True  # the index writes this much, then reads on
                        break
            finally:
                RECORD_AT.reset(token)
            if frames is not None and frames.torn_end is not None:
                torn_tail = [result.offset, frames.torn_end]
        if fold.refused:
            result.refused = fold.refused
            result.state = {"refused": fold.refused}
            return result
        result.state = fold.state()
        if inside:
            result.state["inside"] = inside  # this much of the frame at `offset` is read
        if torn_tail is not None:
            # [offset, file end, counted]: count a torn tail once, when a later read finds it
            # unchanged (a frame still being written looks torn for a moment)
            previous = state.get("torn") or [None, None, False]
            unchanged = previous[:2] == torn_tail
            if unchanged and not previous[2]:
                result.skipped[TORN_FRAME] += 1
            result.state["torn"] = [*torn_tail, unchanged]
        chunk = fold.chunk()
        if chunk is not None:
            result.chunks.append(chunk)
        return result

    def read_at(self, path: Path, where: Where) -> list[Event]:
        """The events of the one record at `where` (a `Where` a read filed its events under),
        read after the log's header: the header's frame and the record's frame are
        decompressed (a plain log: two lines read), whatever the log's size. The caller
        checks what it gets (no-copy mode compares digests). Raises `OSError` only."""
        offset, inside, span = where
        skipped: Counter[str] = Counter()
        fold = Fold(path, {}, skipped)
        with open_log(path) as file:
            zstd = path.name.endswith(".zstd")

            def first(at: int, skip: int) -> tuple[Line, int] | None:
                """The first line from (`at`, `skip`) and the bytes it spans."""
                steps: Iterator[Step] = (
                    ZstdFrames(file, at, skipped, skip).steps() if zstd else jsonl_lines(file, at)
                )
                for lines, end, within in steps:
                    if lines:
                        return lines[0], (within - skip if within else end - at)
                return None

            header = first(0, 0)
            record = first(offset, inside) if (offset, inside) != (0, 0) else header
        if header is None or record is None or record[1] != span:
            return []
        token = RECORD_AT.set((0, 0, header[1]))
        try:
            take_record(fold.line, header[0], skipped)
            if fold.refused:
                return []
            if (offset, inside) != (0, 0):
                RECORD_AT.set(where)
                take_record(fold.line, record[0], skipped)
        finally:
            RECORD_AT.reset(token)
        chunk = fold.chunk()
        return [] if chunk is None else chunk.events


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _listdir(directory: Path) -> list[Path]:
    """Sorted entries of a directory; a missing or vanished one has none."""
    try:
        return sorted(entry for entry in directory.iterdir() if entry.is_dir())
    except OSError:
        return []


def _exists(path: Path) -> bool:
    """Whether something other than a folder is there (a dangling link is nothing)."""
    try:
        return not path.is_dir() and path.exists()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # e.g. a folder we may not enter
        return False


def reader(settings: Settings) -> DshReader:
    """This harness's logs, where `settings` say they are."""
    return DshReader(settings.dsh_home)
