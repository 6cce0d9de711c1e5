"""SQL for the semantic layer's vectors: what still needs embedding, saving, coverage, loading.

Vectors are float16 blobs (half the size of float32; cosine ranking does not notice), one per
event, tagged with the embedder's model id so a change of model is seen as "not embedded".
Only conversation (human and assistant messages, summaries) is embedded: tool traffic is large,
slow to embed and rarely what a paraphrase is after.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from huiyi.model import CONVERSATION_KINDS, Kind, sql_kinds
from huiyi.store.readthrough import kept_or_found

if TYPE_CHECKING:  # imported where vectors are read or written: counting them needs no numpy
    import numpy as np
    import numpy.typing as npt

_CONVERSATION = frozenset(k.value for k in CONVERSATION_KINDS)
_EMBEDDABLE = (
    f"e.indexed = 1 AND e.kind IN ({sql_kinds(CONVERSATION_KINDS)}) "
    f"AND (e.injected = 0 OR e.kind = '{Kind.SUMMARY.value}')"
)


def missing(conn: sqlite3.Connection, model: str, *, limit: int) -> list[tuple[int, str]]:
    """Embeddable events without a vector of `model`, in id order: for filling vectors in bulk
    (the benchmarks). huiyi itself embeds newest first (`EmbedQueue`).

    Id order appends at the right end of the table's B-tree and fills its pages; inserts in
    random order split pages and left them half empty, the table more than twice as large.
    `EmbedQueue` inserts a session's events together, so its splits are few. Private
    sessions are never embedded: with an `openai:` embedder their text would leave the machine.
    """
    return conn.execute(
        f"SELECT e.id, event_text(e.text) FROM events e JOIN sessions s ON s.sid = e.sid "
        f"LEFT JOIN vectors v ON v.event_id = e.id "
        f"WHERE {_EMBEDDABLE} AND s.is_private = 0 AND (v.event_id IS NULL OR v.model != ?) "
        f"AND {kept_or_found('e.text')} "
        f"ORDER BY e.id LIMIT ?",
        (model, limit),
    ).fetchall()


#: sessions read per step of the newest-first walk
_SESSION_PAGE = 64
#: a session key: (last activity, sid); newer compares greater
SessionKey = tuple[int, int]


class EmbedQueue:
    """What to embed next: the newest sessions first, and in a session its user messages first.

    Why: the semantic layer is most useful on recent history, and a user message is short and
    says what a stretch of conversation was about, so a large history becomes searchable by
    meaning where people look first, long before all of it is embedded. Tool output is never
    embedded (`_EMBEDDABLE`).

    A walk goes down the sessions by last activity, a page at a time, remembering where it is,
    so that embedding a whole history reads each session once instead of scanning every
    finished one again for each batch (`missing` pays that). Sessions active since the walk
    began come before the rest of it. The walk lives in memory; what is done lives in the
    `vectors` table, so a new process resumes at once from the newest session with work left.
    """

    def __init__(self) -> None:
        self._below: SessionKey | None = None  # the walk is past every session at or above
        self._top: SessionKey | None = None  # the newest session when the walk began
        self._exhausted_at: tuple[int, int] | None = None  # coverage when a walk found nothing

    def next(self, conn: sqlite3.Connection, model: str, *, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (event id, text) to embed, in the order above; [] when none is left."""
        counts = coverage(conn, model, None)
        if counts[0] >= counts[1] or counts == self._exhausted_at:
            return []
        if self._top is not None:
            fresh = _sessions(conn, above=self._top, below=None, limit=_SESSION_PAGE)
            fresh_rows = _missing_in(conn, model, [sid for _key, sid in fresh], limit)
            if fresh_rows:
                return fresh_rows
        else:
            newest = _sessions(conn, above=None, below=None, limit=1)
            self._top = newest[0][0] if newest else (0, 0)
        rows: list[tuple[int, str]] = []
        while len(rows) < limit:
            page = _sessions(conn, above=None, below=self._below, limit=_SESSION_PAGE)
            if not page:  # the walk is over: the next one starts again from the newest
                self._below = self._top = None
                self._exhausted_at = None if rows else counts
                break
            for key, sid in page:
                found = _missing_in(conn, model, [sid], limit - len(rows))
                rows.extend(found)
                if len(rows) >= limit:
                    break  # this session may have more: the walk stays above it
                self._below = key
        return rows


def _sessions(
    conn: sqlite3.Connection, *, above: SessionKey | None, below: SessionKey | None, limit: int
) -> list[tuple[SessionKey, int]]:
    """(key, sid) of sessions that may be embedded, newest first, strictly between the bounds."""
    where: list[str] = ["is_private = 0"]
    params: list[int] = []
    if above is not None:
        where.append("(coalesce(updated, 0), sid) > (?, ?)")
        params.extend(above)
    if below is not None:
        where.append("(coalesce(updated, 0), sid) < (?, ?)")
        params.extend(below)
    rows = conn.execute(
        f"SELECT coalesce(updated, 0), sid FROM sessions WHERE {' AND '.join(where)} "
        "ORDER BY coalesce(updated, 0) DESC, sid DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [((int(u), int(sid)), int(sid)) for u, sid in rows]


def _missing_in(
    conn: sqlite3.Connection, model: str, sids: Sequence[int], limit: int
) -> list[tuple[int, str]]:
    """Embeddable events of these sessions without a vector of `model`, in the given order of
    sessions, each session's user messages first, newest first."""
    if not sids or limit <= 0:
        return []
    marks = ",".join("?" * len(sids))
    rows = conn.execute(
        f"SELECT e.id, event_text(e.text), e.sid FROM events e "
        f"LEFT JOIN vectors v ON v.event_id = e.id "
        f"WHERE e.sid IN ({marks}) AND {_EMBEDDABLE} "
        f"AND (v.event_id IS NULL OR v.model != ?) AND {kept_or_found('e.text')} "
        f"ORDER BY e.role != 'user', e.seq DESC",
        (*sids, model),
    ).fetchall()
    rank = {sid: n for n, sid in enumerate(sids)}
    rows.sort(key=lambda r: rank[r[2]])  # stable: keeps the in-session order
    return [(int(r[0]), str(r[1])) for r in rows[:limit]]


def save(
    conn: sqlite3.Connection, model: str, ids: Sequence[int], matrix: npt.NDArray[np.float32]
) -> None:
    """Store one vector per event id (rows of `matrix`); events deleted meanwhile are skipped.

    Each call's vectors get the next batch number (`added`, migration m012), which the
    approximate index uses to read only what is new since it was written (`added_since`)."""
    import numpy as np

    half = matrix.astype(np.float16)
    with conn:
        present = {
            r[0]
            for r in conn.execute(
                f"SELECT id FROM events WHERE id IN ({','.join('?' * len(ids))})", list(ids)
            )
        }
        batch = last_added(conn) + 1
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (event_id, model, vec, added) VALUES (?, ?, ?, ?)",
            [(i, model, half[n].tobytes(), batch) for n, i in enumerate(ids) if i in present],
        )


def last_added(conn: sqlite3.Connection) -> int:
    """The batch number of the vectors saved last (0 when none has one)."""
    row = conn.execute("SELECT max(added) FROM vectors").fetchone()
    return int(row[0] or 0)


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
    file made a first index's full-text writes several times slower.
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


def _matrix(
    rows: Sequence[tuple[int, bytes]], dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    import numpy as np

    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return ids, np.zeros((0, dim), dtype=np.float32)
    blob = b"".join(r[1] for r in rows)
    return ids, np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1).astype(np.float32)


def embedded_per_workspace(conn: sqlite3.Connection, model: str) -> dict[str, int]:
    """Vectors of `model` on visible sessions, per workspace (from the coverage counters)."""
    rows = conn.execute(
        "SELECT workspace, n FROM embed_coverage WHERE model = ? AND n > 0", (model,)
    ).fetchall()
    return {str(w): int(n) for w, n in rows}


def load_except(
    conn: sqlite3.Connection, model: str, workspaces: Sequence[str], dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Event ids and vectors (float32 rows) of every workspace but `workspaces` (the ones an
    approximate index serves), for a search of every workspace."""
    marks = ",".join("?" * len(workspaces))
    rows = conn.execute(
        f"SELECT v.event_id, v.vec FROM vectors v JOIN events e ON e.id = v.event_id "
        f"JOIN sessions s ON s.sid = e.sid WHERE v.model = ? "
        f"AND s.workspace NOT IN ({marks})",
        (model, *workspaces),
    ).fetchall()
    return _matrix(rows, dim)


def chunks(
    conn: sqlite3.Connection, model: str, workspace: str, dim: int, *, size: int = 50_000
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """Every vector of `model` in `workspace`, `size` at a time in event id order (building an
    approximate index without holding a whole workspace's vectors in memory)."""
    after = -1
    while True:
        rows = conn.execute(
            "SELECT v.event_id, v.vec FROM vectors v JOIN events e ON e.id = v.event_id "
            "JOIN sessions s ON s.sid = e.sid WHERE v.event_id > ? AND v.model = ? "
            "AND s.workspace = ? ORDER BY v.event_id LIMIT ?",
            (after, model, workspace, size),
        ).fetchall()
        if not rows:
            return
        after = int(rows[-1][0])
        yield _matrix(rows, dim)


def added_since(
    conn: sqlite3.Connection, model: str, workspace: str, batch: int, dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Vectors of `model` in `workspace` saved in a batch after `batch` (`save`)."""
    rows = conn.execute(
        "SELECT v.event_id, v.vec FROM vectors v JOIN events e ON e.id = v.event_id "
        "JOIN sessions s ON s.sid = e.sid WHERE v.added > ? AND v.model = ? "
        "AND s.workspace = ?",
        (batch, model, workspace),
    ).fetchall()
    return _matrix(rows, dim)


def by_ids(
    conn: sqlite3.Connection, model: str, ids: Sequence[int], dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The vectors of `model` these events have now (an approximate index's candidates scored
    exactly; an event deleted or embedded again since the index was written is read as it is)."""
    rows: list[tuple[int, bytes]] = []
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        rows.extend(
            conn.execute(
                # `+model`: each row by its id, its model checked there; through the model's
                # index SQLite sought every id twice (the index entry, then the row), twice
                # the time for the candidates of a search at a million vectors
                f"SELECT event_id, vec FROM vectors WHERE +model = ? "
                f"AND event_id IN ({','.join('?' * len(part))})",
                (model, *part),
            ).fetchall()
        )
    return _matrix(rows, dim)


class Span(NamedTuple):
    """The newest sessions of a workspace that are embedded enough for the semantic layer."""

    #: embeddable and embedded messages in these sessions
    messages: int
    embedded: int
    #: when the oldest of them began (epoch ms)
    since: int
    #: the oldest session's key (last activity, sid): the span holds the sessions at or above it
    floor: SessionKey
    #: whether the span is the whole workspace
    whole: bool


def span(conn: sqlite3.Connection, model: str, workspace: str, gate: float) -> Span | None:
    """The largest run of a workspace's newest sessions (by last activity, the order
    `EmbedQueue` embeds in) of which at least `gate` of the messages are embedded, or None.

    Walks down the sessions a page at a time, counting their messages and vectors, and stops
    once even every remaining vector could no longer lift the share to `gate`: the walk reads
    about as many messages as are embedded, divided by `gate`, not the whole history."""
    embedded_all, embeddable_all = coverage(conn, model, workspace)
    if not embedded_all:
        return None
    if embedded_all >= gate * embeddable_all:
        row = conn.execute(
            "SELECT min(coalesce(created, updated, 0)) FROM sessions "
            "WHERE workspace = ? AND is_private = 0",
            (workspace,),
        ).fetchone()
        return Span(embeddable_all, embedded_all, int(row[0] or 0), (0, 0), True)
    best: Span | None = None
    messages = embedded = 0
    since = 0
    below: SessionKey | None = None
    while messages * gate <= embedded_all:
        where, params = "", []
        if below is not None:
            where, params = "AND (coalesce(updated, 0), sid) < (?, ?)", list(below)
        page = conn.execute(
            "SELECT coalesce(updated, 0), sid, coalesce(created, updated, 0) FROM sessions "
            f"WHERE workspace = ? AND is_private = 0 {where} "
            "ORDER BY coalesce(updated, 0) DESC, sid DESC LIMIT ?",
            (workspace, *params, _SESSION_PAGE),
        ).fetchall()
        if not page:
            break
        marks = ",".join("?" * len(page))
        counts = {
            int(sid): (int(n), int(v))
            for sid, n, v in conn.execute(
                f"SELECT e.sid, count(*), count(v.event_id) FROM events e "
                f"LEFT JOIN vectors v ON v.event_id = e.id AND v.model = ? "
                f"WHERE e.sid IN ({marks}) AND {_EMBEDDABLE} GROUP BY e.sid",
                (model, *(r[1] for r in page)),
            )
        }
        for updated, sid, created in page:
            n, v = counts.get(int(sid), (0, 0))
            messages, embedded = messages + n, embedded + v
            since = min(since, int(created)) if since else int(created)
            below = (int(updated), int(sid))
            if n and embedded >= gate * messages:
                best = Span(messages, embedded, since, below, False)
    return best
