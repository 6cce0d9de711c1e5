"""Read queries over the index: sessions, events and the full-text match.

Nothing here decides scope or privacy: callers pass the filters, and `huiyi.recall.scope`
decides which filters an agent-facing call gets. Every value is a bound parameter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from huiyi.model import Event, Kind, Session, Surface, sql_kinds
from huiyi.safety.redact import redact
from huiyi.store import textpack

SESSION_COLUMNS = (
    "sid, id, source, cwd, workspace, coalesce(title, ''), created, updated, parent, "
    "is_subagent, is_private, event_count, user_count, first_user"
)


#: How much of the first human message stands in for a missing title.
FALLBACK_TITLE_CHARS = 60


def display_title(title: str | None, first_user: str | None) -> str:
    """The one title rule: the session's own title, else the start of its first human
    message (on one line), else "" (shown as "(untitled)")."""
    if title and title.strip():
        return title.strip()
    if first_user:
        # redacted whole before it is cut: a cut must never keep part of a secret
        first = " ".join(redact(first_user).text.split())
        if len(first) <= FALLBACK_TITLE_CHARS:
            return first
        cut = first[:FALLBACK_TITLE_CHARS]
        # end on a whole word where there is one, so a cut never keeps half a secret token
        space = cut.rfind(" ")
        if first[FALLBACK_TITLE_CHARS] != " " and space >= FALLBACK_TITLE_CHARS // 3:
            cut = cut[:space]
        return cut.rstrip() + "…"
    return ""


class SessionRow(NamedTuple):
    """A session as read from the index; `session.title` is its display title
    (`display_title`), the same wherever a session is shown."""

    sid: int
    session: Session
    first_user: str | None


def session_row(row: Sequence[Any]) -> SessionRow:
    """A row of the session columns (sid, id, source, cwd, workspace, title, created, updated,
    parent, is_subagent, is_private, event_count, user_count, first_user) as a `SessionRow`,
    from either store."""
    (sid, sid_text, source, cwd, ws, title, created, updated, parent, sub, priv, n, u, first) = row
    return SessionRow(
        int(sid),
        Session(
            id=sid_text,
            source=source,
            cwd=cwd,
            workspace=ws,
            title=display_title(title, first),
            created=created or updated or 0,
            updated=updated or created or 0,
            parent=parent,
            is_subagent=bool(sub),
            is_private=bool(priv),
            event_count=n,
            user_count=u,
        ),
        first,
    )


def session_by_id(conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return session_row(row) if row else None


def sessions_by_sid(conn: sqlite3.Connection, sids: Sequence[int]) -> dict[int, SessionRow]:
    """sid -> session for many sessions at once (a search looks up hundreds per call)."""
    out: dict[int, SessionRow] = {}
    for start in range(0, len(sids), 500):
        part = list(sids[start : start + 500])
        for row in conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE sid IN ({','.join('?' * len(part))})",
            part,
        ):
            out[row[0]] = session_row(row)
    return out


def list_sessions(
    conn: sqlite3.Connection,
    *,
    workspace: str | None,
    include_private: bool = False,
    include_subagents: bool = True,
    limit: int | None = None,
) -> list[SessionRow]:
    """Sessions, most recently active first; `workspace=None` means every workspace."""
    where = ["event_count > 0"]
    params: list[Any] = []
    if workspace is not None:
        where.append("workspace = ?")
        params.append(workspace)
    if not include_private:
        where.append("is_private = 0")
    if not include_subagents:
        where.append("is_subagent = 0")
    sql = (
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)} "
        "ORDER BY coalesce(updated, created, 0) DESC, sid DESC"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [session_row(r) for r in conn.execute(sql, params)]


def workspaces(conn: sqlite3.Connection) -> list[str]:
    """Workspaces holding a visible (non-private) session with events, most recently active
    first: a workspace of private sessions only is not named."""
    sql = (
        "SELECT workspace FROM sessions WHERE event_count > 0 AND is_private = 0 "
        "GROUP BY workspace ORDER BY max(coalesce(updated, created, 0)) DESC"
    )
    return [row[0] for row in conn.execute(sql)]


#: an event's columns; its text through `event_text` (it may be kept packed: `store.textpack`)
EVENT_COLUMNS = "seq, time, kind, role, event_text(text), surface, injected, tool_name"
#: the same, of `events e` in a join
EVENT_COLUMNS_E = (
    "e.seq, e.time, e.kind, e.role, event_text(e.text), e.surface, e.injected, e.tool_name"
)


def event_row(session_id: str, row: Sequence[Any]) -> Event:
    """The `Event` of a row of `EVENT_COLUMNS` (both stores read events in that order)."""
    seq, time, kind, role, text, surface, injected, tool = row
    return Event(
        session=session_id,
        seq=seq,
        time=time,
        kind=Kind(kind),
        role=role,
        text=text,
        surface=Surface(surface),
        injected=bool(injected),
        tool_name=tool,
    )


def events(
    conn: sqlite3.Connection,
    sid: int,
    session_id: str,
    *,
    from_seq: int | None = None,
    to_seq: int | None = None,
    kinds: Sequence[str] | None = None,
    surface: str | None = None,
    limit: int | None = None,
    newest_first: bool = False,
) -> Iterator[Event]:
    """A session's events in seq order (or newest first), filtered by range, kind and surface.

    Read lazily, so that a caller with a budget stops reading where it stops; `list()` it to
    keep them."""
    where = ["sid = ?"]
    params: list[Any] = [sid]
    if from_seq is not None:
        where.append("seq >= ?")
        params.append(from_seq)
    if to_seq is not None:
        where.append("seq <= ?")
        params.append(to_seq)
    if kinds is not None:
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if surface is not None:
        where.append("surface = ?")
        params.append(surface)
    sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq"
    if newest_first:
        sql += " DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    cursor = conn.execute(sql, params)
    through = textpack.codec(conn).through
    try:
        for row in cursor:
            if through.gone and not row[4]:
                continue  # no-copy mode, and its log is gone or changed (`store.readthrough`)
            yield event_row(session_id, row)
    finally:
        cursor.close()


def events_around(
    conn: sqlite3.Connection,
    sid: int,
    session_id: str,
    seq: int,
    *,
    before: int,
    after: int,
    kinds: Sequence[str],
) -> list[Event]:
    """Up to `before` events before `seq`, then up to `after + 1` from `seq` on (the event at
    `seq` and `after` more), in seq order."""
    earlier = list(
        events(conn, sid, session_id, to_seq=seq - 1, kinds=kinds, limit=before, newest_first=True)
    )
    later = events(conn, sid, session_id, from_seq=seq, kinds=kinds, limit=after + 1)
    return [*reversed(earlier), *later]


def count_events(conn: sqlite3.Connection, sid: int, *, surface: str | None = None) -> int:
    """How many events a session has (on one surface)."""
    sql = "SELECT count(*) FROM events WHERE sid = ?"
    params: list[Any] = [sid]
    if surface is not None:
        sql += " AND surface = ?"
        params.append(surface)
    return int(conn.execute(sql, params).fetchone()[0])


def text_ordinals(
    conn: sqlite3.Connection, sid: int, seqs: Sequence[int], kinds: Sequence[str]
) -> dict[int, int]:
    """seq -> its position among the session's events of `kinds` that are not host-injected."""
    out: dict[int, int] = {}
    for seq in seqs:
        out[seq] = int(
            conn.execute(
                f"SELECT count(*) FROM events WHERE sid = ? AND seq < ? AND injected = 0 "
                f"AND kind IN ({','.join('?' * len(kinds))})",
                (sid, seq, *kinds),
            ).fetchone()[0]
        )
    return out


def events_by_rowid(
    conn: sqlite3.Connection, rowids: Sequence[int]
) -> dict[int, tuple[int, Event]]:
    """rowid -> (session sid, event) for search hits."""
    out: dict[int, tuple[int, Event]] = {}
    through = textpack.codec(conn).through
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        rows = conn.execute(
            f"SELECT e.id, e.sid, s.id, {EVENT_COLUMNS_E} "
            f"FROM events e JOIN sessions s ON s.sid = e.sid "
            f"WHERE e.id IN ({','.join('?' * len(part))})",
            list(part),
        )
        for rowid, sid, session_id, *rest in rows:
            if through.gone and not rest[4]:
                continue  # no-copy mode, and its log is gone or changed
            out[rowid] = (sid, event_row(session_id, rest))
    return out


#: the full-text index's BM25 as huiyi ranks by it: `whole` compounds count double, `scope` not.
#: The index keeps no row lengths (m011): FTS5 reads every row's length as -3 (-1 per column),
#: the same for every row. When the rows' mean length is 9 tokens, a phrase absent from a row
#: then adds 0 / 0 to its score, and FTS5 returns NULL (a short history of common words: eight
#: words and the scope token per message); such a row counts as holding no BM25 evidence (0).
_BM25 = "coalesce(bm25(event_fts, 1.0, 2.0, 0.0), 0.0)"


def fts_match(
    conn: sqlite3.Connection,
    match: str,
    *,
    limit: int,
    offset: int = 0,
    min_rowid: int | None = None,
) -> list[tuple[int, float]]:
    """(event rowid, bm25 score; lower is better) for an FTS5 match expression, best first;
    with `min_rowid`, only rows from it on are scored (FTS5 seeks to it)."""
    where, params = ("", ()) if min_rowid is None else (" AND rowid >= ?", (min_rowid,))
    return [
        (int(r[0]), float(r[1]))
        for r in conn.execute(
            f"SELECT rowid, {_BM25} AS score FROM event_fts "
            f"WHERE event_fts MATCH ?{where} ORDER BY score LIMIT ? OFFSET ?",
            (match, *params, limit, offset),
        )
    ]


def fts_scores(conn: sqlite3.Connection, match: str, lowest: int, highest: int) -> dict[int, float]:
    """rowid -> bm25 score of every row from `lowest` to `highest` matching `match`."""
    return dict(
        conn.execute(
            f"SELECT rowid, {_BM25} FROM event_fts "
            "WHERE event_fts MATCH ? AND rowid BETWEEN ? AND ?",
            (match, lowest, highest),
        )
    )


def fts_rows(
    conn: sqlite3.Connection, asked: Sequence[tuple[str, int, int]]
) -> list[tuple[int, int]]:
    """(index into `asked`, rowid) of every row matching each `(expression, lowest, highest)`
    from its lowest to its highest rowid, all in one statement (no BM25: nothing is counted)."""
    out: list[tuple[int, int]] = []
    for start in range(0, len(asked), _COMPOUND):  # SQLite joins at most 500 in one statement
        part = asked[start : start + _COMPOUND]
        sql = " UNION ALL ".join(
            f"SELECT {start + n}, rowid FROM event_fts "
            "WHERE event_fts MATCH ? AND rowid BETWEEN ? AND ?"
            for n in range(len(part))
        )
        out.extend(conn.execute(sql, [v for a in part for v in a]).fetchall())
    return out


#: SELECTs joined by UNION ALL in one statement (SQLite's limit is 500)
_COMPOUND = 400


def in_workspace(conn: sqlite3.Connection, rowids: Sequence[int], workspace: str) -> set[int]:
    """Which of these events belong to a session of `workspace`."""
    out: set[int] = set()
    for start in range(0, len(rowids), 500):
        part = list(rowids[start : start + 500])
        out.update(
            rowid
            for (rowid,) in conn.execute(
                # CROSS JOIN keeps the events outermost: by the workspace first, SQLite would
                # walk every event of it
                "SELECT e.id FROM events e CROSS JOIN sessions s ON s.sid = e.sid "
                f"WHERE e.id IN ({','.join('?' * len(part))}) AND s.workspace = ?",
                [*part, workspace],
            )
        )
    return out


def workspace_share(conn: sqlite3.Connection, workspace: str) -> float:
    """The workspace's share of the conversation in the index, from the coverage counters
    (migration m005): no count over the history."""
    mine, everywhere = conn.execute(
        "SELECT coalesce(sum(CASE WHEN workspace = ? THEN n END), 0), coalesce(sum(n), 0) "
        "FROM embed_coverage WHERE model = ''",
        (workspace,),
    ).fetchone()
    return int(mine) / int(everywhere) if everywhere else 1.0


def workspace_size(conn: sqlite3.Connection, workspace: str | None) -> int:
    """How many conversation events the workspace holds (every workspace: `None`), from the
    coverage counters (migration m005): no count over the history."""
    sql = "SELECT coalesce(sum(n), 0) FROM embed_coverage WHERE model = ''"
    row = (
        conn.execute(sql).fetchone()
        if workspace is None
        else conn.execute(sql + " AND workspace = ?", (workspace,)).fetchone()
    )
    return int(row[0])


def recent_turns(conn: sqlite3.Connection, workspace: str, *, limit: int) -> list[tuple[str, str]]:
    """The newest human and assistant messages of a workspace (no private sessions, no
    subagents, nothing host-injected), oldest first, as (role, text)."""
    rows = conn.execute(
        "SELECT e.kind, event_text(e.text) FROM events e JOIN sessions s ON s.sid = e.sid "
        "WHERE s.workspace = ? AND s.is_private = 0 AND s.is_subagent = 0 AND e.injected = 0 "
        f"AND e.kind IN ({sql_kinds(frozenset({Kind.USER, Kind.ASSISTANT}))}) "
        "ORDER BY e.time DESC, e.id DESC LIMIT ?",
        (workspace, limit),
    ).fetchall()
    return [(kind, text) for kind, text in reversed(rows)]


def fuzzy_postings(
    conn: sqlite3.Connection, matches: Sequence[str], *, cap: int
) -> list[tuple[int, int]]:
    """(index into `matches`, event rowid) from the trigram index: the newest `cap` rows of
    each match expression, all in one statement.

    The cap bounds the work whatever the size of the history: a trigram found in more than
    `cap` rows is common, and the caller learns that from getting all `cap` of them.
    """
    return _newest(conn, "event_fuzzy", matches, cap)


def fts_postings(
    conn: sqlite3.Connection, matches: Sequence[str], *, cap: int
) -> list[tuple[int, int]]:
    """`fuzzy_postings` over the full-text index: the newest `cap` rows of each expression."""
    return _newest(conn, "event_fts", matches, cap)


def _newest(
    conn: sqlite3.Connection, table: str, matches: Sequence[str], cap: int
) -> list[tuple[int, int]]:
    if not matches:
        return []
    one = f"SELECT * FROM (SELECT {{n}}, rowid FROM {table} WHERE {table} MATCH ? " + (
        "ORDER BY rowid DESC LIMIT ?)"
    )
    sql = " UNION ALL ".join(one.format(n=n) for n in range(len(matches)))
    params: list[Any] = []
    for match in matches:
        params.extend((match, cap))
    return conn.execute(sql, params).fetchall()  # rowids and the constant `n`: ints already


def _column_by_rowid(
    conn: sqlite3.Connection, column: str, rowids: Sequence[int]
) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for start in range(0, len(rowids), 500):
        part = list(rowids[start : start + 500])
        for rowid, value in conn.execute(
            f"SELECT id, {column} FROM events WHERE id IN ({','.join('?' * len(part))})", part
        ):
            out[rowid] = value
    return out


def texts_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, str]:
    texts: dict[int, str] = _column_by_rowid(conn, "event_text(text)", rowids)
    if textpack.codec(conn).through.gone:  # no-copy mode: leave out what is gone
        return {rowid: text for rowid, text in texts.items() if text}
    return texts


def sids_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, int]:
    return _column_by_rowid(conn, "sid", rowids)


def _vocabulary(conn: sqlite3.Connection) -> str:
    """The full-text index's vocabulary, as a table in this connection's temp schema (an
    `fts5vocab` table reads the index's terms and their doclists; no text is read)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.event_fts_words "
        "USING fts5vocab(main, event_fts, row)"
    )
    return "temp.event_fts_words"


def has_word(conn: sqlite3.Connection, word: str) -> bool:
    """Whether any passage holds `word` (a folded word of letters, digits and `_`), in any
    workspace. A match stops at its first row; the vocabulary would count them all."""
    sql = "SELECT 1 FROM event_fts WHERE event_fts MATCH ? LIMIT 1"
    return conn.execute(sql, (f'body:"{word}"',)).fetchone() is not None


def words_from(conn: sqlite3.Connection, prefix: str, *, limit: int) -> list[str]:
    """Up to `limit` words of the full-text index that begin with `prefix` (in any
    workspace), in order; the vocabulary counts each one's rows, so keep the range narrow."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    sql = f"SELECT term FROM {_vocabulary(conn)} WHERE term >= ? AND term < ? LIMIT ?"
    return [term for (term,) in conn.execute(sql, (prefix, end, limit))]


#: a day in milliseconds
_DAY_MS = 86_400_000


def activity(
    conn: sqlite3.Connection, workspace: str | None, *, days: int
) -> list[tuple[str, str, int]]:
    """(local date, source, messages) for each day of the `days` up to the last day a visible
    session of the workspace (every workspace: `None`) was active: the words people and agents
    wrote, not tool traffic or what the harness injected. Only sessions active in that window
    are joined to their events (by the `(sid, seq)` index), so the cost follows the window,
    not the history."""
    scope, params = "s.is_private = 0 AND s.event_count > 0", []
    if workspace is not None:
        scope += " AND s.workspace = ?"
        params.append(workspace)
    last = conn.execute(
        f"SELECT max(coalesce(s.updated, s.created)) FROM sessions s WHERE {scope}", params
    ).fetchone()[0]
    if last is None:
        return []
    start = int(last) - days * _DAY_MS
    sql = (
        "SELECT date(e.time / 1000, 'unixepoch', 'localtime') AS day, s.source, count(*) "
        f"FROM sessions s JOIN events e ON e.sid = s.sid WHERE {scope} "
        "AND coalesce(s.updated, s.created) >= ? AND e.time >= ? "
        "AND e.kind IN ('user', 'assistant') AND e.injected = 0 "
        "GROUP BY day, s.source ORDER BY day"
    )
    rows = conn.execute(sql, [*params, start, start]).fetchall()
    return [(str(day), str(source), int(n)) for day, source, n in rows]
