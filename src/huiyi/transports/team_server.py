"""`huiyi serve`: the team server, an ASGI app (starlette, served by uvicorn) over one `Hub`.

Routes, each behind `Authorization: Bearer <device token>` (401 without a live one, 403 for a
workspace its grants do not cover):

    POST /v1/push     a client's push (`hub.parse_push`): stored whole, or refused whole
    POST /v1/search   {"workspace", "query", "limit"}: hits of teammates' sessions, audited
    POST /v1/read     {"workspace", "session", "seq", "before", "after"}: events around a hit
    GET  /v1/health   no token needed: whether the store answers
    /mcp              the four recall tools over Streamable HTTP MCP, for agents (`team_mcp`)

Every error has one shape, `{"error": "<message>"}`, and no message, log line or error names a
token (uvicorn's access log is off). Beyond loopback the server speaks TLS (`--tls-cert`,
`--tls-key`) and refuses plain HTTP unless told `--insecure-http` (a TLS proxy in front).
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from huiyi.errors import HuiyiError, NotFoundError, UsageError
from huiyi.hub import MAX_PUSH_BYTES, Device, Hub, PushRefused
from huiyi.loopback import is_loopback
from huiyi.transports.team_mcp import McpGuard, team_mcp

__all__ = ["app", "check_listen", "serve"]


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _device(hub: Hub, request: Request) -> Device | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return await anyio.to_thread.run_sync(hub.device, token.strip())


async def _body(request: Request) -> bytes:
    """The request body, read no further than `MAX_PUSH_BYTES` and one byte."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_PUSH_BYTES:
            raise PushRefused(f"a request is at most {MAX_PUSH_BYTES:,} bytes", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PushRefused("the request is not JSON") from None
    if not isinstance(data, dict):
        raise PushRefused("the request is not a JSON object")
    return data


def _arg(data: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    value = data.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PushRefused(f"{key!r} is missing or not a {kind.__name__}")
    return value


def app(hub: Hub) -> ASGIApp:
    """The server's routes over `hub`, and its MCP endpoint at `/mcp`. The SDK's Host and
    Origin checks are off there: every request needs a device token, which a page that
    rebinds a name to this server does not have."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sdk_app = team_mcp(hub).streamable_http_app(transport_security=security)
    return McpGuard(hub, sdk_app, _rest(hub))


def _rest(hub: Hub) -> Starlette:

    async def guarded(request: Request, serve: Any) -> JSONResponse:
        device = await _device(hub, request)
        if device is None:
            return JSONResponse(
                {"error": "a live device token is needed (Authorization: Bearer ...)"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        try:
            body = await _body(request)
            value = await anyio.to_thread.run_sync(serve, device, body)
        except PushRefused as exc:
            return _error(str(exc), exc.status)
        except NotFoundError as exc:
            return _error(str(exc), 404)
        except UsageError as exc:
            return _error(str(exc), 400)
        except HuiyiError as exc:
            return _error(str(exc), 503)
        return JSONResponse(value)

    def push(device: Device, body: bytes) -> dict[str, Any]:
        return hub.push(device, body)

    def search(device: Device, body: bytes) -> dict[str, Any]:
        data = _json(body)
        return hub.search(
            device,
            _arg(data, "workspace", str),
            _arg(data, "query", str),
            limit=_arg(data, "limit", int, 10),
        )

    def read(device: Device, body: bytes) -> dict[str, Any]:
        data = _json(body)
        return hub.read(
            device,
            _arg(data, "workspace", str),
            _arg(data, "session", str),
            _arg(data, "seq", int),
            _arg(data, "before", int, 3),
            _arg(data, "after", int, 3),
        )

    async def health(_request: Request) -> JSONResponse:
        try:
            await anyio.to_thread.run_sync(hub.index.stamp)
        except hub.index.errors:
            return _error("the store does not answer", 503)
        return JSONResponse({"ok": True})

    def route(path: str, serve: Any) -> Route:
        async def endpoint(request: Request) -> JSONResponse:
            return await guarded(request, serve)

        return Route(path, endpoint, methods=["POST"])

    return Starlette(
        routes=[
            route("/v1/push", push),
            route("/v1/search", search),
            route("/v1/read", read),
            Route("/v1/health", health, methods=["GET"]),
        ]
    )


def check_listen(host: str, *, tls: bool, insecure_http: bool) -> None:
    """Refuse plain HTTP beyond loopback unless told so (`UsageError`)."""
    if not tls and not insecure_http and not is_loopback(host):
        raise UsageError(
            f"refusing plain HTTP on {host}: tokens and history would cross the network "
            "unencrypted; pass --tls-cert and --tls-key, or --insecure-http when a TLS proxy "
            "stands in front"
        )


def serve(
    hub: Hub,
    host: str,
    port: int,
    *,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    insecure_http: bool = False,
) -> None:
    """Serve until the process is stopped."""
    import uvicorn

    if (tls_cert is None) != (tls_key is None):
        raise UsageError("TLS needs both --tls-cert and --tls-key")
    check_listen(host, tls=tls_cert is not None, insecure_http=insecure_http)
    config = uvicorn.Config(
        app(hub),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
    )
    anyio.run(uvicorn.Server(config).serve)
