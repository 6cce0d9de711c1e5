"""huiyi's headline features, as the real Claude Code and Codex deliver them to the model.

Each client works in one project over several sessions, the way a person would: the first
session states a decision (with a secret pasted into it) and saves a memory entry; the second
asks about the decision, so the model calls `recall_history`, `memory_search` and
`session_list`; for Claude a real `/compact` follows, and the resumed session asks for what was
compacted away. The tests read the tool results the client sent back to the fake model, and
then index the logs the clients wrote and search them. Each scenario runs once per module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi.cli.root import main
from tests.clients.fake_model import (
    Reply,
    ToolCall,
    ToolSearch,
    function_call_outputs,
    tool_result_text,
    tool_results,
)
from tests.clients.harness import CODEX_MEMORY_TABLE, Run, claude_result, run_claude, run_codex

SECRET = "sk-proj-" + "Q7x9Lm2Pz4Rt8Wv6Yb1Nc3Kd5Hf0Jg"
NOTE = "Deploys go through make ship, never by hand."
#: Claude Code offers every MCP tool directly instead of behind its tool search
CLAUDE_ENV = {"ENABLE_TOOL_SEARCH": "false"}


@dataclass
class Story:
    """Every run of one client in one project, and the ids of its sessions."""

    project: Path
    runs: list[Run]
    first: str
    second: str

    def results(self) -> dict[str, str]:
        """Tool results the client sent back to the model, by call id, over every run."""
        found: dict[str, str] = {}
        for run in self.runs:
            if run.client == "claude":
                for block in tool_results(run.main_requests):
                    found[block["tool_use_id"]] = tool_result_text(block)
            else:
                for item in function_call_outputs(run.main_requests):
                    # [{"input_text": "Wall time: ...\nOutput:"}, {"input_text": <the tool's text>}]
                    output = item["output"]
                    texts = [p.get("text", "") for p in output] if isinstance(output, list) else []
                    found[item["call_id"]] = texts[-1] if texts else str(output)
        return found


def project_in(home: Path) -> Path:
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    return project


@pytest.fixture(scope="module")
def claude_story(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("claude-story")
    project = project_in(home)
    first = run_claude(
        home,
        project,
        f"我们决定用 zanzibar 方案回滚数据库迁移。临时密钥 {SECRET} 别外传。",
        [
            ToolCall(
                "mcp__huiyi__memory",
                {"action": "add", "target": "memory", "content": NOTE},
                call_id="toolu_note",
            ),
            Reply("好的，zanzibar 方案记下了。"),
        ],
        extra_env=CLAUDE_ENV,
    )
    second = run_claude(
        home,
        project,
        "zanzibar 方案是什么来着？ what did we decide?",
        [
            ToolCall(
                "mcp__huiyi__recall_history", {"query": "zanzibar 回滚"}, call_id="toolu_recall"
            ),
            ToolCall("mcp__huiyi__memory_search", {"query": "make ship"}, call_id="toolu_msearch"),
            ToolCall("mcp__huiyi__session_list", {}, call_id="toolu_list"),
            Reply("上次决定用 zanzibar 方案回滚。"),
        ],
        extra_env=CLAUDE_ENV,
        register=False,
    )
    second_id = claude_result(second)["session_id"]
    compact = run_claude(
        home,
        project,
        "/compact",
        [Reply("Summary: the user asked what the zanzibar plan was.")],
        extra_env=CLAUDE_ENV,
        register=False,
        extra_args=["--resume", second_id],
    )
    after = run_claude(
        home,
        project,
        "继续",
        [ToolCall("mcp__huiyi__recall_history", {}, call_id="toolu_compacted"), Reply("好的。")],
        extra_env=CLAUDE_ENV,
        register=False,
        extra_args=["--resume", second_id],
    )
    runs = [first, second, compact, after]
    for run in runs:
        assert run.returncode == 0 and run.proxy_attempts == [], run.describe()
    return Story(project, runs, claude_result(first)["session_id"], second_id)


@pytest.fixture(scope="module")
def codex_story(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("codex-story")
    project = project_in(home)
    first = run_codex(
        home,
        project,
        f"我们决定用 quokka 方案回滚数据库迁移。临时密钥 {SECRET} 别外传。",
        [
            ToolSearch("huiyi memory", call_id="call_search1"),
            ToolCall(
                "memory",
                {"action": "add", "target": "memory", "content": NOTE},
                namespace="mcp__huiyi",
                call_id="call_note",
            ),
            Reply("好的，quokka 方案记下了。"),
        ],
        extra_tables=CODEX_MEMORY_TABLE,
    )
    second = run_codex(
        home,
        project,
        "quokka 方案是什么来着？ what did we decide?",
        [
            ToolSearch("huiyi recall history memory", call_id="call_search2"),
            ToolCall(
                "recall_history",
                {"query": "quokka 回滚"},
                namespace="mcp__huiyi",
                call_id="call_recall",
            ),
            ToolCall(
                "memory_search", {"query": "make ship"}, namespace="mcp__huiyi", call_id="call_ms"
            ),
            ToolCall("session_list", {}, namespace="mcp__huiyi", call_id="call_list"),
            Reply("上次决定用 quokka 方案回滚。"),
        ],
        extra_tables=CODEX_MEMORY_TABLE,
    )
    runs = [first, second]
    for run in runs:
        assert run.returncode == 0 and run.proxy_attempts == [], run.describe()
    (first_log,) = first.logs
    (second_log,) = set(second.logs) - {first_log}
    return Story(project, runs, _rollout_id(first_log), _rollout_id(second_log))


def _rollout_id(path: Path) -> str:
    first_line = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return str(first_line["payload"]["id"])


STORIES = ["claude_story", "codex_story"]
CALLS = {
    "claude_story": {"recall": "toolu_recall", "memory": "toolu_msearch", "list": "toolu_list"},
    "codex_story": {"recall": "call_recall", "memory": "call_ms", "list": "call_list"},
}


@pytest.fixture(params=STORIES)
def story(request: pytest.FixtureRequest) -> tuple[str, Story]:
    return request.param, request.getfixturevalue(request.param)


def test_recall_finds_the_earlier_session_of_this_workspace_and_not_the_caller(
    story: tuple[str, Story],
) -> None:
    name, s = story
    text = s.results()[CALLS[name]["recall"]]
    assert text.startswith("The following is recalled history"), text
    assert f"in workspace {s.project}" in text, text
    assert f"session {s.first}" in text, text
    assert "方案回滚数据库迁移" in text, text
    assert s.second not in text, text  # the caller's own session is already in its context


def test_the_caller_is_the_current_session_in_the_list(story: tuple[str, Story]) -> None:
    name, s = story
    listing = s.results()[CALLS[name]["list"]]
    current = [line for line in listing.splitlines() if "· current" in line]
    assert len(current) == 1 and s.second in current[0], listing


def test_memory_written_in_one_session_is_found_in_the_next(story: tuple[str, Story]) -> None:
    name, s = story
    assert NOTE in s.results()[CALLS[name]["memory"]]


def test_no_secret_reaches_the_model_in_any_tool_result(story: tuple[str, Story]) -> None:
    _name, s = story
    results = s.results()
    assert results
    assert not [call for call, text in results.items() if SECRET in text]
    assert "[REDACTED" in results[CALLS[_name]["recall"]]


def test_what_a_real_compact_removed_comes_back_without_a_query(claude_story: Story) -> None:
    text = claude_story.results()["toolu_compacted"]
    assert "what compaction removed from the current session" in text, text
    assert "zanzibar 方案是什么来着" in text, text
    # the recall calls made before the compaction are not what the session was about
    assert "recall_history" not in text.split("\n\n", 1)[1], text
    assert "huiyi tool call" in text, text


def test_the_prompts_people_typed_are_indexed_and_searchable(
    story: tuple[str, Story], monkeypatch: pytest.MonkeyPatch
) -> None:
    _name, s = story
    home = s.runs[0].home
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUIYI_HOME", str(home / "huiyi-check"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    runner = CliRunner()
    assert runner.invoke(main, ["index", "--no-embed"]).exit_code == 0
    found = runner.invoke(
        main, ["search", "方案回滚", "--workspace", str(s.project), "--layer", "lexical", "--json"]
    )
    assert found.exit_code == 0, found.output
    hits = json.loads(found.output)
    user_hits = [h for h in hits if h["kind"] == "user" and h["session_id"] == s.first]
    assert user_hits, hits
    assert SECRET not in found.output
    listed = json.loads(
        runner.invoke(main, ["sessions", "--workspace", str(s.project), "--json"]).output
    )
    assert {x["id"] for x in listed} >= {s.first, s.second}
    assert all(x["title"] and x["title"] != "(untitled)" for x in listed), listed
