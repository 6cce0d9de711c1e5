"""huiyi (回忆): local-first memory and recall for coding agents.

The public API is what `__all__` lists; everything else may change between releases.
"""

from __future__ import annotations

from huiyi.api import Huiyi, IndexReport
from huiyi.errors import (
    HuiyiError,
    IndexBusyError,
    NotFoundError,
    SourceError,
    StoreError,
    UsageError,
)
from huiyi.model import Event, Hit, Kind, Session, Surface
from huiyi.search.engine import SearchResult

__all__ = [
    "Event",
    "Hit",
    "Huiyi",
    "HuiyiError",
    "IndexBusyError",
    "IndexReport",
    "Kind",
    "NotFoundError",
    "SearchResult",
    "Session",
    "SourceError",
    "StoreError",
    "Surface",
    "UsageError",
]
