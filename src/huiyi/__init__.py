"""huiyi (回忆): local-first memory and recall for coding agents.

The public API is what `__all__` lists; everything else may change between releases.
"""

from __future__ import annotations

from huiyi.api import Huiyi, IndexReport
from huiyi.errors import (
    BusyError,
    HuiyiError,
    NotFoundError,
    StoreError,
    UsageError,
)
from huiyi.model import Event, Hit, Kind, Session, Surface
from huiyi.recall.scope import CallerContext
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
