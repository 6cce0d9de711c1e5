"""One search call: run the layers, filter by scope and privacy, build redacted hits.

Layers yield event rowids in rank order; this module keeps only events of sessions the caller
may see (workspace, not private, not excluded, subagents only on request) and turns the first
`limit` into `Hit`s with a snippet placed on the match. Layers are isolated: one that fails
drops out and the result says so instead of failing the search.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from huiyi.model import Hit
from huiyi.safety.redact import redact
from huiyi.search import lexical
from huiyi.store import queries
from huiyi.store.queries import SessionRow
from huiyi.text.snippet import snippet
from huiyi.text.tokenize import Query, parse_query


@dataclass(frozen=True, slots=True)
class Filter:
    """What a search may return. `workspace=None` means every workspace (people only)."""

    workspace: str | None
    exclude_sessions: frozenset[str] = frozenset()
    include_subagents: bool = True
    #: when set, only these sessions (an agent whose workspace is unknown: its own session)
    only_sessions: frozenset[str] | None = None


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    layers: list[str]
    notes: list[str] = field(default_factory=list)


def session_title(row: SessionRow) -> str:
    """The session's title, else the start of its first human message, else a placeholder."""
    if row.session.title.strip():
        return row.session.title.strip()
    if row.first_user:
        first = " ".join(row.first_user.split())
        return first[:60] + ("…" if len(first) > 60 else "")
    return "(untitled)"


class _Visible:
    """Caches, per session, whether a filter lets its events through."""

    def __init__(self, conn: sqlite3.Connection, flt: Filter) -> None:
        self.conn = conn
        self.flt = flt
        self._rows: dict[int, SessionRow | None] = {}

    def get(self, sid: int) -> SessionRow | None:
        if sid not in self._rows:
            row = queries.session_by_sid(self.conn, sid)
            ok = (
                row is not None
                and not row.session.is_private
                and row.session.id not in self.flt.exclude_sessions
                and (self.flt.include_subagents or not row.session.is_subagent)
                and (self.flt.workspace is None or row.session.workspace == self.flt.workspace)
                and (self.flt.only_sessions is None or row.session.id in self.flt.only_sessions)
            )
            self._rows[sid] = row if ok else None
        return self._rows[sid]


def hydrate(
    conn: sqlite3.Connection,
    ranked: Iterable[tuple[int, float]],
    flt: Filter,
    query: Query,
    limit: int,
    layers: tuple[str, ...] = (),
) -> list[Hit]:
    """Turn ranked event rowids into at most `limit` visible hits."""
    visible = _Visible(conn, flt)
    words = query.surface_words()
    hits: list[Hit] = []
    iterator = iter(ranked)
    while len(hits) < limit:
        batch = list(islice(iterator, max(limit * 3, 30)))
        if not batch:
            break
        found = queries.events_by_rowid(conn, [rowid for rowid, _ in batch])
        for rowid, score in batch:
            if rowid not in found:
                continue
            sid, event = found[rowid]
            row = visible.get(sid)
            if row is None:
                continue
            # redact the whole text first, then cut: a snippet must never hold half a secret
            clean = redact(event.text)
            title = redact(session_title(row))
            hits.append(
                Hit(
                    session_id=row.session.id,
                    seq=event.seq,
                    source=row.session.source,
                    workspace=row.session.workspace,
                    title=title.text,
                    time=event.time,
                    kind=event.kind,
                    snippet=snippet(clean.text, words),
                    score=round(score, 4),
                    layers=layers,
                    masks=clean.count + title.count,
                )
            )
            if len(hits) >= limit:
                break
    return hits


def search(conn: sqlite3.Connection, text: str, flt: Filter, *, limit: int = 10) -> SearchResult:
    query = parse_query(text)
    if query.empty:
        return SearchResult([], [], ["the query has no searchable words"])
    ranked: Iterator[tuple[int, float]] = lexical.ranked(conn, query, flt.workspace)
    hits = hydrate(conn, ranked, flt, query, limit, ("lexical",))
    return SearchResult(hits, ["lexical"])
