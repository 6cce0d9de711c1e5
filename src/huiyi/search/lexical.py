"""The lexical layer: BM25 over the pre-tokenised FTS5 index.

Free words are OR-ed so that BM25 ranks passages by how many query words they hold and how
rare those are; a compound (`snake_case_name`, `src/app/main.py`) matches either its whole form
(weighted double) or its parts as an adjacent phrase, so it is found whole and inside longer
paths. A quoted query part is an exact phrase that every hit must contain. A lone CJK character
becomes a prefix query over bigrams. The workspace filter is a token in the `scope` column, so
FTS5 intersects it with the words instead of the caller filtering afterwards.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from huiyi.store import queries
from huiyi.text.tokenize import Query, Term
from huiyi.workspace import scope_token


def _term_expr(term: Term) -> list[str]:
    if term.cjk:
        if len(term.parts) == 1 and len(term.parts[0]) == 1:
            return [f'body:"{term.parts[0]}"*']
        return [f'body:"{p}"' for p in term.parts]
    if term.whole:
        return [f'(whole:"{term.whole}" OR body:"{" ".join(term.parts)}")']
    return [f'body:"{term.parts[0]}"']


def match_expression(query: Query, workspace: str | None) -> str | None:
    """The FTS5 MATCH string for a parsed query, or None when nothing searchable is left."""
    free: list[str] = []
    for term in query.terms:
        for expr in _term_expr(term):
            if expr not in free:
                free.append(expr)
    phrases = [f'body:"{" ".join(p)}"' for p in query.phrases]
    if phrases:
        required = " AND ".join(phrases)
        # free words still count towards BM25 without becoming required
        expr = f"({required}) AND ({' OR '.join([*free, phrases[0]])})"
    elif free:
        expr = " OR ".join(free)
    else:
        return None
    if workspace is not None:
        expr = f'({expr}) AND scope:"{scope_token(workspace)}"'
    return expr


def ranked(
    conn: sqlite3.Connection, query: Query, workspace: str | None, *, page: int = 200
) -> Iterator[tuple[int, float]]:
    """(event rowid, score; higher is better) in rank order, fetched page by page."""
    match = match_expression(query, workspace)
    if match is None:
        return
    offset = 0
    while True:
        rows = queries.fts_match(conn, match, limit=page, offset=offset)
        for rowid, bm25 in rows:
            yield rowid, -bm25
        if len(rows) < page:
            return
        offset += page
        page = min(page * 4, 20_000)
