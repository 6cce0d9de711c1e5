"""`huiyi mcp` over stdio: an MCP server that answers the moment it is started.

Harnesses give an MCP server about a second before their first request (Codex ~1-1.5 s), and
importing the MCP SDK alone takes longer on a small machine. So the stdio server is this
module, which imports only the standard library and the leaves: no click, no MCP SDK, no
pydantic, no numpy. It speaks MCP's stdio transport itself (JSON-RPC 2.0, one message a line)
and answers

- `initialize` (the client's protocol version when the SDK supports it for the handshake, else
  the newest it does), `ping`, `tools/list`, and the empty `prompts/list`, `resources/list`,
  `resources/templates/list`, all from the manifest (`policy/manifest.json`), which is
  generated from the SDK server, so this server publishes exactly what the SDK server does;
- `tools/call` on a thread per call, along the one route (`route.route`): the call (tool, raw
  arguments, `_meta`) and what this process knows of its caller (its cwd, `--server-name`, the
  forced workspace) go to the warm service for this HUIYI_HOME, started on first use, or,
  without one (`HUIYI_SERVICE=off`, or it cannot be started), to the same `RequestHandler` in
  this process, importing the core on first use (still without the SDK). Either way this
  server is the peer the core asks back: for the client's roots (a `roots/list` request to the
  client) and, with ask-before-recall on, for the user's consent (`elicitation/create`, only
  when the client declared the `elicitation` capability);
- anything else: JSON-RPC "Method not found", as the SDK answers. That includes the
  2026-07-28 `server/discover` probe: Claude Code then initializes with 2025-11-25.

`--workspace`, `--server-name` and nothing else are parsed here; any other argument (and a
bad setting) goes to the click command, which prints the usual usage error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from huiyi.config import Settings
from huiyi.errors import SettingsError
from huiyi.policy.manifest import manifest
from huiyi.policy.protocol import CallerHints, ToolCall
from huiyi.transports.route import route
from huiyi.transports.wire import BadMessage, loads, read_line

if TYPE_CHECKING:
    from huiyi.policy.handler import RequestHandler
    from huiyi.transports.service_client import ServiceClient

__all__ = [
    "ASK_SECONDS",
    "ELICITATION_SCHEMA",
    "ROOTS_SECONDS",
    "Options",
    "StdioServer",
    "main",
    "parse",
    "serve",
]

#: How long a call waits for the client to answer `roots/list`.
ROOTS_SECONDS = 2.0
#: How long a call waits for the user to answer an `elicitation/create` (then: "cancel").
ASK_SECONDS = 120.0
#: The form of an ask-before-recall question: nothing to fill in, only accept or decline.
ELICITATION_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

#: Methods answered with a fixed empty list: the SDK server advertises prompts and resources
#: and has none.
_EMPTY: dict[str, dict[str, Any]] = {
    "prompts/list": {"prompts": []},
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
}


class Options(NamedTuple):
    """`huiyi mcp` arguments the front understands."""

    server: str = "huiyi"
    workspace: str | None = None
    hold_service: bool = False


def parse(args: Sequence[str]) -> Options | None:
    """`[--workspace DIR] [--server-name NAME] [--hold-service]` as `Options`; None for
    anything else (help, --http, a missing directory, an unknown option), which the click
    command handles."""
    values = {"--workspace": None, "--server-name": "huiyi"}
    hold = False
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--hold-service":
            hold = True
            continue
        name, eq, value = word.partition("=")
        if name not in values:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        values[name] = value
    workspace = values["--workspace"]
    if workspace is not None:
        if not os.path.isdir(workspace):
            return None
        workspace = os.path.realpath(workspace)  # as click's resolve_path does
    return Options(
        server=values["--server-name"] or "huiyi", workspace=workspace, hold_service=hold
    )


class StdioServer:
    """One stdio MCP session: reads requests from `stdin`, writes answers to `stdout`."""

    def __init__(
        self,
        settings: Settings,
        *,
        server: str,
        cwd: str,
        forced: str | None,
        forced_how: str,
        stdin: IO[bytes],
        stdout: IO[bytes],
    ) -> None:
        self.settings = settings
        self.server = server
        self.cwd = cwd
        self.forced = forced
        self.forced_how = forced_how
        self.stdin = stdin
        self.stdout = stdout
        self._write_lock = threading.Lock()
        self._state = threading.Lock()
        self._client_roots = False
        self._client_elicitation = False
        self._client_id = f"stdio:{os.getpid()}:{id(self):x}"
        self._asked: dict[object, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._next_id = 0
        self._cancelled: set[object] = set()
        self._service: ServiceClient | None = None
        self._local: RequestHandler | None = None
        self._local_lock = threading.Lock()  # held while the core imports: not `_state`
        self._warming = False

    # -- the stdio loop --------------------------------------------------------------------

    def run(self) -> None:
        """Answer until the client closes stdin."""
        while (line := read_line(self.stdin)) is not None:
            if isinstance(line, BadMessage):  # read past, never kept
                self._error(None, INVALID_REQUEST, "Invalid request", str(line))
                continue
            if not line.strip():
                continue
            try:
                message = loads(line)
            except BadMessage as exc:
                why = None if exc.reason == "not-json" else str(exc)
                self._error(None, PARSE_ERROR, "Parse error", why)
                continue
            if not isinstance(message, dict):
                self._error(None, INVALID_REQUEST, "Invalid request")
                continue
            self._receive(message)

    def _receive(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if not isinstance(method, str):
            self._response(message)  # an answer to a request of ours
            return
        if "id" not in message:
            if method == "notifications/cancelled":
                with self._state:
                    self._cancelled.add(params.get("requestId"))
            return  # other notifications need nothing from us
        ident = message["id"]
        if method == "initialize":
            self._result(ident, self._initialize(params))
        elif method == "ping":
            self._result(ident, {})
        elif method == "tools/list":
            self._result(ident, {"tools": manifest()["tools"]})
            self._warm()
        elif method in _EMPTY:
            self._result(ident, _EMPTY[method])
        elif method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                self._error(ident, INVALID_PARAMS, "Invalid request parameters", "")
                return
            # not a daemon: the process waits for the answers it owes before it exits
            threading.Thread(
                target=self._call, args=(ident, name, params), name="huiyi-call"
            ).start()
        else:
            self._error(ident, METHOD_NOT_FOUND, "Method not found", method)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        facts = manifest()
        capabilities = params.get("capabilities")
        self._client_roots = (
            isinstance(capabilities, dict) and capabilities.get("roots") is not None
        )
        self._client_elicitation = (
            isinstance(capabilities, dict) and capabilities.get("elicitation") is not None
        )
        requested = params.get("protocolVersion")
        versions = facts["protocolVersions"]
        return {
            "capabilities": facts["capabilities"],
            "instructions": facts["instructions"],
            "protocolVersion": requested if requested in versions else versions[-1],
            "serverInfo": {**facts["serverInfo"], "name": self.server},
        }

    # -- writing -----------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with self._write_lock:
            try:
                self.stdout.write(data + b"\n")
                self.stdout.flush()
            except BrokenPipeError:
                pass  # the client is gone: nobody left to answer

    def _result(self, ident: object, result: dict[str, Any]) -> None:
        with self._state:
            if ident in self._cancelled:
                self._cancelled.discard(ident)
                return
        self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _error(self, ident: object, code: int, message: str, data: object = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send({"jsonrpc": "2.0", "id": ident, "error": error})

    # -- asking the client: its roots, the user's consent -------------------------------------

    def _ask_client(
        self, method: str, params: dict[str, Any] | None, seconds: float
    ) -> dict[str, Any] | None:
        """Send the client a request and wait `seconds` for its result; None when it answers
        with an error or not in time (then the request is cancelled)."""
        done = threading.Event()
        box: list[dict[str, Any]] = []
        with self._state:
            self._next_id += 1
            ident = self._next_id
            self._asked[ident] = (done, box)
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            request["params"] = params
        self._send(request)
        answered = done.wait(seconds)
        with self._state:
            self._asked.pop(ident, None)
        if not answered:
            self._send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": ident, "reason": "caller cancelled"},
                }
            )
            return None
        result = box[0].get("result") if box else None
        return result if isinstance(result, dict) else None

    def roots(self) -> list[str]:
        """The client's root URIs, when it declared the roots capability and answers in
        time (`ROOTS_SECONDS`); else none."""
        if not self._client_roots:
            return []
        result = self._ask_client("roots/list", None, ROOTS_SECONDS)
        roots = result.get("roots") if result is not None else None
        if not isinstance(roots, list):
            return []
        return [str(r["uri"]) for r in roots if isinstance(r, dict) and "uri" in r]

    def ask(self, message: str) -> str:
        """Put a question to the client's user (`elicitation/create`, a form with nothing to
        fill in) and return the action: "accept", "decline" or "cancel" (also for an error or
        no answer within `ASK_SECONDS`). Only for a client that declared elicitation."""
        params = {"mode": "form", "message": message, "requestedSchema": ELICITATION_SCHEMA}
        result = self._ask_client("elicitation/create", params, ASK_SECONDS)
        action = result.get("action") if result is not None else None
        return action if action in ("accept", "decline") else "cancel"

    @property
    def asks(self) -> bool:
        """Whether the client declared the elicitation capability (so it may be asked)."""
        return self._client_elicitation

    def _response(self, message: dict[str, Any]) -> None:
        with self._state:
            waiting = self._asked.get(message.get("id"))
        if waiting is not None:
            done, box = waiting
            box.append(message)
            done.set()

    # -- tools/call ----------------------------------------------------------------------------

    def _call(self, ident: object, name: str, params: dict[str, Any]) -> None:
        try:
            result = self.call(name, params.get("arguments"), params.get("_meta"))
        except Exception:  # the top of this thread: a bug is reported, the client answered
            import traceback

            traceback.print_exc()
            self._error(ident, INTERNAL_ERROR, "Internal error")
            return
        self._result(ident, result)

    def call(self, tool: str, arguments: object, meta: object) -> dict[str, Any]:
        """One tool call, along the one route: the warm service when there is one, else this
        process (`route.route`); the front itself is the peer asked for roots and consent."""
        request = ToolCall(
            tool,
            arguments,
            meta if isinstance(meta, dict) else None,
            client=self._client_id,
            caller=CallerHints(self.server, self.cwd, self.forced, self.forced_how),
            can_list_roots=self._client_roots,
            can_elicit=self._client_elicitation,
        )
        reply = route(request, self.settings, self._handler, peer=self, service=self.service())
        if reply.failure is not None:
            return reply.failure.tool_result()
        result: dict[str, Any] = reply.value
        return result

    def service(self) -> ServiceClient | None:
        """The client of the warm service, unless HUIYI_SERVICE=off."""
        if not self.settings.service:
            return None
        with self._state:
            if self._service is None:
                from huiyi.transports.service_client import ServiceClient

                self._service = ServiceClient(self.settings)
            return self._service

    def _warm(self) -> None:
        """After `tools/list`, start the service in the background (once), so the first call
        finds it loaded."""
        service = self.service()
        with self._state:
            if service is None or self._warming:
                return
            self._warming = True
        threading.Thread(target=service.ensure, name="huiyi-warm", daemon=True).start()

    def _handler(self) -> RequestHandler:
        """The core in this process, for calls no service serves (imported on first use)."""
        with self._local_lock:
            if self._local is None:
                from huiyi.api import Huiyi
                from huiyi.policy.handler import RequestHandler

                self._local = RequestHandler(Huiyi(settings=self.settings))
            return self._local

    def close(self) -> None:
        """Close the in-process index, if this front opened one."""
        if self._local is not None:
            self._local.close()


#: how often a front holding the service reaches it (well inside the service's idle time)
HOLD_SECONDS = 120.0


def hold(settings: Settings, stop: threading.Event) -> None:
    """Keep the warm service up while this front runs: start it now, and reach it every
    `HOLD_SECONDS` so that it never idles out. For a harness that runs huiyi's hooks in a
    sandbox where HUIYI_HOME is read-only (DSH under bubblewrap): a hook there can still reach
    the service's socket, and the service, started here outside the sandbox, writes the index
    and the hooks' state for it."""
    from huiyi.transports.service_client import ServiceClient

    while True:
        with contextlib.suppress(OSError):
            ServiceClient(settings).ensure()
        if stop.wait(HOLD_SECONDS):
            return


def serve(
    settings: Settings,
    *,
    server: str,
    cwd: str,
    forced: str | None,
    forced_how: str,
    hold_service: bool = False,
) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin; with
    `hold_service`, keep the warm service up meanwhile (`hold`)."""
    stop = threading.Event()
    if hold_service and settings.service:
        threading.Thread(target=hold, args=(settings, stop), name="huiyi-hold", daemon=True).start()
    front = StdioServer(
        settings,
        server=server,
        cwd=cwd,
        forced=forced,
        forced_how=forced_how,
        stdin=sys.stdin.buffer,
        stdout=sys.stdout.buffer,
    )
    try:
        front.run()
    finally:
        stop.set()
        front.close()


def main(args: Sequence[str]) -> int | None:
    """`huiyi mcp ARGS` over stdio; None when the arguments (or the settings) are for the
    click command to handle (help, --http, a usage error)."""
    options = parse(args)
    if options is None:
        return None
    try:
        settings = Settings.from_env()
    except SettingsError:
        return None  # the click command prints it as every command does
    forced, how = options.workspace, "--workspace"
    if forced is None:
        forced, how = settings.workspace, "HUIYI_WORKSPACE"
    serve(
        settings,
        server=options.server,
        cwd=os.getcwd(),
        forced=forced,
        forced_how=how,
        hold_service=options.hold_service,
    )
    return 0
