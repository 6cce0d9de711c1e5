"""A sentence-transformers model from the Hugging Face hub, for users with network.

Optional: `sentence-transformers` is imported only when the first text is embedded, and a
missing package is an `EmbeddingError` that says what to install.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.embedding.base import DEFAULT_MAX_CHARS, clip, first_row, normalise_rows

if TYPE_CHECKING:
    from huiyi.search.embedding.base import Vectors

__all__ = ["HubEmbedder"]


class HubEmbedder:
    """A sentence-transformers model from the Hugging Face hub (needs network on first use).

    Optional: `sentence-transformers` is imported only when the first text is embedded. Models
    whose name contains `e5` get the e5 prefixes unless others are given.
    """

    name = "hub"

    def __init__(
        self,
        model_name: str,
        *,
        batch_size: int = 32,
        max_chars: int = DEFAULT_MAX_CHARS,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
    ) -> None:
        if not model_name:
            raise UsageError("a hub embedder needs a model name, e.g. hub:BAAI/bge-small-zh-v1.5")
        e5 = "e5" in model_name.lower()
        self.model_name = model_name
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.query_prefix = query_prefix if query_prefix is not None else ("query: " if e5 else "")
        self.passage_prefix = (
            passage_prefix if passage_prefix is not None else ("passage: " if e5 else "")
        )
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"hub:{self.model_name}"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (it loads on the first embedding call)."""
        return self._model is not None

    def _get_model(self) -> Any:
        if self._model is None:
            try:
                module = importlib.import_module("sentence_transformers")
            except ImportError as exc:
                raise EmbeddingError(
                    f"the hub embedder ({self.model_name}) needs sentence-transformers: "
                    "pip install sentence-transformers"
                ) from exc
            self._model = module.SentenceTransformer(self.model_name)
        return self._model

    @property
    def dim(self) -> int:
        with self._lock:
            return int(self._get_model().get_sentence_embedding_dimension())

    def _encode(self, texts: list[str]) -> Vectors:
        with self._lock:
            rows = self._get_model().encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True
            )
        return normalise_rows(rows)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode([self.passage_prefix + clip(t, self.max_chars) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return first_row(self._encode([self.query_prefix + clip(text, self.max_chars)]))
