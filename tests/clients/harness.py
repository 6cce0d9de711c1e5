"""Run the real Claude Code and Codex CLIs headless against the fake model, with huiyi connected.

    run = run_claude(home, cwd, "list my sessions", [ToolCall(...), Reply("done")])
    run.returncode, run.stdout, run.requests, run.logs, run.mcp_calls("probe")

Each run gets an isolated HOME (Claude's `CLAUDE_CONFIG_DIR` and Codex's `CODEX_HOME` under
it), connects huiyi the way docs/connect.md tells users (Claude: `claude mcp add --scope user
huiyi -e ... -- <python> -m huiyi mcp`; Codex: `[mcp_servers.huiyi]` in config.toml), runs the
client (`claude -p` / `codex exec`) with a timeout, and returns what happened, including every
request the client sent to the fake model and the session logs it wrote under HOME.

No traffic leaves the machine: the client runs in a private network namespace (`unshare
--net`, see netns.py) where 127.0.0.1:PORT is the only thing reachable, forwarded to the fake
model's Unix socket; the proxy variables point at the fake model too, which records and refuses
any CONNECT; and the clients' own switches for telemetry, update checks and the like are off:

- Claude Code: `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (alone it stops the calls to
  api.anthropic.com that ignore ANTHROPIC_BASE_URL), plus `DISABLE_AUTOUPDATER`,
  `DISABLE_TELEMETRY`, `DISABLE_ERROR_REPORTING`; `MCP_CONNECTION_NONBLOCKING=0` so the MCP
  servers are connected before the first request.
- Codex: `[analytics] enabled = false` (stops ab.chatgpt.com) and `[features] plugins = false`
  (stops the curated-plugin sync from github.com / chatgpt.com), plus
  `check_for_update_on_startup = false`, `[feedback] enabled = false`, `[features] apps =
  false`; `mcp_optional_startup_grace_ms` so huiyi's tools exist on the first turn.

`probe=True` also connects probe_mcp.py, a tiny MCP server whose `echo` tool returns the
`_meta` of the call; its log shows everything the client sent it (`Run.mcp_calls("probe")`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python tests/clients/harness.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.clients.fake_model import FakeModel, Recorded, Turn
from tests.clients.install import CLIENTS, installed
from tests.services import stop_services

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SRC = REPO / "src"
NETNS = HERE / "netns.py"
PROBE = HERE / "probe_mcp.py"

#: the dummy key the clients send; the fake model accepts anything
DUMMY_KEY = "huiyi-test-dummy-key"

#: what stops Claude Code from calling anything but ANTHROPIC_BASE_URL
CLAUDE_OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}

#: Codex config.toml lines (top level) that keep it offline; see the module docstring
CODEX_OFFLINE_TOP = """\
check_for_update_on_startup = false
"""
CODEX_OFFLINE_TABLES = """\
[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
"""


@dataclass
class Run:
    """One client run."""

    client: str
    version: str
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    home: Path
    cwd: Path
    #: every HTTP request the fake model received, in order
    requests: list[Recorded]
    #: CONNECT / absolute-URI requests the client tried to send elsewhere (refused)
    proxy_attempts: list[str]
    #: session logs the client wrote under home (Claude transcripts, Codex rollouts)
    logs: list[Path]
    #: the probe MCP server's log, when probe=True
    probe_log: Path | None = None
    #: how long the setup commands took (claude mcp add ...)
    setup_seconds: float = 0.0
    timed_out: bool = False
    #: what each setup command printed, in order
    notes: list[str] = field(default_factory=list)

    @property
    def main_requests(self) -> list[Recorded]:
        """The requests of the model loop (those that took a scripted turn)."""
        return [r for r in self.requests if r.is_main]

    def probe_messages(self) -> list[dict[str, Any]]:
        if self.probe_log is None or not self.probe_log.exists():
            return []
        return [json.loads(line) for line in self.probe_log.read_text().splitlines() if line]

    def mcp_calls(self) -> list[dict[str, Any]]:
        """The `tools/call` params the probe server received."""
        return [m["params"] for m in self.probe_messages() if m.get("method") == "tools/call"]

    def log_records(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        for path in self.logs:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    yield path, json.loads(line)

    def describe(self) -> str:
        """For assertion messages: enough to see why a run went wrong."""
        return (
            f"{self.client} {self.version} exit {self.returncode}"
            f"{' (timed out)' if self.timed_out else ''} after {self.seconds:.1f} s\n"
            f"argv: {self.argv}\n"
            f"requests: {[(r.method, r.path, r.turn) for r in self.requests]}\n"
            f"proxy attempts: {self.proxy_attempts}\nlogs: {self.logs}\n"
            f"--- stdout (end)\n{self.stdout[-3000:]}\n--- stderr (end)\n{self.stderr[-3000:]}"
        )


# -- plumbing ------------------------------------------------------------------------------


def _unshare_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        raise RuntimeError(
            "the real-client tests need `unshare` (util-linux) to run the clients with no "
            "network but the fake model"
        )
    prefix = [unshare, "--net"]
    if os.geteuid() != 0:
        prefix.append("--map-root-user")
    return prefix


def _base_env(home: Path, fake: FakeModel) -> dict[str, str]:
    """A clean environment: nothing of the caller's (no real keys, homes or HUIYI_*)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TZ": "UTC",
    }
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = fake.base_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def huiyi_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment huiyi's MCP server gets from the client's configuration."""
    env = {
        "HUIYI_HOME": str(home / ".huiyi"),
        "PYTHONPATH": str(SRC),  # this checkout's huiyi, whatever the venv has installed
        "HUIYI_EMBEDDER": "fake",  # no model load in the background of a 2-core test run
    }
    env.update(extra or {})
    return env


def huiyi_command() -> list[str]:
    return [sys.executable, "-m", "huiyi", "mcp"]


def huiyi_install_argv(home: Path, harness: str, *args: str) -> list[str]:
    """`huiyi install HARNESS` as a person runs it, with this checkout's huiyi and the test
    settings of `huiyi_env` passed on to the entries it writes (`--env`)."""
    env = huiyi_env(home)
    passed = [f"--env={k}={v}" for k, v in env.items() if k != "HUIYI_HOME"]
    return [
        "env",
        f"PYTHONPATH={env['PYTHONPATH']}",
        f"HUIYI_HOME={env['HUIYI_HOME']}",
        *huiyi_command()[:-1],
        "install",
        harness,
        *passed,
        *args,
    ]


class _Runner:
    """Runs commands inside the private network namespace, reaching only the fake model."""

    def __init__(self, fake: FakeModel, env: dict[str, str], cwd: Path) -> None:
        assert fake.unix_socket is not None
        self.prefix = [
            *_unshare_prefix(),
            "--",
            sys.executable,
            str(NETNS),
            str(fake.port),
            str(fake.unix_socket),
            "--",
        ]
        self.env = env
        self.cwd = cwd

    def __call__(self, argv: Sequence[str], timeout: float) -> tuple[int, str, str, float, bool]:
        started = time.monotonic()
        proc = subprocess.Popen(
            [*self.prefix, *argv],
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        finally:
            # whatever the client left running in its process group (MCP servers)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        return proc.returncode, out, err, time.monotonic() - started, timed_out


def finished(
    client: str,
    argv: list[str],
    outcome: tuple[int, str, str, float, bool],
    fake: FakeModel,
    home: Path,
    cwd: Path,
    logs: list[Path],
    **more: Any,
) -> Run:
    """The `Run` of one client command (`_Runner`'s outcome) and what the fake model saw."""
    code, out, err, took, timed_out = outcome
    return Run(
        client=client,
        version=CLIENTS[client].version,
        argv=argv,
        returncode=code,
        stdout=out,
        stderr=err,
        seconds=took,
        home=home,
        cwd=cwd,
        requests=fake.recorded(),
        proxy_attempts=list(fake.proxy_attempts),
        logs=logs,
        timed_out=timed_out,
        **more,
    )


def run_setup(runner: _Runner, steps: Iterable[Sequence[str]]) -> tuple[float, list[str]]:
    """Run setup commands in the client's environment; seconds taken and what each printed."""
    took_all = 0.0
    printed: list[str] = []
    for argv in steps:
        code, out, err, took, _ = runner(argv, timeout=60)
        took_all += took
        printed.append(out)
        if code != 0:
            raise RuntimeError(f"{argv} failed (exit {code}):\n{out}\n{err}")
    return took_all, printed


@contextlib.contextmanager
def _fake_model(script: Iterable[Turn]) -> Iterator[FakeModel]:
    # a short path: a Unix socket path must stay under 108 bytes
    folder = Path(tempfile.mkdtemp(prefix="hyfm-"))
    try:
        with FakeModel(script, unix_socket=folder / "model.sock") as fake:
            yield fake
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _services_stopped(home: Path) -> Iterator[None]:
    """Stop the warm huiyi service the run's `huiyi mcp` started (it outlives the client)."""
    try:
        yield
    finally:
        stop_services(home / ".huiyi")


def _logs(root: Path, pattern: str) -> list[Path]:
    return sorted(root.glob(pattern)) if root.exists() else []


# -- Claude Code ---------------------------------------------------------------------------


def claude_mcp_add_args(home: Path, extra_env: Mapping[str, str] | None = None) -> list[str]:
    """`claude mcp add` as docs/connect.md has it: the name before `-e` (it takes a list)."""
    args = ["mcp", "add", "--scope", "user", "huiyi"]
    for key, value in huiyi_env(home, extra_env).items():
        args += ["-e", f"{key}={value}"]
    return [*args, "--", *huiyi_command()]


def run_claude(
    home: Path,
    cwd: Path,
    prompt: str,
    script: Iterable[Turn],
    *,
    mcp: bool = True,
    probe: bool = False,
    extra_env: Mapping[str, str] | None = None,
    huiyi_extra_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 180,
    register: bool = True,
    setup: Sequence[Sequence[str]] = (),
) -> Run:
    """Run `claude -p prompt` once; `register=False` reuses the MCP servers an earlier run in the
    same `home` registered (for a second session, or `--resume`), or that `setup` commands
    (run first, in the client's environment; `huiyi_install_argv`) configure."""
    claude = str(installed("claude"))
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    config_dir = home / ".claude"
    probe_log = home / "probe-mcp.jsonl" if probe else None
    with _fake_model(script) as fake, _services_stopped(home):
        env = _base_env(home, fake)
        env.update(CLAUDE_OFFLINE_ENV)
        env.update(
            {
                "CLAUDE_CONFIG_DIR": str(config_dir),
                "ANTHROPIC_BASE_URL": fake.base_url,
                "ANTHROPIC_API_KEY": DUMMY_KEY,
                "MCP_CONNECTION_NONBLOCKING": "0",
            }
        )
        env.update(extra_env or {})
        run = _Runner(fake, env, cwd)
        allowed = []
        setups: list[list[str]] = []
        if mcp:
            setups.append([claude, *claude_mcp_add_args(home, huiyi_extra_env)])
            allowed.append("mcp__huiyi")
        if probe_log is not None:
            probe_server = [sys.executable, str(PROBE), str(probe_log)]
            setups.append([claude, "mcp", "add", "--scope", "user", "probe", "--", *probe_server])
            allowed.append("mcp__probe")
        setup_took, setup_out = run_setup(run, [*(setups if register else []), *setup])
        argv = [claude, "-p", prompt, "--output-format", "json"]
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        argv += list(extra_args)
        return finished(
            "claude",
            argv,
            run(argv, timeout=timeout),
            fake,
            home,
            cwd,
            _logs(config_dir / "projects", "**/*.jsonl"),
            probe_log=probe_log,
            setup_seconds=setup_took,
            notes=setup_out,
        )


def claude_result(run: Run) -> dict[str, Any]:
    """The JSON result `claude -p --output-format json` printed (session_id, result, ...)."""
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# -- Codex ---------------------------------------------------------------------------------


def _toml(value: object) -> str:
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # a TOML basic string is a JSON string


#: Codex refuses a writing MCP tool under approval policy "never" unless the entry approves it
#: (docs/connect.md tells users the same; tests/clients/test_connect_docs.py checks both agree)
CODEX_MEMORY_TABLE = '[mcp_servers.huiyi.tools.memory]\napproval_mode = "approve"\n'


def codex_config(
    fake: FakeModel,
    home: Path,
    *,
    mcp: bool = True,
    probe_log: Path | None = None,
    huiyi_extra_env: Mapping[str, str] | None = None,
    extra_top: str = "",
    extra_tables: str = "",
) -> str:
    command = huiyi_command()
    lines = [
        'model = "gpt-5.5"',
        'model_provider = "fake"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        # how long `codex exec` waits for optional MCP servers before its first request
        # (default 1000 ms: too short for huiyi's start-up on two busy cores)
        "mcp_optional_startup_grace_ms = 30000",
        CODEX_OFFLINE_TOP,
        extra_top,
        CODEX_OFFLINE_TABLES,
        "[model_providers.fake]",
        'name = "fake model"',
        f"base_url = {_toml(fake.base_url + '/v1')}",
        'wire_api = "responses"',
        'env_key = "FAKE_MODEL_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
    ]
    if mcp:
        lines += [
            "[mcp_servers.huiyi]",
            f"command = {_toml(command[0])}",
            f"args = {_toml(command[1:])}",
            f"env = {_toml(huiyi_env(home, huiyi_extra_env))}",
            "",
        ]
    if probe_log is not None:
        lines += [
            "[mcp_servers.probe]",
            f"command = {_toml(sys.executable)}",
            f"args = {_toml([str(PROBE), str(probe_log)])}",
            "",
        ]
    lines.append(extra_tables)
    return "\n".join(lines)


def run_codex(
    home: Path,
    cwd: Path,
    prompt: str,
    script: Iterable[Turn],
    *,
    mcp: bool = True,
    probe: bool = False,
    extra_env: Mapping[str, str] | None = None,
    huiyi_extra_env: Mapping[str, str] | None = None,
    extra_top: str = "",
    extra_tables: str = "",
    extra_args: Sequence[str] = (),
    timeout: float = 180,
    setup: Sequence[Sequence[str]] = (),
) -> Run:
    """Run `codex exec prompt` once on a config.toml of the harness's (provider, offline
    switches); `mcp=False` leaves huiyi out of it, for `setup` commands (run after the config is
    written, in the client's environment; `huiyi_install_argv`) to add."""
    codex = str(installed("codex"))
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    probe_log = home / "probe-mcp.jsonl" if probe else None
    with _fake_model(script) as fake, _services_stopped(home):
        (codex_home / "config.toml").write_text(
            codex_config(
                fake,
                home,
                mcp=mcp,
                probe_log=probe_log,
                huiyi_extra_env=huiyi_extra_env,
                extra_top=extra_top,
                extra_tables=extra_tables,
            )
        )
        env = _base_env(home, fake)
        env.update({"CODEX_HOME": str(codex_home), "FAKE_MODEL_API_KEY": DUMMY_KEY})
        env.update(extra_env or {})
        runner = _Runner(fake, env, cwd)
        setup_seconds, setup_out = run_setup(runner, setup)
        argv = [codex, "exec", "--skip-git-repo-check", *extra_args, prompt]
        return finished(
            "codex",
            argv,
            runner(argv, timeout=timeout),
            fake,
            home,
            cwd,
            _logs(codex_home, "sessions/**/rollout-*.jsonl"),
            probe_log=probe_log,
            setup_seconds=setup_seconds,
            notes=setup_out,
        )


# -- command line: record the fixture logs -------------------------------------------------


def record_fixtures(folder: Path = HERE / "fixtures") -> list[Path]:
    """Run each client once on a short bilingual script and keep the log it wrote, as
    `fixtures/claude-code-<version>-transcript.jsonl` and `codex-<version>-rollout.jsonl`."""
    from tests.clients.fake_model import Reply, ToolCall, ToolSearch

    folder.mkdir(exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="hyfx-") as tmp:
        root = Path(tmp)
        claude = run_claude(
            root / "claude",
            root / "claude" / "api",
            "上周我们为什么回滚了数据库迁移? why did we roll back the migration?",
            [
                ToolCall("ToolSearch", {"query": "select:mcp__huiyi__recall_history"}),
                ToolCall("mcp__huiyi__recall_history", {"query": "数据库 迁移 回滚"}),
                Reply("没有找到更早的记录。No earlier session mentions it."),
            ],
        )
        codex = run_codex(
            root / "codex",
            root / "codex" / "api",
            "上周我们为什么回滚了数据库迁移? why did we roll back the migration?",
            [
                ToolSearch("huiyi recall history"),
                ToolCall("recall_history", {"query": "数据库 迁移 回滚"}, namespace="mcp__huiyi"),
                Reply("没有找到更早的记录。No earlier session mentions it."),
            ],
        )
        for run, name in (
            (claude, f"claude-code-{claude.version}-transcript.jsonl"),
            (codex, f"codex-{codex.version}-rollout.jsonl"),
        ):
            if run.returncode != 0 or len(run.logs) != 1:
                raise RuntimeError(run.describe())
            shutil.copyfile(run.logs[0], folder / name)
            written.append(folder / name)
            print(f"{name}: {run.seconds:.1f} s, from {run.logs[0]}")
    return written


if __name__ == "__main__":
    if sys.argv[1:] != ["fixtures"]:
        sys.exit("usage: python tests/clients/harness.py fixtures")
    record_fixtures()
