"""A deterministic embedder for tests: hashed character n-grams, nothing loaded.

Texts that share n-grams are closer, the same text always gives the same vector in every
process, and no model, download or thread is involved, so a test of the semantic layer runs in
milliseconds and never depends on the machine.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from huiyi.errors import UsageError
from huiyi.search.embedding.base import first_row, normalise_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from huiyi.search.embedding.base import Vectors

__all__ = ["FakeEmbedder"]


class FakeEmbedder:
    """Deterministic vectors from hashed character 1-3-grams (signed feature hashing).

    Texts sharing n-grams point the same way; unrelated texts are near orthogonal; the same text
    always gives the same vector in every process (blake2b, not Python's salted `hash`). Queries
    and passages are embedded alike.
    """

    name = "fake"

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise UsageError("a fake embedder needs at least 2 dimensions")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_id(self) -> str:
        return f"fake-ngram-v1:{self._dim}"

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        import hashlib

        import numpy as np

        folded = " ".join(unicodedata.normalize("NFKC", text).lower().split())
        vector = np.zeros(self._dim, dtype=np.float32)
        grams = [folded[i : i + n] for n in (1, 2, 3) for i in range(len(folded) - n + 1)]
        for gram in grams or ["\x00"]:
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            vector[(value >> 1) % self._dim] += sign
        if not vector.any():  # every gram cancelled out: still return a unit vector
            vector[0] = 1.0
        return vector

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return normalise_rows(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> Vectors:
        return first_row(normalise_rows(self._vector(text)))
