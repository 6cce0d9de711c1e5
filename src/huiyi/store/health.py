"""The index's health and what it holds: what `huiyi doctor`, `huiyi index` and the status view
read.

Health is SQLite's `quick_check` of the file, the packed texts' check, that every table, index
and trigger the schema expects is there and answers (`schema_check`: a dropped full-text table
leaves a file `quick_check` calls sound, and every search without its lexical layer) and FTS5's
`integrity-check` of both text indexes, all without changing anything; the contents are the
totals and per-source counts a person sees. Only reads live here: what changes the index
because of what these find is `store.repair`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huiyi.store import db, migrations, textpack

__all__ = [
    "Health",
    "check",
    "has_sessions",
    "last_indexed",
    "newer_message",
    "per_source",
    "quick_check",
    "schema_check",
    "totals",
]


@dataclass(frozen=True, slots=True)
class Health:
    """What `check` found. `integrity` and `fulltext` are "ok" or what SQLite complained of."""

    path: Path
    exists: bool = True
    integrity: str = "ok"
    fulltext: str = "ok"
    newer: tuple[str, ...] = ()
    #: "ok", or what of the schema is missing or does not answer (`schema_check`)
    schema: str = "ok"
    #: the names of the missing or silent schema objects
    missing: tuple[str, ...] = ()

    @property
    def file_ok(self) -> bool:
        """The file opens and SQLite's `quick_check` finds nothing wrong."""
        return self.integrity == "ok"

    @property
    def ok(self) -> bool:
        return self.file_ok and self.fulltext == "ok" and self.schema == "ok" and not self.newer

    @property
    def problem(self) -> str | None:
        """One sentence for a person: what is wrong and what to run; None when healthy."""
        if self.newer:
            return newer_message(self.path, self.newer)
        if not self.file_ok:
            what = f"the index at {self.path} is damaged ({self.integrity})"
        elif self.schema != "ok":
            what = f"parts of the index at {self.path} are missing ({self.schema})"
        elif self.fulltext != "ok":
            what = f"the full-text index in {self.path} is damaged ({self.fulltext})"
        else:
            return None
        return (
            f"{what}; run `huiyi doctor --repair` to repair it (a damaged file is kept aside, "
            "and sessions whose logs are gone are salvaged from it)"
        )


def newer_message(path: Path, names: Sequence[str]) -> str:
    return (
        f"the index at {path} was written by a newer huiyi (it records {', '.join(names)}); "
        "upgrade huiyi, or move it aside and run `huiyi index`"
    )


def check(path: Path) -> Health:
    """Check the index file without changing it: does it open, `quick_check`, and FTS5's
    `integrity-check` of both text indexes."""
    if not path.exists():
        return Health(path, exists=False)
    with contextlib.closing(_open(path)) as conn:
        try:
            newer = tuple(migrations.unknown(conn))
        except sqlite3.DatabaseError as exc:
            return Health(path, integrity=f"it cannot be opened: {exc}")
        integrity = quick_check(conn)
        if integrity == "ok":
            integrity = textpack.check(conn)
        missing = schema_check(conn) if integrity == "ok" else ()
        fulltext = "; ".join(
            f"{table}: {problem}"
            for table in ("event_fts", "event_fuzzy")
            if (problem := _fts_check(conn, table, missing)) != "ok"
        )
    return Health(
        path,
        integrity=integrity,
        fulltext=fulltext or "ok",
        newer=newer,
        schema="missing: " + ", ".join(missing) if missing else "ok",
        missing=missing,
    )


@functools.cache
def expected_schema() -> tuple[tuple[str, str, str, str], ...]:
    """(type, name, owning table, SQL) of every table, index and trigger an index of this huiyi
    holds: what the migrations make of an empty index, in memory."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        textpack.install(conn)
        migrations.apply(conn)
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return tuple((str(kind), str(name), str(table), str(sql)) for kind, name, table, sql in rows)


def schema_check(conn: sqlite3.Connection) -> tuple[str, ...]:
    """What of the expected schema (`expected_schema`) is missing, or is there but does not
    answer a read (a full-text table whose shadow tables were dropped), as `"table
    event_fts"`; empty when all is there. An index that has migrations still to apply is
    judged after they ran (the next open applies them), so it is taken as it is."""
    names = {m.__name__ for m in migrations.MIGRATIONS}
    try:
        recorded = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.DatabaseError:
        return ("table _migrations",)
    if not names <= recorded:
        return ()
    present = {
        (str(kind), str(name))
        for kind, name in conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        )
    }
    problems: list[str] = []
    for kind, name, _table, sql in expected_schema():
        if (kind, name) not in present:
            problems.append(f"{kind} {name}")
        elif kind == "table" and not sql.startswith("CREATE VIRTUAL") and not _answers(conn, name):
            # (a full-text table cannot be scanned: FTS5's integrity-check asks it, below)
            problems.append(f"{kind} {name}")
    return tuple(problems)


def _answers(conn: sqlite3.Connection, table: str) -> bool:
    quoted = '"' + table.replace('"', '""') + '"'
    try:
        conn.execute(f"SELECT 1 FROM {quoted} LIMIT 1").fetchall()
    except sqlite3.DatabaseError:
        return False
    return True


def quick_check(conn: sqlite3.Connection) -> str:
    """SQLite's `quick_check` of the whole file: "ok", or what it complained of (five things at
    most). It reads every page, so its time grows with the file: once per `huiyi index`, never
    per search."""
    try:
        complaints = [
            row[0].removeprefix("*** in database main ***\n")
            for row in conn.execute("PRAGMA quick_check(5)")
        ]
    except sqlite3.DatabaseError as exc:
        complaints = [f"quick_check stopped: {exc}"]
    return "ok" if complaints == ["ok"] else "; ".join(complaints)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=db.BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {db.BUSY_TIMEOUT_MS}")
    return conn


def _fts_check(conn: sqlite3.Connection, table: str, missing: tuple[str, ...] = ()) -> str:
    if f"table {table}" in missing:
        return "missing"
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    if exists is None:
        return "ok"  # an index from before that table: the next open migrates it
    try:
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)")
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "ok"


def has_sessions(conn: sqlite3.Connection) -> bool:
    """Whether the index holds any session at all (private ones and forgotten logs included)."""
    return conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is not None


def totals(conn: sqlite3.Connection) -> dict[str, int]:
    """Sessions, events (as `sessions.event_count` counts them), private sessions, workspaces."""
    sessions, events, private, workspaces = conn.execute(
        "SELECT count(*), coalesce(sum(event_count), 0), coalesce(sum(is_private), 0), "
        "count(DISTINCT workspace) FROM sessions"
    ).fetchone()
    return {
        "sessions": sessions,
        "events": events,
        "private_sessions": private,
        "workspaces": workspaces,
    }


#: how many unreadable files `per_source` names per source (all are counted)
UNREADABLE_SHOWN = 10


def per_source(conn: sqlite3.Connection, bundled: str | None = None) -> dict[str, dict[str, Any]]:
    """Per source: files (gone, unreadable, refused), bad lines by reason, sessions, events,
    and the first unreadable files by path with why (a FIFO, a device, no permission).

    Files under the folder `bundled` (the demo history shipped in the package, which no scan
    of a harness's own folders sees) are never counted as gone from disk."""
    sources: dict[str, dict[str, Any]] = {}
    prefix = (bundled.rstrip("/") + "/") if bundled else "\x00"
    for source, files, missing, errors, refused in conn.execute(
        "SELECT source, count(*), coalesce(sum(missing AND substr(path, 1, length(?)) != ?), 0), "
        "sum(error IS NOT NULL), sum(refused IS NOT NULL) FROM files GROUP BY source",
        (prefix, prefix),
    ):
        sources.setdefault(source, {}).update(
            files=files, missing_files=missing, unreadable_files=errors, refused_files=refused
        )
    bad: dict[str, Counter[str]] = {}
    for source, skipped in conn.execute("SELECT source, skipped FROM files"):
        bad.setdefault(source, Counter()).update(json.loads(skipped or "{}"))
    for source, counter in bad.items():
        sources.setdefault(source, {})["bad_lines"] = dict(counter)
    for source, path, error in conn.execute(
        "SELECT source, path, error FROM files WHERE error IS NOT NULL AND missing = 0 "
        "ORDER BY source, path"
    ):
        shown = sources.setdefault(source, {}).setdefault("unreadable", [])
        if len(shown) < UNREADABLE_SHOWN:
            shown.append({"path": path, "why": error})
    for source, sessions, events in conn.execute(
        "SELECT source, count(*), coalesce(sum(event_count), 0) FROM sessions GROUP BY source"
    ):
        sources.setdefault(source, {}).update(sessions=sessions, events=events)
    return sources


def last_indexed(conn: sqlite3.Connection) -> int | None:
    """When a log was last read into the index (epoch ms), None before the first index."""
    row = conn.execute("SELECT max(indexed_at) FROM files").fetchone()
    return int(row[0]) if row and row[0] is not None else None
