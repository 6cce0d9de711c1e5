"""Writing the PostgreSQL store: sessions and their events in (a client's push, or a copy of a
local index), sessions out for good (a tombstone), vectors.

A batch is one session and some of its events; `Writer.apply` writes many in one transaction
(a push is stored whole or not at all). Each event is checked and tokenised here with the same
code as the local index (`textindex.is_indexed`, `stored_streams`), whatever the sender says:
what is searchable, and how, is the store's decision. Every write keeps the derived tables in
step in the same transaction: the document frequencies and totals BM25 reads (from the tsvector
of a row that goes, so a count never drifts from what the rows hold), and the coverage counters
the search reads for the semantic gate and a workspace's share, and each term's newest ids
(`store.pg.lists`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from huiyi.model import Event, Kind, Surface
from huiyi.store.batch import Batch, EventRecord
from huiyi.store.pg import lists, sql
from huiyi.store.pg.lexemes import Lexemes, of_streams
from huiyi.store.textindex import is_indexed, stored_streams

#: the deleted rows' terms, totals and coverage taken out, in one statement (`_drop`)
_DROP = """
WITH gone AS (
    DELETE FROM events WHERE sid = %(sid)s AND (%(all)s OR seq = ANY(%(seqs)s))
    RETURNING lex, lex_tokens
), terms AS (
    SELECT 'b:' || x AS term FROM gone, unnest(tsvector_to_array(ts_filter(lex, '{d}'))) x
    UNION ALL
    SELECT 'w:' || x FROM gone, unnest(tsvector_to_array(ts_filter(lex, '{a}'))) x
), counted AS (
    SELECT term, count(*) AS c FROM terms GROUP BY term
), fewer AS (
    UPDATE term_df t SET n = t.n - counted.c FROM counted WHERE t.term = counted.term
)
UPDATE lex_totals SET
    removed = removed + (SELECT count(*) FROM gone),
    rows = rows - (SELECT count(*) FROM gone WHERE lex IS NOT NULL),
    tokens = tokens - (SELECT coalesce(sum(lex_tokens), 0) FROM gone)
"""
_UPSERT_SESSION = """
INSERT INTO sessions (id, source, cwd, workspace, title, first_user, created, updated, parent,
                      is_subagent, is_private, device)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (id) DO UPDATE SET
    source = excluded.source, cwd = excluded.cwd, workspace = excluded.workspace,
    title = excluded.title, first_user = coalesce(sessions.first_user, excluded.first_user),
    created = coalesce(sessions.created, excluded.created),
    updated = greatest(sessions.updated, excluded.updated), parent = excluded.parent,
    is_subagent = excluded.is_subagent, is_private = sessions.is_private OR excluded.is_private
RETURNING sid
"""
_INSERT_EVENT = (
    "INSERT INTO events (id, sid, seq, time, kind, role, text, surface, injected, tool_name, "
    "indexed, workspace, lex, lex_tokens, grams) VALUES (coalesce(%s, nextval('events_id_seq')), "
    "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s, %s)"
)
_MORE_TERMS = (
    "INSERT INTO term_df (term, n) SELECT * FROM unnest(%s::text[], %s::bigint[]) AS t(term, n) "
    "ORDER BY term ON CONFLICT (term) DO UPDATE SET n = term_df.n + excluded.n"
)
_MORE_TOTALS = "UPDATE lex_totals SET rows = rows + %s, tokens = tokens + %s"
#: taken first by every write: writes commit one after the other, in the order of their ids, so
#: a reader sees every id up to the highest it sees (what `store.pg.newest` rests on)
_SERIALISE = "SELECT 1 FROM lex_totals FOR UPDATE"
_MOVED = "UPDATE lex_totals SET removed = removed + %s"
_COUNTS = f"""
UPDATE sessions SET
    event_count = (SELECT count(*) FROM events WHERE sid = %(sid)s
                   AND kind IN ({sql.TEXT_KIND_LIST})),
    user_count = (SELECT count(*) FROM events WHERE sid = %(sid)s AND kind = 'user'
                  AND NOT injected),
    updated = greatest(coalesce(updated, 0),
                       coalesce((SELECT max(time) FROM events WHERE sid = %(sid)s), 0))
WHERE sid = %(sid)s
"""
#: what a session adds to the coverage counters: its workspace, and per model ('' for the
#: embeddable messages) how many, when it is visible
_COVERED = f"""
SELECT s.workspace, s.is_private, '' AS model, count(e.id) FROM sessions s
LEFT JOIN events e ON e.sid = s.sid AND {sql.EMBEDDABLE.format(e="e")}
WHERE s.sid = %(sid)s GROUP BY s.workspace, s.is_private
UNION ALL
SELECT s.workspace, s.is_private, v.model, count(*) FROM sessions s
JOIN events e ON e.sid = s.sid AND {sql.EMBEDDABLE.format(e="e")}
JOIN vectors v ON v.event_id = e.id
WHERE s.sid = %(sid)s GROUP BY s.workspace, s.is_private, v.model
"""
_BUMP = (
    "INSERT INTO embed_coverage (workspace, model, n) VALUES (%s, %s, %s) "
    "ON CONFLICT (workspace, model) DO UPDATE SET n = embed_coverage.n + excluded.n"
)
_INHERIT = (
    "UPDATE sessions SET is_private = true WHERE sid = %s AND EXISTS "
    "(SELECT 1 FROM sessions WHERE id = %s AND is_private) RETURNING sid"
)
_BELOW = """
WITH RECURSIVE below(id) AS (
    SELECT %s::text UNION SELECT s.id FROM sessions s JOIN below b ON s.parent = b.id
)
SELECT sid FROM sessions WHERE NOT is_private AND id IN (SELECT id FROM below)
"""


def lexed(session_id: str, record: EventRecord) -> tuple[bool, Lexemes]:
    """Whether an event is in the text indexes, and what it puts into their columns."""
    event = Event(
        session=session_id,
        seq=record.seq,
        time=record.time,
        kind=Kind(record.kind),
        role=record.role,
        text=record.text,
        surface=Surface(record.surface),
        injected=record.injected,
        tool_name=record.tool_name,
    )
    indexed = is_indexed(event)
    streams = stored_streams(record.text, record.kind, record.injected) if indexed else None
    return indexed, of_streams(streams)


Covered = Counter[tuple[str, str]]


class Writer:
    """Writes into one connection's transaction (the caller commits)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self._serialised = False

    def _serialise(self) -> None:
        if not self._serialised:
            self.conn.execute(_SERIALISE)
            self._serialised = True

    def _covered(self, sid: int) -> Covered:
        found: Covered = Counter()
        for workspace, private, model, n in self.conn.execute(_COVERED, {"sid": sid}):
            if not private and n:
                found[(workspace, model)] += int(n)
        return found

    def _bump(self, before: Covered, after: Covered) -> None:
        for key in sorted(set(before) | set(after)):
            delta = after[key] - before[key]
            if delta:
                self.conn.execute(_BUMP, (*key, delta))

    def session_sid(self, session_id: str) -> int | None:
        row = self.conn.execute("SELECT sid FROM sessions WHERE id = %s", (session_id,)).fetchone()
        return int(row[0]) if row else None

    def apply(self, batches: Iterable[Batch], *, device: int | None = None) -> int:
        """Write every batch; returns the events written."""
        self._serialise()
        written = 0
        for batch in batches:
            written += self._apply(batch, device)
        return written

    def _apply(self, batch: Batch, device: int | None) -> int:
        s = batch.session
        sid = self.session_sid(s.id)
        existed = sid is not None
        before = self._covered(sid) if sid is not None else Counter()
        if sid is not None:  # its rows in another workspace leave that workspace's lists
            self.conn.execute(
                lists.unlisting("e.sid = %(sid)s AND e.workspace <> %(workspace)s"),
                {"sid": sid, "workspace": s.workspace},
            )
        row = self.conn.execute(
            _UPSERT_SESSION,
            (
                s.id,
                s.source,
                s.cwd,
                s.workspace,
                s.title,
                s.first_user,
                s.created,
                s.updated,
                s.parent,
                s.is_subagent,
                s.is_private,
                device,
            ),
        ).fetchone()
        assert row is not None
        sid = int(row[0])
        moved = self.conn.execute(
            "UPDATE events SET workspace = %s WHERE sid = %s AND workspace <> %s RETURNING id",
            (s.workspace, sid, s.workspace),
        ).fetchall()
        if moved:
            self.conn.execute(_MOVED, (len(moved),))
            self.conn.execute(lists.listing("e.id = ANY(%(ids)s)"), {"ids": [r[0] for r in moved]})
        seqs = [e.seq for e in batch.events]
        if seqs and existed:
            self._drop(sid, seqs)
        terms: Counter[str] = Counter()
        rows = tokens = 0
        values = []
        for record in batch.events:
            indexed, lexemes = lexed(s.id, record)
            if lexemes.literal is not None:
                rows += 1
                tokens += lexemes.tokens
                terms.update(lexemes.terms)
            values.append(
                (
                    record.id,
                    sid,
                    record.seq,
                    record.time,
                    record.kind,
                    record.role,
                    record.text,
                    record.surface,
                    record.injected,
                    record.tool_name,
                    indexed,
                    s.workspace,
                    lexemes.literal,
                    lexemes.tokens,
                    lexemes.grams,
                )
            )
        with self.conn.cursor() as cursor:
            cursor.executemany(_INSERT_EVENT, values)
        if seqs:
            self.conn.execute(
                lists.listing(lists.rows_of_session(seqs=True)), {"sid": sid, "seqs": seqs}
            )
        if terms:
            ordered = sorted(terms)
            self.conn.execute(_MORE_TERMS, (ordered, [terms[t] for t in ordered]))
        if rows:
            self.conn.execute(_MORE_TOTALS, (rows, tokens))
        self.conn.execute(_COUNTS, {"sid": sid})
        private = s.is_private
        if not private and s.parent is not None:
            # a session below a private one is private, whichever of them came first
            private = bool(self.conn.execute(_INHERIT, (sid, s.parent)).fetchall())
        if private:
            self._spread_privacy(s.id)
        self._bump(before, self._covered(sid))
        return len(values)

    def _drop(self, sid: int, seqs: Sequence[int] | None) -> None:
        rows = {"sid": sid, "all": seqs is None, "seqs": list(seqs or [])}
        self.conn.execute(lists.unlisting(lists.rows_of_session(seqs=seqs is not None)), rows)
        self.conn.execute(_DROP, rows)

    def _spread_privacy(self, session_id: str) -> None:
        """Sessions below a private one (children by `parent`, at any depth) turn private."""
        for (sid,) in self.conn.execute(_BELOW, (session_id,)).fetchall():
            before = self._covered(int(sid))
            self.conn.execute("UPDATE sessions SET is_private = true WHERE sid = %s", (sid,))
            self._bump(before, self._covered(int(sid)))

    def remove(self, session_id: str, *, device: int | None = None, tombstone: bool) -> bool:
        """Take a session and its events out (their terms, totals and counts with them); with
        `tombstone`, refuse it for ever after. True if the store held it."""
        self._serialise()
        sid = self.session_sid(session_id)
        if sid is not None:
            self._bump(self._covered(sid), Counter())
            self._drop(sid, None)
            self.conn.execute("DELETE FROM sessions WHERE sid = %s", (sid,))
        if tombstone:
            self.conn.execute(
                "INSERT INTO tombstones (session_id, at, device) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id, int(time.time() * 1000), device),
            )
        return sid is not None

    def rebuild_lists(self) -> int:
        """Every term's newest-id list made again from the rows (`lists.REBUILD`); how many."""
        self._serialise()
        for statement in lists.REBUILD:
            self.conn.execute(statement)
        row = self.conn.execute("SELECT count(*) FROM newest_ids").fetchone()
        return int(row[0]) if row else 0

    def save_vectors(self, model: str, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store one float16 vector per event id (events gone meanwhile are skipped)."""
        sids: set[int] = set()
        for event_id, _ in rows:
            found = self.conn.execute("SELECT sid FROM events WHERE id = %s", (event_id,))
            row = found.fetchone()
            if row is not None:
                sids.add(int(row[0]))
        before = {sid: self._covered(sid) for sid in sids}
        with self.conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO vectors (event_id, model, vec) SELECT %s, %s, %s "
                "WHERE EXISTS (SELECT 1 FROM events WHERE id = %s) "
                "ON CONFLICT (event_id) DO UPDATE SET model = excluded.model, vec = excluded.vec",
                [(event_id, model, vec, event_id) for event_id, vec in rows],
            )
        for sid in sorted(sids):
            self._bump(before[sid], self._covered(sid))

    def tombstoned(self, session_ids: Sequence[str]) -> set[str]:
        found = self.conn.execute(
            "SELECT session_id FROM tombstones WHERE session_id = ANY(%s)", (list(session_ids),)
        )
        return {row[0] for row in found}

    def keep_ids_after(self) -> None:
        """After rows were written with their own ids, new ones continue above them."""
        self.conn.execute(
            "SELECT setval('events_id_seq', greatest((SELECT coalesce(max(id), 0) FROM events), 1))"
        )
