"""Every test runs isolated from the machine: HOME, HUIYI_HOME and every harness home point at
a fresh temporary directory, and no test reads the real ~/.dsh, ~/.claude or ~/.codex."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUIYI_HOME", str(home / ".huiyi"))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("HUIYI_WORKSPACE", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    # the deterministic fake keeps tests fast; tests of the real default ask for it by name
    monkeypatch.setenv("HUIYI_EMBEDDER", "fake")
    return home
