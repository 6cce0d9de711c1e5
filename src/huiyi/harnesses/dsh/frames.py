"""The physical layer of DSH session logs: bytes in, whole lines out, with the offset consumed.

A `.zstd` log is a concatenation of independent zstd frames, one per write batch; a `.jsonl`
log is plain newline-terminated lines. Both are read here as *units*: one complete frame, or
one complete line, each paired with the file offset just after it. Only whole units are
consumed, so a caller that stores that offset always resumes on a unit boundary. The meaning
of the lines (header, events, surface ops) belongs to the reader (`reader.py` beside it);
this module knows nothing about JSON.

Why it is shaped this way:

* Frames are decoded one at a time with a fresh decompressor, and each frame's text is split
  as it streams (`LineSplitter`), so an over-long line is dropped while it arrives (it becomes
  `None`) and memory stays bounded by `MAX_LINE_BYTES`, whatever the file holds.
* A torn frame (a crash mid-write, or a write still in progress) is never consumed: iteration
  stops at its start and `ZstdFrames.torn_end` records the file size seen, so the caller can
  tell a torn tail that stays torn from one that was merely being written.
* A frame that fails to decode (bad checksum, garbage) is counted `corrupt-frame` once per
  run of garbage and skipped by resynchronising on the next zstd magic number (`find`); when
  no frame follows, the rest of the file is consumed. The garbage is yielded as an empty unit
  so its offset is consumed even if a torn frame follows it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import zstandard

from huiyi.sources.base import MAX_LINE_BYTES

__all__ = [
    "CORRUPT_FRAME",
    "Line",
    "LineSplitter",
    "Unit",
    "ZstdFrames",
    "all_lines",
    "find",
    "jsonl_lines",
]

#: Skip reason for a frame that fails to decode (re-exported by `huiyi.harnesses.dsh.reader`).
CORRUPT_FRAME = "corrupt-frame"

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_READ_SIZE = 1 << 16

#: A physical line; `None` stands for a line that was longer than `MAX_LINE_BYTES`.
Line = bytes | None
#: A consumable unit: its lines and the file offset just after it.
Unit = tuple[list[Line], int]


class LineSplitter:
    """Splits decompressed bytes into lines, dropping the body of an over-long line as it
    streams (only the fact that there was one is kept)."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self._part = bytearray()
        self._too_long = False

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._grow(data[start:end])
            self._end_line()
            start = end + 1
        self._grow(data[start:])

    def close(self) -> list[Line]:
        """End of a frame: frames hold whole lines, so a last line without `\\n` still counts."""
        if self._part or self._too_long:
            self._end_line()
        return self.lines

    def _grow(self, piece: bytes) -> None:
        if self._too_long:
            return
        if len(self._part) + len(piece) > MAX_LINE_BYTES:
            self._too_long, self._part = True, bytearray()
        else:
            self._part += piece

    def _end_line(self) -> None:
        self.lines.append(None if self._too_long else bytes(self._part))
        self._part, self._too_long = bytearray(), False


class ZstdFrames:
    """The complete frames of a `.zstd` log from an offset, one unit each.

    After iteration `torn_end` is set when the file ended inside an unfinished frame (it is the
    file size seen then); that frame is left unconsumed.
    """

    def __init__(self, file: IO[bytes], offset: int, skipped: Counter[str]) -> None:
        self._file, self._offset, self._skipped = file, offset, skipped
        self.torn_end: int | None = None

    def __iter__(self) -> Iterator[Unit]:
        decompressor = zstandard.ZstdDecompressor()
        start, carry, in_garbage = self._offset, b"", False
        self._file.seek(start)
        while True:
            frame = decompressor.decompressobj()
            lines = LineSplitter()
            used, status = 0, "end"
            while data := carry or self._file.read(_READ_SIZE):
                carry = b""
                try:
                    lines.feed(frame.decompress(data))
                except zstandard.ZstdError:
                    status = "corrupt"
                    break
                used += len(data)
                if frame.eof:
                    carry = frame.unused_data
                    used -= len(carry)
                    status = "frame"
                    break
            if status == "frame":
                start += used
                in_garbage = False
                yield lines.close(), start
            elif status == "corrupt":
                if not in_garbage:
                    self._skipped[CORRUPT_FRAME] += 1
                in_garbage = True
                resync = find(self._file, _ZSTD_MAGIC, start + 1)
                if resync is None:
                    yield [], self._file.seek(0, os.SEEK_END)
                    return
                start, carry = resync, b""
                yield [], start  # the garbage is consumed even if a torn frame follows
                self._file.seek(start)
            else:
                if used:
                    self.torn_end = start + used
                return


def find(file: IO[bytes], needle: bytes, position: int) -> int | None:
    """Offset of the first `needle` at or after `position` in `file`, or None."""
    file.seek(position)
    tail = b""
    while block := file.read(_READ_SIZE):
        window = tail + block
        found = window.find(needle)
        if found >= 0:
            return position - len(tail) + found
        position += len(block)
        tail = window[-(len(needle) - 1) :]
    return None


def jsonl_lines(file: IO[bytes], offset: int) -> Iterator[Unit]:
    """Newline-terminated lines of a plain `.jsonl` log; a half-written last line is left."""
    file.seek(offset)
    position = offset
    while line := file.readline(MAX_LINE_BYTES + 1):
        if line.endswith(b"\n"):
            position += len(line)
            yield [line[:-1]], position
            continue
        if len(line) <= MAX_LINE_BYTES:
            return  # still being written: the next read takes it whole
        used = len(line)
        while True:
            more = file.readline(_READ_SIZE)
            if not more:
                return
            used += len(more)
            if more.endswith(b"\n"):
                break
        position += used
        yield [None], position


def all_lines(path: Path) -> Iterator[Line]:
    """Every line of the consumable part of a log (used by the small lookups)."""
    with path.open("rb") as file:
        units: Iterable[Unit]
        if path.name.endswith(".zstd"):
            units = ZstdFrames(file, 0, Counter())
        else:
            units = jsonl_lines(file, 0)
        for lines, _end in units:
            yield from lines
