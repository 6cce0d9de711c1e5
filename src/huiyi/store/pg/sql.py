"""The PostgreSQL store's read queries as text, built apart from running them (`reads` runs
them), so that each can be printed and tested, and so that where a query has the shape of its
SQLite sibling in `store.queries` it reads the same (columns, filters, order).

Every value is a bound parameter (`%s`); identifiers and the constant kind lists are fixed.
Text comparisons that must sort as SQLite's do (`words_from`) say `COLLATE "C"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from huiyi.model import CONVERSATION_KINDS, TEXT_KINDS, Kind, sql_kinds

SESSION_COLUMNS = (
    "sid, id, source, cwd, workspace, coalesce(title, ''), created, updated, parent, "
    "is_subagent, is_private, event_count, user_count, first_user"
)
EVENT_COLUMNS = "seq, time, kind, role, text, surface, injected, tool_name"
EVENT_COLUMNS_E = "e.seq, e.time, e.kind, e.role, e.text, e.surface, e.injected, e.tool_name"
#: what the semantic layer embeds (`store.vectors._EMBEDDABLE`, in this store's columns)
EMBEDDABLE = (
    f"{{e}}.indexed AND {{e}}.kind IN ({sql_kinds(CONVERSATION_KINDS)}) "
    f"AND (NOT {{e}}.injected OR {{e}}.kind = '{Kind.SUMMARY.value}')"
)
TEXT_KIND_LIST = sql_kinds(TEXT_KINDS)

SESSION_BY_ID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s"
SESSIONS_BY_SID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE sid = ANY(%s)"
WORKSPACES = (
    "SELECT workspace FROM sessions WHERE event_count > 0 AND NOT is_private "
    "GROUP BY workspace ORDER BY max(coalesce(updated, created, 0)) DESC"
)
EVENTS_BY_ROWID = (
    f"SELECT e.id, e.sid, s.id, {EVENT_COLUMNS_E} FROM events e "
    "JOIN sessions s ON s.sid = e.sid WHERE e.id = ANY(%s)"
)
TEXTS_BY_ROWID = "SELECT id, text FROM events WHERE id = ANY(%s)"
SIDS_BY_ROWID = "SELECT id, sid FROM events WHERE id = ANY(%s)"
IN_WORKSPACE = "SELECT id FROM events WHERE id = ANY(%s) AND workspace = %s"
SHARE = (
    "SELECT coalesce(sum(CASE WHEN workspace = %s THEN n END), 0), coalesce(sum(n), 0) "
    "FROM embed_coverage WHERE model = ''"
)
SIZE = "SELECT coalesce(sum(n), 0) FROM embed_coverage WHERE model = ''"
SIZE_OF = SIZE + " AND workspace = %s"
COVERAGE = (
    "SELECT coalesce(sum(CASE WHEN model = %s THEN n END), 0), "
    "coalesce(sum(CASE WHEN model = '' THEN n END), 0) FROM embed_coverage "
    "WHERE model IN ('', %s)"
)
COVERAGE_OF = COVERAGE + " AND workspace = %s"
SIGNATURE = "SELECT count(*), coalesce(max(event_id), 0) FROM vectors WHERE model = %s"
VECTORS = (
    "SELECT v.event_id, v.vec FROM vectors v JOIN events e ON e.id = v.event_id WHERE v.model = %s"
)
VECTORS_OF = VECTORS + " AND e.workspace = %s"
TOTALS = "SELECT rows, tokens FROM lex_totals"
HAS_TERM = "SELECT EXISTS (SELECT 1 FROM term_df WHERE term = %s AND n > 0)"
WORDS_FROM = (
    "SELECT word FROM (SELECT DISTINCT substr(term, 3) AS word FROM term_df WHERE n > 0 AND ("
    '(term COLLATE "C" >= %s AND term COLLATE "C" < %s) OR '
    '(term COLLATE "C" >= %s AND term COLLATE "C" < %s))) AS words '
    'ORDER BY word COLLATE "C" LIMIT %s'
)
RECENT_TURNS = (
    "SELECT e.kind, e.text FROM events e JOIN sessions s ON s.sid = e.sid "
    "WHERE s.workspace = %s AND NOT s.is_private AND NOT s.is_subagent AND NOT e.injected "
    f"AND e.kind IN ({sql_kinds(frozenset({Kind.USER, Kind.ASSISTANT}))}) "
    "ORDER BY e.time DESC, e.id DESC LIMIT %s"
)
COUNT_EVENTS = "SELECT count(*) FROM events WHERE sid = %s"
ORDINAL = (
    "SELECT count(*) FROM events WHERE sid = %s AND seq < %s AND NOT injected AND kind = ANY(%s)"
)
#: the query's lexemes in the rows asked for: what BM25 counts (`reads.bm25`)
INSTANCES = (
    "SELECT e.id, u.lexeme, u.positions, u.weights FROM events e "
    "CROSS JOIN LATERAL unnest(e.lex) u "
    "WHERE e.id = ANY(%s) AND (u.lexeme = ANY(%s) OR EXISTS "
    "(SELECT 1 FROM unnest(%s::text[]) p WHERE starts_with(u.lexeme, p)))"
)


def list_sessions(
    *,
    workspace: str | None,
    include_private: bool,
    include_subagents: bool,
    limit: int | None,
) -> tuple[str, list[Any]]:
    where = ["event_count > 0"]
    params: list[Any] = []
    if workspace is not None:
        where.append("workspace = %s")
        params.append(workspace)
    if not include_private:
        where.append("NOT is_private")
    if not include_subagents:
        where.append("NOT is_subagent")
    sql = (
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)} "
        "ORDER BY coalesce(updated, created, 0) DESC, sid DESC"
    )
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    return sql, params


def events(
    sid: int,
    *,
    from_seq: int | None,
    to_seq: int | None,
    kinds: Sequence[str] | None,
    surface: str | None,
    limit: int | None,
    newest_first: bool,
) -> tuple[str, list[Any]]:
    where = ["sid = %s"]
    params: list[Any] = [sid]
    if from_seq is not None:
        where.append("seq >= %s")
        params.append(from_seq)
    if to_seq is not None:
        where.append("seq <= %s")
        params.append(to_seq)
    if kinds is not None:
        where.append("kind = ANY(%s)")
        params.append(list(kinds))
    if surface is not None:
        where.append("surface = %s")
        params.append(surface)
    sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq"
    if newest_first:
        sql += " DESC"
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    return sql, params


def _where(
    tsquery: str | None, workspace: str | None, column: str = "lex"
) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if tsquery is not None:
        where.append(f"{column} @@ %s::tsquery")
        params.append(tsquery)
    else:
        where.append(f"{column} IS NOT NULL")
    if workspace is not None:
        where.append("workspace = %s")
        params.append(workspace)
    return " AND ".join(where), params


#: newest first, ordered by `id + 0`: PostgreSQL would otherwise walk the primary key backwards
#: and test each row's tsvector or trigram array until `cap` match (it does not count what
#: reading those columns costs), several times slower than the GIN index's matches sorted
NEWEST_FIRST = "ORDER BY id + 0 DESC"
#: the newest rows are read in windows of row ids below the highest id known: the newest
#: `WINDOWS[0]` ids, then down to `WINDOWS[1]`, then the rest. PostgreSQL's Limit stops its
#: Append once `cap` rows came, so a window is read only when the newer ones held fewer than
#: `cap` matches: a common word costs what its matches among the newest ids cost (the GIN
#: index's and the primary key's bitmaps ANDed), not a read of every row that holds it
WINDOWS = (10_000, 100_000)
HIGHEST_ID = "SELECT coalesce(max(id), 0) FROM events"


def _windowed(where: str, values: Sequence[Any], cap: int, top: int) -> tuple[str, list[Any]]:
    """The newest `cap` ids of the rows matching `where`, window by window (see `WINDOWS`).
    `top` need not be the highest id now: the newest window has no upper end, so a row
    written since is read first, and the windows together cover every id."""
    bounds = [top - width for width in WINDOWS if top - width > 0]
    tiers: list[str] = []
    params: list[Any] = []
    upper: int | None = None
    for lower in [*bounds, None]:
        cond = where
        tier_params = list(values)
        if lower is not None:
            cond += " AND id > %s"
            tier_params.append(lower)
        if upper is not None:
            cond += " AND id <= %s"
            tier_params.append(upper)
        tiers.append(f"(SELECT id FROM events WHERE {cond} {NEWEST_FIRST} LIMIT %s)")
        params.extend([*tier_params, cap])
        upper = lower
    if len(tiers) == 1:
        return tiers[0][1:-1], params
    return f"SELECT id FROM ({' UNION ALL '.join(tiers)}) AS tiers LIMIT %s", [*params, cap]


def newest(
    asked: Sequence[tuple[str | None, str | None]], cap: int, top: int
) -> tuple[str, list[Any]]:
    """The newest `cap` rows of each (tsquery, workspace), as (index, id), in one statement."""
    parts: list[str] = []
    params: list[Any] = []
    for n, (tsquery, workspace) in enumerate(asked):
        where, values = _where(tsquery, workspace)
        inner, inner_params = _windowed(where, values, cap, top)
        parts.append(f"(SELECT {n}, id FROM ({inner}) AS part{n})")
        params.extend(inner_params)
    return " UNION ALL ".join(parts), params


def newer(asked: Sequence[tuple[str | None, str | None, int]], cap: int) -> tuple[str, list[Any]]:
    """The newest `cap` rows above an id of each (tsquery, workspace, id), as (index, id):
    read by the primary key from the newest down (the rows written since a read)."""
    parts: list[str] = []
    params: list[Any] = []
    for n, (tsquery, workspace, above) in enumerate(asked):
        where, values = _where(tsquery, workspace)
        parts.append(
            f"(SELECT {n}, id FROM events WHERE {where} AND id > %s ORDER BY id DESC LIMIT %s)"
        )
        params.extend([*values, above, cap])
    return " UNION ALL ".join(parts), params


def newest_with_grams(
    asked: Sequence[tuple[list[str], str | None]], cap: int, top: int
) -> tuple[str, list[Any]]:
    """The newest `cap` rows holding every trigram of each (grams, workspace)."""
    parts: list[str] = []
    params: list[Any] = []
    for n, (grams, workspace) in enumerate(asked):
        where = "grams @> %s::text[]"
        values: list[Any] = [grams]
        if workspace is not None:
            where += " AND workspace = %s"
            values.append(workspace)
        inner, inner_params = _windowed(where, values, cap, top)
        parts.append(f"(SELECT {n}, id FROM ({inner}) AS part{n})")
        params.extend(inner_params)
    return " UNION ALL ".join(parts), params


def matching(
    tsquery: str | None, workspace: str | None, lowest: int | None, highest: int | None
) -> tuple[str, list[Any]]:
    """The condition on the rows matching, from `lowest` to `highest` (either end open)."""
    where, params = _where(tsquery, workspace)
    if lowest is not None:
        where += " AND id >= %s"
        params.append(lowest)
    if highest is not None:
        where += " AND id <= %s"
        params.append(highest)
    return where, params


def rows_in_ranges(
    asked: Sequence[tuple[str | None, str | None, int, int]],
) -> tuple[str, list[Any]]:
    """(index, id) of the rows matching each (tsquery, workspace, lowest, highest)."""
    parts: list[str] = []
    params: list[Any] = []
    for n, (tsquery, workspace, low, high) in enumerate(asked):
        where, values = _where(tsquery, workspace)
        parts.append(f"SELECT {n}, id FROM events WHERE {where} AND id BETWEEN %s AND %s")
        params.extend([*values, low, high])
    return " UNION ALL ".join(parts), params


#: how often a one-token phrase occurs in a row's column: PostgreSQL's cover density of a
#: one-lexeme tsquery restricted to the column's weight, with every weight 1 and no
#: normalisation, is the number of the lexeme's positions of that weight (each position is a
#: cover of length 1 worth 1), read by a binary search of the tsvector, not an unnest of it
FREQUENCY = "ts_rank_cd('{1,1,1,1}', lex, %s::tsquery, 0)::float8"
#: the rows holding a phrase of more than one token, or a prefix (a one-token phrase's come
#: from the document-frequency table)
PHRASE_ROWS = "(SELECT count(*) FROM events WHERE lex @@ %s::tsquery)"
DF_OF = "(SELECT coalesce(sum(n), 0) FROM term_df WHERE term = %s)"


def scores(
    where: str,
    where_params: Sequence[Any],
    frequencies: Sequence[str | None],
    rarities: Sequence[tuple[str, str]],
) -> tuple[str, list[Any]]:
    """What BM25 needs of the rows matching `where`, in one statement: a first row with id -1
    holding the store's row and token counts and, per phrase, the rows holding it
    (`rarities`: ("df", key) or ("rows", tsquery)); then each matching row's id and, per
    phrase, its frequency in the row (`frequencies`: the tsquery of a one-token phrase,
    None for one whose instances `INSTANCES` reads)."""
    header = ["(SELECT rows FROM lex_totals)", "(SELECT tokens FROM lex_totals)"]
    params: list[Any] = []
    for how, value in rarities:
        header.append(DF_OF if how == "df" else PHRASE_ROWS)
        params.append(value)
    columns = []
    for tsquery in frequencies:
        if tsquery is None:
            columns.append("0::float8")
        else:
            columns.append(FREQUENCY)
            params.append(tsquery)
    head = f"SELECT -1::bigint, ARRAY[{', '.join(f'{h}::float8' for h in header)}]"
    body = f"SELECT id, ARRAY[{', '.join(columns) or 'NULL'}]::float8[] FROM events WHERE {where}"
    return f"{head} UNION ALL {body}", [*params, *where_params]
