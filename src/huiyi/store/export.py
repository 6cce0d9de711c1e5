"""Sessions and events out of the local SQLite index: as `store.batch` records for a copy of
the index into PostgreSQL, and as a client's pushes to the team server (`team_pushes`: only
shared workspaces, never a private session, every text redacted before it leaves)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence

from huiyi.safety.redact import redact
from huiyi.store.batch import Batch, EventRecord, SessionRecord
from huiyi.store.queries import display_title
from huiyi.store.readthrough import kept_or_found

_SESSION = (
    "SELECT sid, id, source, cwd, workspace, title, first_user, created, updated, parent, "
    "is_subagent, is_private FROM sessions"
)
_EVENTS = (
    "SELECT seq, time, kind, role, event_text(text), surface, injected, tool_name, id "
    f"FROM events WHERE sid = ? AND seq > ? AND {kept_or_found('text')} ORDER BY seq"
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


#: what one push carries at most: a client sends a larger history in several
PUSH_EVENTS = 5_000
PUSH_CHARS = 3_000_000


def _event_json(event: EventRecord) -> dict[str, object]:
    return {
        "seq": event.seq,
        "time": event.time,
        "kind": event.kind,
        "role": event.role,
        "text": redact(event.text).text,
        "surface": event.surface,
        "injected": event.injected,
        "tool_name": event.tool_name,
    }


def team_pushes(
    conn: sqlite3.Connection,
    shared: Sequence[str],
    pushed: Mapping[str, int],
    name_of: Callable[[str], str],
) -> Iterator[tuple[dict[str, object], dict[str, int], list[str]]]:
    """What a client pushes to the team server, push by push: (payload without its id, the
    last seq it carries per session, the sessions it withdraws).

    Only sessions of the `shared` workspaces (local paths), only what is new since `pushed`
    (session id -> last seq pushed), only non-private sessions, every text and title redacted
    here, before it leaves; a session pushed before that is now private, or is gone from the
    index (`huiyi forget`), is withdrawn with a tombstone. Workspaces are named as the team
    knows them (`name_of`: `teamname.workspace_name`); no path of this machine is sent.
    """
    wanted = set(shared)
    present: set[str] = set()
    tombstones: list[str] = []
    sessions: list[dict[str, object]] = []
    last: dict[str, int] = {}
    size = events_held = 0
    for sid, record in sessions_of(conn, wanted):
        present.add(record.id)
        if record.is_private:
            if record.id in pushed:
                tombstones.append(record.id)
            continue
        fresh = events(conn, sid, after_seq=pushed.get(record.id, -1))
        if not fresh:
            continue
        title = display_title(record.title, record.first_user)
        sessions.append(
            {
                "id": record.id,
                "source": record.source,
                "workspace": name_of(record.workspace),
                "title": redact(title).text if title else None,
                "created": record.created,
                "updated": record.updated,
                "parent": record.parent,
                "is_subagent": record.is_subagent,
                "events": [_event_json(e) for e in fresh],
            }
        )
        last[record.id] = fresh[-1].seq
        events_held += len(fresh)
        size += sum(len(e.text) for e in fresh)
        if events_held >= PUSH_EVENTS or size >= PUSH_CHARS:
            yield {"sessions": sessions, "tombstones": []}, last, []
            sessions, last, size, events_held = [], {}, 0, 0
    tombstones += [session_id for session_id in pushed if session_id not in present]
    if sessions or tombstones:
        yield {"sessions": sessions, "tombstones": tombstones}, last, tombstones


def sessions_of(conn: sqlite3.Connection, workspaces: set[str]) -> list[tuple[int, SessionRecord]]:
    """(sid, record) of every session of these workspaces."""
    if not workspaces:
        return []
    marks = ",".join("?" * len(workspaces))
    rows = conn.execute(
        _SESSION + f" WHERE workspace IN ({marks}) ORDER BY sid", sorted(workspaces)
    ).fetchall()
    return [(int(row[0]), session_record(row)) for row in rows]
