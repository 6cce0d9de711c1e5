"""Each word's and each trigram's newest row ids per workspace, kept in the database.

A search's first lookup of a word or trigram asks for its newest few hundred rows. Read from a
GIN index, that costs the term's whole posting list, in proportion to the history (at a million
events 10-40 ms for a common trigram, up to 24 of them a search). The table `newest_ids`
(migration m003) holds instead, per term (`b:` a body token, `w:` a compound, `g:` a trigram:
the keys of `term_df`, and the trigrams) and workspace, the newest ids first, and a *floor*:
every row of that workspace holding the term with an id at or above the floor is in the list
(0: every such row is). So a lookup reads one short row by the primary key. The ids are kept
in two arrays, `head` (the newest few, rewritten by each write) and `ids` (the rest, rewritten
only when the head is full), newest first: the list is `head || ids`.

Writes keep the lists so in their own transaction (`writes.Writer`, under its `lex_totals`
lock, so no two writers merge into one list at once):
- new rows are merged in (`LIST`) and the list trimmed to the newest `huiyi_newest_cap(term)`
  ids; when it is trimmed, the floor rises to the last id kept;
- rows that go are taken out (`UNLIST`); the floor stays, since the list is still exact above it;
- rows that change workspace are taken out of the one list and merged into the other, where
  only the ids at or above its floor enter.

A lookup of the newest `cap` rows of a term, or of an OR of terms (a word in the body or as a
compound), in one workspace or in all of them, is exact when the lists hold `cap` ids at or
above the highest floor among them, or when every floor is 0 (`answer`). Otherwise (a cap above
the kept length, a list thinned by removals, an expression of another shape) the caller reads
the GIN index as before. `REBUILD` makes every list again from the rows (a bulk load, and
`huiyi team repair` for a store whose lists were thinned by many removals).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: where `listing` and `unlisting` put their condition on the rows
ROWS = "{rows}"
#: the keys a row puts into the lists (the lateral part of `LIST`, `UNLIST`, `REBUILD`)
_TERMS = (
    "CROSS JOIN LATERAL ("
    "SELECT 'b:' || x FROM unnest(tsvector_to_array(ts_filter(e.lex, '{d}'))) AS x "
    "UNION ALL SELECT 'w:' || x FROM unnest(tsvector_to_array(ts_filter(e.lex, '{a}'))) AS x "
    "UNION ALL SELECT 'g:' || g FROM unnest(e.grams) AS g) AS t(term)"
)

#: the rows of `{rows}` (a condition on `events e`) merged into their lists. Ids newer than
#: every kept one go into the list's short `head` while it holds at most `huiyi_newest_head()`
#: of them: an update that leaves `ids` as it was keeps its stored value (a list of a
#: thousand ids is 8 kB kept apart, and writing every list a push touches anew, some 5,600 for
#: 200 events, left a gigabyte of dead versions a minute). Otherwise the head, the kept ids and
#: the new ones are merged into `ids`, trimmed to the newest `huiyi_newest_cap(term)`.
_LIST = f"""
WITH fresh AS (
    SELECT t.term, e.workspace, array_agg(e.id ORDER BY e.id DESC) AS ids
    FROM events e {_TERMS} WHERE {ROWS} GROUP BY t.term, e.workspace
), headed AS (
    UPDATE newest_ids k SET head = f.ids || k.head FROM fresh f
    WHERE k.term = f.term AND k.workspace = f.workspace
      AND f.ids[cardinality(f.ids)] > greatest(coalesce(k.head[1], 0), coalesce(k.ids[1], 0))
      AND f.ids[cardinality(f.ids)] >= k.floor
      AND cardinality(k.head) + cardinality(f.ids) <= huiyi_newest_head()
    RETURNING k.term, k.workspace
), merged AS (
    SELECT f.term, f.workspace, coalesce(k.floor, 0) AS floor, huiyi_newest_cap(f.term) AS cap,
           CASE WHEN k.ids IS NULL THEN f.ids
                WHEN f.ids[cardinality(f.ids)] > coalesce(k.head[1], k.ids[1], 0)
                     AND f.ids[cardinality(f.ids)] >= k.floor THEN f.ids || k.head || k.ids
                ELSE huiyi_merge_ids(k.head || k.ids, f.ids, k.floor) END AS ids
    FROM fresh f LEFT JOIN newest_ids k ON k.term = f.term AND k.workspace = f.workspace
    WHERE NOT EXISTS (
        SELECT 1 FROM headed h WHERE h.term = f.term AND h.workspace = f.workspace
    )
)
INSERT INTO newest_ids (term, workspace, head, ids, floor)
SELECT term, workspace, '{{}}', ids[1:cap],
       CASE WHEN cardinality(ids) > cap THEN ids[cap] ELSE floor END
FROM merged ORDER BY term, workspace
ON CONFLICT (term, workspace) DO UPDATE
SET head = excluded.head, ids = excluded.ids, floor = excluded.floor
"""

#: the rows of `{rows}` taken out of their lists (before they go or change workspace)
_UNLIST = f"""
WITH gone AS (
    SELECT t.term, e.workspace, array_agg(e.id) AS ids
    FROM events e {_TERMS} WHERE {ROWS} GROUP BY t.term, e.workspace
)
UPDATE newest_ids k SET
    head = ARRAY(SELECT x FROM unnest(k.head) AS x WHERE x <> ALL (g.ids) ORDER BY x DESC),
    ids = ARRAY(SELECT x FROM unnest(k.ids) AS x WHERE x <> ALL (g.ids) ORDER BY x DESC)
FROM gone g
WHERE k.term = g.term AND k.workspace = g.workspace AND (k.ids && g.ids OR k.head && g.ids)
"""

#: every list made again from the rows
REBUILD = (
    "DELETE FROM newest_ids",
    f"""
    INSERT INTO newest_ids (term, workspace, ids, floor)
    SELECT term, workspace, ids[1:cap], CASE WHEN cardinality(ids) > cap THEN ids[cap] ELSE 0 END
    FROM (
        SELECT t.term, e.workspace, huiyi_newest_cap(t.term) AS cap,
               array_agg(e.id ORDER BY e.id DESC) AS ids
        FROM events e {_TERMS} GROUP BY t.term, e.workspace
    ) AS listed
    """,
)

#: the lists of some terms, in some workspaces or in all (`read`)
_READ = "SELECT term, workspace, head || ids, floor FROM newest_ids WHERE term = ANY(%s)"

#: (terms OR-ed, workspace or None for every one)
Ask = tuple[Sequence[str], str | None]
Lists = dict[tuple[str, str], tuple[list[int], int]]


def listing(rows: str) -> str:
    """The statement merging the rows matching `rows` (a condition on `events e`) into their
    lists."""
    return _LIST.replace(ROWS, rows)


def unlisting(rows: str) -> str:
    """The statement taking the rows matching `rows` out of their lists."""
    return _UNLIST.replace(ROWS, rows)


def rows_of_session(*, seqs: bool) -> str:
    """The `{rows}` condition of a session's rows (`%(sid)s`), or of some of them (`%(seqs)s`)."""
    return "e.sid = %(sid)s" + (" AND e.seq = ANY(%(seqs)s)" if seqs else "")


def read(asks: Sequence[Ask]) -> tuple[str, list[Any]] | None:
    """The statement of the lists the asks need (None: they need none); `held` reads its
    rows."""
    terms = sorted({term for wanted, _ in asks for term in wanted})
    if not terms:
        return None
    query, params = _READ, [terms]
    workspaces = {workspace for _, workspace in asks}
    if None not in workspaces:
        query += " AND workspace = ANY(%s)"
        params.append(sorted(w for w in workspaces if w is not None))
    return query, params


def held(rows: Sequence[tuple[Any, ...]]) -> Lists:
    """(term, workspace) -> (ids, floor) of the rows of `read`'s statement."""
    return {(term, where): (list(ids), int(floor)) for term, where, ids, floor in rows}


def answer(lists: Lists, ask: Ask, cap: int) -> list[int] | None:
    """The newest `cap` ids holding any of the ask's terms in its workspace (every workspace:
    None), newest first, if the lists hold them; None when they cannot tell (see the module
    docstring): every list is exact at or above its floor, so their union is exact at or above
    the highest floor."""
    terms, workspace = ask
    found = [
        held
        for (term, where), held in lists.items()
        if term in terms and (workspace is None or where == workspace)
    ]
    floor = max((f for _, f in found), default=0)
    ids = sorted({rowid for held, _ in found for rowid in held if rowid >= floor}, reverse=True)
    if len(ids) >= cap:
        return ids[:cap]
    return ids if floor == 0 else None
