"""`huiyi mcp --http`: who may call, and which workspaces a call may read.

Over stdio the harness that started the server is the only client; over HTTP anyone who can
reach the port is one. So the HTTP server

- requires `Authorization: Bearer <token>` on every request (`BearerAuth`, an ASGI middleware
  in front of the SDK's Streamable HTTP app; constant-time comparison; a request without the
  right token gets 401 with `WWW-Authenticate: Bearer` and an empty body);
- keeps the token in a token file (`TokenFile`): JSON `{"token": ..., "workspaces": [...]}`,
  owner-only (0600, refused when others may read it), by default `HUIYI_HOME/mcp-token.json`,
  created on the first `--http` start (`load_or_create`);
- binds the token to the workspaces it lists (`GrantedFinder`): a call is answered only for a
  workspace equal to one of them or below one. Caller binding runs as everywhere else
  (`policy.caller`); MCP roots outside the token's workspaces are ignored, and when a
  client offers only such roots, or the caller found lies outside them, the call is refused
  with `OUTSIDE` (a not-found error that names no path), never answered for another workspace;
- checks the Host and Origin headers for every loopback spelling (`loopback.host_checks`),
  not only the three the SDK turns its checks on for.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huiyi.errors import NotFoundError, UsageError
from huiyi.model import CallerContext
from huiyi.policy.caller import CallerFinder, workspace_from_roots
from huiyi.transports.wire import MAX_MESSAGE_BYTES, BadMessage, loads

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "OUTSIDE",
    "TOKEN_FILE_NAME",
    "BearerAuth",
    "GrantedFinder",
    "TokenFile",
    "inside",
    "load_or_create",
]

#: The default token file, in HUIYI_HOME.
TOKEN_FILE_NAME = "mcp-token.json"
#: Random bytes in a new token (43 URL-safe characters).
TOKEN_BYTES = 32
#: What a token in a token file must look like: RFC 6750's b64token, long enough to guess never.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]{32,4096}=*")

#: The refusal of a call whose workspace the token may not read: it names no path.
OUTSIDE = "no such workspace for this server's token (its token file lists the ones it may read)"


# -- the token file ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenFile:
    """A bearer token and the workspaces it may read, as kept in `path`."""

    path: Path
    token: str = field(repr=False)
    workspaces: tuple[str, ...]
    #: whether this start created the file (the only time the token is shown)
    created: bool = False


def _normalised(directory: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(directory)))


def load_or_create(path: Path, workspaces: Sequence[str]) -> TokenFile:
    """The token file at `path`; when there is none, a new one with a fresh token that may read
    `workspaces`. Raises `UsageError` for a file others may read or one that does not parse."""
    try:
        return _load(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    listed = tuple(_normalised(w) for w in workspaces)
    text = json.dumps({"token": token, "workspaces": list(listed)}, indent=2) + "\n"
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, path)  # never replaces a file another start created meanwhile
        except FileExistsError:
            return _load(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return TokenFile(path, token, listed, created=True)


def _load(path: Path) -> TokenFile:
    with path.open("rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"the token file {path} is not a regular file")
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise UsageError(
                f"the token file {path} may be read by other users; make it yours alone "
                f"(chmod 600 {path}) and start again"
            )
        raw = handle.read(1 << 20)
    try:
        data: Any = json.loads(raw)
    except ValueError:
        data = None
    token = data.get("token") if isinstance(data, dict) else None
    listed = data.get("workspaces") if isinstance(data, dict) else None
    if (
        not isinstance(token, str)
        or not _TOKEN.fullmatch(token)
        or not isinstance(listed, list)
        or not listed
        or not all(isinstance(w, str) and os.path.isabs(os.path.expanduser(w)) for w in listed)
    ):
        raise UsageError(
            f"the token file {path} must hold JSON "
            '{"token": "<at least 32 characters: letters, digits, ._~+/->", '
            '"workspaces": ["/absolute/directory", ...]}; delete it to have a new one made'
        )
    return TokenFile(path, token, tuple(_normalised(w) for w in listed))


# -- which workspaces a call may read ----------------------------------------------------------


def inside(workspace: str, grant: Sequence[str]) -> bool:
    """Whether `workspace` is one of the `grant` directories or lies below one."""
    if not os.path.isabs(workspace):
        return False
    path = os.path.normpath(workspace)
    return any(path == g or path.startswith(g.rstrip(os.sep) + os.sep) for g in grant)


@dataclass(slots=True)
class GrantedFinder(CallerFinder):
    """`CallerFinder` for the HTTP server: every call is answered for a workspace of `grant`
    (the token's), or refused with `OUTSIDE`. Roots may narrow within the grant, never widen."""

    grant: tuple[str, ...] = ()

    @classmethod
    def bound(cls, finder: CallerFinder, token: TokenFile) -> GrantedFinder:
        """`finder`'s rules limited to what `token` may read; a forced workspace outside that
        is a UsageError."""
        values = {f.name: getattr(finder, f.name) for f in fields(CallerFinder) if f.init}
        bound = cls(**values, grant=token.workspaces)
        forced = bound._forced_workspace
        if forced is not None and not inside(forced, bound.grant):
            raise UsageError(
                f"{finder.forced_how} {forced} is not among the workspaces the token in "
                f"{token.path} may read ({', '.join(bound.grant)}); add it to the file's "
                '"workspaces" or pass another --token-file'
            )
        return bound

    def by_roots(self, roots: Sequence[str]) -> CallerContext | None:
        """The first file root inside the grant; roots that all lie outside it refuse the call."""
        offered = [(uri, workspace_from_roots([uri])) for uri in roots]
        within = [uri for uri, ws in offered if ws is not None and inside(ws, self.grant)]
        if within:
            return CallerFinder.by_roots(self, within)  # (no bare super() in a slots dataclass)
        if any(ws is not None for _, ws in offered):
            raise NotFoundError(OUTSIDE)
        return None

    def settle(self, found: CallerContext | None) -> CallerContext:
        """The caller as the rules settle it, if the token may read its workspace."""
        caller = CallerFinder.settle(self, found)
        if caller.workspace is None or not inside(caller.workspace, self.grant):
            raise NotFoundError(OUTSIDE)
        return caller


# -- the bearer check --------------------------------------------------------------------------


class BearerAuth:
    """ASGI middleware: a request reaches `app` only with `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")

    def authorized(self, scope: Scope) -> bool:
        """Whether the request carries exactly one Authorization header with the token."""
        given = [
            value for name, value in scope.get("headers", ()) if name.lower() == b"authorization"
        ]
        if len(given) != 1:
            return False
        scheme, _, credentials = bytes(given[0]).strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
        elif self.authorized(scope):
            if scope["type"] == "http" and scope.get("method") == "POST":
                await self._bounded(scope, receive, send)
            else:
                await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})
        else:  # a websocket: refused before it opens
            await send({"type": "websocket.close", "code": 1008})

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a POST on only when its body is at most `MAX_MESSAGE_BYTES` and nested at most
        `MAX_DEPTH` deep; else answer in the SDK's JSON-RPC error shape (413 or 400), having
        read no more than the bound."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > MAX_MESSAGE_BYTES:
                await _rpc_error(
                    send, 413, -32600, f"Invalid request: longer than {MAX_MESSAGE_BYTES:,} bytes"
                )
                return
            if not message.get("more_body", False):
                break
        try:
            loads(bytes(body))
        except BadMessage as exc:
            if exc.reason != "not-json":  # what is no JSON at all the SDK answers itself
                await _rpc_error(send, 400, -32700, f"Parse error: {exc}")
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)


async def _rpc_error(send: Send, status: int, code: int, message: str) -> None:
    """A JSON-RPC error with no id, as the MCP SDK answers a request it cannot take."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    raw = body.encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(raw)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": raw})
