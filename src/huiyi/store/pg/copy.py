"""A copy of the local SQLite index in the PostgreSQL store: every session (private ones too,
marked so), every event with its row id, every vector.

What it is for: running the same reads on both stores over the same history (the tests that
run every retrieval, privacy and scope rule on both, `huiyi eval --database`, the load
benchmark's bulk load). A team server is never filled this way: clients push only what they
share, redacted.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from psycopg_pool import ConnectionPool

from huiyi.store import export
from huiyi.store.pg.writes import Writer

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
