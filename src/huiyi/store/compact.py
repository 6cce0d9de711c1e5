"""Compacting the index after a run that wrote most of it (a first index, a repair's rebuild).

Such a run leaves room behind. Its text indexes end as many FTS5 segments (each buffer of new
rows becomes one, merged level by level by `automerge`) whose term lists repeat every common
term once per segment; FTS5's `optimize` merges each into a single segment. The uid index of
events fills in random order, and even appends leave index pages part empty (SQLite packs only
a table's appends); `REINDEX` builds every index again, full. Both write the new before
they free the old, so the file would grow by the freed pages: an index made by this
huiyi keeps `auto_vacuum = INCREMENTAL` (`db.connect`), and `incremental_vacuum` moves the last
pages into the holes and shortens the file, without rewriting the rest of it as `VACUUM` would
(which also took a page cache as large as the index). Indexes made before keep their layout
and are not compacted: their file would only grow.

What each step saves and costs is measured by the side-by-side benchmark (the README gives
today's figures). Done only when a run wrote at least as many events as the index held before
it (and at least `COMPACT_MIN_EVENTS`), so that its cost stays a fraction of the run's.
"""

from __future__ import annotations

import sqlite3

from huiyi.store import transaction

#: a run that wrote fewer events than this is never followed by a compaction
COMPACT_MIN_EVENTS = 10_000
#: the two FTS5 tables (`store.migrations`)
TEXT_TABLES = ("event_fts", "event_fuzzy")
#: SQLite's `auto_vacuum` value for INCREMENTAL
INCREMENTAL = 2


def events_held(conn: sqlite3.Connection) -> int:
    """About how many events the index holds (the largest id: no scan of the table)."""
    (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
    return int(top)


def worth_compacting(held: int, written: int) -> bool:
    """Whether a run that wrote `written` events into an index holding `held` compacts it."""
    return written >= COMPACT_MIN_EVENTS and written >= held


def compact(conn: sqlite3.Connection) -> bool:
    """Merge both text indexes into one segment each and give the freed pages back to the
    file; False (and nothing done) for an index without incremental vacuum."""
    conn.commit()
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != INCREMENTAL:
        return False
    # the small page cache of a first index: REINDEX sorts within it, not in 64 MB more
    with transaction.bulk_load(conn), transaction.immediate(conn):
        for table in TEXT_TABLES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        # the uid index fills in random order, and appends leave index pages part empty
        # (SQLite packs only a table's appends): built again, every index is full
        conn.execute("REINDEX")
        # Python's sqlite3 steps a statement without columns once, and one step of
        # `incremental_vacuum` frees one page: so one statement per free page
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
        for _ in range(free):
            conn.execute("PRAGMA incremental_vacuum(1)")
    return True
