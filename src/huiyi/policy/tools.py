"""One MCP `tools/call`, served without the MCP SDK: the same steps and the same answer whoever
received the call.

Three servers hand their calls to `Calls.handle`, so they answer identically: the SDK server
(`mcp_server`, `huiyi mcp --http`), the warm per-home service (`service`) and the stdio front's
in-process fallback (`front`). For every call

1. the tool must be one huiyi publishes, and its arguments must fit the published schema
   (`manifest.json`; types, required arguments, enums; defaults filled in). The limits in
   the schema (`minimum`, `maxLength`, ...) are enforced by the core, which says what to pass;
2. the caller is found (`integrations.context`): forced workspace, the caller's session in the
   DSH or Claude Code logs, then MCP roots (asked for only when the logs did not say), then the
   server's cwd. The log lookup runs on every call, because one server serves every session of
   a harness and only the pending call in a log says which one is asking;
3. the index is brought up to date, waiting at most `INDEX_LOCK_SECONDS` for the writer lock
   (when another process is writing, the call goes on with what is indexed);
4. with `ask_before_recall` on and a client that can be asked (`ask`), a recall call that
   would show another session's text is confirmed with the user first, once per reply
   (`integrations.ask`); a user who declines gets a plain answer saying so, nothing read;
5. the tool runs through the core (`Huiyi.recall(caller)`, `Huiyi.memory_of(caller)`), whose
   text already left through the safety exit (redacted, recalled data enveloped as untrusted).

One error shape: every call that did not do its job (a `HuiyiError`, a memory refusal,
arguments the schema rejects, an unknown tool) answers `isError` set and one text block that
left through `deliver_error` (redacted, markers neutralised, no raw input echoed).

SQLite work runs on one worker thread, where the connection was opened; callers block on it
from their own threads (the SDK's thread pool, the service's connection threads, the front's
call threads). After a call, idle work (embedding what is new in small batches, debounced
memory extraction) is queued behind it, so a call never waits for more than one small batch.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from huiyi.errors import BusyError, HuiyiError
from huiyi.memory import Memory, Reply, memory_search_tool, memory_tool
from huiyi.policy import consent as asking
from huiyi.policy.caller import CallerFinder
from huiyi.policy.manifest import tool_schemas
from huiyi.recall.scope import CallerContext
from huiyi.recall.tools import Recall
from huiyi.safety.exit import Delivered, deliver, deliver_error
from huiyi.store.db import faults

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.memory.extract import Extractor

__all__ = [
    "IDLE_EMBED_BATCH",
    "INDEX_LOCK_SECONDS",
    "MEMORY_TOOLS",
    "RECALL_TOOLS",
    "Ask",
    "Call",
    "CallResult",
    "Calls",
    "InvalidArguments",
    "answer",
    "check_arguments",
    "failed",
]

#: How long a call waits for the index writer lock before reading what is already indexed.
INDEX_LOCK_SECONDS = 1.0
#: idle embedding works in batches this small, so a tool call waits behind at most one
IDLE_EMBED_BATCH = 8

#: `{"content": [{"type": "text", "text": ...}], "isError": bool}`, a `CallToolResult` on the wire
CallResult = dict[str, Any]
Arguments = Mapping[str, Any]
#: asks the client's user a question (MCP `elicitation/create`); returns "accept", "decline"
#: or "cancel" (also for no answer in time)
Ask = Callable[[str], str]
T = TypeVar("T")

RECALL: dict[str, Callable[[Recall, Arguments], Delivered]] = {
    "recall_history": lambda r, a: r.history(a["query"], a["limit"]),
    "recall_expand": lambda r, a: r.expand(a["seq"], a["sessionId"], a["before"], a["after"]),
    "session_list": lambda r, a: r.session_list(a["limit"], a["includeSubagents"]),
    "session_read": lambda r, a: r.session_read(
        a["sessionId"], a["last"], a["fromSeq"], a["includeTools"], a["maxChars"]
    ),
}
MEMORY: dict[str, Callable[[Memory, Arguments, str], Reply]] = {
    "memory": lambda m, a, key: memory_tool(
        m, a["action"], a["target"], a["content"], a["old_text"], a["operations"], key
    ),
    "memory_search": lambda m, a, _key: memory_search_tool(m, a["query"], a["limit"]),
}
RECALL_TOOLS = tuple(RECALL)
MEMORY_TOOLS = tuple(MEMORY)


@dataclass(frozen=True, slots=True)
class Call:
    """One `tools/call` as the client sent it: the tool, its raw arguments and its `_meta`
    (Claude Code: `claudecode/toolUseId`; Codex: `sessionId`, `threadId`, ...)."""

    tool: str
    arguments: object = None
    meta: Mapping[str, Any] | None = None
    #: the client connection the call came over (one answer to "ask before recall" covers
    #: one connection's calls for a short while when the client names no turn)
    client: str = ""


def answer(text: str) -> CallResult:
    """A call that did its job; `text` already left through the safety exit."""
    return {"content": [{"type": "text", "text": text}], "isError": False}


def failed(message: str) -> CallResult:
    """The one shape of every call that did not do its job."""
    return {"content": [{"type": "text", "text": deliver_error(message)}], "isError": True}


# -- arguments -------------------------------------------------------------------------------


class InvalidArguments(Exception):
    """Arguments the published schema rejects; the message names them, never their values."""


class _Bad(Exception):
    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem


_INTEGER = re.compile(r"[+-]?\d{1,20}")
#: every whole number an argument may be (a seq, a limit): well inside SQLite's 64-bit integers
NUMBER_BOUND = 2**53
_TRUE = frozenset({"true", "t", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0"})


def _enum_text(values: Sequence[object]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _one(value: object, schema: Mapping[str, Any], where: str) -> object:
    """`value` as one non-null schema alternative accepts it (leniently, as models send it:
    `"5"` and `5.0` for an integer, `"true"` for a boolean), else `_Bad`."""
    kind = schema.get("type")
    if kind == "integer":
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and _INTEGER.fullmatch(value.strip())
        ):
            number = int(value)
        if number is None:
            raise _Bad(where, "Input should be a valid integer")
        if not -NUMBER_BOUND <= number <= NUMBER_BOUND:
            raise _Bad(where, "Input should be a whole number between -2^53 and 2^53")
        return number
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | str) and str(value).strip().lower() in _TRUE | _FALSE:
            return str(value).strip().lower() in _TRUE
        raise _Bad(where, "Input should be a valid boolean")
    if kind == "string":
        if not isinstance(value, str):
            raise _Bad(where, "Input should be a valid string")
        if "enum" in schema and value not in schema["enum"]:
            raise _Bad(where, f"Input should be {_enum_text(schema['enum'])}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise _Bad(where, "Input should be a valid list")
        items = schema.get("items", {})
        return [_value(item, items, f"{where}.{i}") for i, item in enumerate(value)]
    if kind == "object":
        if not isinstance(value, dict):
            raise _Bad(where, "Input should be a valid dictionary")
        return value
    return value  # a schema without a type takes anything


def _value(value: object, schema: Mapping[str, Any], where: str) -> object:
    alternatives: Sequence[Mapping[str, Any]] = schema.get("anyOf") or [schema]
    if value is None and any(alt.get("type") == "null" for alt in alternatives):
        return None
    first: _Bad | None = None
    for alt in alternatives:
        if alt.get("type") == "null":
            continue
        try:
            return _one(value, alt, where)
        except _Bad as exc:
            first = first or exc
    raise first or _Bad(where, "Input should be null")


def check_arguments(tool: str, arguments: object) -> dict[str, Any]:
    """`arguments` checked against `tool`'s published schema, defaults filled in; unknown
    names are ignored. Raises `InvalidArguments` naming every problem."""
    schema = tool_schemas()[tool]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(
            f"invalid arguments for {tool}: arguments: Input should be a valid dictionary"
        )
    required = set(schema.get("required", ()))
    checked: dict[str, Any] = {}
    problems: list[str] = []
    for name, prop in schema.get("properties", {}).items():
        if name not in arguments:
            if name in required:
                problems.append(f"{name}: Field required")
            checked[name] = prop.get("default")
            continue
        try:
            checked[name] = _value(arguments[name], prop, name)
        except _Bad as exc:
            problems.append(f"{exc.where}: {exc.problem}")
    if problems:
        raise InvalidArguments(f"invalid arguments for {tool}: {'; '.join(problems)}")
    return checked


# -- the calls -------------------------------------------------------------------------------


def _report(future: Future[Any]) -> None:
    """Idle work never fails a call; a bug in it is printed, not swallowed."""
    exc = future.exception()
    if exc is not None and not isinstance(exc, HuiyiError):
        traceback.print_exception(exc, file=sys.stderr)


class Calls:
    """Serves `tools/call` for one `Huiyi` (one HUIYI_HOME), from any number of threads."""

    def __init__(self, hy: Huiyi, *, index_lock_seconds: float = INDEX_LOCK_SECONDS) -> None:
        self.hy = hy
        self.index_lock_seconds = index_lock_seconds
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="huiyi-sqlite")
        self._extracting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="huiyi-extract")
        self._lock = threading.Lock()
        self._idle = False
        self._closed = False
        self._extractors: dict[str, Extractor] = {}
        self.answers = asking.Answers()

    def in_worker(self, fn: Callable[[], T]) -> T:
        """Run blocking work on the one worker thread (where the SQLite connection lives)."""
        return self._worker.submit(fn).result()

    def close(self) -> None:
        """Close the index connection on its own thread, then stop the threads (once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._worker.submit(self.hy.close).result()
        self._worker.shutdown()
        self._extracting.shutdown(wait=False, cancel_futures=True)

    def handle(
        self,
        call: Call,
        finder: CallerFinder,
        roots: Callable[[], Sequence[str]],
        ask: Ask | None = None,
    ) -> CallResult:
        """Serve one call for a server whose callers `finder` finds; `roots()` asks the
        client for its root URIs (only when the logs do not name the caller); `ask` asks the
        client's user (None: the client cannot be asked, so nothing is)."""
        if call.tool not in RECALL and call.tool not in MEMORY:
            return failed(
                f"unknown tool {call.tool!r}; huiyi has {', '.join(RECALL_TOOLS)}, "
                f"{', '.join(MEMORY_TOOLS)}"
            )
        try:
            arguments = check_arguments(call.tool, call.arguments)
        except InvalidArguments as exc:
            return failed(str(exc))
        try:
            # a damaged index or a full disk is the machine's fault: said, not a crash
            with faults(None, self.hy.settings.db_path):
                caller = self.caller(call, finder, roots)
                if call.tool in RECALL:
                    action = self.confirm(call, caller, arguments, finder, ask)
                    if action != "accept":
                        return answer(deliver_error(asking.declined(call.tool, action)))
                    result = self.in_worker(lambda: self._recall(call.tool, caller, arguments))
                else:
                    result = self.in_worker(lambda: self._memory(call.tool, caller, arguments))
        except HuiyiError as exc:
            return failed(str(exc))
        self.after_call(caller)
        return result

    def caller(
        self, call: Call, finder: CallerFinder, roots: Callable[[], Sequence[str]]
    ) -> CallerContext:
        """Who is making `call` (see `huiyi.policy.caller` for the order)."""
        raw = call.arguments if isinstance(call.arguments, Mapping) else None
        meta = call.meta if isinstance(call.meta, Mapping) else None
        # what the client says first (it may wait briefly for the client's log), the roots
        # only when that names no caller (asking costs a round trip), then the DSH logs
        found = (
            finder.by_client(call.tool, raw, meta)
            or finder.by_roots(roots())
            or finder.by_logs(call.tool, raw)
        )
        return finder.settle(found)

    def confirm(
        self,
        call: Call,
        caller: CallerContext,
        arguments: Arguments,
        finder: CallerFinder,
        ask: Ask | None,
    ) -> asking.Action:
        """Whether the recall call may run: "accept" when ask-before-recall is off, the client
        cannot be asked, the call shows only the caller's own session, or the user allowed it
        for this reply (asked now, or earlier in the same reply); else "decline" or "cancel"."""
        if not self.hy.settings.ask_before_recall or ask is None:
            return "accept"

        def what() -> str | None:
            self.refresh()  # a session that arrived since the last call counts
            return asking.question(self.hy.conn, caller, call.tool, arguments)

        message = self.in_worker(what)
        if message is None:
            return "accept"
        key, lasts = asking.reply_key(call.meta, caller, call.client, finder.claude_dirs)
        action = self.answers.claim(key, lasts)
        if action is not None:
            return action
        action = "cancel"  # also when asking fails: the other calls of the reply stop waiting
        try:
            action = asking.action_of(ask(deliver_error(message)))  # off the SQLite worker
        finally:
            self.answers.give(key, action, lasts)
        return action

    def refresh(self) -> None:
        """Read what is new in the logs; skip when another process holds the writer lock."""
        # someone else indexing right now is no failure: answer from what is indexed
        with contextlib.suppress(BusyError):
            self.hy.index(lock_timeout=self.index_lock_seconds)

    def _recall(self, tool: str, caller: CallerContext, arguments: Arguments) -> CallResult:
        self.refresh()
        return answer(RECALL[tool](self.hy.recall(caller), arguments).text)

    def _memory(self, tool: str, caller: CallerContext, arguments: Arguments) -> CallResult:
        mem = self.hy.memory_of(caller)
        # refusals are counted per agent session: the caller's, else per workspace
        key = caller.session_id or f"mcp:{caller.workspace}"
        reply = MEMORY[tool](mem, arguments, key)
        if not reply.ok:
            return failed(reply.text)
        if tool == "memory_search":
            return answer(deliver(reply.text, label="your saved memory entries").text)
        return answer(deliver_error(reply.text))

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
        self._worker.submit(self._idle_step, caller).add_done_callback(self._idle_done)

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
        from huiyi.memory.extract import Extractor

        config = self.hy.settings.extract
        if not config.configured:
            return
        extractor = self._extractors.get(workspace)
        if extractor is None:
            extractor = Extractor(self.hy.memory_of(CallerContext(workspace)), config)
            self._extractors[workspace] = extractor
        turns = self.hy.recent_turns(workspace)
        self._extracting.submit(extractor.maybe_run, lambda: turns).add_done_callback(_report)
