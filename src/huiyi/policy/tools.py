"""The MCP tool calls: the same steps and the same answer whichever server received the call.

Every server hands its calls here through `handler.RequestHandler`: the warm service, a stdio
front serving in its own process, and the SDK server behind `huiyi mcp --http`. For every call

1. the tool must be one huiyi publishes, and its arguments must fit the published schema
   (`arguments.check_arguments`); the limits in the schema are enforced by the core, which says
   what to pass;
2. the caller is found (`caller.CallerFinder`): a forced workspace, what the client says in
   `_meta`, a pending call in a harness's logs, the client's MCP roots (asked for only when the
   logs did not say), then the server's cwd. It runs on every call, because one server serves
   every session of a harness and only the pending call in a log says which one is asking;
3. the index is brought up to date, waiting at most `INDEX_LOCK_SECONDS` for the writer lock
   (when another process is writing, the call goes on with what is indexed);
4. with `ask_before_recall` on and a client that can be asked, a recall call that would show
   another session's text is confirmed with the user first, once per reply (`consent`); a user
   who declines gets a plain answer saying so, nothing read;
5. the tool runs through the core (`Huiyi.recall(caller)`, `Huiyi.agent_memory(caller)`), whose
   text already left through the safety exit (redacted, recalled data enveloped as untrusted).

One error shape: every call that did not do its job (a `HuiyiError`, a damaged index, a memory
refusal, arguments the schema rejects, an unknown tool) answers `isError` set and one text
block that left through the safety exit (`protocol.Failure.tool_result`).

SQLite work runs on the index's one worker thread (`Huiyi.in_worker`); callers block on it from
their own threads. After a call, idle work (embedding what is new in small batches, debounced
memory extraction) is queued behind it, so a call never waits for more than one small batch.
When the tools are first built, every memory note no verdict is kept for is judged by the
meaning detector on a thread of its own (`Huiyi.judge_memory`), for the hooks to read.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from huiyi.errors import EmbeddingError, HuiyiError
from huiyi.memory import Memory, Reply, memory_search_tool, memory_tool
from huiyi.model import CallerContext
from huiyi.policy import consent
from huiyi.policy.arguments import InvalidArguments, check_arguments
from huiyi.policy.caller import CallerFinder
from huiyi.policy.protocol import Failure, ToolCall, failure_of
from huiyi.safety.exit import deliver, deliver_error
from huiyi.toolspec import MEMORY_TOOLS, RECALL_TOOLS

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.memory import Extractor
    from huiyi.policy.protocol import Peer

__all__ = [
    "IDLE_EMBED_BATCH",
    "INDEX_LOCK_SECONDS",
    "MEMORY_TOOLS",
    "RECALL_TOOLS",
    "CallResult",
    "McpTools",
    "failed",
    "succeeded",
]

#: How long a call waits for the index writer lock before reading what is already indexed.
INDEX_LOCK_SECONDS = 1.0
#: idle embedding works in batches this small, so a tool call waits behind at most one
IDLE_EMBED_BATCH = 8

#: `{"content": [{"type": "text", "text": ...}], "isError": bool}`, a `CallToolResult` on the wire
CallResult = dict[str, Any]
Arguments = Mapping[str, Any]

MEMORY: dict[str, Callable[[Memory, Arguments, str], Reply]] = {
    "memory": lambda m, a, key: memory_tool(
        m, a["action"], a["target"], a["content"], a["old_text"], a["operations"], key
    ),
    "memory_search": lambda m, a, _key: memory_search_tool(m, a["query"], a["limit"]),
}


def succeeded(text: str) -> CallResult:
    """A call that did its job; `text` already left through the safety exit."""
    return {"content": [{"type": "text", "text": text}], "isError": False}


def failed(message: str) -> CallResult:
    """The one shape of every call that did not do its job."""
    return Failure("HuiyiError", message).tool_result()


def _report(future: Future[Any]) -> None:
    """Idle work never fails a call; a bug in it is printed, not swallowed."""
    exc = future.exception()
    if exc is not None and not isinstance(exc, HuiyiError):
        traceback.print_exception(exc, file=sys.stderr)


class McpTools:
    """Serves the six MCP tools for one `Huiyi` (one HUIYI_HOME), from any number of threads."""

    def __init__(self, hy: Huiyi, *, index_lock_seconds: float = INDEX_LOCK_SECONDS) -> None:
        self.hy = hy
        self.index_lock_seconds = index_lock_seconds
        self._extracting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="huiyi-extract")
        self._lock = threading.Lock()
        self._idle = False
        self._closed = False
        self._extractors: dict[str, Extractor] = {}
        self.answers = consent.Answers()
        # the notes edited by hand since any process judged them, judged by the meaning
        # detector off the tool calls' path, so the hooks block what it refuses
        self.judging = self._extracting.submit(self._judge_memory)
        self.judging.add_done_callback(_report)

    def _judge_memory(self) -> None:
        with contextlib.suppress(EmbeddingError):  # then the rules decide, as in a hook
            self.hy.judge_memory()

    def close(self) -> None:
        """Stop the idle work and close the index (once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.hy.close()
        self._extracting.shutdown(wait=False, cancel_futures=True)

    def handle(self, call: ToolCall, finder: CallerFinder, peer: Peer) -> CallResult:
        """Serve one call for a server whose callers `finder` finds; `peer` is asked for the
        client's roots (only when the logs do not name the caller) and, when the client can
        elicit, for its user's consent."""
        if call.tool not in RECALL_TOOLS and call.tool not in MEMORY_TOOLS:
            return failed(
                f"unknown tool {call.tool!r}; huiyi has {', '.join(RECALL_TOOLS)}, "
                f"{', '.join(MEMORY_TOOLS)}"
            )
        try:
            arguments = check_arguments(call.tool, call.arguments)
        except InvalidArguments as exc:
            return failed(str(exc))
        try:
            caller = self.caller(call, finder, peer)
            if call.tool in RECALL_TOOLS:
                action = self.confirm(call, caller, arguments, finder, peer)
                if action != "accept":
                    return succeeded(deliver_error(consent.declined(call.tool, action)))
                result = self.hy.in_worker(lambda: self._recall(call.tool, caller, arguments))
            else:
                result = self.hy.in_worker(lambda: self._memory(call.tool, caller, arguments))
        except Exception as exc:
            # a damaged index or a full disk is the machine's fault: said, not a crash
            failure = failure_of(exc)
            if failure is None:
                raise
            return failure.tool_result()
        self.after_call(caller)
        return result

    def caller(self, call: ToolCall, finder: CallerFinder, peer: Peer) -> CallerContext:
        """Who is making `call` (see `huiyi.policy.caller` for the order)."""
        raw = call.arguments if isinstance(call.arguments, Mapping) else None
        meta = call.meta if isinstance(call.meta, Mapping) else None
        # what the client says first (it may wait briefly for the client's log), the roots
        # only when that names no caller (asking costs a round trip), then the DSH logs
        found = (
            finder.by_client(call.tool, raw, meta)
            or finder.by_roots(peer.roots())
            or finder.by_logs(call.tool, raw)
        )
        return finder.settle(found)

    def confirm(
        self,
        call: ToolCall,
        caller: CallerContext,
        arguments: Arguments,
        finder: CallerFinder,
        peer: Peer,
    ) -> consent.Action:
        """Whether the recall call may run: "accept" when ask-before-recall is off, the client
        cannot be asked, the call shows only the caller's own session, or the user allowed it
        for this reply (asked now, or earlier in the same reply); else "decline" or "cancel"."""
        if not self.hy.settings.ask_before_recall or not call.can_elicit:
            return "accept"

        def what() -> str | None:
            self.hy.refresh(self.index_lock_seconds)  # a session that arrived since counts
            return self.hy.recall(caller).consent_question(call.tool, arguments)

        message = self.hy.in_worker(what)
        if message is None:
            return "accept"
        key, lasts = consent.reply_key(call.meta, caller, call.client, finder)
        action = self.answers.claim(key, lasts)
        if action is not None:
            return action
        action = "cancel"  # also when asking fails: the other calls of the reply stop waiting
        try:
            action = consent.action_of(peer.ask(deliver_error(message)))  # off the worker
        finally:
            self.answers.give(key, action, lasts)
        return action

    def _recall(self, tool: str, caller: CallerContext, arguments: Arguments) -> CallResult:
        self.hy.refresh(self.index_lock_seconds)
        return succeeded(self.hy.recall(caller).call(tool, arguments).text)

    def _memory(self, tool: str, caller: CallerContext, arguments: Arguments) -> CallResult:
        mem = self.hy.agent_memory(caller)
        # refusals are counted per agent session: the caller's, else per workspace
        key = caller.session_id or f"mcp:{caller.workspace}"
        reply = MEMORY[tool](mem, arguments, key)
        if not reply.ok:
            return failed(reply.text)
        if tool == "memory_search":
            return succeeded(deliver(reply.text, label="your saved memory entries").text)
        return succeeded(deliver_error(reply.text))

    # -- idle work -----------------------------------------------------------------------

    def after_call(self, caller: CallerContext) -> None:
        """Queue the idle work (embedding what is new, then debounced memory extraction)
        unless it is already queued; each step is one small batch on the worker."""
        with self._lock:
            if self._idle or self._closed:
                return
            self._idle = True
        self._queue(caller)

    def _queue(self, caller: CallerContext) -> None:
        # under the lock that `close` takes first: no step is queued once it closed the index
        # (a queued step would start the index's worker again)
        with self._lock:
            if self._closed:
                self._idle = False
                return
            future = self.hy.submit(lambda: self._idle_step(caller))
        future.add_done_callback(self._idle_done)

    def _idle_done(self, future: Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            with self._lock:
                self._idle = False
            if not future.cancelled():
                _report(future)

    def _idle_step(self, caller: CallerContext) -> None:
        """One batch of embedding; queue the next, or finish with extraction."""
        with self._lock:
            closed = self._closed
        if not closed and self.hy.embed(batch=IDLE_EMBED_BATCH, max_seconds=0.0):
            self._queue(caller)
            return
        with self._lock:
            self._idle = False
        if not closed and caller.workspace is not None:
            self._extract(caller.workspace)

    def _extract(self, workspace: str) -> None:
        """Propose memory entries from recent conversation, at most once a minute, and only
        with an endpoint configured; failures stay in the extractor (`last_error`)."""
        from huiyi.memory import Extractor

        config = self.hy.settings.extract
        if not config.configured:
            return
        extractor = self._extractors.get(workspace)
        if extractor is None:
            extractor = Extractor(self.hy.agent_memory(CallerContext(workspace)), config)
            self._extractors[workspace] = extractor
        turns = self.hy.recent_turns(workspace)
        self._extracting.submit(extractor.maybe_run, lambda: turns).add_done_callback(_report)
