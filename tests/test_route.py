"""One route from every front to the core: the stdio MCP server, the hook command and the CLI's
search all hand their request to `RequestHandler.handle`, the same function whether the warm
service answers it or the front serves it itself, and each shows a failure in its one shape."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from huiyi.config import Settings
from huiyi.policy import handler as handler_module
from huiyi.policy.manifest import manifest
from huiyi.policy.protocol import HookRun, Reply, Request, Search, ToolCall
from huiyi.transports import hook_command
from huiyi.transports.service import Service
from huiyi.transports.service_client import socket_path
from huiyi.transports.stdio_mcp import StdioServer
from tests.builders import claude as cb
from tests.services import stop_services

WAIT = 60.0
NEEDLE = "zebraquartz"


class Seen:
    """Every request that reached `RequestHandler.handle`, and on which thread."""

    def __init__(self) -> None:
        self.requests: list[tuple[Request, str]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = handler_module.RequestHandler.handle

        def handle(self_: Any, request: Request, peer: Any) -> Reply:
            self.requests.append((request, threading.current_thread().name))
            return real(self_, request, peer)

        monkeypatch.setattr(handler_module.RequestHandler, "handle", handle)

    def kinds(self) -> list[tuple[str, bool]]:
        """Each request's kind, and whether the service's connection thread served it."""
        return [(type(r).__name__, thread == "huiyi-call") for r, thread in self.requests]


@pytest.fixture
def project(isolated_home: Path, tmp_path: Path) -> Path:
    """A git workspace with one Claude Code session that mentions the needle."""
    root = tmp_path / "acme"
    (root / ".git").mkdir(parents=True)
    cb.write_transcript(
        isolated_home / ".claude",
        str(root),
        [cb.user(f"deploys go through the {NEEDLE} pipeline"), cb.assistant("Noted.")],
        session_id="5f0c2d1e-1111-4222-8333-444455556666",
    )
    return root


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    recorder = Seen()
    recorder.install(monkeypatch)
    return recorder


@pytest.fixture
def service(isolated_home: Path) -> Iterator[Service]:
    """The warm service for this home, listening in this process (so what reaches its handler
    is seen here), where every front of these settings will find it."""
    settings = Settings.from_env()
    settings.ensure_home()
    running = Service(
        settings, socket_path(settings, manifest()["serverInfo"]["version"]), idle_seconds=WAIT
    )
    running.listen()
    thread = threading.Thread(target=running.serve, daemon=True)
    thread.start()
    yield running
    running.stop()
    thread.join(WAIT)
    running.close()
    stop_services(settings.home)


def stdio_call(project: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    server = StdioServer(
        Settings.from_env(),
        server="huiyi",
        cwd=str(project),
        forced=str(project),
        forced_how="--workspace",
        stdin=io.BytesIO(),
        stdout=io.BytesIO(),
    )
    try:
        return server.call(tool, arguments, None)
    finally:
        server.close()


def hook(project: Path, event: str, payload: dict[str, Any]) -> str:
    stdout = io.StringIO()
    raw = io.BytesIO(__import__("json").dumps(payload).encode())
    assert hook_command.run("claude-code", event, raw, stdout) == 0
    return stdout.getvalue()


def cli_search(capsys: pytest.CaptureFixture[str], project: Path, *words: str) -> tuple[int, str]:
    from huiyi.cli.quick_search import search

    status = search([*words, "--workspace", str(project)])
    out = capsys.readouterr()
    return (status if status is not None else -1), out.out + out.err


@pytest.mark.parametrize("served_by_service", [False, True], ids=["in-process", "service"])
def test_every_front_reaches_the_core_through_one_function(
    served_by_service: bool,
    project: Path,
    seen: Seen,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    if served_by_service:
        request.getfixturevalue("service")
    else:
        monkeypatch.setenv("HUIYI_SERVICE", "off")

    result = stdio_call(project, "recall_history", {"query": NEEDLE})
    assert result["isError"] is False and NEEDLE in result["content"][0]["text"]
    hook(project, "SessionStart", {"session_id": "s1", "cwd": str(project), "source": "startup"})
    status, printed = cli_search(capsys, project, NEEDLE, "--layer", "lexical")
    assert status == 0 and NEEDLE in printed

    assert seen.kinds() == [
        ("ToolCall", served_by_service),
        ("HookRun", served_by_service),
        ("Search", served_by_service),
    ]
    tool, hook_run, search = (r for r, _ in seen.requests)
    assert isinstance(tool, ToolCall) and tool.caller.forced == str(project)
    assert isinstance(hook_run, HookRun) and hook_run.event == "SessionStart"
    assert isinstance(search, Search) and search.workspace == str(project)


@pytest.mark.parametrize("served_by_service", [False, True], ids=["in-process", "service"])
def test_each_interface_shows_a_failure_in_its_one_shape_either_way(
    served_by_service: bool,
    project: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    """One cause, a damaged index file, shown by each interface in its own shape."""
    huiyi_home = isolated_home / ".huiyi"
    huiyi_home.mkdir(mode=0o700)
    (huiyi_home / "index.db").write_bytes(b"this is not a database" * 400)
    if served_by_service:
        request.getfixturevalue("service")
    else:
        monkeypatch.setenv("HUIYI_SERVICE", "off")
    damaged = "(file is not a database); run `huiyi doctor --repair`"
    # MCP: a tool result with isError set and one text block
    result = stdio_call(project, "session_list", {})
    assert result["isError"] is True and len(result["content"]) == 1
    assert damaged in result["content"][0]["text"]
    # a hook: nothing printed, one line in the hook log
    start = {"session_id": "s1", "cwd": str(project), "source": "startup"}
    assert hook(project, "SessionStart", start) == ""
    assert damaged in (huiyi_home / hook_command.LOG_NAME).read_text()
    # the CLI: one line on stderr, with the exit status of its kind
    status, printed = cli_search(capsys, project, NEEDLE, "--layer", "lexical")
    assert status == 5
    assert printed.startswith("Error: the index at ") and damaged in printed
