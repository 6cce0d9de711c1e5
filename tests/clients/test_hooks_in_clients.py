"""`huiyi hook` as the real Claude Code and Codex run it: the hook contract itself.

The hooks are written by hand where each client reads them (Claude Code: `hooks` in
`settings.json` of its config dir; Codex 0.171: `hooks.json` in CODEX_HOME, which needs no
feature flag but runs only trusted hooks, so `codex exec` gets `--dangerously-bypass-hook-trust`
here). Each client works in one project over two sessions: the first states a decision (its Stop
hook indexes it at once), the second asks for it with a trigger word. The tests read what the
client sent to the fake model: the memory block from SessionStart in both sessions, and the
first session's words injected by UserPromptSubmit in the second. Installing the hooks is
`huiyi install`'s job and the compaction stories are the end-to-end suite's; not here.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from huiyi import Huiyi
from huiyi.config import Settings
from tests.clients.fake_model import Recorded, Reply
from tests.clients.harness import Run, huiyi_env, run_claude, run_codex

NOTE = "Deploys go through make ship, never by hand."
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
HEADING = "Saved memory (from huiyi)"


def hooks_config(home: Path, harness: str) -> dict[str, Any]:
    """The hooks table both clients read: one command per event, huiyi's environment inline."""

    def command(event: str) -> str:
        env = [f"{key}={value}" for key, value in huiyi_env(home).items()]
        argv = ["env", *env, sys.executable, "-m", "huiyi", "hook", harness, event]
        return " ".join(shlex.quote(arg) for arg in argv)

    return {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": command(event), "timeout": 60}]}]
            for event in EVENTS
        }
    }


def strings(value: object) -> Iterator[str]:
    """Every string in a request body, wherever the client put it."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def sent(requests: list[Recorded]) -> str:
    return "\n".join(s for request in requests for s in strings(request.body))


@dataclass
class Story:
    project: Path
    first: Run
    second: Run
    decision: str


def project_in(home: Path) -> Path:
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    with Huiyi(home=home / ".huiyi") as hy:
        hy.workspace_memory(project).add("memory", NOTE)
    return project


@pytest.fixture(scope="module")
def claude_story(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("claude-hooks")
    project = project_in(home)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(hooks_config(home, "claude-code")))
    decision = "我们决定用 zanzibar 方案回滚数据库迁移"
    first = run_claude(home, project, decision + "。", [Reply("好的。")], mcp=False)
    second = run_claude(
        home, project, "DJYHFS zanzibar 方案", [Reply("上次决定了 zanzibar 方案。")], mcp=False
    )
    for run in (first, second):
        assert run.returncode == 0 and run.proxy_attempts == [], run.describe()
    return Story(project, first, second, decision)


@pytest.fixture(scope="module")
def codex_story(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("codex-hooks")
    project = project_in(home)
    (home / ".codex").mkdir()
    (home / ".codex" / "hooks.json").write_text(json.dumps(hooks_config(home, "codex")))
    trust = ["--dangerously-bypass-hook-trust"]
    decision = "我们决定用 quokka 方案回滚数据库迁移"
    first = run_codex(
        home, project, decision + "。", [Reply("好的。")], mcp=False, extra_args=trust
    )
    second = run_codex(
        home,
        project,
        "DJYHFS quokka 方案",
        [Reply("上次决定了 quokka 方案。")],
        mcp=False,
        extra_args=trust,
    )
    for run in (first, second):
        assert run.returncode == 0 and run.proxy_attempts == [], run.describe()
    return Story(project, first, second, decision)


@pytest.fixture(params=["claude_story", "codex_story"])
def story(request: pytest.FixtureRequest) -> Story:
    found: Story = request.getfixturevalue(request.param)
    return found


def test_session_start_puts_the_memory_block_in_front_of_the_model(story: Story) -> None:
    for run in (story.first, story.second):
        text = sent(run.main_requests)
        assert HEADING in text and NOTE in text, run.describe()
        assert "MEMORY (your notes about this workspace) [" in text


def test_a_trigger_word_brings_the_earlier_session_into_the_turn(story: Story) -> None:
    text = sent(story.second.main_requests)
    notice = "The following is recalled history"
    assert notice in text, story.second.describe()
    recalled = text[text.index(notice) :]
    recalled = recalled[: recalled.index("<<<END_HUIYI_DATA_")]
    assert story.decision in recalled  # the first session's words, inside the envelope


def test_an_ordinary_prompt_gets_no_injection(story: Story) -> None:
    assert "The following is recalled history" not in sent(story.first.main_requests)


def test_what_the_hooks_injected_is_not_indexed_as_conversation(story: Story) -> None:
    home = story.first.home
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "HUIYI_EMBEDDER": "none"}
    with Huiyi(settings=Settings.from_env(env, home=home / "check-index")) as hy:
        hy.index()
        words = hy.search("make ship", workspace=story.project, layers=("lexical", "fuzzy"))
        decided = hy.search(story.decision, workspace=story.project, layers=("lexical",))
    assert words.hits == []  # the memory block came back in the logs, never as conversation
    assert decided.hits  # what the person typed is there
