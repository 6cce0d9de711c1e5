"""The one cross-process lock: an exclusive lock on a file, held for the length of a block.

The index writer (`store.db.writer_lock`) and each memory store (`memory.store`) take it on
their own lock file. `flock` on POSIX, `msvcrt.locking` on Windows; the lock belongs to the open
descriptor, so a process that dies releases it. A waiter polls instead of blocking so it can give
up after `timeout` with a `BusyError` that says what was busy and what to do.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from huiyi.errors import BusyError

#: How often a waiter tries again.
POLL_SECONDS = 0.005


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float, what: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created 0600); wait up to `timeout` seconds.

    `what` names the locked thing in the error ("the index", "the memory store ...").
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise BusyError(
                    f"another huiyi process has held {what} for over {timeout:.0f} s; try "
                    "again when it finishes (or look for a stuck huiyi process)"
                )
            time.sleep(POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
