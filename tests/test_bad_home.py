"""A `HUIYI_HOME` that cannot be made or used (under a file, a file itself, in `/proc` where no
directory can be created) is one line naming the path and the reason, exit 2, for every
command that needs it; a hook stays silent on stdout and exits 0, and `huiyi web` says it
before it serves rather than with a traceback when it stops.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi.cli.root import main

COMMANDS = [["search", "deploy"], ["index"], ["doctor"], ["sessions"], ["memory", "show"]]


@pytest.fixture
def short(tmp_path: Path) -> Iterator[Path]:
    """A directory with a short name, so that the messages show its paths whole."""
    made = Path(tempfile.mkdtemp(prefix="hy-", dir="/tmp"))
    yield made
    shutil.rmtree(made)


def homes(root: Path) -> dict[str, tuple[Path, str]]:
    """Each kind of unusable home, with the words its line must hold."""
    blocker = root / "a-file"
    blocker.write_text("not a directory\n")
    return {
        "under-a-file": (blocker / "huiyi", "which is a file"),
        "a-file": (blocker, "which is a file"),
        "uncreatable": (Path("/proc/huiyi-test-home"), "No such file or directory"),
    }


#: every command with every unusable home, but reading memory where no home can be made: it
#: needs none, and shows an empty store (the test after this one)
CASES = [
    (kind, command)
    for kind in ("under-a-file", "a-file", "uncreatable")
    for command in COMMANDS
    if (kind, command) != ("uncreatable", ["memory", "show"])
]


@pytest.mark.parametrize(("kind", "command"), CASES, ids=[f"{k}-{'-'.join(c)}" for k, c in CASES])
def test_an_unusable_home_is_one_line_naming_it_and_exit_2(
    short: Path, kind: str, command: list[str]
) -> None:
    home, reason = homes(short)[kind]
    result = CliRunner().invoke(main, command, env={"HUIYI_HOME": str(home)})
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: HUIYI_HOME") and str(home) in lines[0]
    assert reason in lines[0]
    assert "config.toml" not in lines[0]


def test_memory_show_without_a_home_that_can_be_made_reads_an_empty_store() -> None:
    result = CliRunner().invoke(main, ["memory", "show"], env={"HUIYI_HOME": "/proc/huiyi-x"})
    assert result.exit_code == 0 and "memory is empty" in result.output


def _env(home: Path, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path),
        "HUIYI_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


@pytest.mark.parametrize("kind", ["under-a-file", "uncreatable"])
def test_a_hook_with_an_unusable_home_writes_nothing_to_stdout_and_exits_0(
    tmp_path: Path, kind: str
) -> None:
    home, _ = homes(tmp_path)[kind]
    prompt = {"prompt": "how do deploys run?", "session_id": "s1", "cwd": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "huiyi", "hook", "claude-code", "UserPromptSubmit"],
        input=json.dumps(prompt).encode(),
        capture_output=True,
        env=_env(home, tmp_path),
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["under-a-file", "uncreatable"])
def test_web_with_an_unusable_home_says_so_before_it_serves(tmp_path: Path, kind: str) -> None:
    home, reason = homes(tmp_path)[kind]
    done = subprocess.run(
        [sys.executable, "-m", "huiyi", "web", "--port", "0"],
        capture_output=True,
        text=True,
        env=_env(home, tmp_path),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # no address printed: nothing served
    assert done.stderr.strip().startswith("Error: HUIYI_HOME") and reason in done.stderr
    assert "Traceback" not in done.stderr
