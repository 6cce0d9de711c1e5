"""`PgIndex`: the core's reads (`store.index.Index`) answered by the PostgreSQL store.

The full-text lookups take the FTS5 expressions the search layers build (`match` compiles
them) and answer with what SQLite's FTS5 answers: the same rows, and the same BM25. FTS5's
`bm25()` sums, over every phrase of the expression, `idf * f * (k1 + 1) / (f + k1 * (1 - b +
b * D / avgdl))` with `f` the phrase's instances in the row weighted by column (`body` 1,
`whole` 2, `scope` 0), `idf = log((N - n + 0.5) / (n + 0.5))` (at least 1e-6) for the `n` rows
holding the phrase anywhere, `N` rows and `avgdl` their mean length in tokens; the index keeps
no row lengths (SQLite's m011), which FTS5 reads as `D = -3` (-1 for each of its three
columns). Here `n` is the document-frequency table's count for a one-token phrase and a count
over the GIN index for a longer one, `N` and `avgdl` come from `lex_totals`, and `f` from the
row's tsvector positions of the query's lexemes (`sql.INSTANCES`), so only the rows asked for
are read.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg_pool import ConnectionPool

from huiyi.model import Event
from huiyi.store.pg import lists, sql
from huiyi.store.pg.lexemes import quote
from huiyi.store.pg.match import Compiled, MatchError, Phrase, compile_full_text, compile_trigrams
from huiyi.store.pg.newest import HEADER, NewestGrams, NewestRows
from huiyi.store.queries import SessionRow, event_row, session_row
from huiyi.workspace import fuzzy_scope_token, scope_token

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

K1, B = 1.2, 0.75
#: FTS5's row length for an index that keeps none (see the module docstring)
NO_LENGTH = -3.0
COLUMN_WEIGHT = {"body": 1.0, "whole": 2.0}
_WEIGHT_LETTER = {"body": "D", "whole": "A"}
#: how long the highest row id is taken as read (`PgIndex._top`)
TOP_SECONDS = 1.0


class PgIndex:
    """`Index` over a pool of connections to a PostgreSQL store."""

    errors: tuple[type[BaseException], ...] = (psycopg.Error, MatchError)

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self._local = threading.local()
        self._scopes: dict[str, str] = {}
        self._fuzzy_scopes: dict[str, str] = {}
        self._highest = (0, -TOP_SECONDS)
        self._newest_grams = NewestGrams()
        self._newest_rows = NewestRows()
        #: answer first lookups from the kept newest ids (`store.pg.lists`); off, every lookup
        #: reads the GIN indexes (what the tests compare the lists' answers with)
        self.use_lists = True

    # -- plumbing --------------------------------------------------------------------------

    def reader(self) -> PgIndex | None:
        """None: the layers of a search read the pool one after the other."""
        return None

    def forget_reader(self) -> None:
        """Nothing to forget (`reader`)."""

    @contextlib.contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Cancel a query of this thread that runs past `seconds` (psycopg's QueryCanceled)."""
        before = getattr(self._local, "timeout_ms", None)
        self._local.timeout_ms = max(1, int(seconds * 1000))
        try:
            yield
        finally:
            self._local.timeout_ms = before

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as conn:
            timeout = getattr(self._local, "timeout_ms", None)
            if timeout is not None:
                conn.execute(f"SET statement_timeout = {int(timeout)}")
            try:
                yield conn
            finally:
                if timeout is not None:
                    conn.execute("SET statement_timeout = 0")

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement. Under a time limit the statement is sent between the two
        settings of `statement_timeout` in one pipeline: one round trip, not three (a search is
        some 20 statements, and under load each round trip waits for the scheduler). The three
        run as one implicit transaction, so a statement cancelled takes its setting with it."""
        with self.pool.connection() as conn:
            timeout = getattr(self._local, "timeout_ms", None)
            if timeout is None:
                rows: list[tuple[Any, ...]] = conn.execute(query, params).fetchall()
                return rows
            with conn.pipeline():
                conn.execute(f"SET statement_timeout = {int(timeout)}")
                cursor = conn.execute(query, params)
                conn.execute("SET statement_timeout = 0")
            rows = cursor.fetchall()
            return rows

    def _windowed(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of a read in windows of newest ids (`sql.WINDOWS`), planned without plain
        index scans: PostgreSQL would walk a window by the primary key testing each row's
        column (it does not count what reading the column costs) where ANDing the GIN
        index's bitmap with the window's is several times faster."""
        with self._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            return conn.execute(query, params).fetchall()

    def _windowed_with_header(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """`_windowed`, after the rows of `newest.HEADER` (the removals count, the highest id)
        read in the same snapshot: one repeatable-read transaction, the header first with
        index scans allowed (without them `max(id)` read every row, 690 ms at 1M events)."""
        with self._conn() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            header = conn.execute(HEADER.removesuffix(" UNION ALL ")).fetchall()
            conn.execute("SET LOCAL enable_indexscan = off")
            return [*header, *conn.execute(query, params).fetchall()]

    def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        rows = self._all(query, params)
        return rows[0]

    def _top(self) -> int:
        """The highest row id, read at most once per `TOP_SECONDS` (where the windows of the
        newest rows begin, `sql.WINDOWS`: a stale one costs a wider read, never a row)."""
        highest, read_at = self._highest
        now = time.monotonic()
        if now - read_at >= TOP_SECONDS:
            highest = int(self._one(sql.HIGHEST_ID)[0])
            self._highest = (highest, now)
        return highest

    def stamp(self) -> tuple[int, int]:
        rows, tokens = self._one(sql.TOTALS)
        return int(rows), int(tokens)

    # -- sessions and events ---------------------------------------------------------------

    def session_by_id(self, session_id: str) -> SessionRow | None:
        rows = self._all(sql.SESSION_BY_ID, (session_id,))
        return session_row(rows[0]) if rows else None

    def sessions_by_sid(self, sids: Sequence[int]) -> dict[int, SessionRow]:
        rows = self._all(sql.SESSIONS_BY_SID, (list(sids),))
        return {int(row[0]): session_row(row) for row in rows}

    def list_sessions(
        self,
        *,
        workspace: str | None,
        include_private: bool = False,
        include_subagents: bool = True,
        limit: int | None = None,
    ) -> list[SessionRow]:
        query, params = sql.list_sessions(
            workspace=workspace,
            include_private=include_private,
            include_subagents=include_subagents,
            limit=limit,
        )
        return [session_row(row) for row in self._all(query, params)]

    def workspaces(self) -> list[str]:
        return [row[0] for row in self._all(sql.WORKSPACES)]

    def events(
        self,
        sid: int,
        session_id: str,
        *,
        from_seq: int | None = None,
        to_seq: int | None = None,
        kinds: Sequence[str] | None = None,
        surface: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[Event]:
        query, params = sql.events(
            sid,
            from_seq=from_seq,
            to_seq=to_seq,
            kinds=kinds,
            surface=surface,
            limit=limit,
            newest_first=newest_first,
        )
        return iter([event_row(session_id, row) for row in self._all(query, params)])

    def events_around(
        self,
        sid: int,
        session_id: str,
        seq: int,
        *,
        before: int,
        after: int,
        kinds: Sequence[str],
    ) -> list[Event]:
        earlier = list(
            self.events(
                sid, session_id, to_seq=seq - 1, kinds=kinds, limit=before, newest_first=True
            )
        )
        later = self.events(sid, session_id, from_seq=seq, kinds=kinds, limit=after + 1)
        return [*reversed(earlier), *later]

    def count_events(self, sid: int, *, surface: str | None = None) -> int:
        if surface is None:
            return int(self._one(sql.COUNT_EVENTS, (sid,))[0])
        return int(self._one(sql.COUNT_EVENTS + " AND surface = %s", (sid, surface))[0])

    def text_ordinals(self, sid: int, seqs: Sequence[int], kinds: Sequence[str]) -> dict[int, int]:
        return {seq: int(self._one(sql.ORDINAL, (sid, seq, list(kinds)))[0]) for seq in seqs}

    def events_by_rowid(self, rowids: Sequence[int]) -> dict[int, tuple[int, Event]]:
        out: dict[int, tuple[int, Event]] = {}
        for rowid, sid, session_id, *rest in self._all(sql.EVENTS_BY_ROWID, (list(rowids),)):
            out[int(rowid)] = (int(sid), event_row(session_id, rest))
        return out

    def recent_turns(self, workspace: str, *, limit: int) -> list[tuple[str, str]]:
        rows = self._all(sql.RECENT_TURNS, (workspace, limit))
        return [(kind, text) for kind, text in reversed(rows)]

    def texts_by_rowid(self, rowids: Sequence[int]) -> dict[int, str]:
        return {int(r): t for r, t in self._all(sql.TEXTS_BY_ROWID, (list(rowids),))}

    def sids_by_rowid(self, rowids: Sequence[int]) -> dict[int, int]:
        return {int(r): int(s) for r, s in self._all(sql.SIDS_BY_ROWID, (list(rowids),))}

    def in_workspace(self, rowids: Sequence[int], workspace: str) -> set[int]:
        return {int(r) for (r,) in self._all(sql.IN_WORKSPACE, (list(rowids), workspace))}

    def workspace_share(self, workspace: str) -> float:
        mine, everywhere = self._one(sql.SHARE, (workspace,))
        return int(mine) / int(everywhere) if everywhere else 1.0

    def workspace_size(self, workspace: str | None) -> int:
        if workspace is None:
            return int(self._one(sql.SIZE)[0])
        return int(self._one(sql.SIZE_OF, (workspace,))[0])

    # -- workspaces by their index tokens ----------------------------------------------------

    def _workspace_of(self, token: str, *, fuzzy: bool) -> str:
        known = self._fuzzy_scopes if fuzzy else self._scopes
        if token not in known:
            for (workspace,) in self._all("SELECT DISTINCT workspace FROM sessions"):
                self._scopes[scope_token(workspace)] = workspace
                self._fuzzy_scopes[fuzzy_scope_token(workspace)] = workspace
        # a token of no workspace the store holds matches nothing: a workspace no row has
        return known.get(token, "\x00no workspace")

    def _scoped(self, compiled: Compiled) -> str | None:
        """The one workspace an expression is narrowed to (None: every workspace)."""
        workspaces = {self._workspace_of(t, fuzzy=False) for t in compiled.scopes}
        if len(workspaces) > 1:
            return "\x00no workspace"  # two workspaces at once: no row is in both
        return next(iter(workspaces), None)

    # -- the full-text index -----------------------------------------------------------------

    def _listed(self, asks: Sequence[lists.Ask | None], cap: int) -> dict[int, list[int]]:
        """The asks (by index) the kept newest ids answer (`store.pg.lists`), in one statement;
        None: an ask of a shape they cannot answer."""
        wanted = [ask for ask in asks if ask is not None]
        if not wanted or not self.use_lists:
            return {}
        statement = lists.read(wanted)
        held = lists.held(self._all(*statement)) if statement is not None else {}
        found: dict[int, list[int]] = {}
        for n, ask in enumerate(asks):
            ids = lists.answer(held, ask, cap) if ask is not None else None
            if ids is not None:
                found[n] = ids
        return found

    def fts_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]:
        if not matches:
            return []
        asked = []
        asks: list[lists.Ask | None] = []
        for match in matches:
            compiled = compile_full_text(match)
            workspace = self._scoped(compiled)
            asked.append((compiled.tsquery, workspace))
            asks.append(None if compiled.terms is None else (compiled.terms, workspace))
        found = self._listed(asks, cap)
        rest = [n for n in range(len(asked)) if n not in found]
        if rest:
            top = self._top()
            read = self._newest_rows.newest(
                [asked[n] for n in rest],
                cap,
                top,
                newer=sql.newer,
                whole=lambda rest, cap: sql.newest(rest, cap, top),
                run_newer=self._all,
                run_whole=self._windowed_with_header,
            )
            for n in rest:
                found[n] = []
            for m, rowid in read:
                found[rest[m]].append(rowid)
        return [(n, rowid) for n in range(len(asked)) for rowid in found[n]]

    def fuzzy_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]:
        if not matches:
            return []
        self._workspace_of("", fuzzy=True)  # fills the token maps
        fuzzy_scopes = frozenset(self._fuzzy_scopes)
        asked: list[tuple[list[str], str | None]] = []
        for match in matches:
            grams, scopes = compile_trigrams(match, fuzzy_scopes)
            workspaces = {self._workspace_of(t, fuzzy=True) for t in scopes}
            asked.append((grams, next(iter(workspaces)) if len(workspaces) == 1 else None))
        found = self._listed([(["g:" + g[0]], w) if len(g) == 1 else None for g, w in asked], cap)
        rest = [n for n in range(len(asked)) if n not in found]
        if rest:
            with self._conn() as conn:
                self._newest_grams.sync(conn)
            read = self._newest_grams.newest([asked[n] for n in rest], cap, self._read_newest_grams)
            for n in rest:
                found[n] = []
            for m, rowid in read:
                found[rest[m]].append(rowid)
        return [(n, rowid) for n in range(len(asked)) for rowid in found[n]]

    def _read_newest_grams(
        self, asked: Sequence[tuple[list[str], str | None]], cap: int
    ) -> tuple[list[tuple[int, int]], int]:
        """The newest `cap` rows of each (trigrams, workspace) from the GIN index, and the
        highest id of the statement's snapshot (what `NewestGrams` keeps them as of)."""
        query, params = sql.newest_with_grams(asked, cap, self._top())
        rows = self._windowed_with_header(query, params)
        highest = max((int(rowid) for n, rowid in rows if n == -2), default=0)
        return [(int(n), int(rowid)) for n, rowid in rows if n >= 0], highest

    def fts_rows(self, asked: Sequence[tuple[str, int, int]]) -> list[tuple[int, int]]:
        if not asked:
            return []
        ranges = []
        for match, low, high in asked:
            compiled = compile_full_text(match)
            ranges.append((compiled.tsquery, self._scoped(compiled), low, high))
        query, params = sql.rows_in_ranges(ranges)
        return [(int(n), int(rowid)) for n, rowid in self._all(query, params)]

    def fts_scores(
        self, match: str, lowest: int, highest: int, among: Collection[int] | None = None
    ) -> dict[int, float]:
        compiled = compile_full_text(match)
        where, params = sql.matching(compiled.tsquery, self._scoped(compiled), lowest, highest)
        if among is not None:
            # the rows asked for by the primary key: a range's every row tested against the
            # tsquery cost most of a lexical search (184 ms for 31,000 rows at 100,000 events)
            where += " AND id = ANY(%s)"
            params.append(sorted(r for r in among if lowest <= r <= highest))
        return self._scores(compiled, where, params)

    def fts_match(
        self, match: str, *, limit: int, offset: int = 0, min_rowid: int | None = None
    ) -> list[tuple[int, float]]:
        compiled = compile_full_text(match)
        where, params = sql.matching(compiled.tsquery, self._scoped(compiled), min_rowid, None)
        scores = self._scores(compiled, where, params)
        ranked = sorted(scores.items(), key=lambda item: (item[1], item[0]))
        return ranked[offset : offset + limit]

    def has_word(self, word: str) -> bool:
        return bool(self._one(sql.HAS_TERM, (f"b:{word}",))[0])

    def words_from(self, prefix: str, *, limit: int) -> list[str]:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        params = (f"b:{prefix}", f"b:{end}", f"w:{prefix}", f"w:{end}", limit)
        return [word for (word,) in self._all(sql.WORDS_FROM, params)]

    # -- BM25 ----------------------------------------------------------------------------------

    def bm25(self, compiled: Compiled, rowids: Sequence[int]) -> dict[int, float]:
        """FTS5's `bm25(event_fts, 1.0, 2.0, 0.0)` of each row (lower is better)."""
        if not rowids:
            return {}
        return self._scores(compiled, "id = ANY(%s)", [list(rowids)])

    def _scores(self, compiled: Compiled, where: str, params: Sequence[Any]) -> dict[int, float]:
        """The BM25 of the rows matching `where`: one statement (`sql.scores`), and one more
        for the instances of a phrase of several tokens or a prefix, when there is one."""
        phrases = compiled.phrases
        frequencies: list[str | None] = []
        rarities: list[tuple[str, str]] = []
        for phrase in phrases:
            tokens = phrase.tokens()
            letter = _WEIGHT_LETTER.get(phrase.column or "body", "D")
            if len(tokens) == 1 and not phrase.prefix:
                frequencies.append(f"{quote(tokens[0])}:{letter}")
                rarities.append(("df", ("w:" if phrase.column == "whole" else "b:") + tokens[0]))
            else:
                frequencies.append(None)
                text = f'{phrase.column}:"{phrase.text}"' + "*" * phrase.prefix
                rarities.append(("rows", str(compile_full_text(text).tsquery)))
        query, values = sql.scores(where, params, frequencies, rarities)
        counts: dict[int, list[float]] = {}
        header: list[float] = []
        for rowid, row in self._all(query, values):
            if int(rowid) < 0:
                header = [float(v) for v in row]
            else:
                counts[int(rowid)] = [float(v or 0.0) for v in row]
        if not counts:
            return {}
        rows, length, *hits = header
        avgdl = length / rows if rows else 1.0
        idf = [_idf(h, rows) for h in hits]
        longer = [n for n, tsquery in enumerate(frequencies) if tsquery is None]
        if longer:
            self._longer_instances([phrases[n] for n in longer], longer, counts)
        norm = K1 * (1 - B + B * NO_LENGTH / avgdl)
        scores: dict[int, float] = {}
        for rowid, found in counts.items():
            score = 0.0
            for phrase, weight, n in zip(phrases, idf, found, strict=False):
                f = n * COLUMN_WEIGHT[phrase.column or "body"]
                if f + norm == 0.0:  # 0 / 0: FTS5's NaN, which SQLite reads as 0 (queries._BM25)
                    score = 0.0
                    break
                score += weight * (f * (K1 + 1.0)) / (f + norm)
            scores[rowid] = -score
        return scores

    def _longer_instances(
        self, phrases: Sequence[Phrase], at: Sequence[int], counts: dict[int, list[float]]
    ) -> None:
        """Fill in `counts` the instances of phrases of several tokens or with a prefix,
        from the rows' tsvector positions of their lexemes (`sql.INSTANCES`)."""
        exact = sorted({t for p in phrases for t in (p.tokens()[:-1] if p.prefix else p.tokens())})
        prefixes = sorted({p.tokens()[-1] for p in phrases if p.prefix})
        held: dict[int, dict[str, tuple[list[int], list[str]]]] = {r: {} for r in counts}
        for rowid, lexeme, positions, weights in self._all(
            sql.INSTANCES, (list(counts), exact, prefixes)
        ):
            held[int(rowid)][lexeme] = (list(positions), list(weights))
        for rowid, found in counts.items():
            for phrase, n in zip(phrases, at, strict=True):
                found[n] = float(_instances(phrase, held[rowid]))

    # -- vectors ---------------------------------------------------------------------------------

    def vector_coverage(self, model: str, workspace: str | None) -> tuple[int, int]:
        if workspace is None:
            row = self._one(sql.COVERAGE, (model, model))
        else:
            row = self._one(sql.COVERAGE_OF, (model, model, workspace))
        return int(row[0]), int(row[1])

    def vector_signature(self, model: str) -> tuple[int, int]:
        count, highest = self._one(sql.SIGNATURE, (model,))
        return int(count), int(highest)

    def load_vectors(
        self, model: str, workspace: str | None, dim: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        import numpy as np

        rows = (
            self._all(sql.VECTORS, (model,))
            if workspace is None
            else self._all(sql.VECTORS_OF, (model, workspace))
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return ids, np.zeros((0, dim), dtype=np.float32)
        blob = b"".join(bytes(r[1]) for r in rows)
        matrix = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
        return ids, matrix


def _idf(hits: float, rows: float) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def _instances(phrase: Phrase, lexemes: dict[str, tuple[list[int], list[str]]]) -> int:
    """How often `phrase` occurs in its column of a row (its lexemes' positions and weights)."""
    letter = _WEIGHT_LETTER.get(phrase.column or "body", "D")
    tokens = phrase.tokens()

    def at(token: str) -> set[int]:
        if token not in lexemes:
            return set()
        positions, weights = lexemes[token]
        return {p for p, w in zip(positions, weights, strict=True) if w == letter}

    if phrase.prefix:
        last = tokens[-1]
        tail: set[int] = set()
        for lexeme in lexemes:
            if lexeme.startswith(last):
                tail |= at(lexeme)
        sets = [at(t) for t in tokens[:-1]] + [tail]
        if len(tokens) == 1:
            # each matching lexeme's instances count: positions of distinct lexemes differ
            return sum(len(at(lexeme)) for lexeme in lexemes if lexeme.startswith(last))
    else:
        sets = [at(t) for t in tokens]
    if len(sets) == 1:
        return len(sets[0])
    return sum(1 for p in sets[0] if all(p + i in s for i, s in enumerate(sets[1:], 1)))
