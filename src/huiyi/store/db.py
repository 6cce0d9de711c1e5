"""Opening the index: one SQLite file under HUIYI_HOME, WAL mode, owner-only permissions.

Many processes may read at once (MCP servers, hooks, the CLI); writes are serialised by
`writer_lock` (a `flock` on a lock file next to the database) on top of SQLite's own locking,
so a long ingestion never fails another writer with "database is locked": it waits its turn.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from huiyi.errors import StoreError
from huiyi.lock import file_lock
from huiyi.store import migrations

BUSY_TIMEOUT_MS = 10_000


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (and for writers create and migrate) the index at `path`."""
    if readonly and not path.exists():
        conn = sqlite3.connect(":memory:")
        migrations.apply(conn)
        return conn
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = not path.exists()
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        if fresh:
            os.chmod(path, 0o600)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # after a checkpoint the WAL shrinks back to this, instead of keeping its largest size
        conn.execute("PRAGMA journal_size_limit = 33554432")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -65536")
        conn.isolation_level = "DEFERRED"  # back to implicit transactions (`with conn:`)
        migrations.apply(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"the index at {path} cannot be opened ({exc}); run `huiyi doctor --repair` "
            "to rebuild it from the logs"
        ) from exc
    return conn


@contextlib.contextmanager
def writer_lock(lock_path: Path, *, timeout: float = 120.0) -> Iterator[None]:
    """Hold the index's single-writer lock; wait up to `timeout` seconds for it."""
    with file_lock(lock_path, timeout=timeout, what="the index writer lock"):
        yield
