"""Files huiyi writes beside the index: replaced atomically, in owner-only directories.

Memory stores, the hooks' anchor state and other small files are written whole: a temp file in
the same directory, fsync, rename, fsync the directory, so a reader sees the old file or the new
one, never half of either. A full disk is a `DiskFullError` that leaves the file as it was.

`SessionBook` keeps a small JSON record per agent session in one such file, for the state hook
processes share across calls (which compaction anchor is due, which memory block a session got).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from huiyi.errors import DiskFullError
from huiyi.lock import file_lock

__all__ = ["SessionBook", "atomic_write", "make_private_dirs"]


def make_private_dirs(directory: Path) -> None:
    """Create `directory` and any missing parents owner-only (0700)."""
    missing: list[Path] = []
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        candidate.mkdir(mode=0o700, exist_ok=True)


#: a full disk, or the user's disk quota used up
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data`: temp file in the same directory, fsync, rename, fsync dir
    (`durable=False` leaves out both fsyncs, for a record that may be lost in a crash).

    A full disk (`ENOSPC`, `EDQUOT`, from creating, writing or syncing the temp file) is a
    `DiskFullError`, and `path` is left exactly as it was: the temp file is removed, never
    renamed over it.
    """
    try:
        make_private_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise _disk_full(path, exc) from exc
        raise
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
            raise _disk_full(path, exc) from exc
        raise
    if durable and sys.platform != "win32":
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _disk_full(path: Path, exc: OSError) -> DiskFullError:
    """What a person is told when writing `path` found no space, and what to do."""
    return DiskFullError(
        f"the disk holding {path} is full ({exc.strerror or exc}); {path.name} was left as it "
        "was: free some space and try again"
    )


class SessionBook:
    """A small JSON record per key (an agent session) in one file, changed under its own lock
    and written atomically. Only the `keep` most recently changed records are kept, an empty
    record is dropped, and an unreadable file is an empty book: what it holds is derived state
    a hook can do without."""

    def __init__(
        self,
        path: Path,
        *,
        keep: int,
        what: str,
        lock_seconds: float = 2.0,
        durable: bool = True,
    ) -> None:
        """`durable=False`: writes are not synced to disk (a record a crash may lose)."""
        self.path = path
        self.durable = durable
        self.lock_path = path.with_name(path.name + ".lock")
        self.keep = keep
        self.what = what
        self.lock_seconds = lock_seconds

    @contextlib.contextmanager
    def entry(self, key: str, now: int) -> Iterator[tuple[dict[str, Any], bool]]:
        """The record of `key` (a copy to change in place) and whether the book had one; saved
        when the block changed it, stamped `seen: now`."""
        with file_lock(self.lock_path, timeout=self.lock_seconds, what=self.what):
            records = self.read()
            known = key in records
            record = dict(records.get(key, {}))
            before = dict(record)
            yield record, known
            if record == before:
                return
            if not {k: v for k, v in record.items() if k != "seen"}:
                records.pop(key, None)
            else:
                record["seen"] = now
                records[key] = record
            newest = sorted(records.items(), key=lambda item: _seen(item[1]), reverse=True)
            kept = dict(newest[: self.keep])
            data = json.dumps(kept, sort_keys=True).encode("utf-8")
            atomic_write(self.path, data, durable=self.durable)

    def read(self) -> dict[str, dict[str, Any]]:
        """Every record; an unreadable file is an empty book."""
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}


def _seen(record: dict[str, Any]) -> int:
    seen = record.get("seen")
    return seen if isinstance(seen, int) else 0
