"""The lexical layer: BM25 over the pre-tokenised FTS5 index.

Free words are OR-ed so that BM25 ranks passages by how many query words they hold and how
rare those are; a compound (`snake_case_name`, `src/app/main.py`) matches either its whole form
(weighted double) or its parts as an adjacent phrase, so it is found whole and inside longer
paths. A quoted query part is an exact phrase that every hit must contain. A lone CJK character
becomes a prefix query over bigrams. The workspace filter is a token in the `scope` column, so
FTS5 intersects it with the words instead of the caller filtering afterwards.

The work per query is bounded whatever the size of the history: BM25 is computed only for the
newest `WINDOW` matches and for every passage holding a rare part of the query, with the same
scores FTS5 gives them in an unbounded query (`_first_page`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

from huiyi.store.index import Index
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


def _free(query: Query) -> list[str]:
    """The OR-ed parts of a query's MATCH string, one per word, bigram or compound."""
    free: list[str] = []
    for term in query.terms:
        for expr in _term_expr(term):
            if expr not in free:
                free.append(expr)
    return free


def _scope(workspace: str | None) -> str:
    return "" if workspace is None else f' AND scope:"{scope_token(workspace)}"'


def _unscoped(query: Query) -> str | None:
    free = _free(query)
    phrases = [f'body:"{" ".join(p)}"' for p in query.phrases]
    if phrases:
        required = " AND ".join(phrases)
        # free words still count towards BM25 without becoming required
        return f"({required}) AND ({' OR '.join([*free, phrases[0]])})"
    return " OR ".join(free) if free else None


def match_expression(query: Query, workspace: str | None) -> str | None:
    """The FTS5 MATCH string for a parsed query, or None when nothing searchable is left."""
    expr = _unscoped(query)
    if expr is None or workspace is None:
        return expr
    return f"({expr}){_scope(workspace)}"


#: BM25 is computed for at most this many of the newest passages matching a query, plus every
#: passage holding one of its rare parts (a word, bigram or compound found in fewer passages
#: than this in the workspace). FTS5 computes BM25 for every match before `ORDER BY ... LIMIT`
#: keeps the best, so a query of common words scored a large share of the history. A passage
#: holding only common words outside this window loses little (their BM25 weights are the
#: smallest), and among such passages the newest are kept.
WINDOW = 1_000
#: At this share of the index or more, a workspace's candidates are scored without the scope
#: phrase and the other workspaces' rows in their range dropped afterwards. FTS5's BM25 counts
#: the rows of every phrase of the expression once per statement, and the scope phrase is in
#: every row of its workspace: counting them all cost more than the window's scoring.
#: Below this share the rows of other workspaces between the candidates would cost more.
UNSCOPED_SHARE = 0.25


def _parts(query: Query) -> list[str]:
    """The OR-ed parts of a query without a required phrase (one per word, bigram or
    compound); a phrase query is answered by plain BM25 (its matches all hold the phrase)."""
    return [] if query.phrases else _free(query)


class Rows:
    """What one search has read of the full-text index: per match expression its newest rows,
    newest first, up to the cap they were read with; the BM25 scores of an expression over a
    range of rows; the words of the vocabulary from a prefix.

    The lexical layer reads the newest `WINDOW` rows of each part of the query; the abstention
    floor's evidence (`floor.lexical_evidence`) needs the newest rows of mostly the same words.
    Asked through one `Rows`, an expression already read with a cap as large (or found to
    hold fewer rows than its cap) is answered from memory: the same rows, not read twice. So
    are scores and words asked for again: a hybrid search's respelled ranking is often the
    query's own (a compound the vocabulary holds whole), and the floor's evidence looks up the
    respellings the fuzzy layer looked up (at a million events each costs 5-25 ms).
    """

    def __init__(self) -> None:
        self._read: dict[str, tuple[int, list[int]]] = {}
        self._scores: dict[tuple[str, int, int, frozenset[int] | None], dict[int, float]] = {}
        self._words: dict[tuple[str, int], list[str]] = {}

    def scores(
        self,
        conn: Index,
        match: str,
        lowest: int,
        highest: int,
        among: Collection[int] | None = None,
    ) -> dict[int, float]:
        """`Index.fts_scores`, each (expression, range, rows asked for) read once."""
        key = (match, lowest, highest, None if among is None else frozenset(among))
        if key not in self._scores:
            self._scores[key] = conn.fts_scores(match, lowest, highest, among)
        return dict(self._scores[key])

    def learn(self, other: Rows) -> None:
        """Take the vocabulary's words `other` read (another thread's, done with them)."""
        self._words.update(other._words)

    def words_from(self, conn: Index, prefix: str, *, limit: int) -> list[str]:
        """`Index.words_from`, each prefix read once."""
        key = (prefix, limit)
        if key not in self._words:
            self._words[key] = conn.words_from(prefix, limit=limit)
        return list(self._words[key])

    def _known(self, match: str, cap: int) -> bool:
        read = self._read.get(match)
        return read is not None and (read[0] >= cap or len(read[1]) < read[0])

    def newest(self, conn: Index, matches: Sequence[str], cap: int) -> list[list[int]]:
        """The newest `cap` rows of each expression (all of them when fewer), newest first;
        those not read yet in one statement."""
        missing = [m for m in dict.fromkeys(matches) if not self._known(m, cap)]
        if missing:
            found: list[list[int]] = [[] for _ in missing]
            for n, rowid in conn.fts_postings(missing, cap=cap):
                found[n].append(rowid)
            for match, rows in zip(missing, found, strict=True):
                self._read[match] = (cap, sorted(rows, reverse=True))
        return [self._read[m][1][:cap] for m in matches]


def holding(
    conn: Index,
    matches: Sequence[str],
    rows: Sequence[Sequence[int]] | None,
    cap: int,
    rowids: Sequence[int],
    within: str | None = None,
) -> dict[int, set[int]]:
    """Which of `matches` (by index) each passage of `rowids` holds, as the index holds them.

    `rows[n]` are the newest rows of `matches[n]` read so far (`Rows.newest` with `cap`; `None`:
    nothing was read, every passage is looked up). They answer for every passage at least as
    new as the oldest of them, or for every passage when there were fewer than `cap`; the rest
    are looked up in one statement, each match among the rows of its passages' range that
    also match `within` (what every such passage is known to match: fewer rows to step).
    Re-tokenising the passages' text instead cost a search more than the rest of its lexical
    work. Used by the lexical re-rank (`ranked`) and by the floor's evidence
    (`floor.lexical_evidence`), so that both count a passage's words alike.
    """
    held: dict[int, set[int]] = {rowid: set() for rowid in rowids}
    asked: list[tuple[str, int, int]] = []
    which: list[int] = []
    for n, match in enumerate(matches):
        if rows is not None:
            found = set(rows[n])
            complete_from = min(rows[n]) if len(rows[n]) >= cap else 0
        else:
            found, complete_from = set(), max(rowids, default=0) + 1
        unknown = []
        for rowid in rowids:
            if rowid in found:
                held[rowid].add(n)
            elif rowid < complete_from:
                unknown.append(rowid)
        if unknown:
            expr = match if within is None else f"({match}) AND ({within})"
            density = len(found) / (max(found) - min(found) + 1) if len(found) > 1 else 0.0
            for low, high in _runs(sorted(unknown), density):
                asked.append((expr, low, high))
                which.append(n)
    for i, rowid in conn.fts_rows(asked):
        if rowid in held:
            held[rowid].add(which[i])
    return held


#: rows of a match stepped over cost about as much as one more range looked up (FTS5 seeks to
#: the start of a range through its doclist index, then steps every matching row in it)
SEEK_ROWS = 64


def _runs(rowids: Sequence[int], density: float) -> list[tuple[int, int]]:
    """Sorted `rowids` as the ranges to look them up by: one range while the rows of the match
    between two of them (`density`: its matches per rowid, 0 when unknown) cost less than a
    seek, else a range apiece. Semantic candidates lie all over a large history: one range
    from the oldest to the newest stepped every row of a common word between them, a tenth of
    a second at a million events."""
    gap = SEEK_ROWS / density if density > 0 else SEEK_ROWS
    runs: list[tuple[int, int]] = []
    for rowid in rowids:
        if runs and rowid - runs[-1][1] <= gap:
            runs[-1] = (runs[-1][0], rowid)
        else:
            runs.append((rowid, rowid))
    return runs


#: What a first page learnt of which passages hold which part of the query (`holding`): per
#: part, the newest `WINDOW` rows holding it, and an expression (its rare parts) that every
#: candidate older than the rows read of a common part matches.
Known = tuple[list[list[int]], str]


def _first_page(
    conn: Index,
    query: Query,
    workspace: str | None,
    match: str,
    page: int,
    read: Rows | None = None,
) -> tuple[list[tuple[int, float]], bool, Known | None]:
    """The best `page` (rowid, bm25) of the bounded candidates (see `WINDOW`), whether they
    are the plain query's first page, and what the rows read tell of who holds which part.

    The newest `WINDOW` rows of each part tell which parts are rare and where the window of
    the newest `WINDOW` matches begins: the candidates are those rows. The BM25 of a candidate
    older than the window is exact too: FTS5 sums it over the phrases of the expression, so
    scoring `(query) AND (rare parts)` counts the rare parts twice, and scoring the rare parts
    alone gives what to take off.
    """
    parts, scope = _parts(query), _scope(workspace)
    if not parts:
        return conn.fts_match(match, limit=page), True, None
    read = read or Rows()
    rows = read.newest(conn, [f"({p}){scope}" for p in parts], WINDOW)
    candidates = {rowid for found in rows for rowid in found}
    if not candidates:
        return [], True, None
    unscoped = workspace is None or conn.workspace_share(workspace) >= UNSCOPED_SHARE
    expr, scope = (_unscoped(query) or match, "") if unscoped else (match, scope)
    rare = [p for p, found in zip(parts, rows, strict=True) if len(found) < WINDOW]
    either = " OR ".join(rare)
    if len(rare) == len(parts):  # every match is a candidate
        floor = min(candidates)
        scores = read.scores(conn, expr, floor, max(candidates), candidates)
    else:
        floor = sorted(candidates, reverse=True)[WINDOW - 1]
        scores = read.scores(conn, expr, floor, max(candidates), candidates)
        older = [r for found in rows if len(found) < WINDOW for r in found if r < floor]
        if older:
            low, high = min(older), floor - 1
            twice = read.scores(conn, f"({expr}) AND ({either})", low, high, candidates)
            once = read.scores(conn, f"({either}){scope}", low, high, candidates)
            scores.update((rowid, score - once[rowid]) for rowid, score in twice.items())
    # rounded: a score found by subtraction may differ in its last bit, and ties go to the
    # older passage as in FTS5's own order
    ranked = sorted(
        (round(score, 9), rowid) for rowid, score in scores.items() if rowid in candidates
    )
    # every match is a candidate when every part is rare: fewer than a page of them are then
    # the plain query's whole answer, and a caller reading on must not score it all again
    # (a large share of a rare word's search)
    plain = len(rare) == len(parts) and len(ranked) < page
    return [(rowid, score) for score, rowid in ranked[:page]], plain, (rows, either)


#: Queries with at least this many parts (words, bigrams, compounds) have their first page
#: re-ranked by coverage: BM25 x the share of the query's parts a passage holds. It lifts golden
#: MRR and LoCoMo hybrid hit@5 and leaves MemDaily as it was (docs/eval.md). Squaring the share
#: changed nothing more; also scaling the lexical layer's fusion weight by its best coverage
#: lifted golden recall@5 but cost MemDaily more, so it was dropped.
COVERAGE_MIN_UNITS = 3
#: how many of the best BM25 passages are re-ranked
RERANKED = 100


def _held(
    conn: Index, parts: list[str], rowids: list[int], known: Known | None, match: str
) -> dict[int, int]:
    """How many of the query's parts each passage of `rowids` holds (`holding`, from the rows
    the first page read; a phrase query read none, and looks every passage up)."""
    lists, within = known if known is not None else (None, match)
    held = holding(conn, parts, lists, WINDOW, rowids, within)
    return {rowid: len(found) for rowid, found in held.items()}


#: how many passages `ranked` scores for its first page
PAGE = 200


def ranked(
    conn: Index,
    query: Query,
    workspace: str | None,
    *,
    page: int = PAGE,
    read: Rows | None = None,
) -> Iterator[tuple[int, float]]:
    """(event rowid, score; higher is better) in rank order, fetched page by page.

    OR-ed words let BM25 rank a passage high for one rare word of a long question; on the first
    page, a passage's score is scaled by the share of the question's words it holds. The first
    page comes from the bounded candidates (`WINDOW`); a caller that reads past it gets the
    other matches by plain BM25. `read` keeps the index rows read, for the search's evidence.
    """
    match = match_expression(query, workspace)
    if match is None:
        return
    first, plain, known = _first_page(conn, query, workspace, match, page, read)
    scored = [(rowid, -bm25) for rowid, bm25 in first]
    parts = _free(query)
    if len(parts) >= COVERAGE_MIN_UNITS:
        head, tail = scored[:RERANKED], scored[RERANKED:]
        held = _held(conn, parts, [rowid for rowid, _ in head], known, match)
        head = [(rowid, score * held[rowid] / len(parts)) for rowid, score in head]
        head.sort(key=lambda item: item[1], reverse=True)
        scored = head + tail
    yield from scored
    if plain and len(first) < page:
        return
    seen = {rowid for rowid, _ in first}
    offset = len(first) if plain else 0
    page = min(page * 4, 20_000)
    while True:
        rows = conn.fts_match(match, limit=page, offset=offset)
        yield from ((rowid, -bm25) for rowid, bm25 in rows if plain or rowid not in seen)
        if len(rows) < page:
            return
        offset += page
        page = min(page * 4, 20_000)
