"""Curated memory: two small, bounded, hand-editable stores the model writes through a guarded
tool, and that are put in front of the model at the start of every session.

    config      where the files live, limits, Target
    store       file format, lock, atomic writes, backups, hit records, transactions
    ops         add / replace / remove / batch, matching, budgets, replies
    render      the block for the model (deterministic bytes)
    verdicts    the meaning detector's kept verdicts, read by the render (hooks load no model)
    search      BM25 + hit boost + time decay over current and archived entries
    lifecycle   archive unused entries, restore them
    tools       memory_tool / memory_search_tool: reply text for the MCP server
    extract     optional extraction of durable facts through an OpenAI-compatible endpoint
    facade      Memory: the one object every entry point uses

Above the core (the CLI, the web page, the MCP tools, the installer) memory is used through
this face alone: the names below. Extraction, which needs an HTTP client, is imported only
when `Extractor` or `NOT_CONFIGURED` is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from huiyi.memory.config import MemoryConfig, Target
from huiyi.memory.facade import Judged, Memory, SearchResult
from huiyi.memory.ops import CHANGED, Operation, Outcome, percent
from huiyi.memory.render import render_store
from huiyi.memory.search import MemoryHit
from huiyi.memory.store import JOINER, Snapshot, entry_key
from huiyi.memory.tools import Reply, memory_search_tool, memory_tool
from huiyi.safety.threats import scan

if TYPE_CHECKING:
    from huiyi.memory.extract import NOT_CONFIGURED, Extractor

__all__ = [
    "CHANGED",
    "JOINER",
    "NOT_CONFIGURED",
    "Extractor",
    "Judged",
    "Memory",
    "MemoryConfig",
    "MemoryHit",
    "Operation",
    "Outcome",
    "Reply",
    "SearchResult",
    "Snapshot",
    "Target",
    "entry_key",
    "memory_search_tool",
    "memory_tool",
    "percent",
    "render_store",
    "scan",
]


def __getattr__(name: str) -> Any:
    if name in ("Extractor", "NOT_CONFIGURED"):
        from huiyi.memory import extract

        return getattr(extract, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
