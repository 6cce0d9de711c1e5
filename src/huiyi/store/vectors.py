"""SQL for the semantic layer's vectors: what still needs embedding, saving, coverage, loading.

Vectors are float16 blobs (half the size of float32; cosine ranking does not notice), one per
event, tagged with the embedder's model id so a change of model is seen as "not embedded".
Only conversation (human and assistant messages, summaries) is embedded: tool traffic is large,
slow to embed and rarely what a paraphrase is after.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from huiyi.model import CONVERSATION_KINDS, Kind, sql_kinds

if TYPE_CHECKING:  # imported where vectors are read or written: counting them needs no numpy
    import numpy as np
    import numpy.typing as npt

_CONVERSATION = frozenset(k.value for k in CONVERSATION_KINDS)
_EMBEDDABLE = (
    f"e.indexed = 1 AND e.kind IN ({sql_kinds(CONVERSATION_KINDS)}) "
    f"AND (e.injected = 0 OR e.kind = '{Kind.SUMMARY.value}')"
)


def missing(conn: sqlite3.Connection, model: str, *, limit: int) -> list[tuple[int, str]]:
    """Embeddable events without a vector of `model`, oldest first.

    In id order on purpose: appending at the right end of the table's B-tree fills its pages,
    while newest-first inserts split pages at the left and left them half empty (135 MB instead
    of 56 MB for 66k vectors). The semantic layer joins a search only above a coverage gate, so
    which messages are embedded first hardly matters. Private sessions are never embedded: with
    an `openai:` embedder their text would leave the machine.
    """
    return conn.execute(
        f"SELECT e.id, e.text FROM events e JOIN sessions s ON s.sid = e.sid "
        f"LEFT JOIN vectors v ON v.event_id = e.id "
        f"WHERE {_EMBEDDABLE} AND s.is_private = 0 AND (v.event_id IS NULL OR v.model != ?) "
        f"ORDER BY e.id LIMIT ?",
        (model, limit),
    ).fetchall()


def save(
    conn: sqlite3.Connection, model: str, ids: Sequence[int], matrix: npt.NDArray[np.float32]
) -> None:
    """Store one vector per event id (rows of `matrix`); events deleted meanwhile are skipped."""
    import numpy as np

    half = matrix.astype(np.float16)
    with conn:
        present = {
            r[0]
            for r in conn.execute(
                f"SELECT id FROM events WHERE id IN ({','.join('?' * len(ids))})", list(ids)
            )
        }
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (event_id, model, vec) VALUES (?, ?, ?)",
            [(i, model, half[n].tobytes()) for n, i in enumerate(ids) if i in present],
        )


def _scoped(model: str, workspace: str | None) -> tuple[str, tuple[str, ...]]:
    """A workspace condition on sessions `s` and the parameters that go with it."""
    if workspace is None:
        return "", (model,)
    return "AND s.workspace = ?", (model, workspace)


def coverage(conn: sqlite3.Connection, model: str, workspace: str | None) -> tuple[int, int]:
    """(embedded, embeddable) events of visible sessions, in one workspace or everywhere.

    Read from the counters kept current on every write (`embed_coverage`: triggers of
    migration m005, and `count_new_events` for inserts), so it costs two row lookups instead
    of a count over the history."""
    where, params = (
        ("", (model,)) if workspace is None else ("AND workspace = ?", (model, workspace))
    )
    row = conn.execute(
        "SELECT coalesce(sum(CASE WHEN model = ?1 THEN n END), 0), "
        f"coalesce(sum(CASE WHEN model = '' THEN n END), 0) FROM embed_coverage "
        f"WHERE model IN ('', ?1) {where}",
        params,
    ).fetchone()
    return int(row[0]), int(row[1])


def is_embeddable(kind: str, injected: bool, indexed: bool) -> bool:
    """`_EMBEDDABLE` for one event, in Python."""
    return indexed and kind in _CONVERSATION and (not injected or kind == Kind.SUMMARY.value)


def count_new_events(
    conn: sqlite3.Connection, sid: int, events: Iterable[tuple[str, bool, bool]]
) -> None:
    """Add events just inserted into session `sid` (their kind, injected and indexed) to the
    coverage counters, as migration m005's per-row trigger did (m006). Call in the inserting
    transaction, before anything else changes the session; new events have no vectors yet.

    One single-row upsert with the count made here: a statement that may write several rows
    and abort (an `INSERT ... SELECT`, a trigger) runs in a statement savepoint, and FTS5
    writes its pending rows out as a new segment at every savepoint, so such a statement per
    file made a first index's full-text writes 2-7 times slower.
    """
    n = sum(1 for event in events if is_embeddable(*event))
    row = conn.execute(
        "SELECT workspace, is_private FROM sessions WHERE sid = ?", (sid,)
    ).fetchone()
    if n and row is not None and not row[1]:
        conn.execute(
            "INSERT INTO embed_coverage (workspace, model, n) VALUES (?, '', ?) "
            "ON CONFLICT (workspace, model) DO UPDATE SET n = n + excluded.n",
            (row[0], n),
        )


def signature(conn: sqlite3.Connection, model: str) -> tuple[int, int]:
    """Changes whenever a vector of `model` is added or removed (cache key)."""
    row = conn.execute(
        "SELECT count(*), coalesce(max(event_id), 0) FROM vectors WHERE model = ?", (model,)
    ).fetchone()
    return int(row[0]), int(row[1])


def load(
    conn: sqlite3.Connection, model: str, workspace: str | None, dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Event ids and their vectors (float32 rows) for one workspace or everywhere."""
    import numpy as np

    scope, params = _scoped(model, workspace)
    rows = conn.execute(
        f"SELECT v.event_id, v.vec FROM vectors v JOIN events e ON e.id = v.event_id "
        f"JOIN sessions s ON s.sid = e.sid WHERE v.model = ? {scope}",
        params,
    ).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return ids, np.zeros((0, dim), dtype=np.float32)
    blob = b"".join(r[1] for r in rows)
    matrix = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
    return ids, matrix
