"""Repairing a damaged index without losing a session that was indexed.

The index is derived data, but not only: Claude Code deletes transcripts after 30 days and the
index keeps their text, so a repair must lose no session that was indexed. `repair` therefore
works in two steps. When only the text indexes (`event_fts`, `event_fuzzy`) are damaged, or
missing (a dropped table, a plain index gone), they are made again and rebuilt in place from
the kept text. When the file itself is damaged or cannot be opened, it is
moved aside (never deleted), a fresh index is built from the logs by the normal ingestion, and
then the broken copy is read row by row, so that an unreadable page costs only its own rows:
first its forget rules (before the logs are read, so forgotten sessions stay out), then every
session the logs no longer have, with its events' text, written through `textindex` like any
other event. A session the damaged copy held as private stays private (once private, always
private: its log read at once may no longer say so, say when a later title replaced a marked
one), and so does every session below it. Everything runs under the index's writer lock.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huiyi.errors import StoreError
from huiyi.model import TEXT_KINDS, sql_kinds
from huiyi.sources.base import Reader
from huiyi.store import compact, db, textindex, textpack, transaction, vectors
from huiyi.store.codes import kind_code, role_code, surface_code
from huiyi.store.health import Health, check, expected_schema, newer_message
from huiyi.store.ingest import Ingestor, Progress, SourceReport, spread_privacy, text_uid_key
from huiyi.store.textpack import TextPackError

__all__ = ["RepairReport", "move_aside", "repair"]

#: the kinds `sessions.event_count` counts: what "events" means in every total huiyi shows
COUNTED_KINDS = sql_kinds(TEXT_KINDS)


@dataclass(slots=True)
class RepairReport:
    """What `repair` found and did."""

    found: Health
    #: "none" (healthy), "text-indexes" (rebuilt in place) or "rebuilt" (a fresh index)
    action: str = "none"
    #: events re-tokenised into the text indexes, in place
    text_events: int = 0
    #: where the damaged file was moved (kept, never deleted)
    moved_aside: Path | None = None
    #: sessions read again from their logs into the fresh index
    from_logs: int = 0
    #: sessions only the damaged copy still had (their logs are gone), and their events
    salvaged: int = 0
    salvaged_events: int = 0
    #: forget rules carried over from the damaged copy
    forgotten: int = 0
    #: per table, row positions in damaged stretches of the damaged copy that could not be read
    unreadable: dict[str, int] = field(default_factory=dict)
    #: what could not be salvaged beyond counted rows (a copy that cannot be read at all, ...)
    notes: list[str] = field(default_factory=list)
    sources: dict[str, SourceReport] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "found": self.found.problem or "ok",
            "action": self.action,
            "text_events": self.text_events,
            "moved_aside": str(self.moved_aside) if self.moved_aside else None,
            "sessions_from_logs": self.from_logs,
            "sessions_salvaged": self.salvaged,
            "events_salvaged": self.salvaged_events,
            "forget_rules_kept": self.forgotten,
            "unreadable_rows": dict(self.unreadable),
            "notes": list(self.notes),
        }


def repair(
    path: Path,
    lock_path: Path,
    readers: Sequence[Reader],
    *,
    progress: Progress | None = None,
    lock_timeout: float = 120.0,
) -> RepairReport:
    """Check the index at `path` and mend what is damaged, losing no session that was indexed.

    Healthy: nothing is done. Only the text indexes damaged: they are rebuilt in place. The file
    damaged or unreadable: it is moved aside, the index is built again from `readers`, and what
    only the damaged copy still holds is salvaged from it. No connection to `path` may be open
    in this process. An index written by a newer huiyi is refused (`StoreError`), untouched.
    """
    with db.writer_lock(lock_path, timeout=lock_timeout):
        health = check(path)
        if health.newer:
            raise StoreError(newer_message(path, health.newer))
        report = RepairReport(health)
        if health.ok:
            return report
        if (
            health.file_ok
            and _make_missing_in_place(path, health.missing)
            and _rebuild_text_in_place(path, report)
            and check(path).ok
        ):
            report.action = "text-indexes"
            return report
        _rebuild(path, readers, report, progress)
    return report


#: FTS5's structure record (row 10 of `<table>_data`) of an index with no segments
_NO_SEGMENTS = "X'00000000000000'"


def _make_missing_in_place(path: Path, missing: Sequence[str]) -> bool:
    """Make again what of the schema is missing when all of it is derived from the kept text:
    a full-text table (dropped whole, or one of its shadow tables) or a plain index. Anything
    else missing (a table of rows, a trigger that kept counts) is False: the whole index is
    rebuilt then, which loses nothing."""
    if not missing:
        return True
    expected = {f"{kind} {name}": (kind, name, sql) for kind, name, _t, sql in expected_schema()}
    virtual = {name for kind, name, sql in expected.values() if sql.startswith("CREATE VIRTUAL")}
    remake: set[str] = set()
    shadows: list[str] = []  # missing shadow tables of a full-text table that is still there
    indexes: list[str] = []
    for item in missing:
        kind, name, sql = expected[item]
        owner = next((v for v in virtual if name == v or name.startswith(f"{v}_")), None)
        if owner is not None:
            remake.add(owner)
            if name != owner and f"table {owner}" not in missing:
                shadows.append(sql)
                if name == f"{owner}_data":  # an empty structure record: FTS5 opens it then
                    shadows.append(f'INSERT INTO "{name}" (id, block) VALUES (10, {_NO_SEGMENTS})')
        elif kind == "index":
            indexes.append(sql)
        else:
            return False
    try:
        conn = db.connect(path)
    except StoreError:
        return False
    try:
        with transaction.immediate(conn):
            # FTS5 drops a table only when all of its shadow tables are there: the missing
            # ones go in first, empty, and the table is dropped and made whole again
            for sql in shadows:
                conn.execute(sql)
            for name in sorted(remake):
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
                for kind, other, _sql in expected.values():
                    if kind == "table" and other.startswith(f"{name}_"):
                        conn.execute(f'DROP TABLE IF EXISTS "{other}"')  # left by itself
                conn.execute(expected[f"table {name}"][2])
            for sql in indexes:
                conn.execute(sql)
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
    return True


def _rebuild_text_in_place(path: Path, report: RepairReport) -> bool:
    try:
        conn = db.connect(path)
    except StoreError:
        return False
    try:
        with transaction.immediate(conn):
            report.text_events = textindex.rebuild(conn)
        conn.execute("VACUUM")
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
    return True


def _rebuild(
    path: Path, readers: Sequence[Reader], report: RepairReport, progress: Progress | None
) -> None:
    """Build a fresh index next to the damaged one, then swap them.

    The damaged file stays where it is until the fresh one is complete, so an interrupted
    repair loses nothing and the next one starts over.
    """
    report.action = "rebuilt"
    report.text_events = 0
    fresh = path.with_name(f"{path.name}.rebuilding")
    for leftover in _with_sides(fresh):  # what an interrupted repair left behind
        leftover.unlink(missing_ok=True)
    conn = db.connect(fresh)
    try:
        salvage = _Salvage.open(path, report)
        try:
            if salvage is not None:
                salvage.forgotten_into(conn)
            ingestor = Ingestor(conn)
            for reader in readers:
                source = report.sources.setdefault(reader.source, SourceReport(reader.source))
                ingestor.index_reader(reader, source, progress=progress)
            report.from_logs = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
            if salvage is not None:
                salvage.sessions_into(conn)
            compact.compact(conn)  # a fresh index, written whole: as a first index is
        finally:
            if salvage is not None:
                salvage.close()
    finally:
        conn.close()  # the last connection: its WAL is checkpointed into the file and removed
    report.moved_aside = move_aside(path)
    fresh.rename(path)


def _with_sides(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm")]


def move_aside(path: Path) -> Path:
    """Rename an unusable index, with its WAL and shared memory, to `<name>.broken-<stamp>`."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.broken-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.broken-{stamp}-{n}")
        n += 1
    for side, moved in zip(_with_sides(path), _with_sides(target), strict=True):
        if side.exists():
            side.rename(moved)
    return target


#: how far past the last readable row a damaged stretch is searched when its end is unknown
MAX_PROBES = 100_000

SESSION_COLUMNS = (
    "sid, id, source, cwd, workspace, title, first_user, title_unreadable, created, updated, "
    "parent, is_subagent, is_private"
)
EVENT_COLUMNS = "sid, seq, time, kind, role, text, surface, injected, tool_name, uid, indexed"


class _Salvage:
    """The damaged copy, opened read-only and read row by row."""

    def __init__(self, conn: sqlite3.Connection, report: RepairReport) -> None:
        self.conn = conn
        self.report = report
        self.texts = textpack.Codec(lambda: conn)  # the copy's packed texts, its dictionaries

    @classmethod
    def open(cls, path: Path, report: RepairReport) -> _Salvage | None:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            # a truncated file's header promises pages it no longer has; SQLite refuses to
            # read such a file at all unless the schema is writable (nothing is written)
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            report.notes.append(f"nothing could be read from the damaged copy ({exc})")
            return None
        return cls(conn, report)

    def close(self) -> None:
        self.conn.close()

    def rows(self, table: str, columns: str) -> Iterator[tuple[Any, ...]]:
        """Every readable row of `table` in rowid order; a damaged page costs only its rows."""
        select = f"SELECT rowid, {columns} FROM {table}"
        after = 0  # every rowid huiyi writes is positive
        top = self._top(table)
        while True:
            try:
                for row in self.conn.execute(f"{select} WHERE rowid > ? ORDER BY rowid", (after,)):
                    after = row[0]
                    yield row[1:]
                return
            except sqlite3.DatabaseError:
                pass
            # a damaged stretch: look for the next row that reads whole, one rowid at a time
            limit = top if top is not None else after + MAX_PROBES
            found: tuple[Any, ...] | None = None
            failed = 0
            for rowid in range(after + 1, limit + 1):
                try:
                    found = self.conn.execute(
                        f"{select} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (rowid,)
                    ).fetchone()
                except sqlite3.DatabaseError:
                    failed += 1
                    continue
                break
            else:
                if top is None:  # where the table ends is unknown: no count to give
                    self.report.notes.append(f"the end of table {table} could not be read")
                    return
            if failed:  # row positions in the stretch (deleted rows leave gaps: at most)
                self._unreadable(table, failed)
            if found is None:
                return
            after = found[0]
            yield found[1:]

    def _top(self, table: str) -> int | None:
        try:
            top = self.conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
        except sqlite3.DatabaseError:
            return None
        return int(top) if top is not None else 0

    def _guard(self, step: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        """Rows until the copy cannot be read at all (its schema is gone), which is noted."""
        try:
            yield from step
        except sqlite3.DatabaseError as exc:
            self.report.notes.append(f"the damaged copy stopped being readable ({exc})")

    def _unreadable(self, table: str, rows: int = 1) -> None:
        self.report.unreadable[table] = self.report.unreadable.get(table, 0) + rows

    def _insert(
        self, conn: sqlite3.Connection, table: str, sql: str, values: tuple[Any, ...]
    ) -> sqlite3.Cursor | None:
        """Write one salvaged row; a row whose damage breaks a constraint is counted, skipped."""
        try:
            return conn.execute(sql, values)
        except sqlite3.IntegrityError:
            self._unreadable(table)
            return None

    def forgotten_into(self, conn: sqlite3.Connection) -> None:
        """Carry the forget rules over (before any log is read again)."""
        rules = list(self._guard(self.rows("forgotten", "kind, value, at")))
        with transaction.immediate(conn):
            for rule in rules:
                cur = self._insert(
                    conn,
                    "forgotten",
                    "INSERT OR IGNORE INTO forgotten (kind, value, at) VALUES (?, ?, ?)",
                    rule,
                )
                self.report.forgotten += cur.rowcount if cur is not None else 0

    def sessions_into(self, conn: sqlite3.Connection) -> None:
        """Add every session the fresh index lacks, with its events, from the kept text, and
        keep private what the damaged copy held as private."""
        have = {row[0] for row in conn.execute("SELECT id FROM sessions")}
        gone_sessions = {
            r[0] for r in conn.execute("SELECT value FROM forgotten WHERE kind = 'session'")
        }
        gone_workspaces = {
            r[0] for r in conn.execute("SELECT value FROM forgotten WHERE kind = 'workspace'")
        }
        with transaction.immediate(conn):
            # old sid -> (new sid, workspace)
            moved: dict[int, tuple[int, str]] = {}
            private: list[str] = []
            for old_sid, sid_text, *rest in self._guard(self.rows("sessions", SESSION_COLUMNS)):
                workspace = rest[2]
                if sid_text in have and rest[-1]:
                    private.append(sid_text)
                if sid_text in have or sid_text in gone_sessions or workspace in gone_workspaces:
                    continue
                cur = self._insert(
                    conn,
                    "sessions",
                    "INSERT OR IGNORE INTO sessions (id, source, cwd, workspace, title, "
                    "first_user, title_unreadable, created, updated, parent, is_subagent, "
                    "is_private) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sid_text, *rest),
                )
                if cur is not None and cur.rowcount == 1:
                    moved[old_sid] = (int(cur.lastrowid or 0), workspace)
            conn.executemany(
                "UPDATE sessions SET is_private = 1 WHERE id = ?", [(i,) for i in private]
            )
            spread_privacy(conn)
            if not moved:
                return
            pack = textpack.codec(conn).pack
            texts: dict[str, list[tuple[int, textindex.Streams]]] = {}
            salvaged: dict[int, list[tuple[str, bool, bool]]] = {}  # sid -> new events
            for old_sid, *event in self._guard(self.rows("events", EVENT_COLUMNS)):
                if old_sid not in moved:
                    continue
                sid, workspace = moved[old_sid]
                _, _, kind, _, text, _, injected, _, uid, indexed = event
                try:
                    text = self.texts.unpack(text)
                except (TextPackError, sqlite3.DatabaseError):  # the copy's dictionary
                    text = None  # its dictionary is damaged or gone
                if not isinstance(text, str) or not isinstance(kind, str):
                    self._unreadable("events")  # a damaged row that still parsed
                    continue
                if isinstance(uid, str):  # the damaged index predates m007's uid keys
                    event[8] = text_uid_key(uid)
                event[2], event[3] = kind_code(kind), role_code(event[3])
                event[4], event[5] = pack(text), surface_code(event[5])
                cur = self._insert(
                    conn,
                    "events",
                    "INSERT OR IGNORE INTO events (sid, seq, time, kind_code, role_code, text, "
                    "surface_code, injected, tool_name, uid, indexed) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sid, *event),
                )
                if cur is None or cur.rowcount != 1:
                    continue  # damaged, or its uid is indexed under another session already
                self.report.salvaged_events += 1
                salvaged.setdefault(sid, []).append((kind, bool(injected), bool(indexed)))
                if indexed:
                    batch = texts.setdefault(workspace, [])
                    batch.append(
                        (int(cur.lastrowid or 0), textindex.stored_streams(text, kind, injected))
                    )
                    if len(batch) >= textindex.REBUILD_BATCH:
                        textindex.add_rows(conn, workspace, texts.pop(workspace))
            for workspace, batch in texts.items():
                textindex.add_rows(conn, workspace, batch)
            for sid, events in salvaged.items():
                vectors.count_new_events(conn, sid, events)
            textpack.train(conn)  # the salvaged text, when the logs gave too little to train on
            conn.executemany(
                "UPDATE sessions SET "
                f"event_count = (SELECT count(*) FROM events WHERE sid = :sid AND kind IN "
                f"({COUNTED_KINDS})), "
                "user_count = (SELECT count(*) FROM events WHERE sid = :sid AND kind = 'user' "
                "AND injected = 0) WHERE sid = :sid",
                [{"sid": sid} for sid, _ in moved.values()],
            )
            self.report.salvaged = len(moved)
