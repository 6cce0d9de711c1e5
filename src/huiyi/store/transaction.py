"""One explicit write transaction, and the page cache a big write runs under.

`immediate` and `bulk_load` are what every writer of the index wraps its work in: the ingest
writer, compaction, repair, forgetting, and `db` itself when an open rebuilds what a migration
left stale. They live below all of those, `db` included, so that `compact` can use them while
`db` calls `compact` (an import circle when they lived in `db`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

__all__ = ["BULK_CACHE_KIB", "CACHE_KIB", "bulk_load", "immediate"]

#: page cache of every connection (KiB, as SQLite's negative `cache_size`): searches stay warm
CACHE_KIB = 65_536
#: page cache while a first index writes: appends and FTS5 segment writes reuse few pages, so a
#: small cache writes as fast as the search cache while the writer's memory peaks far lower
BULK_CACHE_KIB = 4_096


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
def bulk_load(conn: sqlite3.Connection) -> Iterator[None]:
    """Settings for writing many files at once (a first index): a small page cache, given back
    afterwards, so the warm service that indexes a big history keeps its cache for searches."""
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
