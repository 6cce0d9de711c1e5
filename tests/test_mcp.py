"""`huiyi mcp`: the SDK's own MCP client against huiyi's server.

Every test writes small logs in the real DSH and Claude Code formats and talks to the server the
way an agent harness does. The behaviour is tested in-process: the SDK's `Client` connected in
memory to the server object `HuiyiMCP(hy, finder).build(...)`, with the same handshake a harness
makes over stdio (`mode="legacy"`: initialize, then calls). Two smoke tests start the real
command, one over stdio (the light front and the warm service it starts, see test_front.py)
and one over Streamable HTTP on 127.0.0.1 (the SDK server, with its bearer token; the rest of
the HTTP checks run in-process in test_http_auth.py).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ListRootsResult, Root, TextContent

import huiyi
from huiyi.api import Huiyi
from huiyi.cli.mcp import mcp, parse_http
from huiyi.policy.caller import CallerFinder
from huiyi.safety.envelope import MARKER_NAME, notice
from huiyi.transports.http_auth import TOKEN_FILE_NAME
from huiyi.transports.http_mcp import HuiyiMCP
from tests.builders import claude as cb
from tests.builders import dsh as b
from tests.services import stop_services

#: The child processes import this checkout's huiyi, whatever the venv has installed.
SRC = Path(huiyi.__file__).resolve().parent.parent
RECALL_TOOLS = {"recall_history", "recall_expand", "session_list", "session_read"}
MEMORY_TOOLS = {"memory", "memory_search"}
NOT_FOUND = "no such session in this workspace"

DSH_A = "session-aaaaaaaa-1111-4222-8333-944455556666"
DSH_B = "session-bbbbbbbb-1111-4222-8333-944455556666"
CLAUDE_A = "5f0c2d1e-1111-4222-8333-444455556666"


@dataclass
class World:
    home: Path
    acme: Path  # workspace A: a git project with a DSH and a Claude Code session
    beta: Path  # workspace B: one DSH session
    elsewhere: Path  # a directory belonging to no session
    errlog: Path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a `huiyi mcp` child process."""
        return {
            "HOME": str(self.home),
            "HUIYI_HOME": str(self.home / ".huiyi"),
            "DSH_HOME": str(self.home / ".dsh"),
            "CODEX_HOME": str(self.home / ".codex"),
            "HUIYI_EMBEDDER": "fake",
            "PYTHONPATH": str(SRC),
            **extra,
        }


def acme_dsh_lines(*, pending: str | None = None) -> list[b.Line]:
    """Session A: a deploy note that a compaction pushed out, then (maybe) a pending call."""
    lines: list[b.Line] = [
        b.user(0, "Remember: production deploys go through the zebraquartz pipeline."),
        b.assistant(1, "Noted: zebraquartz runs every production deploy."),
        b.title(2, "Deploy notes"),
        *b.compaction(3, "The user described how deploys work.", start=0, end=1),
        b.user(7, "what did we say about deploys?"),
    ]
    if pending is not None:
        call = ("call-1", "mcp__huiyi__recall_history", pending)
        lines += [b.assistant(8, None, calls=[call]), b.tool_call(9, *call[1:], call_id="call-1")]
    return lines


@pytest.fixture
def world(isolated_home: Path, tmp_path: Path) -> World:
    acme = tmp_path / "acme"
    (acme / ".git").mkdir(parents=True)
    beta = tmp_path / "beta"
    beta.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dsh = isolated_home / ".dsh"
    b.write_session(dsh, str(acme), [acme_dsh_lines()], session_id=DSH_A)
    b.write_session(
        dsh,
        str(beta),
        [[b.user(0, "The kumquatvault cache lives in beta."), b.title(1, "Beta cache")]],
        session_id=DSH_B,
    )
    cb.write_transcript(
        isolated_home / ".claude",
        str(acme),
        [
            cb.summary("Login test on CI"),
            cb.user("why does the lanternfig login test fail only on CI?"),
            cb.assistant("The lanternfig test binds fixed port 8080, which CI already uses."),
        ],
        session_id=CLAUDE_A,
    )
    return World(isolated_home, acme, beta, elsewhere, tmp_path / "server-stderr.log")


@asynccontextmanager
async def connect(
    *,
    cwd: Path,
    forced: Path | None = None,
    roots: list[Path] | None = None,
) -> AsyncIterator[Client]:
    """A client connected in memory to a server that runs in `cwd` (as `huiyi mcp` would,
    with `--workspace forced`), offering `roots` when given."""
    hy = Huiyi()
    finder = CallerFinder.for_settings(
        hy.settings,
        cwd=str(cwd),
        forced=None if forced is None else str(forced),
    )
    app = HuiyiMCP(hy, finder)

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in roots or []])

    try:
        async with Client(
            app.build("huiyi"),
            mode="legacy",  # the initialize handshake, as DSH, Claude Code and Codex make it
            list_roots_callback=list_roots if roots is not None else None,
        ) as client:
            yield client
    finally:
        app.close()


def run(body: Callable[[Client], Awaitable[None]], **kw: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with connect(**kw) as client:
                await body(client)

    anyio.run(main)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(client: Client | ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    text = text_of(result)
    assert not result.is_error, text
    assert_enveloped(text)
    return text


async def error(client: Client | ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text_of(result)
    return text_of(result)


def assert_enveloped(text: str) -> None:
    first, *rest = text.split("\n")
    assert first == notice()
    assert rest[0].startswith(f"<<<{MARKER_NAME}_")
    token = rest[0].removeprefix(f"<<<{MARKER_NAME}_").removesuffix(">>>")
    assert rest[-1] == f"<<<END_{MARKER_NAME}_{token}>>>"


# -- tools/list -------------------------------------------------------------------------------


def test_tools_are_listed_with_limits_and_read_only_annotations(world: World) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == RECALL_TOOLS | MEMORY_TOOLS
        for name in RECALL_TOOLS:
            annotations = tools[name].annotations
            assert annotations is not None
            assert annotations.read_only_hint is True
            assert annotations.destructive_hint is False
            assert annotations.idempotent_hint is True
            assert annotations.open_world_hint is False
            assert tools[name].description

        def props(name: str) -> dict[str, Any]:
            schema = tools[name].input_schema
            assert isinstance(schema, dict)
            return dict(schema["properties"])

        history = props("recall_history")
        assert set(history) == {"query", "limit"}
        assert history["query"]["maxLength"] == 500
        assert (history["limit"]["minimum"], history["limit"]["maximum"]) == (1, 20)
        assert history["limit"]["default"] == 5
        assert "compaction" in (tools["recall_history"].description or "")

        expand = props("recall_expand")
        assert set(expand) == {"seq", "sessionId", "before", "after"}
        for side in ("before", "after"):
            limits = (expand[side]["minimum"], expand[side]["maximum"], expand[side]["default"])
            assert limits == (0, 50, 3)

        listing = props("session_list")
        assert set(listing) == {"limit", "includeSubagents"}
        assert (listing["limit"]["minimum"], listing["limit"]["maximum"]) == (1, 100)
        assert listing["includeSubagents"]["default"] is False

        read = props("session_read")
        assert set(read) == {"sessionId", "last", "fromSeq", "includeTools", "maxChars"}
        assert tools["session_read"].input_schema.get("required") == ["sessionId"]
        last = (read["last"]["minimum"], read["last"]["maximum"], read["last"]["default"])
        assert last == (1, 500, 30)
        assert (read["maxChars"]["minimum"], read["maxChars"]["maximum"]) == (200, 60_000)

    run(body, cwd=world.acme)


def test_memory_tools_are_listed_as_writing(world: World) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= MEMORY_TOOLS
        write = tools["memory"].annotations
        assert write is not None and write.read_only_hint is False
        assert write.destructive_hint is True

        saved = text_of(
            await client.call_tool(
                "memory",
                {"action": "add", "target": "memory", "content": "Deploys use make ship."},
            )
        )
        assert "saved" in saved
        found = text_of(await client.call_tool("memory_search", {"query": "deploys ship"}))
        assert "Deploys use make ship." in found

    run(body, cwd=world.acme)


# -- the four tools on fixture logs ------------------------------------------------------------


def test_each_recall_tool_answers_from_the_workspace_logs(world: World) -> None:
    async def body(client: Client) -> None:
        dsh_hit = await ok(client, "recall_history", {"query": "zebraquartz"})
        assert "Deploy notes" in dsh_hit and DSH_A in dsh_hit
        assert "search path:" in dsh_hit

        claude_hit = await ok(client, "recall_history", {"query": "lanternfig", "limit": 3})
        assert CLAUDE_A in claude_hit

        expanded = await ok(
            client, "recall_expand", {"sessionId": DSH_A, "seq": 0, "before": 0, "after": 1}
        )
        assert "Remember: production deploys go through the zebraquartz pipeline." in expanded
        assert "Noted: zebraquartz runs every production deploy." in expanded

        listed = await ok(client, "session_list", {})
        assert DSH_A in listed and CLAUDE_A in listed
        assert DSH_B not in listed and "Beta cache" not in listed

        tail = await ok(client, "session_read", {"sessionId": CLAUDE_A, "last": 5})
        assert "binds fixed port 8080" in tail
        page = await ok(client, "session_read", {"sessionId": DSH_A, "fromSeq": 0})
        assert "zebraquartz pipeline" in page and "(end of session)" in page

        other = await ok(client, "recall_history", {"query": "kumquatvault"})
        assert DSH_B not in other and "kumquatvault cache" not in other

    run(body, cwd=world.acme)


def test_recall_of_something_never_discussed_says_so_plainly(world: World) -> None:
    async def body(client: Client) -> None:
        text = await ok(client, "recall_history", {"query": "kubernetes helm chart values"})
        assert 'no match in this workspace\'s history for "kubernetes helm chart values"' in text
        assert "matched too weakly to count as recalled" in text
        assert "[1]" not in text and "zebraquartz" not in text and "lanternfig" not in text
        assert DSH_A in await ok(client, "recall_history", {"query": "zebraquartz pipeline"})

    run(body, cwd=world.acme)


def test_bad_arguments_come_back_as_tool_errors_that_say_what_to_pass(world: World) -> None:
    async def body(client: Client) -> None:
        assert await error(client, "recall_history", {"limit": 99}) == (
            "limit must be between 1 and 20 (got 99)"
        )
        assert "query must be at most 500 characters" in await error(
            client, "recall_history", {"query": "x" * 501}
        )
        assert "maxChars must be between 200 and 60000" in await error(
            client, "session_read", {"sessionId": DSH_A, "maxChars": 10}
        )
        unknown = await error(client, "session_read", {"sessionId": "session-nope"})
        assert unknown == NOT_FOUND
        # a real id from another workspace is indistinguishable from an unknown one
        assert await error(client, "session_read", {"sessionId": DSH_B}) == unknown
        assert await error(client, "recall_expand", {"sessionId": DSH_B, "seq": 0}) == unknown

    run(body, cwd=world.acme)


# -- caller binding ----------------------------------------------------------------------------


def write_pending_caller(world: World, arguments: str) -> None:
    """Session A again, now ending with its pending call of recall_history."""
    b.write_session(
        world.home / ".dsh", str(world.acme), [acme_dsh_lines(pending=arguments)], session_id=DSH_A
    )


def test_a_pending_dsh_call_makes_its_session_current(world: World) -> None:
    write_pending_caller(world, '{ "limit": 5 }')

    async def body(client: Client) -> None:
        # the server runs elsewhere: only the pending call says who is asking
        recovered = await ok(client, "recall_history", {"limit": 5})
        assert "what compaction removed from the current session (Deploy notes)" in recovered
        assert "zebraquartz pipeline" in recovered

        # other arguments: not that session's call, so no current session is known
        assert "no current session is known" in await error(client, "recall_history", {"limit": 4})

    run(body, cwd=world.elsewhere)


def test_mcp_roots_give_the_workspace_when_the_logs_do_not(world: World) -> None:
    async def body(client: Client) -> None:
        listed = await ok(client, "session_list", {})
        assert DSH_B in listed and DSH_A not in listed

    run(body, cwd=world.acme, roots=[world.beta, world.acme])


def test_huiyi_workspace_wins_over_everything(world: World) -> None:
    write_pending_caller(world, "{}")

    async def body(client: Client) -> None:
        beta = await ok(client, "recall_history", {"query": "kumquatvault"})
        assert DSH_B in beta and "kumquatvault cache" in beta
        acme = await ok(client, "recall_history", {"query": "zebraquartz"})
        assert DSH_A not in acme and "zebraquartz pipeline" not in acme
        listed = await ok(client, "session_list", {})
        assert DSH_B in listed and DSH_A not in listed and CLAUDE_A not in listed
        # the pending caller lives in another workspace, so it is not made current
        assert "no current session is known" in await error(client, "recall_history", {})

    # HUIYI_WORKSPACE becomes the finder's forced workspace (the stdio smoke test checks that)
    run(body, cwd=world.acme, forced=world.beta, roots=[world.acme])


# -- the real command: stdio and Streamable HTTP -------------------------------------------------


def test_huiyi_mcp_over_stdio_honours_huiyi_workspace_and_keeps_stderr_quiet(
    world: World,
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "huiyi", "mcp"],
        env=world.env(HUIYI_WORKSPACE=str(world.beta)),
        cwd=str(world.acme),
    )
    result: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(60), world.errlog.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result["tools"] = {t.name for t in (await session.list_tools()).tools}
                result["list"] = await ok(session, "session_list", {})

    try:
        anyio.run(main)
    finally:
        print(world.errlog.read_text() if world.errlog.exists() else "(no server stderr)")
        stop_services(world.home / ".huiyi")
    assert result["tools"] == RECALL_TOOLS | MEMORY_TOOLS
    assert DSH_B in result["list"] and DSH_A not in result["list"]
    assert world.errlog.read_text() == ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], attempts: int = 600) -> None:
    """Until the server accepts a connection, or exits, or `attempts` waits of 0.1 s on it."""
    for _ in range(attempts):
        if process.poll() is not None:
            raise AssertionError(f"huiyi mcp --http exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            # not listening yet: wait on the process (returns at once if it exits)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port}")


def start_http(world: World, port: int) -> subprocess.Popen[bytes]:
    """`huiyi mcp --http 127.0.0.1:PORT` in workspace A, its stderr appended to the errlog."""
    with world.errlog.open("ab") as errlog:
        return subprocess.Popen(
            [sys.executable, "-m", "huiyi", "mcp", "--http", f"127.0.0.1:{port}"],
            env={**os.environ, **world.env()},
            cwd=world.acme,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )


def test_huiyi_mcp_over_streamable_http_asks_for_the_token_it_shows_once(world: World) -> None:
    token_file = world.home / ".huiyi" / TOKEN_FILE_NAME
    port = free_port()
    process = start_http(world, port)
    result: dict[str, Any] = {}
    try:
        wait_for_port(port, process)
        token = json.loads(token_file.read_text())["token"]

        async def main() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            with anyio.fail_after(60):
                async with httpx2.AsyncClient() as http:
                    result["no token"] = (await http.post(url, json={})).status_code
                headers = {"Authorization": f"Bearer {token}"}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=60) as http,
                    streamable_http_client(url, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    result["tools"] = {t.name for t in (await session.list_tools()).tools}
                    result["list"] = await ok(session, "session_list", {})

        anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=60)
        print(world.errlog.read_text())
    assert result["no token"] == 401
    assert result["tools"] == RECALL_TOOLS | MEMORY_TOOLS
    assert DSH_A in result["list"]
    first = world.errlog.read_text()
    assert "Streamable HTTP on http://127.0.0.1" in first
    assert f"Authorization: Bearer {token}" in first
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700

    # a second start uses the same token and does not show it again
    port = free_port()
    process = start_http(world, port)
    try:
        wait_for_port(port, process)
    finally:
        process.terminate()
        process.wait(timeout=60)
    second = world.errlog.read_text()[len(first) :]
    assert "Streamable HTTP on http://127.0.0.1" in second
    assert token not in second and str(token_file) in second
    assert json.loads(token_file.read_text())["token"] == token


# -- arguments of the command ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0.0.0.0:8765", "0.0.0.0 is not a loopback address"),
        ("192.168.1.5:8765", "192.168.1.5 is not a loopback address"),
        ("example.com:8765", "example.com is not a loopback address"),
        ("127.0.0.1", "--http takes HOST:PORT"),
        ("127.0.0.1:99999", "port must be between 1 and 65535"),
    ],
)
def test_http_refuses_anything_but_a_loopback_address(value: str, message: str) -> None:
    result = CliRunner().invoke(mcp, ["--http", value], obj=Huiyi())
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("localhost:80", ("localhost", 80)),
        ("[::1]:8765", ("::1", 8765)),
        ("127.0.0.2:1", ("127.0.0.2", 1)),
    ],
)
def test_loopback_addresses_are_accepted(value: str, expected: tuple[str, int]) -> None:
    assert parse_http(value) == expected


def test_a_missing_workspace_is_refused_at_start(tmp_path: Path) -> None:
    result = CliRunner().invoke(mcp, ["--workspace", str(tmp_path / "nope")], obj=Huiyi())
    assert result.exit_code == 2
    assert "does not exist" in result.output
