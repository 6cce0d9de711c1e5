"""huiyi (回忆): local-first memory and recall for coding agents.

The public API is what `__all__` lists; everything else may change between releases.

The names are loaded on first use (PEP 562 `__getattr__`), so importing a light module such as
`huiyi.config` or the stdio front (`huiyi.transports.stdio_mcp`) does not pull in the index, the
search layers and their dependencies: `huiyi mcp` answers its first message before any of that
would have finished importing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from huiyi.api import Huiyi, IndexReport
    from huiyi.errors import (
        BusyError,
        HuiyiError,
        NotFoundError,
        StoreError,
        UsageError,
    )
    from huiyi.model import CallerContext, Event, Hit, Kind, Session, Surface
    from huiyi.search.engine import SearchResult

__all__ = [
    "BusyError",
    "CallerContext",
    "Event",
    "Hit",
    "Huiyi",
    "HuiyiError",
    "IndexReport",
    "Kind",
    "NotFoundError",
    "SearchResult",
    "Session",
    "StoreError",
    "Surface",
    "UsageError",
]

#: where each public name lives
_HOMES = {
    "Huiyi": "huiyi.api",
    "IndexReport": "huiyi.api",
    "BusyError": "huiyi.errors",
    "HuiyiError": "huiyi.errors",
    "NotFoundError": "huiyi.errors",
    "StoreError": "huiyi.errors",
    "UsageError": "huiyi.errors",
    "Event": "huiyi.model",
    "Hit": "huiyi.model",
    "Kind": "huiyi.model",
    "Session": "huiyi.model",
    "Surface": "huiyi.model",
    "CallerContext": "huiyi.model",
    "SearchResult": "huiyi.search.engine",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'huiyi' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
