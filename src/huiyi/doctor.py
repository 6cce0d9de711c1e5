"""Health of the index and its sources: what was found where, counts, bad input, integrity.

`diagnose` only reads. `repair` rebuilds the full-text index from the text the index keeps
(so sessions whose logs are gone survive a repair) and compacts the file; an index SQLite can
no longer open is moved aside and rebuilt from the logs.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from huiyi.config import Settings
from huiyi.sources import default_readers
from huiyi.store.textindex import fts_row


def _size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = path.with_name(path.name + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


def diagnose(conn: sqlite3.Connection, settings: Settings) -> dict[str, Any]:
    sources: dict[str, Any] = {}
    for reader in default_readers(settings):
        roots = [{"path": str(r), "exists": r.is_dir()} for r in reader.roots()]
        sources[reader.source] = {"roots": roots}
    per_source = conn.execute(
        "SELECT source, count(*), sum(missing), sum(error IS NOT NULL), sum(refused IS NOT NULL) "
        "FROM files GROUP BY source"
    ).fetchall()
    for source, files, missing, errors, refused in per_source:
        entry = sources.setdefault(source, {"roots": []})
        entry.update(
            files=files, missing_files=missing, unreadable_files=errors, refused_files=refused
        )
    bad: dict[str, Counter[str]] = {}
    for source, skipped in conn.execute("SELECT source, skipped FROM files"):
        bad.setdefault(source, Counter()).update(json.loads(skipped or "{}"))
    for source, counter in bad.items():
        sources.setdefault(source, {"roots": []})["bad_lines"] = dict(counter)
    for source, sessions, events in conn.execute(
        "SELECT s.source, count(DISTINCT s.sid), coalesce(sum(s.event_count), 0) "
        "FROM sessions s GROUP BY s.source"
    ):
        sources.setdefault(source, {"roots": []}).update(sessions=sessions, events=events)
    integrity = conn.execute("PRAGMA quick_check").fetchone()[0]
    try:
        conn.execute("INSERT INTO event_fts(event_fts, rank) VALUES ('integrity-check', 0)")
        fts_ok = "ok"
    except sqlite3.DatabaseError as exc:
        fts_ok = str(exc)
    totals = conn.execute(
        "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events), "
        "(SELECT count(*) FROM sessions WHERE is_private = 1), "
        "(SELECT count(DISTINCT workspace) FROM sessions)"
    ).fetchone()
    return {
        "home": str(settings.home),
        "index": str(settings.db_path),
        "index_bytes": _size(settings.db_path),
        "sessions": totals[0],
        "events": totals[1],
        "private_sessions": totals[2],
        "workspaces": totals[3],
        "integrity": integrity,
        "fulltext": fts_ok,
        "sources": sources,
    }


def rebuild_fulltext(conn: sqlite3.Connection) -> int:
    """Re-tokenise every indexed event into a fresh FTS table; returns rows written."""
    with conn:
        conn.execute("INSERT INTO event_fts(event_fts) VALUES ('delete-all')")
        rows = conn.execute(
            "SELECT e.id, e.text, s.workspace FROM events e JOIN sessions s ON s.sid = e.sid "
            "WHERE e.indexed = 1"
        )
        count = 0
        batch: list[tuple[int, str, str, str]] = []
        for rowid, text, workspace in rows:
            batch.append((rowid, *fts_row(text, workspace)))
            if len(batch) >= 5000:
                conn.executemany(
                    "INSERT INTO event_fts (rowid, body, whole, scope) VALUES (?, ?, ?, ?)", batch
                )
                count += len(batch)
                batch.clear()
        conn.executemany(
            "INSERT INTO event_fts (rowid, body, whole, scope) VALUES (?, ?, ?, ?)", batch
        )
        count += len(batch)
    conn.execute("VACUUM")
    return count


def move_aside(db_path: Path) -> Path:
    """Rename an unusable index (and its WAL) so a fresh one can be built from the logs."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.broken-{stamp}")
    db_path.rename(target)
    for suffix in ("-wal", "-shm"):
        side = db_path.with_name(db_path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target
