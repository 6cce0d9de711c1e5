"""docs/connect.md's lines for `huiyi mcp --http` work as written, on the real clients: the
Claude Code line registers an HTTP server that sends the bearer token, and the Codex keys
make a server that reads it from the named variable."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

DOC = (Path(__file__).resolve().parents[2] / "docs" / "connect.md").read_text(encoding="utf-8")
URL = "http://127.0.0.1:8765/mcp"


def test_the_claude_line_registers_huiyi_over_http_with_the_token(
    tmp_path: Path, claude_bin: Path
) -> None:
    (line,) = [x for x in DOC.splitlines() if x.startswith("claude mcp add-json")]
    config = tmp_path / "claude"
    done = subprocess.run(
        [str(claude_bin), *shlex.split(line)[1:]],
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    server = json.loads((config / ".claude.json").read_text())["mcpServers"]["huiyi"]
    assert server == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": "Bearer <token>"},
    }


def test_the_codex_keys_make_an_http_server_that_reads_the_token_variable(
    tmp_path: Path, codex_bin: Path
) -> None:
    keys = re.findall(r"`((?:url|bearer_token_env_var) = \"[^\"]+\")`", DOC)
    assert len(keys) == 2
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text("[mcp_servers.huiyi]\n" + "\n".join(keys) + "\n")
    done = subprocess.run(
        [str(codex_bin), "mcp", "get", "huiyi", "--json"],
        env={"HOME": str(tmp_path), "CODEX_HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    transport = json.loads(done.stdout)["transport"]
    assert transport["type"] == "streamable_http"
    assert transport["url"] == URL
    assert transport["bearer_token_env_var"] == "MCP_TOKEN_FOR_HUIYI"
