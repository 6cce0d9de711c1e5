"""A person's `huiyi search` and `huiyi recall`, along the one route (`route.route`).

A search in a fresh process pays for importing the core, opening the index and, once the
history is embedded, loading the embedding model, every time. The warm service (started by
`huiyi mcp` and `huiyi hook`) has all of that loaded already, so the CLI hands it these two
commands when it is running. Without a running service (or with `HUIYI_SERVICE=off`) the CLI
serves them itself, and starts no service for them, with one exception: a hybrid search whose
semantic layer would load the embedding model into this process. That search loads it and
answers with all three layers, as it would through the service, and starts the service in the
background meanwhile, so that the person's next searches skip the load. Without vectors no
service is started: lexical and fuzzy search in-process take a fraction of a second, and a
person's one search should not leave a process behind for ten minutes.

The request is built here from what the person typed plus what only the caller's process knows
(its current directory, `HUIYI_WORKSPACE`, `HUIYI_SESSION`, which the service does not share);
the reply is plain data the CLI prints, or a huiyi error raised again as its own class, so it
ends in the same message and exit status either way.

Standard library and the leaves only at the top: the CLI process the service answers never
imports the core.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from huiyi.config import Settings
from huiyi.policy.protocol import Recall, Search
from huiyi.transports.route import route
from huiyi.workspace import resolve

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.policy.handler import RequestHandler

__all__ = ["recall_request", "reply", "search_request"]


def _workspace(settings: Settings, workspace: str | os.PathLike[str] | None) -> str:
    """The workspace a command names, as `Huiyi.resolve_workspace` finds it in this process:
    the directory given, else HUIYI_WORKSPACE, else the current directory's."""
    return resolve(workspace or settings.workspace or os.getcwd())


def search_request(
    settings: Settings,
    query: str,
    *,
    workspace: str | os.PathLike[str] | None,
    all_workspaces: bool,
    limit: int,
    layer: str,
) -> Search:
    """`huiyi search`: with `--all` and no directory no workspace is sent; with both, both
    are, and `Huiyi.search` refuses them."""
    chosen = None
    if workspace is not None or not all_workspaces:
        chosen = _workspace(settings, workspace)
    return Search(query, chosen, everywhere=all_workspaces, limit=limit, layer=layer)


def recall_request(
    settings: Settings,
    query: str,
    *,
    workspace: str | os.PathLike[str] | None,
    session_id: str | None,
    limit: int,
) -> Recall:
    """`huiyi recall`: what the agent's `recall_history` would return to a caller in this
    workspace (and session, for the compacted part)."""
    return Recall(query, _workspace(settings, workspace), session=session_id, limit=limit)


def reply(settings: Settings, request: Search | Recall, huiyi: Callable[[], Huiyi]) -> Any:
    """The reply's value, from the running service or served here with the index `huiyi()`
    opens (and closes); a huiyi error it carries is raised as its own class."""

    def here() -> RequestHandler:
        from huiyi.policy.handler import RequestHandler

        return RequestHandler(huiyi(), threaded=False)

    return route(request, settings, here).unwrap()
