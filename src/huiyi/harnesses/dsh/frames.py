"""The physical layer of DSH session logs: bytes in, lines out, with where to resume after each.

A `.zstd` log is a concatenation of independent zstd frames, one per write batch; a `.jsonl`
log is plain newline-terminated lines. Reading yields *steps*: a line (or none) and the place
the next read resumes after it, a file offset plus, inside a frame, how many of that frame's
decompressed bytes are consumed already. So a read may stop after any line and the next one
starts on a line boundary, even within one huge frame. The meaning of the lines (header,
events, surface ops) belongs to the reader (`reader.py` beside it); this module knows nothing
about JSON.

Why it is shaped this way (a log is input a hostile machine may have shaped):

* Every decompression call is bounded: the decompressor is fed `_FEED` compressed bytes at a
  time, and zstd inflates a byte at most about 32,768 times, so one call gives at most a few
  MiB whatever the frame holds. A frame is first decompressed to check that it is whole; one
  whose text fits `_KEEP` is kept from that pass, a larger one is decompressed again as its
  lines are read, and one that inflates past `MAX_FRAME_BYTES` is skipped whole (counted
  `frame-too-large`) without decompressing the rest: its end is found from its block headers.
* Each frame's text is split as it streams (`LineSplitter`), so an over-long line is dropped
  while it arrives (it becomes `None`) and memory stays bounded by `MAX_LINE_BYTES`.
* A torn frame (a crash mid-write, or a write still in progress) is never consumed: iteration
  stops at its start and `ZstdFrames.torn_end` records the file size seen, so the caller can
  tell a torn tail that stays torn from one that was merely being written. None of its lines
  is yielded, since the frame is checked whole before its first line is.
* A frame that fails to decode (bad checksum, garbage) is counted `corrupt-frame` once per
  run of garbage and skipped by resynchronising on the next zstd magic number (`find`); when
  no frame follows, the rest of the file is consumed. The garbage is yielded as an empty step
  so its offset is consumed even if a torn frame follows it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import zstandard

from huiyi.sources.base import MAX_LINE_BYTES, open_log

__all__ = [
    "CORRUPT_FRAME",
    "FRAME_TOO_LARGE",
    "MAX_FRAME_BYTES",
    "Line",
    "LineSplitter",
    "Step",
    "Unit",
    "ZstdFrames",
    "all_lines",
    "find",
    "frame_end",
    "jsonl_lines",
]

#: Skip reason for a frame that fails to decode (re-exported by `huiyi.harnesses.dsh.reader`).
CORRUPT_FRAME = "corrupt-frame"
#: Skip reason for a frame whose text is larger than `MAX_FRAME_BYTES`.
FRAME_TOO_LARGE = "frame-too-large"
#: The most text one frame may hold: DSH writes a frame per batch of events, far smaller.
MAX_FRAME_BYTES = 64 * 1024 * 1024

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_READ_SIZE = 1 << 16
#: compressed bytes per decompression call: at most about 8 MiB of text come out of one call
_FEED = 256
#: a frame whose text fits this is kept from the pass that checks it; a larger one is
#: decompressed a second time as its lines are read
_KEEP = 4 * 1024 * 1024

#: A physical line; `None` stands for a line that was longer than `MAX_LINE_BYTES`.
Line = bytes | None
#: A consumable unit: a frame's lines and the file offset just after it.
Unit = tuple[list[Line], int]
#: One step of a read: the lines it brings (one, or none when a frame's end or garbage is
#: consumed), the file offset to resume at after it, and the bytes of that frame's text
#: consumed already (0 at a frame's start, and always for a plain log).
Step = tuple[list[Line], int, int]


class LineSplitter:
    """Splits a frame's text into lines as it streams, each with the position in the text just
    after it, dropping the body of an over-long line as it arrives (only the fact that there
    was one is kept). Text before `skip` (a line boundary a previous read stopped at) is
    passed over."""

    def __init__(self, skip: int = 0) -> None:
        self.position = 0
        self._skip = skip
        self._part = bytearray()
        self._too_long = False

    def feed(self, data: bytes) -> list[tuple[Line, int]]:
        base = self.position
        self.position += len(data)
        if base < self._skip:
            cut = min(len(data), self._skip - base)
            data, base = data[cut:], base + cut
        out: list[tuple[Line, int]] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._grow(data[start:end])
            out.append((self._take(), base + end + 1))
            start = end + 1
        self._grow(data[start:])
        return out

    def close(self) -> list[tuple[Line, int]]:
        """End of a frame: frames hold whole lines, so a last line without `\\n` still counts."""
        if self._part or self._too_long:
            return [(self._take(), self.position)]
        return []

    def _grow(self, piece: bytes) -> None:
        if self._too_long:
            return
        if len(self._part) + len(piece) > MAX_LINE_BYTES:
            self._too_long, self._part = True, bytearray()
        else:
            self._part += piece

    def _take(self) -> Line:
        line = None if self._too_long else bytes(self._part)
        self._part, self._too_long = bytearray(), False
        return line


class ZstdFrames:
    """The frames of a `.zstd` log from an offset, as steps (`steps`) or whole units (iterate).

    `skip` is how much of the first frame's text an earlier read consumed. After iteration
    `torn_end` is set when the file ended inside an unfinished frame (it is the file size seen
    then); that frame is left unconsumed.
    """

    def __init__(self, file: IO[bytes], offset: int, skipped: Counter[str], skip: int = 0) -> None:
        self._file, self._offset, self._skipped, self._skip = file, offset, skipped, skip
        self.torn_end: int | None = None

    def __iter__(self) -> Iterator[Unit]:
        lines: list[Line] = []
        for more, end, inside in self.steps():
            lines.extend(more)
            if inside == 0:
                yield lines, end
                lines = []

    def steps(self) -> Iterator[Step]:
        start, skip, in_garbage = self._offset, self._skip, False
        while True:
            status, end, kept = self._check(start)
            if status == "frame":
                in_garbage = False
                if kept is not None:
                    splitter = LineSplitter(skip)
                    pairs = [*splitter.feed(kept), *splitter.close()]
                    yield from (([line], start, at) for line, at in pairs)
                else:
                    yield from self._stream(start, skip)
                start, skip = end, 0
                yield [], start, 0
            elif status == "large":
                self._skipped[FRAME_TOO_LARGE] += 1
                in_garbage = False
                start, skip = end, 0
                yield [], start, 0
            elif status == "corrupt":
                if not in_garbage:
                    self._skipped[CORRUPT_FRAME] += 1
                in_garbage = True
                resync = find(self._file, _ZSTD_MAGIC, start + 1)
                if resync is None:
                    yield [], self._file.seek(0, os.SEEK_END), 0
                    return
                start, skip = resync, 0
                yield [], start, 0  # the garbage is consumed even if a torn frame follows
            else:
                if status == "torn":
                    self.torn_end = end
                return

    def _check(self, start: int) -> tuple[str, int, bytes | None]:
        """Decompress the frame at `start` without keeping more than `_KEEP` of its text:
        ("frame", its end, its text when kept), ("large", its end, None), ("corrupt", ...),
        ("torn", the file size seen, None) or ("end", ...) when no byte is left."""
        frame = zstandard.ZstdDecompressor().decompressobj()
        kept: bytearray | None = bytearray()
        size = used = 0
        self._file.seek(start)
        while data := self._file.read(_READ_SIZE):
            try:
                for at in range(0, len(data), _FEED):
                    out = frame.decompress(data[at : at + _FEED])
                    size += len(out)
                    if kept is not None:
                        if len(kept) + len(out) <= _KEEP:
                            kept += out
                        else:
                            kept = None
                    if size > MAX_FRAME_BYTES:
                        end = frame_end(self._file, start)
                        if end is None:
                            return "corrupt", start, None
                        return "large", end, None
                    if frame.eof:
                        used += at + min(_FEED, len(data) - at) - len(frame.unused_data)
                        return "frame", start + used, None if kept is None else bytes(kept)
            except zstandard.ZstdError:
                return "corrupt", start, None
            used += len(data)
        return ("torn", start + used, None) if used else ("end", start, None)

    def _stream(self, start: int, skip: int) -> Iterator[Step]:
        """The lines of the checked frame at `start` as it is decompressed again."""
        frame = zstandard.ZstdDecompressor().decompressobj()
        splitter = LineSplitter(skip)
        self._file.seek(start)
        while not frame.eof and (data := self._file.read(_READ_SIZE)):
            for at in range(0, len(data), _FEED):
                for line, end in splitter.feed(frame.decompress(data[at : at + _FEED])):
                    yield [line], start, end
                if frame.eof:
                    break
        for line, end in splitter.close():
            yield [line], start, end


def frame_end(file: IO[bytes], start: int) -> int | None:
    """Where the zstd frame at `start` ends, from its header and block headers alone (nothing
    is decompressed); None when they are not those of a frame that ends within the file."""
    size = file.seek(0, os.SEEK_END)
    file.seek(start)
    header = file.read(18)
    if header[:4] != _ZSTD_MAGIC or len(header) < 6:
        return None
    descriptor = header[4]
    single = descriptor >> 5 & 1
    at = 5 + (0 if single else 1)
    at += (0, 1, 2, 4)[descriptor & 3]
    at += (1 if single else 0, 2, 4, 8)[descriptor >> 6]
    position = start + at
    while True:
        file.seek(position)
        block = file.read(3)
        if len(block) < 3:
            return None
        value = int.from_bytes(block, "little")
        last, kind, length = value & 1, value >> 1 & 3, value >> 3
        if kind == 3:
            return None
        position += 3 + (1 if kind == 1 else length)
        if position > size:
            return None
        if last:
            break
    position += 4 if descriptor >> 2 & 1 else 0
    return position if position <= size else None


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


def jsonl_lines(file: IO[bytes], offset: int) -> Iterator[Step]:
    """Newline-terminated lines of a plain `.jsonl` log, up to the size it had when this read
    began; a half-written last line is left."""
    size = os.fstat(file.fileno()).st_size
    file.seek(offset)
    position = offset
    while position < size and (line := file.readline(min(MAX_LINE_BYTES + 1, size - position))):
        if line.endswith(b"\n"):
            position += len(line)
            yield [line[:-1]], position, 0
            continue
        if len(line) <= MAX_LINE_BYTES:
            return  # still being written: the next read takes it whole
        used = len(line)
        while True:
            more = file.readline(min(_READ_SIZE, size - position - used))
            if not more:
                return
            used += len(more)
            if more.endswith(b"\n"):
                break
        position += used
        yield [None], position, 0


def all_lines(path: Path) -> Iterator[Line]:
    """Every line of the consumable part of a log (used by the small lookups)."""
    with open_log(path) as file:
        steps: Iterator[Step]
        if path.name.endswith(".zstd"):
            steps = ZstdFrames(file, 0, Counter()).steps()
        else:
            steps = jsonl_lines(file, 0)
        for lines, _end, _inside in steps:
            yield from lines
