"""Compacting the index after a run that wrote most of it (a first index, a large import).

A first index leaves its text indexes as many FTS5 segments (each buffer of new rows becomes
one, merged level by level by `automerge`), whose term lists repeat every common term once per
segment. FTS5's `optimize` merges each text index into a single segment: on the side-by-side
benchmark's 104k Claude Code messages 37.6 -> 37.1 MB (the trigram index, whose terms are all
common, most of it), for about half a second of a first index's eight. `optimize`
writes the merged segment before it frees the old ones, so the file would grow by the freed
pages; an index made by this huiyi keeps `auto_vacuum = INCREMENTAL` (`db.connect`), and
`incremental_vacuum` then moves the last pages into the holes and shortens the file, without
rewriting the rest of it as `VACUUM` does. Indexes made before keep their layout and are not
compacted (their file would only grow).

Done only when a run wrote at least as many events as the index held before it (and at least
`COMPACT_MIN_EVENTS`), so that its cost stays a fraction of the run's.
"""

from __future__ import annotations

import sqlite3

from huiyi.store import db

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
    with db.immediate(conn):
        for table in TEXT_TABLES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        # Python's sqlite3 steps a statement without columns once, and one step of
        # `incremental_vacuum` frees one page: so one statement per free page
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
        for _ in range(free):
            conn.execute("PRAGMA incremental_vacuum(1)")
    return True
