"""One search call: run the layers, fuse them, filter by scope and privacy, build hits.

Layers (lexical BM25, fuzzy trigrams, semantic vectors) each yield event rowids in rank order;
this module keeps only events of sessions the caller may see (workspace, not private, not
excluded, subagents only on request), fuses the layers by reciprocal rank, scores the first
page again by coverage and semantic agreement (`search.rerank`), and turns the first `limit`
into `Hit`s whose snippet is cut from already-redacted text. Layers are isolated: one that fails
or runs out of time drops out and the result says so instead of failing the search; the
semantic layer joins a hybrid search only above a coverage gate. A search whose best
evidence stays below every calibrated floor (`search.floor`) declines: no hits, and the result
says so, because unrelated history shown as "recalled" misleads an agent more than nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple

from huiyi.errors import HuiyiError, UsageError
from huiyi.model import Hit, Session
from huiyi.safety.redact import redact_kept
from huiyi.search import abstention, fusion, fuzzy, lexical, rerank
from huiyi.store.index import Index
from huiyi.store.queries import SessionRow
from huiyi.text.expand import expansion
from huiyi.text.snippet import snippet
from huiyi.text.tokenize import Query, parse_query

if TYPE_CHECKING:
    from huiyi.search.semantic import Scorer, Semantic
    from huiyi.store.vectors import Span


class Filter(NamedTuple):
    """What a search may return. `workspace=None` means every workspace (people only)."""

    workspace: str | None
    exclude_sessions: frozenset[str] = frozenset()
    include_subagents: bool = True
    #: when set, only these sessions (an agent whose workspace is unknown: its own session)
    only_sessions: frozenset[str] | None = None
    #: a person's narrowing (the web page's filters): these harnesses only, and events from
    #: `since` up to `until` (epoch ms, either end open)
    sources: frozenset[str] | None = None
    since: int | None = None
    until: int | None = None

    def admits(self, session: Session) -> bool:
        """The one visibility rule: never a private session; then workspace, the sessions
        asked for or left out, and subagents only on request; then a person's narrowing (a
        session active wholly outside the time range holds no event inside it)."""
        return (
            not session.is_private
            and session.id not in self.exclude_sessions
            and (self.include_subagents or not session.is_subagent)
            and (self.workspace is None or session.workspace == self.workspace)
            and (self.only_sessions is None or session.id in self.only_sessions)
            and (self.sources is None or session.source in self.sources)
            and (self.since is None or session.updated >= self.since)
            and (self.until is None or session.created <= self.until)
        )

    def admits_time(self, time: int) -> bool:
        """Whether an event at `time` lies in the time range asked for."""
        return (self.since is None or time >= self.since) and (
            self.until is None or time <= self.until
        )


class SearchResult(NamedTuple):
    hits: list[Hit]
    layers: list[str]
    notes: list[str]
    #: the best evidence each layer found (`search.floor`); `None` when nothing was searched
    evidence: abstention.Evidence | None = None
    #: the evidence stayed below every floor, so the hits were withheld (`hits` is empty)
    declined: bool = False
    #: conversation events the searched workspace holds (0: it has no sessions; `None`: not
    #: counted, a search narrowed to sessions)
    size: int | None = None
    #: the evidence against the floors, in numbers (for `--verbose` and `--json`, never the
    #: sentence a person reads)
    detail: str | None = None

    def no_match(self, query: str, where: str = "this workspace's history") -> str:
        """The plain answer when there are no hits, naming the query."""
        return f'no match in {where} for "{query}"'

    def why_empty(self) -> str | None:
        """Why there are no hits, when it is not simply that nothing matches: the workspace
        has no sessions, or a layer is still warming or failed (`None`: nothing matches, or
        there are hits)."""
        if self.hits:
            return None
        if self.size == 0:
            return "this workspace has no sessions yet"
        if any(n.startswith(SKIPPED) for n in self.notes):
            return (
                "the semantic layer is still warming up (only part of this history is "
                "embedded), so only words were compared"
            )
        if any(DROPPED in n or n.startswith(UNAVAILABLE) for n in self.notes):
            return "a search layer failed, so this answer may be incomplete (`huiyi doctor`)"
        return None


#: how the notes of a layer that did not run begin (`SearchResult.why_empty` reads them)
SKIPPED = "semantic layer skipped"
DROPPED = "layer dropped out"
UNAVAILABLE = "semantic layer unavailable"
#: the note of a search that declined (the numbers are in `SearchResult.detail`)
WEAK = "the nearest passages matched too weakly to count as recalled"


def session_title(row: SessionRow) -> str:
    """The session's display title (its own, else the start of its first human message; see
    `queries.display_title`), else a placeholder."""
    return row.session.title or "(untitled)"


class _Visible:
    """Caches, per session, whether a filter lets its events through."""

    def __init__(self, conn: Index, flt: Filter) -> None:
        self.conn = conn
        self.flt = flt
        self._rows: dict[int, SessionRow | None] = {}

    def load(self, sids: Iterable[int]) -> None:
        """Look up every session not seen yet in one query (one query per session cost a hybrid
        search much of its CPU in a workspace of many sessions)."""
        missing = [sid for sid in dict.fromkeys(sids) if sid not in self._rows]
        if missing:
            found = self.conn.sessions_by_sid(missing)
            for sid in missing:
                row = found.get(sid)
                self._rows[sid] = row if row is not None and self.flt.admits(row.session) else None

    def get(self, sid: int) -> SessionRow | None:
        if sid not in self._rows:
            self.load((sid,))
        return self._rows[sid]


def hydrate(
    conn: Index,
    ranked: Iterable[tuple[int, float]],
    flt: Filter,
    query: Query,
    limit: int,
    found_by: Mapping[int, tuple[str, ...]] | None = None,
    visible: _Visible | None = None,
) -> list[Hit]:
    """Turn ranked event rowids into at most `limit` visible hits (`visible`: the sessions
    this search has already looked up under `flt`)."""
    visible = visible or _Visible(conn, flt)
    words = query.surface_words()
    hits: list[Hit] = []
    iterator = iter(ranked)
    while len(hits) < limit:
        batch = list(islice(iterator, max(limit * 3, 30)))
        if not batch:
            break
        found = conn.events_by_rowid([rowid for rowid, _ in batch])
        visible.load(sid for sid, _ in found.values())
        for rowid, score in batch:
            if rowid not in found:
                continue
            sid, event = found[rowid]
            row = visible.get(sid)
            if row is None or not flt.admits_time(event.time):
                continue
            # redact the whole text first, then cut: a snippet must never hold half a secret
            clean = redact_kept(event.text)
            title = redact_kept(session_title(row))
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
                    layers=(found_by or {}).get(rowid, ()),
                    masks=clean.count + title.count,
                )
            )
            if len(hits) >= limit:
                break
    return hits


LAYERS = ("lexical", "fuzzy", "semantic")
#: lexical rankings a hybrid search adds to its layers' (see `search`)
EXTRA_RANKINGS = ("expanded", "respelled")
# What a search with no deadline of its own (the CLI, the web page, the Python API) gives an
# embedder to load its model, beyond its time limit; a first load that also builds the ONNX
# graph takes seconds, more on a busy machine.
MODEL_LOAD_SECONDS = 60.0
LOAD_POLL = 0.02  # how often a search waiting on a loading model looks whether it is loaded


def _visible_ids(
    conn: Index,
    ranked: Iterable[tuple[int, float]],
    visible: _Visible,
    depth: int,
    keeps: Callable[[SessionRow], bool] | None = None,
) -> list[tuple[int, float]]:
    """The first `depth` ranked (rowid, score) whose sessions the filter lets through (and
    `keeps`, when given)."""
    out: list[tuple[int, float]] = []
    iterator = iter(ranked)
    while len(out) < depth:
        batch = list(islice(iterator, depth * 2))
        if not batch:
            break
        sids = conn.sids_by_rowid([rowid for rowid, _ in batch])
        visible.load(sids.values())
        for r, score in batch:
            row = visible.get(sids[r]) if r in sids else None
            if row is not None and (keeps is None or keeps(row)):
                out.append((r, score))
    return out[:depth]


def search(
    conn: Index,
    text: str,
    flt: Filter,
    *,
    limit: int = 10,
    layers: Sequence[str] | None = None,
    semantic: Semantic | None = None,
    seconds: float = 5.0,
    load_seconds: float = 0.0,
    abstain: bool = True,
    padding: float | None = None,
) -> SearchResult:
    """Search with one layer, or all of them fused (`layers=None`).

    With `abstain` (the default) a search whose evidence stays below the floors returns no
    hits and `declined`; without it the hits come back whatever the evidence (calibration).
    An answer stops where its evidence stops (`_unpadded`, at the calibrated ratio of the
    floors; `padding` another ratio, for calibration, 0 none).

    `seconds` bounds the search. An embedder that has still to load its model (the first
    search in a process) may take up to `load_seconds` more for that: loading is not searching,
    and on a busy machine it can outlast the whole budget, which would cost the first search
    its semantic layer. Callers on a deadline (hooks, tools) leave it at 0.

    The semantic layer reads its vectors here, then embeds the query and scores the vectors on
    a worker thread while the lexical and fuzzy layers query the index on this one (on two
    cores a hybrid search takes about the time of its slowest half, not of all three layers).
    """
    query = parse_query(text)
    if query.empty:
        return SearchResult([], [], ["the query has no searchable words"])
    size = conn.workspace_size(flt.workspace) if flt.only_sessions is None else None
    if size == 0:  # nothing to search: say so, not that nothing matched or is embedded
        return SearchResult([], [], [], size=0)
    wanted = list(layers) if layers is not None else list(LAYERS)
    unknown = [name for name in wanted if name not in LAYERS]
    if unknown:
        raise UsageError(f"unknown search layer {unknown[0]!r}; use one of {', '.join(LAYERS)}")
    notes: list[str] = []
    #: what a layer that fails raises: the store's faults (a damaged index) or huiyi's errors
    failing: tuple[type[BaseException], ...] = (*conn.errors, HuiyiError)
    # A query that is nothing but quoted phrases asks for exactly those words. Quotes inside a
    # question ('what did "Dana" say about the move') only make the phrase required lexically;
    # the other layers still read the whole question (MemDaily asks many such questions).
    if query.phrases and not query.terms and wanted != ["lexical"]:
        wanted = ["lexical"]
        notes.append("an exact phrase was asked for: lexical search only")
    hybrid = len(wanted) > 1
    visible = _Visible(conn, flt)
    depth = max(fusion.DEPTH, limit)
    found: dict[str, list[tuple[int, float]]] = {}
    read = lexical.Rows()  # index rows the lexical layer reads, and the evidence reads again
    pending: _SemanticThread | None = None
    cosines: dict[int, float] = {}
    started = time.monotonic()
    # the semantic layer first: its worker embeds the query while the other layers run
    if "semantic" in wanted:
        try:
            with conn.time_limit(seconds):
                pending = _start_semantic(conn, text, flt, semantic, hybrid, notes, depth)
        except failing as exc:
            notes.append(f"semantic {DROPPED}: {exc}")
    # the fuzzy layer of a hybrid search reads the trigram index on a thread of its own, through
    # a connection of its own: the words the query's typos may mean, their passages and the
    # query's trigrams, then the expansion's ranking, while this one reads the query's ranking
    # and the respellings' (SQLite lets go of the GIL as it reads: on two cores the two halves
    # take about the time of the slower one)
    beside: _FuzzyThread | None = None
    expanded = expansion(text) if hybrid else ""
    if hybrid and "fuzzy" in wanted and "lexical" in wanted:
        with suppress(*failing):  # no reader: the layers run one after the other
            if (reader := conn.reader()) is not None:
                beside = _FuzzyThread(
                    reader, text, flt.workspace, depth, seconds, expanded, failing
                )
    # the words the query's misspelled ones may mean: the fuzzy layer reads their passages,
    # and a hybrid search also looks them up as words (below, with the expansion); an index
    # that fails here fails the fuzzy layer below, where it is reported
    respelt: list[str] = []
    if "fuzzy" in wanted and beside is None:
        with suppress(*failing), conn.time_limit(seconds):
            respelt = fuzzy.meant_words(conn, text, read)
    for name in wanted:
        if name == "semantic" or (name == "fuzzy" and beside is not None):
            continue
        try:
            with conn.time_limit(seconds):
                ranking = _layer(conn, name, query, text, flt, depth, read, respelt)
                found[name] = _visible_ids(conn, ranking, visible, depth)
        except failing as exc:
            notes.append(f"{name} {DROPPED}: {exc}")
    if beside is not None:
        respelt = beside.respelt(read, seconds)
    if hybrid and "lexical" in found:
        # the query's technical terms in the other language (`expanded`, fused at a lower
        # weight), and the words its typos mean looked up as words (`respelled`: what the
        # person meant to type, fused as the query's own words are)
        for name, extra in (("expanded", expanded), ("respelled", " ".join(respelt))):
            if extra and (name != "expanded" or beside is None):
                with suppress(*failing), conn.time_limit(seconds):
                    ranking = lexical.ranked(conn, parse_query(extra), flt.workspace, read=read)
                    found[name] = _visible_ids(conn, ranking, visible, depth)
    if beside is not None:
        late: tuple[type[BaseException], ...] = (TimeoutError, *failing)
        try:
            ranking = beside.result(conn, seconds)
            found["fuzzy"] = _visible_ids(conn, ranking, visible, depth)
        except late as exc:
            notes.append(f"fuzzy {DROPPED}: {exc}")
        if "lexical" in found and (extra_ranking := beside.expanded(seconds)) is not None:
            with suppress(*failing), conn.time_limit(seconds):
                found["expanded"] = _visible_ids(conn, extra_ranking, visible, depth)
    if pending is not None:
        try:
            left = max(0.0, started + seconds - time.monotonic())
            ranked = pending.result(timeout=left, load_timeout=load_seconds)
            with conn.time_limit(seconds):
                ranked = list(pending.refine(conn, ranked))
                cosines = dict(ranked)
                found["semantic"] = _visible_ids(conn, ranked, visible, depth, pending.keeps)
        except TimeoutError:
            notes.append(f"semantic {DROPPED}: no answer within {seconds:g} s")
        except failing as exc:
            notes.append(f"semantic {DROPPED}: {exc}")
    rankings = {
        name: [rowid for rowid, _ in found[name]]
        for name in [*wanted, *EXTRA_RANKINGS]
        if name in found
    }
    ran = [name for name in rankings if name in LAYERS]
    if len(ran) == 1:
        order = [(rowid, float(depth - n)) for n, rowid in enumerate(rankings[ran[0]])]
    else:
        order = fusion.fuse(rankings)
    floors = abstention.floors_for(
        semantic.model if semantic is not None and "semantic" in found else None
    )
    evidence = _evidence(conn, query, text, flt, found, order, read, floors.blind)
    if abstain and not floors.passes(evidence):
        notes.append(WEAK)
        detail = f"evidence below the floors: {floors.weak(evidence)}"
        return SearchResult([], ran, notes, evidence, declined=True, size=size, detail=detail)
    if len(ran) > 1 and cosines:  # without cosines coverage alone moved nothing measurable
        with suppress(*conn.errors):  # a damaged full-text index: the fused order stands
            fuzzy_scores = dict(found.get("fuzzy", []))
            order = rerank.rerank(conn, query, flt.workspace, order, cosines, read, fuzzy_scores)
    ratio = floors.padding if padding is None else padding
    if abstain and ratio > 0 and len(order) > 1:
        with suppress(*conn.errors):  # a damaged full-text index: every hit is kept
            order = _unpadded(conn, query, flt.workspace, order, ratio, limit, read)
    held = {name: set(ranking) for name, ranking in rankings.items()}
    found_by = {rowid: tuple(n for n in ran if rowid in held[n]) for rowid, _ in order}
    hits = hydrate(conn, order, flt, query, limit, found_by, visible)
    return SearchResult(hits, ran, notes, evidence, size=size)


def _unpadded(
    conn: Index,
    query: Query,
    workspace: str | None,
    order: Sequence[tuple[int, float]],
    ratio: float,
    limit: int,
    read: lexical.Rows,
) -> list[tuple[int, float]]:
    """`order` without its padding: after the first hit, a hit whose score is below `ratio` of
    the first's and whose passage holds none of the query's words (the semantic layer's guess
    alone, far below the answer) is dropped; beyond the first `2 x limit`, every hit below
    the ratio. An agent handed those as "recalled" reads unrelated history as evidence."""
    top = order[0][1]
    if top <= 0:
        return list(order)
    pool = list(order[: 2 * limit])
    floor = ratio * top
    low = [rowid for rowid, score in pool[1:] if score < floor]
    if not low:
        return list(order)
    shares, _ = abstention.passage_shares(conn, query, workspace, low, read)
    kept = [pool[0], *((r, s) for r, s in pool[1:] if s >= floor or shares.get(r, 0.0) > 0)]
    return kept + [(r, s) for r, s in order[2 * limit :] if s >= floor]


def _evidence(
    conn: Index,
    query: Query,
    text: str,
    flt: Filter,
    found: Mapping[str, Sequence[tuple[int, float]]],
    order: Sequence[tuple[int, float]],
    read: lexical.Rows,
    blind: float = 1.0,
) -> abstention.Evidence:
    """Each layer's best evidence on the scale its floor is calibrated on (`search.floor`);
    whether the query is gibberish or from elsewhere is asked when the workspace uses at most
    `1 - blind` of its specific words (`Floors.blind`).

    Lexical evidence is read from the lexical layer's first passages and the result's, so a
    search without the lexical layer (semantic alone) has it too; `read` holds the index rows
    the lexical layer read, most of what the evidence needs."""

    def best(name: str) -> float | None:
        ranking = found.get(name)
        if ranking is None:
            return None
        return ranking[0][1] if ranking else 0.0

    top = abstention.TOP_PASSAGES
    passages = [rowid for rowid, _ in [*found.get("lexical", [])[:top], *order[:top]]]
    share: float | None = None
    absent: float | None = None
    unseen: float | None = None
    missing: float | None = None
    asked: float | None = None
    apart = False
    with suppress(*conn.errors):  # a damaged full-text index: the layers' notes say so
        share, absent = abstention.lexical_evidence(
            conn, query, flt.workspace, list(dict.fromkeys(passages)), read
        )
        if "semantic" in found:  # the evidence test guards what the semantic layer answers
            words = abstention.word_evidence(conn, text, flt.workspace, read)
            unseen = abstention.unseen_of(words)
            missing = abstention.missing_detail(text, words)
            asked = abstention.asked_detail(text, words)
            apart = abstention.apart(conn, text, words, [rowid for rowid, _ in order])
    unused = unseen is not None and unseen >= blind - 1e-9
    noise = unused and abstention.gibberish(text)
    elsewhere = unused and not noise and abstention.off_topic(text)
    return abstention.Evidence(
        share,
        best("fuzzy"),
        best("semantic"),
        absent,
        unseen,
        noise,
        elsewhere,
        missing,
        asked,
        apart,
    )


def _layer(
    conn: Index,
    name: str,
    query: Query,
    text: str,
    flt: Filter,
    depth: int,
    read: lexical.Rows,
    respelt: list[str],
) -> Iterable[tuple[int, float]]:
    if name == "lexical":
        return lexical.ranked(conn, query, flt.workspace, read=read)
    return fuzzy.ranked(conn, text, flt.workspace, depth=depth * 2, respelt=respelt)


class _FuzzyThread:
    """The fuzzy ranking of one hybrid search, then the first page of its expansion's lexical
    ranking (`expanded`, when there is one), read through `reader` on a thread of its own (a
    thread per search, as `_SemanticThread`). The expansion fails alone: `failing`, what the
    searching thread's own lookup of it would have suppressed, leaves it out."""

    def __init__(
        self,
        reader: Index,
        text: str,
        workspace: str | None,
        depth: int,
        seconds: float,
        expanded: str = "",
        failing: tuple[type[BaseException], ...] = (),
    ) -> None:
        self._reader = reader
        self._ranked: list[tuple[int, float]] = []
        self._error: BaseException | None = None
        #: the words the query's typos may mean (`fuzzy.meant_words`), set once looked up
        self._respelt: list[str] = []
        self._words = lexical.Rows()  # the vocabulary's words it read for them
        self._respelling = threading.Event()
        #: the expansion's ranking: its first page, and the rest, read on when asked for
        self._expanded: tuple[list[tuple[int, float]], Iterator[tuple[int, float]]] | None = None
        deadline = time.monotonic() + seconds

        def rank() -> None:
            try:
                with reader.time_limit(seconds):
                    try:  # as the searching thread's own lookup: a failing index, no words
                        with suppress(*failing):
                            self._respelt = fuzzy.meant_words(reader, text, self._words)
                    finally:
                        self._respelling.set()
                    respelt = self._respelt
                    self._ranked = list(
                        fuzzy.ranked(reader, text, workspace, depth=depth * 2, respelt=respelt)
                    )
            except BaseException as exc:  # handed to the searching thread, which raises it
                self._error = exc
            self._respelling.set()  # also when the thread failed before it looked them up
            if not expanded:
                return
            try:  # a fuzzy layer that failed leaves the expansion to be read all the same
                with reader.time_limit(max(0.0, deadline - time.monotonic())):
                    rest = lexical.ranked(reader, parse_query(expanded), workspace)
                    self._expanded = (list(islice(rest, lexical.PAGE)), rest)
            except failing:
                pass
            except BaseException as exc:
                self._error = self._error or exc

        self._thread = threading.Thread(target=rank, name="huiyi-fuzzy", daemon=True)
        self._thread.start()

    def result(self, conn: Index, seconds: float) -> list[tuple[int, float]]:
        """The ranking, or what it raised; the reader's time limit ends its reading within
        `seconds`, so the wait is bounded. A thread still busy past that leaves the reader to
        it: `conn` opens another for the next search."""
        self._thread.join(seconds + 1.0)
        if self._thread.is_alive():
            conn.forget_reader()
            raise TimeoutError(f"no answer within {seconds:g} s")
        if self._error is not None:
            raise self._error
        return self._ranked

    def respelt(self, read: lexical.Rows, seconds: float) -> list[str]:
        """The words the query's typos may mean, as soon as the thread has looked them up
        (none when it has not within `seconds`); `read` learns the vocabulary's words it read,
        which the floor's evidence asks for again."""
        if not self._respelling.wait(seconds):
            return []
        read.learn(self._words)
        return list(self._respelt)

    def expanded(self, seconds: float) -> Iterator[tuple[int, float]] | None:
        """The expansion's ranking (None: none, or it failed), once `result` has returned:
        its first page as read beside, then what follows read on through the reader."""
        if self._expanded is None or self._thread.is_alive():
            return None
        first, rest = self._expanded

        def ranking() -> Iterator[tuple[int, float]]:
            yield from first
            with self._reader.time_limit(seconds):
                yield from rest

        return ranking()


class _SemanticThread:
    """The semantic ranking of one search, run on a thread of its own.

    A thread per search rather than a pool: once the search has its ranking, no thread is
    left from it (an index started later in the process forks its readers only while it runs
    no other thread, `store.reading`, and would read in this process instead). A ranking that
    outlasts its timeout leaves its thread running until the embedder returns; it is a daemon,
    so it never holds up the exit.
    """

    def __init__(self, scorer: Scorer, text: str, depth: int, span: Span | None = None) -> None:
        self._scorer = scorer
        self.depth = depth
        #: the newest sessions the ranking is kept to (None: the whole workspace)
        self.span = span
        self._ranked: list[tuple[int, float]] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(scorer, text, depth), name="huiyi-semantic", daemon=True
        )
        self._thread.start()

    def _run(self, scorer: Scorer, text: str, depth: int) -> None:
        try:
            self._ranked = scorer.ranked(text, depth=depth)
        except BaseException as exc:  # handed to the searching thread, which raises it
            self._error = exc

    def refine(self, conn: Index, ranked: list[tuple[int, float]]) -> Sequence[tuple[int, float]]:
        """The ranking with an approximate index's candidates scored exactly (`Scorer.refine`,
        on the connection's thread)."""
        return self._scorer.refine(conn, ranked, depth=self.depth)

    def keeps(self, row: SessionRow) -> bool:
        """Whether a session lies in the span the layer searched."""
        if self.span is None:
            return True
        return (row.session.updated or 0, row.sid) >= self.span.floor

    def result(self, timeout: float, load_timeout: float = 0.0) -> list[tuple[int, float]]:
        """The ranking; raises TimeoutError after `timeout` seconds, not counting up to
        `load_timeout` seconds spent while the embedder loads its model, or what the ranking
        raised."""
        loading_until = time.monotonic() + load_timeout
        # an embedder without a `loaded` flag (a remote endpoint, the fake) has nothing to load
        while (
            self._thread.is_alive()
            and not getattr(self._scorer.embedder, "loaded", True)
            and time.monotonic() < loading_until
        ):
            self._thread.join(min(LOAD_POLL, max(0.0, loading_until - time.monotonic())))
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError
        if self._error is not None:
            raise self._error
        return self._ranked


def _start_semantic(
    conn: Index,
    text: str,
    flt: Filter,
    semantic: Semantic | None,
    hybrid: bool,
    notes: list[str],
    depth: int,
) -> _SemanticThread | None:
    """Check the coverage gate and read the vectors here; rank on a thread beside this one.

    The gate judges what the layer would search: the whole workspace, or the span of its
    newest sessions that is embedded enough (`Semantic.gate`), which a note then names."""
    if semantic is None:
        notes.append("semantic layer: no embedder configured")
        return None
    gate = semantic.gate(conn, flt.workspace)
    note = gate.note()
    if hybrid and not gate.joins:
        notes.append(note or SKIPPED)
        return None
    if hybrid and note is not None:
        notes.append(note)
    scorer = semantic.scorer(conn, flt.workspace)
    if scorer.note is not None:  # an approximate index being built in the background
        notes.append(scorer.note)
        if scorer.note.startswith(SKIPPED):
            return None
    span = gate.span if hybrid and gate.span is not None and not gate.span.whole else None
    return _SemanticThread(scorer, text, depth * 3, span)
