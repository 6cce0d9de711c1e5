"""Sessions and events out of the local SQLite index, as `store.batch` records: what a copy of
the index into PostgreSQL (and a push to the team server, after its own filters) hands on."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from huiyi.store.batch import Batch, EventRecord, SessionRecord

_SESSION = (
    "SELECT sid, id, source, cwd, workspace, title, first_user, created, updated, parent, "
    "is_subagent, is_private FROM sessions"
)
_EVENTS = (
    "SELECT seq, time, kind, role, event_text(text), surface, injected, tool_name, id "
    "FROM events WHERE sid = ? AND seq > ? ORDER BY seq"
)


def session_record(row: Sequence[object]) -> SessionRecord:
    _sid, sid_text, source, cwd, ws, title, first, created, updated, parent, sub, priv = row
    return SessionRecord(
        id=str(sid_text),
        source=str(source),
        cwd=str(cwd),
        workspace=str(ws),
        title=title if isinstance(title, str) else None,
        first_user=first if isinstance(first, str) else None,
        created=created if isinstance(created, int) else None,
        updated=updated if isinstance(updated, int) else None,
        parent=parent if isinstance(parent, str) else None,
        is_subagent=bool(sub),
        is_private=bool(priv),
    )


def sessions(
    conn: sqlite3.Connection, *, updated_since: int | None = None
) -> list[tuple[int, SessionRecord]]:
    """(sid, record) of every session (active since `updated_since`, epoch ms)."""
    if updated_since is None:
        rows = conn.execute(_SESSION + " ORDER BY sid").fetchall()
    else:
        rows = conn.execute(
            _SESSION + " WHERE coalesce(updated, 0) >= ? ORDER BY sid", (updated_since,)
        ).fetchall()
    return [(int(row[0]), session_record(row)) for row in rows]


def events(conn: sqlite3.Connection, sid: int, *, after_seq: int = -1) -> list[EventRecord]:
    """A session's events after `after_seq`, in seq order, with their row ids."""
    return [
        EventRecord(
            int(seq),
            int(when),
            str(kind),
            str(role),
            str(text),
            str(surface),
            bool(injected),
            tool,
            int(rowid),
        )
        for seq, when, kind, role, text, surface, injected, tool, rowid in conn.execute(
            _EVENTS, (sid, after_seq)
        )
    ]


def everything(conn: sqlite3.Connection) -> Iterator[Batch]:
    """The whole index, one batch a session."""
    for sid, record in sessions(conn):
        yield Batch(record, events(conn, sid))


def vectors(conn: sqlite3.Connection) -> Iterator[tuple[str, int, bytes]]:
    """(model, event id, float16 bytes) of every vector."""
    for model, event_id, vec in conn.execute("SELECT model, event_id, vec FROM vectors"):
        yield str(model), int(event_id), bytes(vec)
