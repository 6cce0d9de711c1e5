"""docs/connect.md's commands work as written, on the real clients."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from pathlib import Path

from tests.clients.fake_model import FakeModel
from tests.clients.harness import CODEX_MEMORY_TABLE, codex_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "connect.md"


def _blocks(language: str) -> list[str]:
    """The fenced code blocks of the doc whose info string is `language`."""
    blocks: list[str] = []
    current: list[str] | None = None
    info = ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if current is None:
                current, info = [], line[3:].strip()
            else:
                if info == language:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_every_claude_mcp_add_line_in_the_docs_registers_huiyi(
    tmp_path: Path, claude_bin: Path
) -> None:
    lines = [
        line
        for block in _blocks("")
        for line in block.splitlines()
        if line.startswith("claude mcp add")
    ]
    assert len(lines) >= 2
    for number, line in enumerate(lines):
        config = tmp_path / f"claude-{number}"
        argv = shlex.split(line)
        done = subprocess.run(
            [str(claude_bin), *argv[1:]],
            env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        server = json.loads((config / ".claude.json").read_text())["mcpServers"]["huiyi"]
        assert (server["command"], server["args"]) == ("huiyi", ["mcp"]), line
        before = argv[: argv.index("--")]
        wanted = dict(before[n + 1].split("=", 1) for n, arg in enumerate(before) if arg == "-e")
        assert server.get("env", {}) == wanted, line


def test_the_codex_settings_in_the_docs_are_the_ones_the_real_client_runs_with(
    tmp_path: Path,
) -> None:
    (documented,) = [tomllib.loads(block) for block in _blocks("toml")]
    with FakeModel() as fake:
        tested = tomllib.loads(codex_config(fake, tmp_path, extra_tables=CODEX_MEMORY_TABLE))
    assert "mcp_optional_startup_grace_ms" in documented
    assert "mcp_optional_startup_grace_ms" in tested
    huiyi_doc, huiyi_run = documented["mcp_servers"]["huiyi"], tested["mcp_servers"]["huiyi"]
    assert (
        huiyi_doc["tools"]["memory"] == huiyi_run["tools"]["memory"] == {"approval_mode": "approve"}
    )
    assert huiyi_doc["args"][-1] == huiyi_run["args"][-1] == "mcp"
