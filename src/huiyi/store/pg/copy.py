"""Filling the PostgreSQL store wholesale: a copy of the local SQLite index (`copy_index`: every
session, private ones too, marked so, every event with its row id, every vector), and a bulk
load of an empty store (`bulk_load`).

What it is for: running the same reads on both stores over the same history (the tests that
run every retrieval, privacy and scope rule on both, `huiyi eval --database`, the load
benchmark's bulk load). A team server is never filled this way: clients push only what they
share, redacted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from psycopg_pool import ConnectionPool

from huiyi.store import export
from huiyi.store.batch import Batch
from huiyi.store.pg import lists, sql
from huiyi.store.pg.lexemes import Lexemes
from huiyi.store.pg.writes import Writer, lexed

#: vectors written per statement batch
VECTOR_BATCH = 2_000


def copy_index(conn: sqlite3.Connection, pool: ConnectionPool[Any]) -> int:
    """Write the whole local index into the (empty) store; returns the events written."""
    with pool.connection() as pg, pg.transaction():
        writer = Writer(pg)
        written = writer.apply(export.everything(conn))
        writer.keep_ids_after()
        by_model: dict[str, list[tuple[int, bytes]]] = {}
        for model, event_id, vec in export.vectors(conn):
            rows = by_model.setdefault(model, [])
            rows.append((event_id, vec))
            if len(rows) >= VECTOR_BATCH:
                writer.save_vectors(model, rows)
                rows.clear()
        for model, rows in by_model.items():
            if rows:
                writer.save_vectors(model, rows)
    return written


#: the GIN indexes a bulk load drops and builds again once the rows are in (a sorted build
#: is several times faster than keeping them current row by row)
_GIN = {
    "events_lex": "CREATE INDEX events_lex ON events USING gin (lex)",
    "events_grams": "CREATE INDEX events_grams ON events USING gin (grams)",
}
_DERIVED = (
    "INSERT INTO term_df (term, n) SELECT term, count(*) FROM ("
    "SELECT 'b:' || x AS term FROM events, unnest(tsvector_to_array(ts_filter(lex, '{d}'))) x "
    "UNION ALL SELECT 'w:' || x FROM events, unnest(tsvector_to_array(ts_filter(lex, '{a}'))) x"
    ") AS terms GROUP BY term",
    "UPDATE lex_totals SET rows = t.rows, tokens = t.tokens FROM (SELECT count(*) AS rows, "
    "coalesce(sum(lex_tokens), 0) AS tokens FROM events WHERE lex IS NOT NULL) AS t",
    "UPDATE sessions s SET event_count = c.n, user_count = c.u, "
    "updated = greatest(coalesce(s.updated, 0), c.last) FROM (SELECT sid, "
    f"count(*) FILTER (WHERE kind IN ({sql.TEXT_KIND_LIST})) AS n, "
    "count(*) FILTER (WHERE kind = 'user' AND NOT injected) AS u, "
    "max(time) AS last FROM events GROUP BY sid) AS c WHERE c.sid = s.sid",
    "UPDATE sessions SET updated = 0 WHERE updated IS NULL",
    # sessions below a private one (children by `parent`, at any depth) are private
    "WITH RECURSIVE below(id) AS (SELECT id FROM sessions WHERE is_private UNION "
    "SELECT s.id FROM sessions s JOIN below b ON s.parent = b.id) "
    "UPDATE sessions SET is_private = true WHERE NOT is_private AND id IN (SELECT id FROM below)",
    "INSERT INTO embed_coverage (workspace, model, n) SELECT s.workspace, '', count(*) "
    "FROM events e JOIN sessions s ON s.sid = e.sid WHERE NOT s.is_private AND "
    f"{sql.EMBEDDABLE.format(e='e')} GROUP BY s.workspace",
)
_COPY_EVENTS = (
    "COPY events (id, sid, seq, time, kind, role, text, surface, injected, tool_name, indexed, "
    "workspace, lex, lex_tokens, grams) FROM STDIN"
)


def with_lexemes(batch: Batch) -> tuple[Batch, list[tuple[bool, Lexemes]]]:
    """A batch with what each of its events puts into the text columns (`writes.lexed`): what
    `bulk_load` takes, and what a caller may compute in worker processes."""
    return batch, [lexed(batch.session.id, record) for record in batch.events]


def bulk_load(
    pool: ConnectionPool[Any],
    batches: Iterable[tuple[Batch, Sequence[tuple[bool, Lexemes]]]],
) -> int:
    """Fill an empty store fast: sessions and events with `COPY`, the GIN indexes built once
    after the rows, the derived tables (document frequencies, totals, counts, coverage)
    counted from the rows in SQL, each term's newest ids listed (`lists.REBUILD`). Each batch
    comes with its events' lexemes (`with_lexemes`). Refuses a store that holds a session
    already (`ValueError`). The load benchmark's path; a server's pushes go through
    `writes.Writer`, which keeps the same tables current row by row."""
    events = 0
    with pool.connection() as conn, conn.transaction():
        found = conn.execute("SELECT EXISTS (SELECT 1 FROM sessions)").fetchone()
        if found is not None and found[0]:
            raise ValueError("a bulk load needs an empty store")
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        for name in _GIN:
            conn.execute(f"DROP INDEX {name}")
        next_id = 1
        with conn.cursor() as cursor:
            for sid, (batch, lexemes) in enumerate(batches, 1):
                s = batch.session
                cursor.execute(
                    "INSERT INTO sessions (sid, id, source, cwd, workspace, title, first_user, "
                    "created, updated, parent, is_subagent, is_private) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        sid,
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
                    ),
                )
                with cursor.copy(_COPY_EVENTS) as copy:
                    for event, (indexed, lex) in zip(batch.events, lexemes, strict=True):
                        copy.write_row(
                            (
                                next_id,
                                sid,
                                event.seq,
                                event.time,
                                event.kind,
                                event.role,
                                event.text,
                                event.surface,
                                event.injected,
                                event.tool_name,
                                indexed,
                                s.workspace,
                                lex.literal,
                                lex.tokens,
                                lex.grams,
                            )
                        )
                        next_id += 1
                events += len(batch.events)
        for statement in (*_DERIVED, *lists.REBUILD):
            conn.execute(statement)
        for create in _GIN.values():
            conn.execute(create)
        conn.execute("SELECT setval('events_id_seq', greatest(%s, 1))", (next_id,))
        conn.execute(
            "SELECT setval('sessions_sid_seq', (SELECT coalesce(max(sid), 1) FROM sessions))"
        )
    with pool.connection() as conn:
        conn.execute("ANALYZE")
    return events
