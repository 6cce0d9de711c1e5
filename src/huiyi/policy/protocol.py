"""The one request/reply protocol between every transport and the core.

Each front turns what it received into one request, hands it to `route.route`, and gets one
`Reply` back, the same whether the warm service answered it or this process did:

    ToolCall    an MCP `tools/call`: the tool, its raw arguments and `_meta`, and what only the
                calling server knows about its caller (`CallerHints`)
    HookRun     one harness hook: the harness, the event and the JSON it gave on stdin
    Search      a person's `huiyi search`
    Recall      a person's `huiyi recall` (what the agent's `recall_history` returns)

    Reply       `value` (the request's answer, plain data) or `failure`
    Failure     a huiyi error as it crosses a process: its kind (the class name in
                `huiyi.errors`) and its message

Errors are encoded here and nowhere else: `failure_of` turns an exception into a `Failure` (a
`HuiyiError`, or a fault of the machine, a damaged index or a full disk, as the core names it),
and each interface shows a failure in its one shape: an MCP tool result with `isError` set
(`Failure.tool_result`), a line in the hook log (the hook command prints nothing), or the
error raised again as its own class for the CLI's error edge (`Failure.raise_`).

On the service's socket a request is `{"v": PROTOCOL, "kind": ..., "request": {...}}` and a
reply `{"value": ...}` or `{"failure": {"kind", "message"}}` (see `service.py` for the lines
around them). This module imports only the standard library and the leaves, because every front
imports it before it knows whether the core will be needed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from huiyi import errors
from huiyi.errors import HuiyiError

if TYPE_CHECKING:  # a type only: a front's process never builds the Protocol class
    from typing import Protocol

    class Peer(Protocol):
        """Whoever sent a request, as the core may ask it back while serving it: an MCP client
        for its roots (`roots/list`) and its user for consent (`elicitation/create`)."""

        def roots(self) -> list[str]:
            """The client's root URIs (none when it cannot be asked or does not answer)."""
            ...

        def ask(self, question: str) -> str:
            """The user's answer: "accept", "decline" or "cancel" (also for no answer)."""
            ...


__all__ = [
    "NO_PEER",
    "PROTOCOL",
    "CallerHints",
    "Failure",
    "HookRun",
    "Peer",
    "Recall",
    "Reply",
    "Request",
    "Search",
    "ToolCall",
    "Travel",
    "decode",
    "encode",
    "failure_of",
    "stopped",
    "travel",
]

#: the version of the wire form; a service that speaks another answers "unavailable"
PROTOCOL = 2


class CallerHints(NamedTuple):
    """What the server that received a tool call knows about its caller: the name it was
    registered under, its working directory, and a workspace its configuration forces."""

    server: str = "huiyi"
    cwd: str = ""
    forced: str | None = None
    #: where `forced` came from: `--workspace` or `HUIYI_WORKSPACE`
    forced_how: str = "HUIYI_WORKSPACE"


class ToolCall(NamedTuple):
    """One MCP `tools/call` as the client sent it."""

    tool: str
    arguments: object = None
    #: Claude Code: `claudecode/toolUseId`; Codex: `sessionId`, `threadId`, ...
    meta: Mapping[str, Any] | None = None
    #: the client connection it came over (one consent answer covers a connection's calls)
    client: str = ""
    caller: CallerHints = CallerHints()
    #: whether the client may be asked for its roots, and its user a question
    can_list_roots: bool = False
    can_elicit: bool = False


class HookRun(NamedTuple):
    """One harness hook: `huiyi hook HARNESS EVENT` with `input` read from stdin."""

    harness: str
    event: str
    input: object = None


class Search(NamedTuple):
    """`huiyi search`: `layer` is `hybrid` or one layer's name; `workspace` None with
    `everywhere` searches every workspace (both set is refused by the core)."""

    query: str
    workspace: str | None
    everywhere: bool = False
    limit: int = 10
    layer: str = "hybrid"


class Recall(NamedTuple):
    """`huiyi recall`: what `recall_history` returns to a caller in `workspace` (and, for the
    compacted part, `session`)."""

    query: str
    workspace: str
    session: str | None = None
    limit: int = 5


Request = ToolCall | HookRun | Search | Recall


class Travel(NamedTuple):
    """How a kind of request may travel: its name on the wire, whether it may start the warm
    service, and whether serving it twice is harmless (then a request the service accepted
    and never answered is served here; otherwise it fails, as it may have written)."""

    kind: str
    starts_service: bool
    idempotent: bool
    #: what it is called in the message when the service stopped under it
    called: str


#: a tool call or a hook starts the service (its first use pays for loading the core once);
#: a person's search or recall asks a running one and starts none, and only reads
TRAVEL: dict[type[Request], Travel] = {
    ToolCall: Travel("tool", starts_service=True, idempotent=False, called="call"),
    HookRun: Travel("hook", starts_service=True, idempotent=False, called="hook"),
    Search: Travel("search", starts_service=False, idempotent=True, called="search"),
    Recall: Travel("recall", starts_service=False, idempotent=True, called="recall"),
}
_KINDS = {travel.kind: cls for cls, travel in TRAVEL.items()}


def travel(request: Request) -> Travel:
    return TRAVEL[type(request)]


def stopped(request: Request, log: str, detail: str) -> str:
    """What a front says when the service accepted `request` and stopped before replying."""
    if isinstance(request, ToolCall):
        return f"the huiyi service stopped during this call (see {log}); call the tool again"
    return f"the huiyi service stopped during this {travel(request).called} ({detail}); see {log}"


class _NoPeer:
    """A sender that cannot be asked anything: a hook, a person's command."""

    def roots(self) -> list[str]:
        return []

    def ask(self, question: str) -> str:
        return "cancel"


NO_PEER: Peer = _NoPeer()


class Failure(NamedTuple):
    """A huiyi error on its way to the interface that shows it."""

    kind: str
    message: str

    @classmethod
    def of(cls, exc: HuiyiError) -> Failure:
        return cls(type(exc).__name__, str(exc))

    def error(self) -> HuiyiError:
        """The error as its own class again (a kind huiyi does not know: `HuiyiError`)."""
        found = getattr(errors, self.kind, None)
        kind = found if isinstance(found, type) and issubclass(found, HuiyiError) else HuiyiError
        return kind(self.message)

    def raise_(self) -> None:
        """Raise the error, for the CLI's error edge (its exit status is its kind's)."""
        raise self.error()

    def tool_result(self) -> dict[str, Any]:
        """The one shape of an MCP tool call that did not do its job: `isError` set and one
        text block, left through the safety exit (redacted, envelope markers neutralised)."""
        from huiyi.safety.exit import deliver_error

        return {"content": [{"type": "text", "text": deliver_error(self.message)}], "isError": True}


class Reply(NamedTuple):
    """What came back: the request's `value`, or the `failure` that stopped it."""

    value: Any = None
    failure: Failure | None = None

    def unwrap(self) -> Any:
        """The value, or the failure raised as its huiyi error."""
        if self.failure is not None:
            self.failure.raise_()
        return self.value


def failure_of(exc: BaseException) -> Failure | None:
    """The edge every interface shares: a `HuiyiError` as a `Failure`, and so a fault of the
    machine met where no caller turned it into one (SQLite finding the index damaged, a full
    disk: `huiyi.api.machine_fault`); None for anything else, which is a bug and keeps its
    traceback."""
    if isinstance(exc, HuiyiError):
        return Failure.of(exc)
    sqlite3 = sys.modules.get("sqlite3")  # not imported: no SQLite error can have been raised
    if isinstance(exc, OSError) or (sqlite3 is not None and isinstance(exc, sqlite3.Error)):
        from huiyi.api import machine_fault

        found = machine_fault(exc)
        return None if found is None else Failure.of(found)
    return None


# -- the wire form ---------------------------------------------------------------------------


def encode(request: Request) -> dict[str, Any]:
    """A request as the service's socket carries it."""
    fields = request._asdict()
    if isinstance(request, ToolCall):
        fields["caller"] = request.caller._asdict()
        fields["meta"] = dict(request.meta) if request.meta is not None else None
    return {"v": PROTOCOL, "kind": travel(request).kind, "request": fields}


def decode(message: Mapping[str, Any]) -> Request:
    """A request from the socket; a `UsageError` says what is wrong with one that does not
    fit (another protocol version, an unknown kind, missing or mistyped fields)."""
    if message.get("v") != PROTOCOL:
        raise errors.UsageError(f"the huiyi service speaks protocol {PROTOCOL} only")
    cls = _KINDS.get(str(message.get("kind")))
    fields = message.get("request")
    if cls is None or not isinstance(fields, Mapping):
        raise errors.UsageError("not a huiyi request")
    values = {name: fields[name] for name in cls._fields if name in fields}
    if cls is ToolCall:
        hints = values.get("caller")
        values["caller"] = CallerHints(**hints) if isinstance(hints, Mapping) else CallerHints()
        meta = values.get("meta")
        values["meta"] = meta if isinstance(meta, Mapping) else None
    try:
        request = cls(**values)
    except TypeError as exc:
        raise errors.UsageError(f"a huiyi request is missing a field: {exc}") from None
    return request


def encode_reply(reply: Reply) -> dict[str, Any]:
    if reply.failure is not None:
        return {"failure": reply.failure._asdict()}
    return {"value": reply.value}


def decode_reply(message: Mapping[str, Any]) -> Reply | None:
    """A reply from the socket; None when the message is none."""
    failure = message.get("failure")
    if isinstance(failure, Mapping):
        return Reply(failure=Failure(str(failure.get("kind")), str(failure.get("message"))))
    if "value" in message:
        return Reply(value=message["value"])
    return None
