"""Forgetting: removing a session or a whole workspace from the index, and keeping it out.

A forget rule is recorded in `forgotten` next to the removal, so that the next `huiyi index`
does not read the session back from its log, and a repair carries the rules over from a
damaged copy (`store.repair`). Each call is one write transaction; the caller holds the
writer lock.
"""

from __future__ import annotations

import sqlite3
import time

from huiyi.store import textindex, transaction

__all__ = ["forget_session", "forget_workspace"]


def forget_session(conn: sqlite3.Connection, session_id: str) -> bool:
    """Remove one session and keep it out of the index; False when there is no such session."""
    with transaction.immediate(conn):
        row = conn.execute(
            "SELECT sid, workspace FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return False
        _drop_session(conn, *row)
        _remember(conn, "session", session_id)
    return True


def forget_workspace(conn: sqlite3.Connection, workspace: str) -> int:
    """Remove every session of a workspace and keep it out; returns how many were removed."""
    with transaction.immediate(conn):
        rows = conn.execute(
            "SELECT sid, workspace FROM sessions WHERE workspace = ?", (workspace,)
        ).fetchall()
        for sid, ws in rows:
            _drop_session(conn, sid, ws)
        _remember(conn, "workspace", workspace)
    return len(rows)


def _drop_session(conn: sqlite3.Connection, sid: int, workspace: str) -> None:
    indexed = conn.execute(
        "SELECT id, event_text(text), kind, injected FROM events WHERE sid = ? AND indexed = 1",
        (sid,),
    ).fetchall()
    textindex.remove_rows(conn, workspace, indexed)
    conn.execute("DELETE FROM events WHERE sid = ?", (sid,))  # their vectors go with them
    conn.execute("DELETE FROM sessions WHERE sid = ?", (sid,))


def _remember(conn: sqlite3.Connection, kind: str, value: str) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO forgotten (kind, value, at) VALUES (?, ?, ?)",
        (kind, value, int(time.time() * 1000)),
    )
