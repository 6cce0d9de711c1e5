"""The agent's six tools as a contract: their names and the limits of their arguments.

The MCP servers publish these limits in the tool schemas (`transports.http_mcp`, and from it
`policy/manifest.json`), and the recall tools enforce the same ones with a message that says
what to pass (`recall.tools`), so a model that ignores the schema gets the help a person gets
from the CLI. Plain constants: every layer may read them.
"""

from __future__ import annotations

__all__ = [
    "EXPAND_MAX",
    "HISTORY_MAX",
    "INJECT_MAX",
    "INJECT_MIN",
    "LIST_MAX",
    "MEMORY_TOOLS",
    "QUERY_MAX",
    "READ_LAST_MAX",
    "READ_MAX_CHARS",
    "READ_MIN_CHARS",
    "RECALL_TOOLS",
    "query_too_long",
]

#: the tools that read history, and the ones that read and write the memory stores
RECALL_TOOLS = ("recall_history", "recall_expand", "session_list", "session_read")
MEMORY_TOOLS = ("memory", "memory_search")

QUERY_MAX = 500
HISTORY_MAX = 20
EXPAND_MAX = 50
LIST_MAX = 100
READ_LAST_MAX = 500
READ_MIN_CHARS, READ_MAX_CHARS = 200, 60_000
#: the range `recall.maxInjectChars` may take
INJECT_MIN, INJECT_MAX = 400, 20_000


def query_too_long(query: str) -> str | None:
    """The one rule for a query's length, for every front (the CLI's search and recall, the
    agent's tools, the web page): None when it may be searched, else what to do instead."""
    if len(query) <= QUERY_MAX:
        return None
    return (
        f"query must be at most {QUERY_MAX} characters (got {len(query):,}); "
        "search for a few words or a phrase of it"
    )
