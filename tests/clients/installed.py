"""Run the real Claude Code and Codex as `huiyi install` left them, against the fake model.

harness.py connects huiyi by hand (`claude mcp add`, a config.toml it writes whole). Here
the client's configuration is what `huiyi install claude-code|codex` wrote into the isolated
HOME, and the test adds only what points the client at the fake model and keeps it offline:
environment variables for Claude Code, `-c key=value` overrides for Codex (so config.toml
and hooks.json stay exactly as the installer left them, hook trust included).

    setup(home, huiyi_install_argv(home, "codex"), cwd)
    codex_hooks(home, cwd)                           # what Codex's /hooks would list
    first = run_codex_installed(home, cwd, "继续", [Reply("...")])
    compact_codex(home, cwd, thread_id, [Summary("...")])   # Codex's /compact
    claude_compact = run_claude_installed(home, cwd, "/compact", [Summary("...")], resume=sid)

The hooks a client runs inherit its environment: `client_env` gives the installer, the
clients and so the hooks the same HOME, config folders and HUIYI_HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.clients.codex_app_server import AppServer, compact_thread, list_hooks
from tests.clients.fake_model import FakeModel, Turn
from tests.clients.harness import (
    DUMMY_KEY,
    Run,
    _base_env,
    _fake_model,
    _logs,
    _Runner,
    _services_stopped,
    _toml,
    finished,
    huiyi_command,
    huiyi_env,
    run_claude,
)
from tests.clients.install import installed


def client_env(home: Path) -> dict[str, str]:
    """Where each client keeps its configuration under `home`, and huiyi's variables: what
    the installer, the clients and the hooks they start all see."""
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        **huiyi_env(home),
    }


def setup(home: Path, argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one set-up command (`huiyi install ...`, `huiyi memory add ...`) as a person would
    in `cwd`, with the clients' HOME; a failure raises with its output, so the test that
    needed it fails with the command's own message."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        **client_env(home),
    }
    done = subprocess.run(
        list(argv),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def huiyi_cli(*args: str) -> list[str]:
    """This checkout's `huiyi` command line (PYTHONPATH comes from `client_env`)."""
    return [*huiyi_command()[:-1], *args]


# -- Claude Code ---------------------------------------------------------------------------


def run_claude_installed(
    home: Path,
    cwd: Path,
    prompt: str,
    script: Iterable[Turn],
    *,
    resume: str | None = None,
    timeout: float = 180,
) -> Run:
    """`claude -p prompt` (with `--resume <session>`) using only the MCP entry and hooks
    that `huiyi install claude-code` wrote under `home`."""
    return run_claude(
        home,
        cwd,
        prompt,
        script,
        mcp=False,
        register=False,
        extra_env=client_env(home),
        extra_args=["--resume", resume] if resume else [],
        timeout=timeout,
    )


# -- Codex ---------------------------------------------------------------------------------


def codex_overrides(fake: FakeModel) -> list[str]:
    """`-c` arguments: the fake model as provider, no approvals, and the switches that keep
    Codex offline (harness.CODEX_OFFLINE_*), without touching config.toml."""
    provider = {
        "name": "fake model",
        "base_url": fake.base_url + "/v1",
        "wire_api": "responses",
        "env_key": "FAKE_MODEL_API_KEY",
        "request_max_retries": 0,
        "stream_max_retries": 0,
    }
    settings: dict[str, object] = {
        "model": "gpt-5.5",
        "model_provider": "fake",
        "model_providers.fake": provider,
        "approval_policy": "never",
        "sandbox_mode": "read-only",
        "check_for_update_on_startup": False,
        "analytics.enabled": False,
        "feedback.enabled": False,
        "features.plugins": False,
        "features.apps": False,
    }
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={_toml(value)}")]


def _codex_env(home: Path, fake: FakeModel) -> dict[str, str]:
    env = _base_env(home, fake)
    env.update(client_env(home))
    env["FAKE_MODEL_API_KEY"] = DUMMY_KEY
    return env


def run_codex_installed(
    home: Path,
    cwd: Path,
    prompt: str,
    script: Iterable[Turn],
    *,
    resume: str | None = None,
    timeout: float = 180,
) -> Run:
    """`codex exec prompt` (or `codex exec resume <thread> prompt`) using only what
    `huiyi install codex` (and the person's hook review) left in CODEX_HOME."""
    codex = str(installed("codex"))
    cwd.mkdir(parents=True, exist_ok=True)
    with _fake_model(script) as fake, _services_stopped(home):
        argv = [codex, "exec", "--skip-git-repo-check", *codex_overrides(fake)]
        argv += ["resume", resume, prompt] if resume else [prompt]
        return finished(
            "codex",
            argv,
            _Runner(fake, _codex_env(home, fake), cwd)(argv, timeout=timeout),
            fake,
            home,
            cwd,
            _logs(home / ".codex", "sessions/**/rollout-*.jsonl"),
        )


@contextlib.contextmanager
def codex_app_server(
    home: Path, cwd: Path, script: Iterable[Turn] = ()
) -> Iterator[tuple[AppServer, FakeModel]]:
    """`codex app-server` in the private network namespace, with the fake model."""
    codex = str(installed("codex"))
    with (
        _fake_model(script) as fake,
        _services_stopped(home),
        tempfile.TemporaryDirectory(prefix="hyas-") as tmp,
    ):
        runner = _Runner(fake, _codex_env(home, fake), cwd)
        argv = [*runner.prefix, codex, "app-server", *codex_overrides(fake)]
        with AppServer.start(argv, runner.env, cwd, Path(tmp) / "stderr.log") as server:
            yield server, fake


def codex_hooks(home: Path, cwd: Path) -> list[dict[str, Any]]:
    """Every hook Codex finds for `cwd`, with its `trustStatus`, as its `/hooks` lists them."""
    with codex_app_server(home, cwd) as (server, _fake):
        return list_hooks(server, cwd)


def compact_codex(home: Path, cwd: Path, thread_id: str, summary: Sequence[Turn]) -> Run:
    """Compact a saved Codex thread the way `/compact` does (`thread/compact/start`); the
    fake model answers the summary request with `summary` (a `Summary` turn)."""
    started = time.monotonic()
    with codex_app_server(home, cwd, summary) as (server, fake):
        turn = compact_thread(server, thread_id)
        argv = ["codex", "app-server", "thread/compact/start", thread_id]
        outcome = (0, json.dumps(turn), server.stderr_tail(), time.monotonic() - started, False)
        return finished(
            "codex",
            argv,
            outcome,
            fake,
            home,
            cwd,
            _logs(home / ".codex", "sessions/**/rollout-*.jsonl"),
        )
