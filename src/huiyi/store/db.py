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
from huiyi.store import migrations, textindex

BUSY_TIMEOUT_MS = 10_000


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (and for writers create and migrate) the index at `path`.

    Raises `StoreError` for a file SQLite cannot use (the message says to run `huiyi doctor
    --repair`) and for an index written by a newer huiyi (which is never touched).
    """
    if readonly and not path.exists():
        conn = sqlite3.connect(":memory:", isolation_level=None)
        migrations.apply(conn)
        conn.isolation_level = "DEFERRED"
        return conn
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = not path.exists()
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
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
        newer = migrations.unknown(conn)
        if newer:
            raise StoreError(
                f"the index at {path} was written by a newer huiyi (it records "
                f"{', '.join(newer)}); upgrade huiyi, or move it aside and run `huiyi index`"
            )
        migrations.apply(conn)
        _rebuild_stale(conn)
        conn.isolation_level = "DEFERRED"  # back to implicit transactions (`with conn:`)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"the index at {path} cannot be opened ({exc}); run `huiyi doctor --repair`: it "
            "keeps the damaged file aside, rebuilds the index from the logs and salvages the "
            "sessions whose logs are gone"
        ) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _rebuild_stale(conn: sqlite3.Connection) -> None:
    """Fill the text indexes again when a migration asked for it (see `store.migrations`)."""
    if migrations.TEXT_INDEXES not in migrations.stale(conn):
        return
    with immediate(conn):
        if migrations.TEXT_INDEXES in migrations.stale(conn):  # not done by another process
            textindex.rebuild(conn)
            migrations.rebuilt(conn, migrations.TEXT_INDEXES)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One explicit write transaction: `BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any error.

    Needs a connection with no transaction open (autocommit mode, or after a commit).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # SQLite rolls some failures back by itself
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def writer_lock(lock_path: Path, *, timeout: float = 120.0) -> Iterator[None]:
    """Hold the index's single-writer lock; wait up to `timeout` seconds for it."""
    with file_lock(lock_path, timeout=timeout, what="the index writer lock"):
        yield
