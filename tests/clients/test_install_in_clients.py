"""`huiyi install claude-code` / `huiyi install codex` into an isolated HOME, then the real
clients, with no `claude mcp add` and no hand-written `[mcp_servers.huiyi]`: their own
`mcp list` shows the entry, a headless run lists huiyi's tools to the fake model and calls one,
and Codex runs huiyi's hooks (it runs a user hook only when the trust hash the install wrote
is the one it computes, and prints each hook it runs).

The tool runs turn the client's hooks off with the client's own switch (Claude Code's
`disableAllHooks`, Codex's `--disable hooks`): this file is about what `huiyi install`
writes, and what the hooks inject is asserted by the suite of `huiyi hook` itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clients.fake_model import Reply, ToolCall, ToolSearch, Turn, function_call_outputs
from tests.clients.harness import Run, huiyi_install_argv, run_claude, run_codex
from tests.clients.test_real_clients import HUIYI_TOOLS, NOTICE, PROMPT


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Run:
    home = tmp_path_factory.mktemp("claude-install")
    script: list[Turn] = [
        ToolCall("ToolSearch", {"query": "select:mcp__huiyi__session_list"}, call_id="toolu_s"),
        ToolCall("mcp__huiyi__session_list", {"limit": 5}, call_id="toolu_huiyi"),
        Reply("done"),
    ]
    run = run_claude(
        home,
        home / "api",
        PROMPT,
        script,
        register=False,
        setup=[huiyi_install_argv(home, "claude-code"), [str(claude_bin), "mcp", "list"]],
        extra_args=["--settings", json.dumps({"disableAllHooks": True})],
    )
    assert run.returncode == 0, run.describe()
    return run


@pytest.fixture(scope="module")
def codex(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Run:
    home = tmp_path_factory.mktemp("codex-install")
    script: list[Turn] = [
        ToolSearch("huiyi session list", call_id="call_search"),
        ToolCall("session_list", {"limit": 5}, namespace="mcp__huiyi", call_id="call_huiyi"),
        Reply("done"),
    ]
    run = run_codex(
        home,
        home / "api",
        PROMPT,
        script,
        mcp=False,
        setup=[huiyi_install_argv(home, "codex"), [str(codex_bin), "mcp", "list"]],
        extra_args=["--disable", "hooks"],
    )
    assert run.returncode == 0, run.describe()
    return run


def test_claude_mcp_list_shows_the_installed_server(claude: Run) -> None:
    _install_out, listed = claude.notes
    assert "huiyi:" in listed and "-m huiyi mcp" in listed, listed


def test_claude_lists_and_calls_huiyis_tools_after_install(claude: Run) -> None:
    first = json.dumps(claude.main_requests[0].body["messages"], ensure_ascii=False)
    assert all(f"mcp__huiyi__{name}" in first for name in HUIYI_TOOLS), claude.describe()
    results = [
        block
        for message in claude.main_requests[-1].body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") == "toolu_huiyi"
    ]
    assert len(results) == 1 and not results[0].get("is_error"), results
    assert json.dumps(results[0], ensure_ascii=False).count(NOTICE) == 1


def test_codex_mcp_list_shows_the_installed_server(codex: Run) -> None:
    _install_out, listed = codex.notes
    assert "huiyi" in listed and "-m huiyi mcp" in listed, listed


def test_codex_lists_and_calls_huiyis_tools_after_install(codex: Run) -> None:
    found = [
        tool
        for item in codex.main_requests[1].body["input"]
        if item.get("type") == "tool_search_output"
        for tool in item["tools"]
    ]
    namespaces = {t["name"]: {f["name"] for f in t["tools"]} for t in found}
    assert namespaces["mcp__huiyi"] == HUIYI_TOOLS, codex.describe()
    outputs = {o["call_id"]: o for o in function_call_outputs(codex.main_requests[-1:])}
    assert outputs["call_huiyi"]["output"][1]["text"].startswith(NOTICE)


def test_codex_runs_the_hooks_the_install_trusted(codex_bin: Path, tmp_path: Path) -> None:
    run = run_codex(
        tmp_path,
        tmp_path / "api",
        PROMPT,
        [Reply("done")],
        mcp=False,
        setup=[huiyi_install_argv(tmp_path, "codex")],
    )
    # Codex prints `hook: <Event>` for each hook it runs, and runs only trusted ones
    assert "hook: SessionStart" in run.stderr, run.describe()
    assert "hook: UserPromptSubmit" in run.stderr, run.describe()
