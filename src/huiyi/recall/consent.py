"""What the user is asked before a recall tool shows the agent another session's text
(ask-before-recall, `huiyi.policy.consent`): which calls ask, and the question's words.

Those whose answer would show text of another session than the caller's current one:

- `recall_history` with a query, when the caller's workspace holds another session (with no
  query it shows the caller's own compacted part; with no known workspace the call is narrowed
  to the caller's own session);
- `session_list`, when the workspace holds another session (titles are text too);
- `recall_expand` and `session_read` of a session other than the caller's, when the caller may
  read it (an id it may not read gets the usual not-found answer, without a question).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from huiyi.errors import NotFoundError
from huiyi.model import CallerContext
from huiyi.recall.render import clean, one_line, when
from huiyi.recall.scope import Scope
from huiyi.search.engine import session_title
from huiyi.store.index import Index

__all__ = ["question"]

_QUERY_SHOWN = 80


def question(
    conn: Index, caller: CallerContext, tool: str, arguments: Mapping[str, Any]
) -> str | None:
    """What to ask the user before `tool` runs with `arguments` for `caller`, or None when its
    answer shows only the caller's own session (or nothing the caller may read)."""
    if caller.workspace is None:
        return None  # narrowed to the caller's own session
    scope = Scope(conn, caller)
    where = f"this workspace ({caller.workspace})"
    if tool == "recall_history":
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip() or not _others(scope, caller):
            return None
        asked = one_line(clean(query)[0], _QUERY_SHOWN)
        what = f'search the earlier sessions of {where} for "{asked}" and show the agent the hits'
    elif tool == "session_list":
        if not _others(scope, caller, subagents=bool(arguments.get("includeSubagents"))):
            return None
        what = f"show the agent the list of sessions of {where} (titles, sizes, last activity)"
    elif tool in ("recall_expand", "session_read"):
        session_id = arguments.get("sessionId")
        if not isinstance(session_id, str) or session_id == caller.session_id:
            return None
        try:
            row = scope.open(session_id)
        except NotFoundError:
            return None  # the tool answers "no such session" as it would anyway
        title = one_line(clean(session_title(row))[0], _QUERY_SHOWN)
        updated = when(row.session.updated)
        what = f'show the agent the session "{title}" (last active {updated}) of {where}'
    else:
        return None
    return f"huiyi wants to {what}. Allow? Your answer covers the rest of this reply."


def _others(scope: Scope, caller: CallerContext, *, subagents: bool = False) -> bool:
    """Whether the caller's scope holds a session other than its own."""
    rows = scope.sessions(include_subagents=subagents, limit=2)
    return any(row.session.id != caller.session_id for row in rows)
