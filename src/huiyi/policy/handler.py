"""Every request a front routes to the core, served for one `Huiyi`: the function the warm
service runs for each request, and the one a front runs when it serves a request itself.

    handler = RequestHandler(Huiyi(settings=settings))
    reply = handler.handle(request, peer)       # protocol.Request in, protocol.Reply out

A tool call goes to the MCP tools (`tools.McpTools`), a hook to the hooks (`hooks.Hooks`), a
person's search and recall straight to `Huiyi`. The index's work runs on its one worker thread
(`Huiyi.in_worker`), so the service may serve many requests at once from its connection
threads. Errors come back in the reply, in the protocol's one encoding: a huiyi error, or a
fault of the machine, is a `Failure`; a bug propagates, except at the top of a hook, which fails
open (its traceback goes to stderr, the service's log).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from huiyi.errors import HuiyiError
from huiyi.model import CallerContext
from huiyi.policy.protocol import (
    CallerHints,
    Failure,
    HookRun,
    Recall,
    Reply,
    Request,
    Search,
    ToolCall,
    failure_of,
)

if TYPE_CHECKING:
    from huiyi.api import Huiyi, SearchResult
    from huiyi.policy.caller import CallerFinder
    from huiyi.policy.hooks import Hooks
    from huiyi.policy.protocol import Peer
    from huiyi.policy.tools import McpTools

__all__ = ["RequestHandler", "search_value"]

#: how a server finds the callers of its tool calls from what the call says about them
FinderFor = Callable[[CallerHints], "CallerFinder"]


def search_value(
    result: SearchResult, query: str | None = None, *, everywhere: bool = False
) -> dict[str, Any]:
    """A search result as the data the CLI prints (hits as `Hit.as_dict`); with no hits and
    a `query`, `no_match` says so in words (the search may have declined weak evidence)."""
    value: dict[str, Any] = {
        "hits": [hit.as_dict() for hit in result.hits],
        "layers": list(result.layers),
        "notes": list(result.notes),
        "declined": result.declined,
    }
    if result.detail is not None:
        value["detail"] = result.detail
    if not result.hits and query is not None:
        where = "the history of any workspace" if everywhere else "this workspace's history"
        value["no_match"] = result.no_match(query, where)
        why = result.why_empty()
        if why is not None and result.size == 0 and everywhere:
            why = "no workspace has sessions yet"
        if why is not None:
            value["why"] = why
        value["empty_workspace"] = result.size == 0 and not everywhere
    return value


def _now(fn: Callable[[], Any]) -> Any:
    return fn()


class RequestHandler:
    """Serves tool calls, hooks and a person's search and recall for one HUIYI_HOME."""

    def __init__(
        self, hy: Huiyi, *, finder_for: FinderFor | None = None, threaded: bool = True
    ) -> None:
        """`finder_for`: how callers are found for a server that knows them better than its
        call's hints say (the HTTP server, which binds each call to its token's workspaces).
        `threaded=False`: requests come one at a time from the thread that made the handler
        (a hook or a command served in its own process), so they run right there and no
        worker thread is started."""
        self.hy = hy
        self._run: Callable[[Callable[[], Any]], Any] = hy.in_worker if threaded else _now
        if threaded:  # a server: a large index is built beside the requests, not in one
            hy.build_in_background()
        self._finder_for = finder_for or self._finder
        self._tools: McpTools | None = None
        self._hooks: Hooks | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the idle work and close the index, on its own thread."""
        if self._tools is not None:
            self._tools.close()
        else:
            self.hy.close()

    @property
    def tools(self) -> McpTools:
        """The MCP tools (imported with their memory and caller machinery on first use: a
        person's search needs none of it)."""
        with self._lock:
            if self._tools is None:
                from huiyi.policy.tools import McpTools

                self._tools = McpTools(self.hy)
            return self._tools

    @property
    def hooks(self) -> Hooks:
        with self._lock:
            if self._hooks is None:
                from huiyi.policy.hooks import Hooks

                self._hooks = Hooks(self.hy)
            return self._hooks

    def handle(self, request: Request, peer: Peer) -> Reply:
        """Serve one request; `peer` answers what serving a tool call asks back."""
        if isinstance(request, HookRun):
            return self._hook(request)
        try:
            if isinstance(request, ToolCall):
                finder = self._finder_for(request.caller)
                return Reply(self.tools.handle(request, finder, peer))
            if isinstance(request, Search):
                return Reply(self._run(lambda: self._search(request)))
            return Reply(self._run(lambda: self._recall(request)))
        except Exception as exc:
            failure = failure_of(exc)
            if failure is None:
                raise
            return Reply(failure=failure)

    def loads_model(self, request: Request) -> bool:
        """Whether serving `request` here would load an embedding model into this process: a
        hybrid search over a history embedded enough for the semantic layer to join."""
        if not isinstance(request, Search) or request.layer != "hybrid":
            return False
        if request.everywhere and request.workspace is not None:
            return False  # the search refuses it
        return bool(self._run(lambda: self.hy.would_load_model(request.workspace)))

    def warm_up(self) -> None:
        """What a long-lived server does once as it starts: load the embedding model beside
        reading what is new in the logs, when the index holds vectors of it (then a search is
        going to need it, and the first should not wait for it). What fails here, the first
        request that needs it reports."""
        with contextlib.suppress(HuiyiError):
            embedder = self.hy.in_worker(self.hy.model_to_warm)
            if embedder is not None:  # loads beside the refresh; a search waits on its lock
                threading.Thread(
                    target=self.hy.warm_model, args=(embedder,), name="huiyi-warm", daemon=True
                ).start()
        with contextlib.suppress(HuiyiError):
            self.hy.in_worker(self.hy.refresh)

    # -- the kinds -----------------------------------------------------------------------

    def _finder(self, hints: CallerHints) -> CallerFinder:
        from huiyi.policy.caller import CallerFinder

        return CallerFinder.for_settings(
            self.hy.settings,
            cwd=hints.cwd,
            server=hints.server,
            forced=hints.forced,
            forced_how=hints.forced_how,
        )

    def _hook(self, request: HookRun) -> Reply:
        """One hook. It never raises: this is the top of a hook, which fails open (the front
        logs the failure and prints nothing); a bug's traceback goes to stderr."""
        from huiyi.policy.hook_runs import note_run
        from huiyi.policy.hooks import parse

        try:
            call = parse(request.harness, request.event, request.input)
            answer = self._run(lambda: self.hooks.handle(call)).as_dict()
            context = answer.get("context")
            answered = "context" if isinstance(context, str) and context else "nothing"
            if note_run(self.hy.settings, request.harness, request.event, answered):
                answer["noted"] = True
            return Reply(answer)
        except Exception as exc:
            failure = failure_of(exc)
            if failure is None:
                import traceback  # only for a bug: a hook that works never loads it

                traceback.print_exc(file=sys.stderr)
                failure = Failure("HuiyiError", f"internal error: {type(exc).__name__}: {exc}")
            return Reply(failure=failure)

    def _search(self, request: Search) -> dict[str, Any]:
        workspace, note = request.workspace, None
        if workspace is not None and not request.everywhere:
            workspace, note = self._demo_or(workspace)
        result = self.hy.search(
            request.query,
            workspace=workspace,
            all_workspaces=request.everywhere,
            limit=request.limit,
            layers=None if request.layer == "hybrid" else (request.layer,),
        )
        value = search_value(result, request.query, everywhere=request.everywhere)
        if note is not None:
            value["notes"].insert(0, note)
        return value

    def _recall(self, request: Recall) -> dict[str, Any]:
        """What `recall_history` returns to a caller in that workspace (and session); the logs
        are read first, as the agent's tool does."""
        self.hy.refresh()
        workspace, note = self._demo_or(request.workspace)
        caller = CallerContext(workspace, request.session, how="cli")
        text = request.query or None
        value: dict[str, Any] = {
            "text": self.hy.recall(caller).history(text, limit=request.limit).text
        }
        if note is not None:
            value["note"] = note
        return value

    def _demo_or(self, workspace: str) -> tuple[str, str | None]:
        """A person's workspace, or the bundled demo's while the index holds nothing else
        (with a note that says so): the commands of the quick start run from any directory."""
        demo = self.hy.demo_stand_in(workspace)
        if demo is None:
            return workspace, None
        return demo, (
            f"this workspace has no history yet, so this is the bundled demo's ({demo}); "
            "once huiyi has indexed your agents' logs, each workspace shows its own"
        )
