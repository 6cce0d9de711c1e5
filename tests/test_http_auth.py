"""`huiyi mcp --http` asks every client for its bearer token and answers only for the workspaces
that token may read; Host and Origin are checked for every loopback spelling.

The server runs in-process: the very app `huiyi mcp --http` serves (`mcp_server.http_app`) under
uvicorn on a socket bound to 127.0.0.1 before the server starts (so a client can connect at
once, without waiting), talked to by the SDK's own Streamable HTTP client or by plain requests.
The real command is started in test_mcp.py.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import click
import httpx2
import pytest
import uvicorn
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root

from huiyi.api import Huiyi
from huiyi.cli.mcp import mcp, parse_http
from huiyi.errors import NotFoundError, UsageError
from huiyi.loopback import host_checks
from huiyi.policy.caller import CallerFinder
from huiyi.recall.scope import CallerContext
from huiyi.transports.http_auth import (
    OUTSIDE,
    TOKEN_FILE_NAME,
    GrantedFinder,
    TokenFile,
    inside,
    load_or_create,
)
from huiyi.transports.http_mcp import announce, http_app
from tests.builders import dsh as b
from tests.test_mcp import DSH_A, DSH_B, World, error, ok, world

__all__ = ["world"]  # the fixture, shared with test_mcp.py

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def token_for(tmp_path: Path, *workspaces: Path) -> TokenFile:
    return load_or_create(tmp_path / "token.json", [str(w) for w in workspaces])


@asynccontextmanager
async def serving(
    token: TokenFile, *, cwd: Path, host: str = "127.0.0.1", forced: Path | None = None
) -> AsyncIterator[str]:
    """The app of `huiyi mcp --http HOST:PORT` served on 127.0.0.1; yields its base URL.

    `host` is the address the app believes it is bound to (its Host/Origin checks follow it);
    the socket is always 127.0.0.1, the only address tests talk to."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = int(sock.getsockname()[1])
    hy = Huiyi()
    finder = CallerFinder.for_settings(
        hy.settings, cwd=str(cwd), forced=None if forced is None else str(forced)
    )
    app, asgi = http_app(hy, finder, token, host, port)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()
        app.close()


@asynccontextmanager
async def session(
    url: str, token: str, roots: list[Path] | None = None
) -> AsyncIterator[ClientSession]:
    """The SDK's client on `url`/mcp, sending `token`, offering `roots` when given."""

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in roots or []])

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(
            read, write, list_roots_callback=list_roots if roots is not None else None
        ) as client,
    ):
        await client.initialize()
        yield client


def run(body: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            await body()

    anyio.run(main)


# -- the bearer token --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-wrong-token-wrong-token-wrong",
        "Bearer {token}x",
        "Bearer {token_prefix}",
        "Basic {token}",
        "{token}",
    ],
)
def test_a_request_without_the_right_token_gets_401_and_no_detail(
    world: World, tmp_path: Path, authorization: str | None
) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        async with serving(token, cwd=world.acme) as url, httpx2.AsyncClient() as http:
            headers = dict(MCP_HEADERS)
            if authorization is not None:
                headers["Authorization"] = authorization.format(
                    token=token.token, token_prefix=token.token[:-1]
                )
            for method in ("POST", "GET", "DELETE"):
                answer = await http.request(method, f"{url}/mcp", headers=headers, json=INITIALIZE)
                assert answer.status_code == 401
                assert answer.headers["www-authenticate"] == "Bearer"
                assert answer.content == b""

    run(body)


def test_two_authorization_headers_get_401(world: World, tmp_path: Path) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        async with serving(token, cwd=world.acme) as url, httpx2.AsyncClient() as http:
            right = f"Bearer {token.token}"
            headers = [*MCP_HEADERS.items(), ("Authorization", right), ("Authorization", right)]
            answer = await http.post(f"{url}/mcp", headers=headers, json=INITIALIZE)
            assert answer.status_code == 401

    run(body)


def test_the_right_token_serves_the_tools(world: World, tmp_path: Path) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        async with serving(token, cwd=world.acme) as url, session(url, token.token) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "session_list" in tools
            listed = await ok(client, "session_list", {})
            assert DSH_A in listed and DSH_B not in listed

    run(body)


# -- the workspaces a token may read -----------------------------------------------------------


def test_a_token_for_workspace_a_cannot_read_b_by_declaring_its_roots(
    world: World, tmp_path: Path
) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        # the server runs elsewhere, so only the roots name a workspace
        async with serving(token, cwd=world.elsewhere) as url:
            async with session(url, token.token, roots=[world.beta]) as client:
                assert await error(client, "session_list", {}) == OUTSIDE
                assert await error(client, "recall_history", {"query": "kumquatvault"}) == OUTSIDE
            # roots narrow within what the token may read: B is passed over for A
            async with session(url, token.token, roots=[world.beta, world.acme]) as client:
                listed = await ok(client, "session_list", {})
                assert DSH_A in listed and DSH_B not in listed
            # no roots: the server's directory, which the token may not read either
            async with session(url, token.token) as client:
                assert await error(client, "session_list", {}) == OUTSIDE

    run(body)


def test_a_token_for_a_parent_directory_reads_the_workspaces_below_it(
    world: World, tmp_path: Path
) -> None:
    token = token_for(tmp_path, world.acme.parent)

    async def body() -> None:
        async with (
            serving(token, cwd=world.elsewhere) as url,
            session(url, token.token, roots=[world.beta]) as client,
        ):
            listed = await ok(client, "session_list", {})
            assert DSH_B in listed and DSH_A not in listed

    run(body)


def finder_for(world: World, grant: Path, *, forced: Path | None = None) -> GrantedFinder:
    settings = Huiyi().settings
    finder = CallerFinder.for_settings(
        settings, cwd=str(world.elsewhere), forced=None if forced is None else str(forced)
    )
    token = TokenFile(Path("token.json"), "t" * 43, (str(grant),))
    return GrantedFinder.bound(finder, token)


def test_a_caller_found_in_the_logs_outside_the_token_is_refused(world: World) -> None:
    call = ("call-1", "mcp__huiyi__session_list", "{}")
    lines = [
        b.user(0, "The kumquatvault cache lives in beta."),
        b.assistant(1, None, calls=[call]),
        b.tool_call(2, *call[1:], call_id="call-1"),
    ]
    b.write_session(world.home / ".dsh", str(world.beta), [lines], session_id=DSH_B)
    found = CallerFinder.for_settings(Huiyi().settings, cwd=str(world.elsewhere)).by_logs(
        "session_list", {}
    )
    assert found is not None and found.workspace == str(world.beta)  # the rule does find it

    bound = finder_for(world, world.acme)
    with pytest.raises(NotFoundError, match=re.escape(OUTSIDE)):
        bound.settle(bound.by_logs("session_list", {}))
    assert finder_for(world, world.beta).settle(found).session_id == DSH_B


def test_a_caller_with_no_workspace_is_refused(world: World) -> None:
    bound = finder_for(world, world.acme)
    with pytest.raises(NotFoundError, match=re.escape(OUTSIDE)):
        bound.settle(CallerContext(None, DSH_A, "codex-session"))


def test_a_forced_workspace_outside_the_token_is_refused_at_start(world: World) -> None:
    with pytest.raises(UsageError, match="is not among the workspaces the token"):
        finder_for(world, world.acme, forced=world.beta)
    assert finder_for(world, world.acme, forced=world.acme).settle(None).workspace == str(
        world.acme
    )


@pytest.mark.parametrize(
    ("workspace", "grant", "expected"),
    [
        ("/a/b", ["/a/b"], True),
        ("/a/b/c", ["/a/b"], True),
        ("/a/bc", ["/a/b"], False),
        ("/a", ["/a/b"], False),
        ("/x/y", ["/a", "/x"], True),
        ("anything", ["/"], False),
        ("/anything", ["/"], True),
    ],
)
def test_inside(workspace: str, grant: list[str], expected: bool) -> None:
    assert inside(workspace, grant) is expected


# -- Host and Origin ---------------------------------------------------------------------------


def test_a_foreign_host_or_origin_is_rejected_even_with_the_token(
    world: World, tmp_path: Path
) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        async with serving(token, cwd=world.acme) as url, httpx2.AsyncClient() as http:
            port = url.rsplit(":", 1)[1]
            headers = {**MCP_HEADERS, "Authorization": f"Bearer {token.token}"}

            async def post(**extra: str) -> int:
                answer = await http.post(
                    f"{url}/mcp", headers={**headers, **extra}, json=INITIALIZE
                )
                return answer.status_code

            assert await post(Host=f"evil.example:{port}") == 421
            assert await post(Host="127.0.0.1:1") == 421  # another port is another server
            assert await post(Origin="http://evil.example") == 403
            assert await post(Origin="http://localhost:1") == 403
            assert await post(Origin=f"http://localhost:{port}") == 200
            assert await post() == 200

    run(body)


@pytest.mark.parametrize(
    ("host", "spellings"),
    [
        ("127.0.0.2", ["127.0.0.2"]),
        ("0:0:0:0:0:0:0:1", ["[0:0:0:0:0:0:0:1]", "[::1]"]),
        ("localhost", ["localhost", "127.0.0.1", "[::1]"]),
    ],
)
def test_host_checks_are_on_for_every_loopback_spelling(
    world: World, tmp_path: Path, host: str, spellings: list[str]
) -> None:
    token = token_for(tmp_path, world.acme)

    async def body() -> None:
        async with (
            serving(token, cwd=world.acme, host=host) as url,
            httpx2.AsyncClient() as http,
        ):
            port = url.rsplit(":", 1)[1]
            headers = {**MCP_HEADERS, "Authorization": f"Bearer {token.token}"}
            for name in spellings:
                answer = await http.post(
                    f"{url}/mcp",
                    headers={
                        **headers,
                        "Host": f"{name}:{port}",
                        "Origin": f"http://{name}:{port}",
                    },
                    json=INITIALIZE,
                )
                assert answer.status_code == 200, name
            foreign = await http.post(
                f"{url}/mcp", headers={**headers, "Host": f"evil.example:{port}"}, json=INITIALIZE
            )
            assert foreign.status_code == 421

    run(body)


def test_host_checks() -> None:
    assert host_checks("127.0.0.2", 8765) == ["127.0.0.2:8765", "localhost:8765"]
    assert host_checks("0.0.0.0", 8765) is None  # any address: only the token guards
    assert host_checks("::", 8765) is None
    assert host_checks("192.168.1.5", 80) == ["192.168.1.5:80", "192.168.1.5"]


# -- the command's arguments -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["0.0.0.0:8765", "192.168.1.5:8765", "localhost.:8765", "ip6-localhost:8765"]
)
def test_a_host_that_is_not_loopback_needs_allow_remote(value: str) -> None:
    result = CliRunner().invoke(mcp, ["--http", value], obj=Huiyi())
    assert result.exit_code == 2
    assert "is not a loopback address" in result.output and "--allow-remote" in result.output
    assert parse_http(value, allow_remote=True)[1] == 8765


@pytest.mark.parametrize(
    ("value", "expected"),
    [("[0:0:0:0:0:0:0:1]:1", ("0:0:0:0:0:0:0:1", 1)), ("LOCALHOST:2", ("localhost", 2))],
)
def test_loopback_spellings_are_accepted(value: str, expected: tuple[str, int]) -> None:
    assert parse_http(value) == expected


@pytest.mark.parametrize("args", [["--token-file", "t.json"], ["--allow-remote"]])
def test_http_options_without_http_are_a_usage_error(args: list[str]) -> None:
    result = CliRunner().invoke(mcp, args, obj=Huiyi())
    assert result.exit_code == 2
    assert "go with --http" in result.output


def test_the_help_names_the_default_token_file() -> None:
    (option,) = [p for p in mcp.params if p.name == "token_file"]
    assert isinstance(option, click.Option)
    assert f"HUIYI_HOME/{TOKEN_FILE_NAME}" in (option.help or "")


# -- the token file ----------------------------------------------------------------------------


def test_the_token_file_is_made_owner_only_once_and_shown_once(
    world: World, tmp_path: Path
) -> None:
    path = tmp_path / "private" / "token.json"
    first = load_or_create(path, [str(world.acme)])
    assert first.created and len(first.token) >= 43
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"token": first.token, "workspaces": [str(world.acme)]}
    again = load_or_create(path, [str(world.beta)])  # an existing file keeps what it says
    assert (again.token, again.workspaces, again.created) == (first.token, first.workspaces, False)
    assert [p.name for p in path.parent.iterdir()] == ["token.json"]  # no temporary left

    shown = []
    for token in (first, again):
        out = tmp_path / "stderr.txt"
        with out.open("w") as stream:
            announce(token, "http://127.0.0.1:8765/mcp", remote=False, out=stream)
        shown.append(out.read_text())
    assert f"Authorization: Bearer {first.token}" in shown[0]
    assert str(world.acme) in shown[0]
    assert first.token not in shown[1] and str(path) in shown[1]


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token.json"
    load_or_create(path, ["/a"])
    os.chmod(path, 0o640)
    with pytest.raises(UsageError, match="chmod 600"):
        load_or_create(path, ["/a"])


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"token": "short", "workspaces": ["/a"]}',
        '{"token": "' + "t" * 43 + '", "workspaces": []}',
        '{"token": "' + "t" * 43 + '", "workspaces": ["relative/dir"]}',
        '{"token": "' + "t " * 30 + '", "workspaces": ["/a"]}',
    ],
)
def test_a_token_file_that_does_not_parse_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token.json"
    path.write_text(content)
    os.chmod(path, 0o600)
    with pytest.raises(UsageError, match="must hold JSON"):
        load_or_create(path, ["/a"])


def test_a_bad_token_file_is_a_usage_error_of_the_command(tmp_path: Path) -> None:
    path = tmp_path / "token.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    result = CliRunner().invoke(
        mcp, ["--http", "127.0.0.1:1", "--token-file", str(path)], obj=Huiyi()
    )
    assert result.exit_code == 2
    assert "chmod 600" in result.output


def test_a_workspace_outside_the_token_is_a_usage_error_of_the_command(
    world: World, tmp_path: Path
) -> None:
    token = token_for(tmp_path, world.acme)
    args = [
        "--http",
        "127.0.0.1:1",
        "--token-file",
        str(token.path),
        "--workspace",
        str(world.beta),
    ]
    result = CliRunner().invoke(mcp, args, obj=Huiyi())
    assert result.exit_code == 2
    assert "is not among the workspaces the token" in result.output
