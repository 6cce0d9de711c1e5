"""Everything huiyi creates is its owner's alone, and nothing is written through a link.

The commands run as a person runs them (`python -m huiyi ...` in a fresh HOME), started with
the common umask 022, which would leave new files readable by every user of the machine: the
index, its journal, the logs, the locks, the hooks' state and the warm service's log hold
other people's words and the harnesses' secrets. Each file under HUIYI_HOME must be 0600 at
most and each folder 0700. Then a link planted where a backup would go (even a dangling one)
is never followed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from huiyi.install.common import Change, apply, backup_dir
from tests.services import stop_services


def huiyi(home: Path, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """One command as a person runs it, with the default embedder (its model file is written
    into HUIYI_HOME on first use)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "HUIYI_HOME": str(home / ".huiyi"),
        "PYTHONPATH": str(Path(__file__).parents[1] / "src"),
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        [sys.executable, "-m", "huiyi", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )


def loose(root: Path) -> list[str]:
    """Every file or folder under `root` that another user could read or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_IMODE(mode) & 0o077:
            found.append(f"{path.relative_to(root)} {stat.filemode(mode)}")
    return found


def test_what_the_commands_create_is_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    try:
        steps = [
            ("index",),
            ("search", "回滚"),
            ("memory", "add", "Deploys go through make ship."),
            ("doctor",),
            ("install", "claude-code"),
        ]
        for step in steps:
            run = huiyi(home, project, *step)
            assert run.returncode == 0, (step, run.stderr)
        payload = {"session_id": "s1", "cwd": str(project), "transcript_path": "", "source": "x"}
        run = huiyi(home, project, "hook", "claude-code", "SessionStart", stdin=json.dumps(payload))
        assert run.returncode == 0, run.stderr
    finally:
        stop_services(home / ".huiyi")
    created = {p.name for p in (home / ".huiyi").iterdir()}
    assert {"index.db", "hooks-ran.json"} <= created  # the commands really wrote there
    assert loose(home / ".huiyi") == []
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600


def test_a_link_where_a_backup_would_go_is_never_followed(tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text('{"model": "opus"}\n')
    backups = tmp_path / "backups"
    now = datetime(2026, 12, 2, 10, 0, 0)
    folder = backup_dir(backups, config)
    folder.mkdir(parents=True)
    planted = folder / f"settings.json.huiyi-backup-{now:%Y%m%d-%H%M%S}"
    target = tmp_path / "elsewhere" / "stolen"
    planted.symlink_to(target)  # dangling: it points at nothing yet

    written = apply(
        [Change(config, config.read_text(), '{"model": "opus", "x": 1}\n')],
        backups=backups,
        now=now,
    )

    assert not target.exists() and not target.parent.exists()
    assert planted.is_symlink()  # left as it was
    (done,) = written
    assert done.backup is not None and done.backup != planted
    assert done.backup.read_text() == '{"model": "opus"}\n'
    assert stat.S_IMODE(done.backup.stat().st_mode) == 0o600
