"""Complete JSON lines from a byte offset: the one line reader the JSONL sources share.

Claude Code transcripts, Codex rollouts and the generic import format are all "one JSON object
per line, appended while the session is live". Every reader needs the same careful loop, so it
lives here once:

- Reading starts at a byte offset and yields only complete lines (ending in `\\n`). A last line
  without its newline is probably still being written: it is neither yielded nor counted, and
  `JsonLines.offset` stays at its start so the next read picks it up whole.
- The file is read in blocks, never whole, and a line longer than `MAX_LINE_BYTES` is skipped
  while it streams past (counted `line-too-long`), so one huge pasted blob cannot exhaust memory.
- The file is opened by `base.open_log` (regular files only, a FIFO never waits) and read only
  up to the size it had when opened: a file that grows while it is read is taken up next time.
- Bad lines are counted, never fatal: `invalid-utf8`, `invalid-json`, and `bad-record` for JSON
  that is not an object. Blank lines are ignored.

It also holds the small helpers the readers share (finding `*.jsonl` files, timestamps, text
cleaning, bounded maps kept in reader state), so each reader module is only about its own
format; `fold` holds what they share in turning records into sessions.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from huiyi.sources.base import (
    BAD_RECORD,
    INVALID_JSON,
    INVALID_UTF8,
    LINE_TOO_LONG,
    MAX_LINE_BYTES,
    open_log,
    valid_time,
)

_BLOCK = 1 << 20
_BOM = "\ufeff"


class JsonLines:
    """Iterate the JSON objects on the complete lines of `path` from byte `offset`.

    After (or during) iteration `offset` is the byte position just past the last complete line
    consumed, good or bad: the place the next read starts. Skipped lines are counted into
    `skipped`. I/O errors (a vanished file, no permission) propagate to the caller.
    """

    def __init__(
        self,
        path: Path,
        offset: int,
        skipped: Counter[str],
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.path = path
        self.offset = offset
        self.skipped = skipped
        self.max_line_bytes = max_line_bytes
        #: the byte offset of the line the record just yielded was read from
        self.start = offset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with open_log(self.path) as handle:
            size = os.fstat(handle.fileno()).st_size  # what is read this time, at most
            handle.seek(self.offset)
            block_start = self.offset  # file position of block[0]
            pending = bytearray()  # the start of a line that continues in the next block
            too_long = False  # streaming past an over-long line without keeping it
            while block_start < size and (block := handle.read(min(_BLOCK, size - block_start))):
                start = 0
                while (newline := block.find(b"\n", start)) >= 0:
                    if too_long:
                        too_long = False
                        self.skipped[LINE_TOO_LONG] += 1
                        record = None
                    elif pending:
                        pending += block[start:newline]
                        record = self._parse(bytes(pending), at_start=self.offset == 0)
                        pending.clear()
                    else:
                        record = self._parse(block[start:newline], at_start=self.offset == 0)
                    self.start, self.offset = self.offset, block_start + newline + 1
                    start = newline + 1
                    if record is not None:
                        yield record
                if not too_long:
                    pending += block[start:]
                    if len(pending) > self.max_line_bytes:
                        too_long = True
                        pending.clear()
                block_start += len(block)

    def _parse(self, line: bytes, *, at_start: bool) -> dict[str, Any] | None:
        if len(line) > self.max_line_bytes:
            self.skipped[LINE_TOO_LONG] += 1
            return None
        return parse_record(line, self.skipped, at_start=at_start)


def parse_record(
    line: bytes, skipped: Counter[str], *, at_start: bool = False, blank_ok: bool = True
) -> dict[str, Any] | None:
    """The JSON object on one line, or None with the reason counted into `skipped`:
    `invalid-utf8`, `invalid-json` (nesting too deep to parse included) or `bad-record` (JSON
    that is no object). `at_start`: the file's first line, whose BOM is dropped; `blank_ok`: a
    blank line is passed over uncounted (else it is invalid JSON).

    orjson reads the line first (half the standard library's time on agent logs, a fifth of a
    first index). What it declines (a blank line, a BOM, invalid UTF-8 or JSON, and JSON only
    the standard library takes: NaN, lone surrogates, nesting past 1,024 levels) is read as
    before, so every line is judged and counted the same either way. (An integer beyond 64
    bits comes back as a float; no field a reader uses holds one.)"""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            skipped[INVALID_UTF8] += 1
            return None
        if at_start and text.startswith(_BOM):
            text = text[1:]
        if blank_ok and not text.strip():
            return None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            skipped[INVALID_JSON] += 1
            return None
    if not isinstance(value, dict):
        skipped[BAD_RECORD] += 1
        return None
    return value


def jsonl_files(root: Path, *, prefix: str = "") -> Iterator[Path]:
    """Every `<prefix>*.jsonl` file below `root`, in sorted order; a missing or vanishing folder
    yields what could be listed (os.walk ignores listing errors)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith(prefix) and name.endswith(".jsonl"):
                yield Path(dirpath) / name


def parse_time(value: object) -> int | None:
    """Epoch milliseconds from an ISO 8601 string (naive means UTC) or from epoch ms; None for
    anything else, and for a time outside what the index keeps (`base.valid_time`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return valid_time(value)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return valid_time(moment.timestamp() * 1000)
    except (ValueError, OverflowError):
        return None


def clean_text(value: str) -> str:
    """`value` with lone UTF-16 surrogates (from JS string slicing) replaced by U+FFFD.

    They are legal in JSON escapes but cannot be stored or printed as UTF-8. ASCII text holds
    none, and saying so costs no copy (most fields of a log are ASCII).
    """
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def as_str(value: object) -> str | None:
    """A non-empty string field, cleaned; anything else is `None`."""
    return clean_text(value) if isinstance(value, str) and value else None


def remember(mapping: MutableMapping[str, Any], key: str, value: Any, limit: int) -> None:
    """Set `mapping[key]`, dropping the oldest keys beyond `limit` (dicts keep insertion order,
    also through a JSON round trip), so maps kept in reader state stay small."""
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > limit:
        del mapping[next(iter(mapping))]
