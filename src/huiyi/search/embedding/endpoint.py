"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (a local Ollama, a hosted API).

Spoken through `huiyi.openai_http` (plain `urllib`), imported only when a request is made, so
this provider adds no dependency and costs nothing to a process that never calls it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.embedding.base import DEFAULT_MAX_CHARS, clip, first_row, normalise_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from huiyi.search.embedding.base import Vectors

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint, e.g. `http://localhost:11434/v1` (Ollama).

    `base_url` is used like the OpenAI SDK uses it (`<base_url>/embeddings`); a bare host with no
    path gets `/v1` added. The key, when given, goes in an `Authorization: Bearer` header and
    never into an error message. e5-style models served this way need `query_prefix` /
    `passage_prefix`; the dimension is learned from the first reply unless given.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_chars: int = DEFAULT_MAX_CHARS,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UsageError(f"embedding endpoint must be an http(s) URL, got {base_url!r}")
        if not model:
            raise UsageError("an OpenAI-compatible embedder needs a model name")
        path = parsed.path.rstrip("/") or "/v1"
        self.base_url = urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))
        self.model = model
        self.api_key = api_key
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_chars = max_chars
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._dim = dim

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    @property
    def model_id(self) -> str:
        return f"openai:{self.base_url}#{self.model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def _request(self, texts: list[str]) -> Vectors:
        # http.client, ssl and email are slow to import: only for an endpoint in use
        from huiyi.openai_http import EndpointError, post_json

        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            payload = post_json(
                self.url,
                body,
                api_key=self.api_key,
                timeout=self.timeout,
                what="embedding endpoint",
                user_agent="huiyi-embed",
            )
        except EndpointError as exc:
            hint = "; is the server running?" if exc.problem == "unreachable" else ""
            raise EmbeddingError(f"{exc}{hint}") from None
        return self._parse(payload, len(texts))

    def _parse(self, payload: object, expected: int) -> Vectors:
        import numpy as np

        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else 0
            raise EmbeddingError(
                f"embedding endpoint {self.url} returned {got} vectors for {expected} texts"
            )
        rows: list[list[float] | npt.NDArray[np.float32]] = [[] for _ in range(expected)]
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbeddingError(f"embedding endpoint {self.url} returned a malformed item")
            index = item.get("index", position)
            vector = item.get("embedding")
            if isinstance(vector, str):  # base64 little-endian float32
                import base64

                vector = np.frombuffer(base64.b64decode(vector), dtype="<f4")
            if not isinstance(index, int) or not 0 <= index < expected or vector is None:
                raise EmbeddingError(f"embedding endpoint {self.url} returned a malformed item")
            rows[index] = vector
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except ValueError as exc:
            raise EmbeddingError(f"embedding endpoint {self.url} returned ragged vectors") from exc
        if matrix.ndim != 2 or (self._dim is not None and matrix.shape[1] != self._dim):
            raise EmbeddingError(
                f"embedding endpoint {self.url} returned vectors of the wrong shape {matrix.shape}"
            )
        return normalise_rows(matrix)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        prepared = [self.passage_prefix + clip(t, self.max_chars) for t in texts]
        if not prepared:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(prepared[i : i + self.batch_size])
            for i in range(0, len(prepared), self.batch_size)
        ]
        out = np.vstack(parts)
        self._dim = int(out.shape[1])
        return out

    def embed_query(self, text: str) -> Vectors:
        out = self._request([self.query_prefix + clip(text, self.max_chars)])
        self._dim = int(out.shape[1])
        return first_row(out)
