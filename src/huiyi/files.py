"""Files huiyi writes beside the index: replaced atomically, in owner-only directories.

Memory stores, the hooks' anchor state and other small files are written whole: a temp file in
the same directory, fsync, rename, fsync the directory, so a reader sees the old file or the new
one, never half of either. A full disk is a `DiskFullError` that leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
from pathlib import Path

from huiyi.errors import DiskFullError

__all__ = ["atomic_write", "make_private_dirs"]


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


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: temp file in the same directory, fsync, rename, fsync dir.

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
    if sys.platform != "win32":
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
