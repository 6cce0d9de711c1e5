"""Damage an index file the ways disks and crashes do, and roll one back to an older schema.

Each helper works on a closed index (`Huiyi.close()` first, so the WAL is checkpointed into
the file) and names what it broke:

    truncate(db_path)                     # the last pages of the file are gone
    flip_cell_pointers(db_path, "events") # a page of a table in the middle can't be read
    break_fulltext(db_path)               # segments of the full-text index are missing
    first_release(db_path)                # the schema and rows the first release (m001) left
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from huiyi.store import migrations


def _open(path: Path) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(path, isolation_level=None))


def truncate(path: Path, pages: int = 4) -> None:
    """Cut the last `pages` pages off the file, as a copy or a disk that filled up does."""
    with _open(path) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size - pages * size)


def pages_of(path: Path, *names: str) -> list[int]:
    """The b-tree leaf pages that hold the named tables or indexes."""
    marks = ",".join("?" * len(names))
    with _open(path) as conn:
        rows = conn.execute(
            f"SELECT pageno FROM dbstat WHERE name IN ({marks}) AND pagetype = 'leaf' "
            "ORDER BY pageno",
            names,
        ).fetchall()
    return [row[0] for row in rows]


def middle_page(path: Path, *names: str) -> int:
    """Of the pages holding `names`, the one nearest the middle of the file (never the first)."""
    pages = pages_of(path, *names)
    with _open(path) as conn:
        count = conn.execute("PRAGMA page_count").fetchone()[0]
    return min(pages[1:], key=lambda p: abs(p - count // 2))


def flip_cell_pointers(path: Path, *names: str) -> int:
    """Invert the cell pointers of the page of `names` nearest the middle; return its number.

    Every pointer then lies past the end of the page, so SQLite's `quick_check` reports the
    page ("Offset ... out of range") and the rows on it can no longer be read.
    """
    page = middle_page(path, *names)
    with _open(path) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    start = (page - 1) * size + 8  # after a leaf page's 8-byte header
    with path.open("r+b") as fh:
        fh.seek(start)
        pointers = fh.read(16)
        fh.seek(start)
        fh.write(bytes(b ^ 0xFF for b in pointers))
    return page


def break_fulltext(path: Path) -> None:
    """Delete the full-text index's segment pages (ids above the structure and averages rows),
    leaving every table SQLite itself checks intact."""
    with _open(path) as conn:
        conn.execute("DELETE FROM event_fts_data WHERE id > 10")


def first_release(path: Path) -> None:
    """Make the index what the first release left: only m001's schema and rows.

    m002 added the fuzzy index and the vectors, m004 the coverage counters and their triggers,
    m009 the coded kinds, roles and surfaces, m010 the text dictionaries; `_rebuild` is
    bookkeeping of later releases.
    """
    with _open(path) as conn:
        for (trigger,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall():
            conn.execute(f'DROP TRIGGER "{trigger}"')
        conn.execute("DROP TABLE embed_coverage")
        _events_as_words(conn)
        conn.execute("DROP TABLE event_fuzzy")
        conn.execute("DROP TABLE vectors")
        conn.execute("DROP TABLE text_dicts")
        conn.execute("DROP TABLE _rebuild")
        conn.execute("DELETE FROM event_fts_config WHERE k IN ('automerge', 'crisismerge')")
        conn.execute("DELETE FROM _migrations WHERE name <> 'm001_initial'")


def before_m009(path: Path) -> None:
    """Make the events table what it was before m009 (words where it keeps codes), with its
    triggers, and forget that m009 ran."""
    with _open(path) as conn:
        triggers = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        ).fetchall()
        _events_as_words(conn)
        for (trigger,) in triggers:
            conn.execute(trigger.replace(" OF sid, kind_code, ", " OF sid, kind, "))
        conn.execute("DELETE FROM _migrations WHERE name = 'm009_words_as_codes'")


def _events_as_words(conn: sqlite3.Connection) -> None:
    """The events table as m001 made it, with the same rows (foreign keys are off here)."""
    (schema,) = (s for s in migrations.M001_SCHEMA if "CREATE TABLE events" in s)
    columns = "id, sid, seq, time, kind, role, text, surface, injected, tool_name, uid, indexed"
    conn.execute(schema.replace("CREATE TABLE events", "CREATE TABLE events_words"))
    conn.execute(f"INSERT INTO events_words ({columns}) SELECT {columns} FROM events")
    conn.execute("DROP TABLE events")
    conn.execute("PRAGMA legacy_alter_table = ON")  # what names `events` stays as it is
    conn.execute("ALTER TABLE events_words RENAME TO events")
    conn.execute("CREATE UNIQUE INDEX events_by_uid ON events(uid) WHERE uid IS NOT NULL")
