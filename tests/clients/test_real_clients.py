"""The real Claude Code and Codex CLIs, headless against the fake model, with huiyi connected.

Each client runs once per module (a run takes a few seconds; the suite has a budget): the
scripted model first loads huiyi's tools the way each client offers them (both defer MCP tools
behind a tool search), calls `session_list`, then the probe server's `echo` (which returns the
call's `_meta`), then answers. The tests read what the client sent back to the model, what
reached the MCP servers, and the session log the client wrote. A client that cannot be
installed or run fails these tests with the reason; nothing is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.harnesses.codex.reader import CodexReader
from huiyi.sources.base import Cursor
from tests.clients.fake_model import (
    Reply,
    ToolCall,
    ToolSearch,
    Turn,
    function_call_outputs,
    tool_result_text,
    tool_results,
)
from tests.clients.harness import Run, claude_result, run_claude, run_codex

HUIYI_TOOLS = {
    "recall_history",
    "recall_expand",
    "session_list",
    "session_read",
    "memory",
    "memory_search",
}
NOTICE = "The following is"
PROMPT = "列出这个项目最近的会话 list the recent sessions"


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Run:
    home = tmp_path_factory.mktemp("claude-home")
    script: list[Turn] = [
        ToolCall(
            "ToolSearch",
            {"query": "select:mcp__huiyi__session_list,mcp__huiyi__recall_history"},
            call_id="toolu_01search",
        ),
        ToolCall("mcp__huiyi__session_list", {"limit": 5}, call_id="toolu_01huiyi"),
        ToolCall("mcp__probe__echo", {"text": "你好"}, call_id="toolu_01probe"),
        Reply("最近只有这一个会话。Only this session so far."),
    ]
    run = run_claude(home, home / "api", PROMPT, script, probe=True)
    assert run.returncode == 0, run.describe()
    return run


@pytest.fixture(scope="module")
def codex(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Run:
    home = tmp_path_factory.mktemp("codex-home")
    script: list[Turn] = [
        ToolSearch("huiyi session list", call_id="call_search1"),
        ToolCall("session_list", {"limit": 5}, namespace="mcp__huiyi", call_id="call_huiyi"),
        ToolSearch("probe echo", call_id="call_search2"),
        ToolCall("echo", {"text": "你好"}, namespace="mcp__probe", call_id="call_probe"),
        Reply("最近只有这一个会话。Only this session so far."),
    ]
    run = run_codex(home, home / "api", PROMPT, script, probe=True)
    assert run.returncode == 0, run.describe()
    return run


def _records(run: Run) -> list[dict[str, Any]]:
    return [record for _path, record in run.log_records()]


# -- Claude Code ---------------------------------------------------------------------------


def test_claude_ran_offline_through_the_whole_script(claude: Run) -> None:
    assert claude.proxy_attempts == [], claude.describe()
    assert [r.turn for r in claude.main_requests] == [0, 1, 2, 3], claude.describe()
    assert claude_result(claude)["result"] == "最近只有这一个会话。Only this session so far."


def test_claude_offers_huiyi_tools(claude: Run) -> None:
    first = claude.main_requests[0].body
    # 2.1.332 defers MCP tools: their names are announced in a system message, and only
    # what ToolSearch loaded is in `tools` (with huiyi's schema) from the next request on
    announced = json.dumps(first["messages"], ensure_ascii=False)
    assert all(f"mcp__huiyi__{name}" in announced for name in HUIYI_TOOLS)
    after_search = {t["name"]: t for t in claude.main_requests[1].body["tools"]}
    assert {"mcp__huiyi__session_list", "mcp__huiyi__recall_history"} <= set(after_search)
    schema = after_search["mcp__huiyi__session_list"]["input_schema"]
    assert schema["properties"]["limit"]["maximum"] == 100


def test_claude_sends_huiyi_result_back_to_the_model(claude: Run) -> None:
    results = {b["tool_use_id"]: b for b in tool_results(claude.main_requests[-1:])}
    block = results["toolu_01huiyi"]
    assert not block.get("is_error"), block
    text = tool_result_text(block)
    assert text.startswith(NOTICE), text
    assert "session_list:" in text


def test_claude_mcp_call_meta_names_the_tool_use(claude: Run) -> None:
    (call,) = claude.mcp_calls()
    assert call["name"] == "echo"
    assert call["arguments"] == {"text": "你好"}
    assert call["_meta"]["claudecode/toolUseId"] == "toolu_01probe"


def test_claude_wrote_the_transcript(claude: Run) -> None:
    (transcript,) = claude.logs
    session_id = claude_result(claude)["session_id"]
    assert transcript.name == f"{session_id}.jsonl"
    records = _records(claude)
    prompts = [
        r["message"]["content"]
        for r in records
        if r.get("type") == "user" and isinstance(r["message"]["content"], str)
    ]
    assert prompts == [PROMPT]
    assert {r.get("sessionId") for r in records} == {session_id}
    tool_uses = [
        block["id"]
        for r in records
        if r.get("type") == "assistant"
        for block in r["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    assert tool_uses == ["toolu_01search", "toolu_01huiyi", "toolu_01probe"]


def test_huiyi_reads_every_record_type_this_claude_writes(claude: Run) -> None:
    # the place that catches drift: a record type a new client version adds is either
    # known bookkeeping or conversation, never counted as unknown
    (transcript,) = claude.logs
    result = ClaudeReader([transcript.parents[2]]).read(transcript, Cursor())

    assert result.skipped == {}
    texts = [e.text for chunk in result.chunks for e in chunk.events]
    assert PROMPT in texts
    assert "最近只有这一个会话。Only this session so far." in texts


# -- Codex ---------------------------------------------------------------------------------


def test_codex_ran_offline_through_the_whole_script(codex: Run) -> None:
    assert codex.proxy_attempts == [], codex.describe()
    assert [r.turn for r in codex.main_requests] == [0, 1, 2, 3, 4], codex.describe()
    assert "最近只有这一个会话。Only this session so far." in codex.stdout


def test_codex_offers_huiyi_tools(codex: Run) -> None:
    first = json.dumps(codex.main_requests[0].body["input"], ensure_ascii=False)
    # 0.171 defers MCP tools: the namespace is announced to the model, and a tool search
    # returns its functions (named without the namespace)
    assert "- mcp__huiyi:" in first
    found = [
        tool
        for item in codex.main_requests[1].body["input"]
        if item.get("type") == "tool_search_output"
        for tool in item["tools"]
    ]
    namespaces = {t["name"]: {f["name"] for f in t["tools"]} for t in found}
    assert namespaces["mcp__huiyi"] == HUIYI_TOOLS


def test_codex_sends_huiyi_result_back_to_the_model(codex: Run) -> None:
    outputs = {o["call_id"]: o for o in function_call_outputs(codex.main_requests[-1:])}
    output = outputs["call_huiyi"]["output"]
    # [{"input_text": "Wall time: ...\nOutput:"}, {"input_text": <the tool's text>}]
    assert output[0]["text"].startswith("Wall time:"), output
    assert output[1]["text"].startswith(NOTICE), output
    assert "session_list:" in output[1]["text"]


def test_codex_mcp_call_meta_names_the_session(codex: Run) -> None:
    (call,) = codex.mcp_calls()
    assert call["name"] == "echo"
    assert call["arguments"] == {"text": "你好"}
    meta = call["_meta"]
    (rollout,) = codex.logs
    session_id = _records(codex)[0]["payload"]["id"]
    assert rollout.name.endswith(f"-{session_id}.jsonl")
    assert meta["sessionId"] == meta["threadId"] == session_id
    assert meta["x-codex-turn-metadata"]["session_id"] == session_id
    assert meta["callId"] == "call_probe"


def test_codex_wrote_the_rollout(codex: Run) -> None:
    records = _records(codex)
    meta = records[0]
    assert meta["type"] == "session_meta"
    assert meta["payload"]["cli_version"] == "0.171.0"
    assert Path(meta["payload"]["cwd"]) == codex.cwd
    typed = [
        content["text"]
        for r in records
        if r["type"] == "response_item" and r["payload"].get("role") == "user"
        for content in r["payload"]["content"]
        if not content["text"].startswith("<")
    ]
    assert typed == [PROMPT]
    calls = [
        (r["payload"].get("namespace"), r["payload"]["name"])
        for r in records
        if r["type"] == "response_item" and r["payload"]["type"] == "function_call"
    ]
    assert calls == [("mcp__huiyi", "session_list"), ("mcp__probe", "echo")]


def test_huiyi_reads_every_line_kind_this_codex_writes(codex: Run) -> None:
    (rollout,) = codex.logs
    home = next(p.parent for p in rollout.parents if p.name == "sessions")
    result = CodexReader(home).read(rollout, Cursor())

    assert result.skipped == {}
    texts = [e.text for chunk in result.chunks for e in chunk.events]
    assert PROMPT in texts
    assert "最近只有这一个会话。Only this session so far." in texts
