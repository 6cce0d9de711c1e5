"""No input kills a server: every front answers a line nested 200,000 deep, a line or body
longer than it reads, and garbage, in its one error shape, and serves the next request.

The stdio front and the hook command run as child processes, driven as a harness drives them;
the warm service and the HTTP MCP app run in-process on real sockets.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest

from huiyi.config import Settings
from huiyi.policy.manifest import manifest
from huiyi.transports.service import Service
from huiyi.transports.service_client import socket_path
from huiyi.transports.stdio_mcp import StdioServer
from huiyi.transports.wire import MAX_DEPTH, MAX_MESSAGE_BYTES, BadMessage, address, loads
from tests.test_front import WAIT, Recorder, Stdio, acme, env_of, home, spawn
from tests.test_http_auth import INITIALIZE, MCP_HEADERS, run, serving, token_for

__all__ = ["acme", "home"]  # fixtures shared with test_front.py

DEEP = b"[" * 200_000 + b"\n"
#: valid JSON longer than any front reads: before the bound, each took it whole
LONG = json.dumps(
    {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"pad": "x" * (MAX_MESSAGE_BYTES + 1)}}
).encode()


def next_message(server: Stdio) -> dict[str, Any]:
    message = server._lines.get(timeout=WAIT)
    assert message is not None, f"the server exited; stderr: {server.errlog.read_text()}"
    return message


def send_raw(server: Stdio, raw: bytes) -> None:
    assert server.process.stdin is not None
    server.process.stdin.write(raw)
    server.process.stdin.flush()


def test_the_stdio_front_answers_deep_long_and_broken_lines_and_keeps_serving(
    home: Path, acme: Path
) -> None:
    server = spawn(home, acme)
    server.initialize()

    send_raw(server, DEEP)
    deep = next_message(server)
    send_raw(server, LONG + b"\n")
    long = next_message(server)
    send_raw(server, b'{"jsonrpc": "2.0", "id": 3, "method": \n')
    broken = next_message(server)

    assert deep["id"] is None and deep["error"]["code"] == -32700
    assert f"deeper than {MAX_DEPTH}" in deep["error"]["data"]
    assert long["id"] is None and long["error"]["code"] == -32600
    assert broken["error"] == {"code": -32700, "message": "Parse error"}
    listed = server.call(5, "session_list", {})
    assert not listed["isError"] and "Deploy notes" in listed["content"][0]["text"]
    assert server.close() == 0


def test_the_hook_command_stays_silent_and_says_why_in_its_log(home: Path, acme: Path) -> None:
    env = env_of(home, HUIYI_SERVICE="off")
    for raw in (DEEP, b"{" * 50_000 + b"}" * 50_000):
        done = subprocess.run(
            [sys.executable, "-m", "huiyi", "hook", "claude-code", "UserPromptSubmit"],
            input=raw,
            capture_output=True,
            env=env,
            cwd=acme,
            timeout=WAIT,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    logged = (home / ".huiyi" / "hooks.log").read_text()
    assert logged.count(f"nested deeper than {MAX_DEPTH} levels") == 2


def test_the_service_closes_a_connection_with_a_bad_line_and_serves_the_next(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env(env_of(home))
    settings.ensure_home()
    path = socket_path(settings, manifest()["serverInfo"]["version"])
    service = Service(settings, path, idle_seconds=WAIT)
    service.listen()
    recorder = Recorder()
    monkeypatch.setattr(service, "_load", lambda: (setattr(service, "handler", recorder), None))
    service._loaded.set()
    thread = threading.Thread(target=service.serve, daemon=True)
    thread.start()
    for raw in (DEEP, LONG + b"\n", b"not json\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(WAIT)
            with address(path) as where:
                conn.connect(where)
            conn.sendall(raw)
            assert conn.recv(100) == b""  # closed unanswered: the request was no request
    front = StdioServer(
        settings,
        server="memo",
        cwd=str(tmp_path),
        forced=None,
        forced_how="",
        stdin=io.BytesIO(),
        stdout=io.BytesIO(),
    )
    assert front.call("session_list", {}, {}) == {
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
    }
    service.stop()
    thread.join(WAIT)
    assert not thread.is_alive()


def test_the_http_front_bounds_bodies_and_nesting_in_the_json_rpc_error_shape(
    home: Path, acme: Path, tmp_path: Path
) -> None:
    token = token_for(tmp_path, acme)

    async def body() -> None:
        async with (
            serving(token, cwd=acme) as url,
            httpx2.AsyncClient(
                headers={**MCP_HEADERS, "Authorization": f"Bearer {token.token}"}, timeout=WAIT
            ) as http,
        ):
            long = await http.post(f"{url}/mcp", content=LONG)
            deep = await http.post(f"{url}/mcp", content=b"[" * 150 + b"]" * 150)
            fine = await http.post(f"{url}/mcp", content=json.dumps(INITIALIZE))
        assert long.status_code == 413
        assert long.json()["error"]["code"] == -32600 and long.json()["id"] is None
        assert deep.status_code == 400
        assert deep.json()["error"] == {
            "code": -32700,
            "message": f"Parse error: a message is nested deeper than {MAX_DEPTH} levels",
        }
        assert fine.status_code == 200

    run(body)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"[" * 200_000, "too-deep"),
        (b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), "too-deep"),
        (b'"' + b"x" * (MAX_MESSAGE_BYTES + 1) + b'"', "too-long"),
        (b"{nope", "not-json"),
    ],
)
def test_bounded_json_refuses_what_no_front_takes(raw: bytes, reason: str) -> None:
    with pytest.raises(BadMessage) as refused:
        loads(raw)
    assert refused.value.reason == reason


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"code": "[" * 5000 + '\\"{' * 500, "list": [[["ok"]]]})
    assert loads(text)["list"] == [[["ok"]]]
