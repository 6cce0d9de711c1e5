"""Curated memory: two small, bounded, hand-editable stores the model writes through a guarded
tool, and that are put in front of the model at the start of every session.

    config      where the files live, limits, Target
    store       file format, lock, atomic writes, backups, hit records, transactions
    ops         add / replace / remove / batch, matching, budgets, replies
    render      the block for the model (deterministic bytes)
    search      BM25 + hit boost + time decay over current and archived entries
    lifecycle   archive unused entries, restore them
    tools       memory_tool / memory_search_tool: reply text for the MCP server
    extract     optional extraction of durable facts through an OpenAI-compatible endpoint
    facade      Memory: the one object every entry point uses
"""

from __future__ import annotations

from huiyi.memory.config import MemoryConfig, Target
from huiyi.memory.facade import Memory, SearchResult
from huiyi.memory.ops import Operation, Outcome
from huiyi.memory.search import MemoryHit
from huiyi.memory.tools import Reply, memory_search_tool, memory_tool

__all__ = [
    "Memory",
    "MemoryConfig",
    "MemoryHit",
    "Operation",
    "Outcome",
    "Reply",
    "SearchResult",
    "Target",
    "memory_search_tool",
    "memory_tool",
]
