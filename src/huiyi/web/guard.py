"""Who may talk to the web page, as one ASGI middleware in front of every route.

The page shows a person's whole history and edits their memory, and a localhost port is open
to every process of every user on the machine and, through DNS rebinding, to any web page the
browser visits. So every request, in this order:

1. must name this server in `Host`: a loopback name or address with this port
   (`loopback.host_checks`, every spelling), else 403. A rebinding page reaches us under its
   own name and is refused before anything else is looked at;
2. must come from a process of the user who started the page (`loopback.peer_uid`: the
   owner of the client's end of the connection, which Linux lists), else 403. Another local
   user who learnt the key or the cookie, from a process list or from a server of theirs the
   browser visited, cannot use it: their connections are refused whatever they carry. Where
   the owner cannot be read (not Linux), this step is skipped and the key is the only lock;
3. must carry this start's key: `?key=` (the URL `huiyi web` prints, or the owner-only file
   `--open` hands the browser) sets an HttpOnly, SameSite=Strict cookie and redirects to the
   same path of this server without the key (so it stays out of the history and of
   `Referer`); later requests carry the cookie. The cookie's value is a session secret of its
   own, never the key: browsers send a cookie for 127.0.0.1 to every port on it, so any other
   local server the browser visits receives it, and it must give away no more than step 2
   lets it use. Without either, 401 and no redirect. Both are random per start, so a restart
   makes every old URL and cookie fail; the cookie's name carries the port, so two pages on
   two ports do not overwrite each other;
4. when it changes something (any method but GET and HEAD), must come from this page: an
   `Origin` header naming this server and the start's CSRF token in `X-CSRF-Token` (the page's
   script sends it; a cross-site form cannot set a header), else 403.

Every response carries a strict Content-Security-Policy (scripts, styles, images and
connections from this server only, no inline script, no framing) and headers that keep the
page out of caches, frames and referrers. Comparisons of secrets are constant-time.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode

from huiyi.loopback import host_checks, peer_uid

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CSP", "KEY_PARAM", "Guard", "own_path"]

#: the query parameter that carries the start's key
KEY_PARAM = "key"
#: the Content-Security-Policy of every response
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_SAFE_METHODS = frozenset({"GET", "HEAD"})


class Guard:
    """ASGI middleware: Host, key and (for changes) Origin + CSRF checks; security headers."""

    def __init__(self, app: ASGIApp, *, host: str, port: int) -> None:
        hosts = host_checks(host, port)
        if hosts is None:
            raise ValueError(f"the web page binds a loopback address, not {host}")
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)
        self.key = secrets.token_urlsafe(32)
        self.session = secrets.token_urlsafe(32)  # the cookie's value: not the key
        self.csrf = secrets.token_urlsafe(32)
        self.owner = os.getuid()
        self.cookie = f"huiyi-web-{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        if _one(headers, b"host").lower() not in self.hosts:
            await _refuse(send, 403, "This page answers only at the address huiyi web printed.")
            return
        if not self._from_owner(scope):
            await _refuse(send, 403, "This page serves only the user who started it.")
            return
        given = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if self._matches(given.get(KEY_PARAM)):
            await self._enter(scope, send, given)
            return
        if not _same(_cookie(headers, self.cookie), self.session):
            await _refuse(
                send,
                401,
                "Open the address `huiyi web` printed when it started: it carries this "
                "start's key (a restart makes a new one).",
            )
            return
        if scope["method"] not in _SAFE_METHODS and not self._from_page(headers):
            await _refuse(send, 403, "Changes are accepted only from this page itself.")
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _matches(self, value: str | None) -> bool:
        return _same(value, self.key)

    def _from_owner(self, scope: Scope) -> bool:
        """The client's end of the connection belongs to this server's user (or who owns it
        cannot be read here: not Linux)."""
        client, server = scope.get("client"), scope.get("server")
        if not client or not server:
            return False
        uid = peer_uid((str(client[0]), int(client[1])), (str(server[0]), int(server[1])))
        return uid is None or uid == self.owner

    def _from_page(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """An Origin of this server and this start's CSRF token, each exactly once."""
        origin = _one(headers, b"origin")
        token = _one(headers, b"x-csrf-token")
        return origin.lower() in self.origins and hmac.compare_digest(
            token.encode(), self.csrf.encode()
        )

    async def _enter(self, scope: Scope, send: Send, given: dict[str, str]) -> None:
        """Trade the key in the URL for the cookie, and go to the same address without it."""
        rest = urlencode([(k, v) for k, v in given.items() if k != KEY_PARAM])
        location = own_path(scope["path"]) + (f"?{rest}" if rest else "")
        cookie = f"{self.cookie}={self.session}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("utf-8")),
                    (b"set-cookie", cookie.encode("ascii")),
                    (b"content-length", b"0"),
                    *_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def own_path(path: str) -> str:
    """`path` as a redirect that stays on this server: one leading slash (a browser takes
    `//evil.com/` and `/\\evil.com` for another host), every character outside a path's
    quoted."""
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


def _same(value: str | None, secret: str) -> bool:
    return value is not None and hmac.compare_digest(value.encode(), secret.encode())


def _headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    return [(bytes(k).lower(), bytes(v)) for k, v in scope.get("headers", ())]


def _one(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str:
    """The header's value when it is sent exactly once, else "" (never matches)."""
    values = [v for k, v in headers if k == name]
    return values[0].decode("latin-1").strip() if len(values) == 1 else ""


def _cookie(headers: Iterable[tuple[bytes, bytes]], name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    for key, value in headers:
        if key == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                *_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
