"""A person's `huiyi search` and `huiyi recall`, served by the warm service when one runs.

A search in a fresh process pays for importing the core, opening the index and, once the
history is embedded, loading the embedding model, every time. The warm service (`service.py`,
started by `huiyi mcp` and `huiyi hook`) has all of that loaded already, so the CLI hands it
these two commands when it is running. Without a running service (or with `HUIYI_SERVICE=off`)
the CLI serves them itself (`answer_here`), and starts no service for them, with one
exception: a hybrid search whose semantic layer loads the embedding model into this process
(about 0.3 s on a quiet machine, once enough of the history is embedded). That search loads it
and answers with all three layers, as it would through the service, and starts the service in
the background meanwhile, so that the person's next searches skip the load. Without vectors
no service is started: lexical and fuzzy search in-process take a fraction of a second, and a
person's one search should not leave a process behind for ten minutes.

Both ways run the same `answer` on the same request, so the output is the same: the request
is built here from what the person typed plus what only the caller's process knows (its
current directory, `HUIYI_WORKSPACE`, `HUIYI_SESSION`, which the service does not share), and
the reply is plain data the CLI prints. A `HuiyiError` travels as its class name and message
and is raised again on the CLI's side, so it ends in the same message and exit status.

This module imports only the standard library and light leaves at the top: the CLI process
that the service answers never imports the core.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from huiyi import errors
from huiyi.config import Settings
from huiyi.errors import HuiyiError
from huiyi.workspace import resolve

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.search.engine import SearchResult

__all__ = [
    "answer",
    "answer_here",
    "ask_service",
    "loads_model",
    "recall_request",
    "reply",
    "reply_or_raise",
    "search_payload",
    "search_request",
    "served",
]

Request = dict[str, Any]
Reply = dict[str, Any]


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
) -> Request:
    """`huiyi search`: `layer` is `hybrid` or one layer's name. With `--all` and no directory
    no workspace is sent; with both, both are, and `Huiyi.search` refuses them."""
    chosen = None
    if workspace is not None or not all_workspaces:
        chosen = _workspace(settings, workspace)
    return {
        "command": "search",
        "query": query,
        "workspace": chosen,
        "all": all_workspaces,
        "limit": limit,
        "layer": layer,
    }


def recall_request(
    settings: Settings,
    query: str,
    *,
    workspace: str | os.PathLike[str] | None,
    session_id: str | None,
    limit: int,
) -> Request:
    """`huiyi recall`: what the agent's `recall_history` would return to a caller in this
    workspace (and session, for the compacted part)."""
    return {
        "command": "recall",
        "query": query,
        "workspace": _workspace(settings, workspace),
        "session": session_id,
        "limit": limit,
    }


def search_payload(
    result: SearchResult, query: str | None = None, *, everywhere: bool = False
) -> Reply:
    """A search result as the data the CLI prints (hits as `Hit.as_dict`); with no hits and
    a `query`, `no_match` says so in words (the search may have declined weak evidence)."""
    reply: Reply = {
        "hits": [hit.as_dict() for hit in result.hits],
        "layers": list(result.layers),
        "notes": list(result.notes),
        "declined": result.declined,
    }
    if not result.hits and query is not None:
        where = "the history of any workspace" if everywhere else "this workspace's history"
        reply["no_match"] = result.no_match(query, where)
    return reply


def answer(
    hy: Huiyi,
    request: Mapping[str, Any],
    refresh: Callable[[], object],
) -> Reply:
    """Serve one request with `hy`; `refresh` reads what is new in the logs (a recall does
    first, as the agent's tool does). Raises what the core raises."""
    command = request["command"]
    if command == "search":
        layer = request["layer"]
        result = hy.search(
            request["query"],
            workspace=request["workspace"],
            all_workspaces=bool(request["all"]),
            limit=int(request["limit"]),
            layers=None if layer == "hybrid" else (layer,),
        )
        return search_payload(result, request["query"], everywhere=bool(request["all"]))
    if command == "recall":
        from huiyi.recall.scope import CallerContext

        refresh()
        caller = CallerContext(
            workspace=request["workspace"], session_id=request["session"], how="cli"
        )
        text = request["query"] or None
        return {"text": hy.recall(caller).history(text, limit=int(request["limit"])).text}
    raise errors.UsageError(f"the huiyi service serves no terminal command {command!r}")


def loads_model(hy: Huiyi, request: Mapping[str, Any]) -> bool:
    """Whether serving `request` in this process would load an embedding model into it: a
    hybrid search, an embedder that holds its model in the process and has not loaded it
    (`loaded`; an endpoint or the fake has nothing to load), and enough of the searched history
    embedded for the semantic layer to join (`fusion.COVERAGE_GATE`, read from the coverage
    counters: no model, no numpy)."""
    if request["command"] != "search" or request["layer"] != "hybrid":
        return False
    if request["all"] and request["workspace"] is not None:
        return False  # the search refuses it
    semantic = hy.semantic
    if semantic is None or getattr(semantic.embedder, "loaded", True):
        return False
    from huiyi.search.fusion import COVERAGE_GATE

    return semantic.coverage(hy.conn, request["workspace"]) >= COVERAGE_GATE


def answer_here(settings: Settings, hy: Huiyi, request: Mapping[str, Any]) -> Reply:
    """Serve `request` in this process (no service answered it). A search that loads the
    embedding model here also starts the service in the background, unless
    `HUIYI_SERVICE=off` (see the module's docstring)."""
    if not settings.service or not loads_model(hy, request):
        return answer(hy, request, refresh=hy.index)
    starting = threading.Thread(target=_start_service, args=(settings,), name="huiyi-start-service")
    starting.start()  # the spawn and its wait for the socket overlap with the search
    try:
        return answer(hy, request, refresh=hy.index)
    finally:
        starting.join()


def _start_service(settings: Settings) -> None:
    """Start the warm service for these settings unless one runs (as a front starts it: under
    its lock, returning once it listens; when it cannot start, nothing more happens)."""
    from huiyi.policy.manifest import published
    from huiyi.transports.service import ServiceClient

    ServiceClient(settings, published()["serverInfo"]["version"]).ensure()


def served(hy: Huiyi, request: Mapping[str, Any], refresh: Callable[[], object]) -> Reply:
    """`answer` for the service: an error huiyi reports becomes `{"error": {kind, message}}`,
    as the CLI's own error edge would have turned it (a damaged index or a full disk met
    outside the core's own checks included); anything else is a bug and propagates."""
    from huiyi.store.db import fault

    try:
        return answer(hy, request, refresh)
    except HuiyiError as exc:
        error = exc
    except (sqlite3.DatabaseError, OSError) as exc:
        found = fault(exc, None)
        if found is None:
            raise
        error = found
    return {"error": {"kind": type(error).__name__, "message": str(error)}}


def ask_service(settings: Settings, request: Request) -> Reply | None:
    """The running service's reply to `request`, or None when none serves these settings (or
    HUIYI_SERVICE=off, or it failed before answering): then the caller serves it itself. Both
    commands only read (a recall also indexes new lines, which is idempotent), so serving one
    again after a service died mid-call is safe."""
    if not settings.service or not _any_service(settings):
        return None
    from huiyi.policy.manifest import published
    from huiyi.transports.service import PROTOCOL, ServiceClient, ServiceStopped

    client = ServiceClient(settings, published()["serverInfo"]["version"], start=False)
    try:
        return client.call({"v": PROTOCOL, "cli": request}, roots=lambda: [])
    except ServiceStopped:
        return None


def _any_service(settings: Settings) -> bool:
    """Whether any service socket (`service.socket_path`: `service-<key>.sock`) is in the home.
    Without one no service can answer, and this process skips the client's imports (socket,
    hashlib: ~10 ms) and the key; a socket left by a killed service is found stale by the
    client as before."""
    try:
        with os.scandir(settings.home) as entries:
            return any(e.name.startswith("service-") and e.name.endswith(".sock") for e in entries)
    except OSError:
        return False


def reply(settings: Settings, request: Request, huiyi: Callable[[], Huiyi]) -> Reply:
    """The running service's reply to `request`, else the same request served in this process
    (`answer_here`, with the index `huiyi()` opens); a `HuiyiError` it carries is raised."""
    got = ask_service(settings, request)
    if got is None:
        got = answer_here(settings, huiyi(), request)
    return reply_or_raise(got)


def reply_or_raise(reply: Reply) -> Reply:
    """The reply, or the error it carries raised again as its own class."""
    error = reply.get("error")
    if not isinstance(error, dict):
        return reply
    kind = getattr(errors, str(error.get("kind")), None)
    if not (isinstance(kind, type) and issubclass(kind, HuiyiError)):
        kind = HuiyiError
    raise kind(str(error.get("message")))
