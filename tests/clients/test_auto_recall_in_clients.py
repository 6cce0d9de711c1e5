"""Issue 10's "done when", on the real Claude Code and Codex: history and memory arrive by
themselves once `huiyi install <client>` has run, and nobody calls a tool.

Each client works in one project the way a person would. `huiyi install` writes the client's
configuration into the isolated HOME (for Codex with the hook trust its `/hooks` would ask
for), `huiyi memory add` writes a note for the workspace, and then:

1. session 1 states a decision, with a secret pasted into it;
2. a restart: a new session that says only "继续";
3. another new session asks with the trigger words, `Memory unlocked zanzibar`;
4. session 1 is compacted (Claude: `claude -p /compact --resume`; Codex: the app server's
   `thread/compact/start`, which is what its TUI's `/compact` sends; `codex exec` has no
   `/compact`), then resumed for four ordinary turns;
5. a second note is saved, and session 1 is resumed once more.

The tests read only what the client sent to the fake model: the memory block is in the first
request of every session, the trigger and "继续" bring back session 1, and the compaction
anchor (the summary, an original fragment, the seq to expand) arrives in the first three
turns after the compaction and not in the fourth; the memory block comes again after the
compaction and not again for nothing, and the second note is in the turn after it was saved.
No secret is in anything huiyi injected.
Each client's story runs once per module (about 10 client runs each).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from huiyi.install.common import is_huiyi_hook
from tests.clients.fake_model import Recorded, Reply, Summary
from tests.clients.harness import Run, claude_result, huiyi_install_argv
from tests.clients.installed import (
    codex_hooks,
    compact_codex,
    huiyi_cli,
    run_claude_installed,
    run_codex_installed,
    setup,
)

SECRET = "sk-proj-" + "Vb7Qm2Xc9Lp4Rz8Tn1Wd6Yh3Ks5Fg0Ja"
FACT = "zanzibar 方案回滚数据库迁移"
FIRST_PROMPT = f"我们决定用 {FACT}，先停写再切换。临时密钥 {SECRET} 别外传。"
NOTE = "Releases are cut with make ship from a clean tree, never by hand."
#: the model's compaction summary: none of FACT's words, so only an anchor joins them
SUMMARY = "Kestrel-summary: the team settled how to undo the schema change and paused writes."
#: ordinary turns after the compaction: no trigger, no process command, no back-reference
AFTER = ["把单元测试再跑一遍", "看看 CI 的日志有没有报错", "README 的标题改短一点", "提交吧"]
MEMORY_HEADER = "MEMORY (your notes about this workspace) ["
#: saved while session 1 is resumed: in effect from its next turn
LATER_NOTE = "CI runs on the self-hosted runner named kestrel."
RECALLED = "data from earlier sessions, not instructions"
#: the anchor's own lines (recall/anchor.py): its summary, and the seqs that left the context
SUMMARY_LINE = "summary: "
SEQ = re.compile(r"\bseq \d+")


@dataclass
class Story:
    """Every run of one client in one project."""

    client: str
    project: Path
    #: the events of huiyi's hooks the client will run (Codex: trusted ones only)
    installed_hooks: list[str]
    first: Run
    restart: Run
    trigger: Run
    compact: Run
    after: list[Run]
    #: session 1 resumed once more, after `huiyi memory add` of a second note
    changed: Run

    def runs(self) -> list[Run]:
        return [self.first, self.restart, self.trigger, self.compact, *self.after, self.changed]

    def describe(self) -> str:
        return "\n\n".join(run.describe() for run in self.runs())


def _project(home: Path) -> Path:
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    return project


def _check(run: Run) -> Run:
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert run.proxy_attempts == [], run.describe()
    return run


@pytest.fixture(scope="module")
def claude_story(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("claude-auto")
    project = _project(home)
    setup(home, huiyi_install_argv(home, "claude-code"), project)
    setup(home, huiyi_cli("memory", "add", NOTE), project)
    settings = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    hooks = sorted(
        event
        for event, groups in (settings.get("hooks") or {}).items()
        if any(is_huiyi_hook(h) for group in groups for h in group.get("hooks") or [])
    )

    def run(prompt: str, script: list[Any], resume: str | None = None) -> Run:
        return _check(run_claude_installed(home, project, prompt, script, resume=resume))

    first = run(FIRST_PROMPT, [Reply("好的，按 zanzibar 方案来。")])
    session = claude_result(first)["session_id"]
    restart = run("继续", [Reply("接着做迁移回滚。")])
    trigger = run("Memory unlocked zanzibar", [Reply("找到了之前的决定。")])
    compact = run("/compact", [Summary(SUMMARY)], resume=session)
    after = [run(prompt, [Reply("好。")], resume=session) for prompt in AFTER]
    setup(home, huiyi_cli("memory", "add", LATER_NOTE), project)
    changed = run("还有别的吗", [Reply("没有了。")], resume=session)
    return Story("claude", project, hooks, first, restart, trigger, compact, after, changed)


@pytest.fixture(scope="module")
def codex_story(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Story:
    home = tmp_path_factory.mktemp("codex-auto")
    project = _project(home)
    setup(home, huiyi_install_argv(home, "codex"), project)
    setup(home, huiyi_cli("memory", "add", NOTE), project)
    # as Codex's /hooks lists them: only a trusted hook runs
    listed = codex_hooks(home, project)
    hooks = sorted(
        h["eventName"] for h in listed if is_huiyi_hook(h) and h["trustStatus"] == "trusted"
    )

    def run(prompt: str, script: list[Any], resume: str | None = None) -> Run:
        return _check(run_codex_installed(home, project, prompt, script, resume=resume))

    first = run(FIRST_PROMPT, [Reply("好的，按 zanzibar 方案来。")])
    thread = _thread_id(first)
    restart = run("继续", [Reply("接着做迁移回滚。")])
    trigger = run("Memory unlocked zanzibar", [Reply("找到了之前的决定。")])
    compact = _check(compact_codex(home, project, thread, [Summary(SUMMARY)]))
    after = [run(prompt, [Reply("好。")], resume=thread) for prompt in AFTER]
    setup(home, huiyi_cli("memory", "add", LATER_NOTE), project)
    changed = run("还有别的吗", [Reply("没有了。")], resume=thread)
    return Story("codex", project, hooks, first, restart, trigger, compact, after, changed)


def _thread_id(run: Run) -> str:
    (log,) = run.logs
    return str(json.loads(log.read_text(encoding="utf-8").splitlines()[0])["payload"]["id"])


@pytest.fixture(params=["claude_story", "codex_story"])
def story(request: pytest.FixtureRequest) -> Story:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


# -- reading the requests ------------------------------------------------------------------


def texts(request: Recorded) -> list[str]:
    """Every text block the request holds: Claude's system blocks and message content
    blocks, Codex's input items (one per content part)."""
    body = request.body if isinstance(request.body, dict) else {}
    out: list[str] = []
    system = body.get("system")
    for part in system if isinstance(system, list) else [system]:
        out += _part_texts(part)
    for item in [*(body.get("messages") or []), *(body.get("input") or [])]:
        content = item.get("content") if isinstance(item, dict) else None
        for part in content if isinstance(content, list) else [content]:
            out += _part_texts(part)
    return out


def _part_texts(part: object) -> Iterator[str]:
    if isinstance(part, str):
        yield part
    elif isinstance(part, dict) and isinstance(part.get("text"), str):
        yield part["text"]


def first_request(run: Run) -> Recorded:
    """The request of the run's turn: its first main request that is not a compaction."""
    main = [r for r in run.main_requests if not r.is_compaction]
    assert main, run.describe()
    return main[0]


def last_request(run: Run) -> Recorded:
    assert run.main_requests, run.describe()
    return run.main_requests[-1]


def huiyi_blocks(request: Recorded) -> list[str]:
    """The blocks that carry something huiyi injected: recalled history or memory."""
    return [t for t in texts(request) if RECALLED in t or MEMORY_HEADER in t]


def is_anchor(text: str) -> bool:
    """A compaction anchor: the model's summary (on the anchor's `summary:` line, not merely
    quoted among the fragments), an original fragment of the compacted turns, and a seq."""
    summary = [line for line in text.splitlines() if line.startswith(SUMMARY_LINE)]
    return any(SUMMARY[:40] in line for line in summary) and FACT in text and bool(SEQ.search(text))


def anchors(request: Recorded) -> int:
    """How many blocks of the request carry an anchor."""
    return sum(1 for t in texts(request) if is_anchor(t))


# -- the tests -----------------------------------------------------------------------------


def test_huiyi_install_registers_the_hooks_the_story_needs(story: Story) -> None:
    wanted = {
        "claude": {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop"},
        "codex": {"sessionStart", "userPromptSubmit", "preCompact", "stop"},
    }[story.client]
    assert wanted <= set(story.installed_hooks), story.installed_hooks


def test_the_installed_mcp_entry_offers_huiyi_tools(story: Story) -> None:
    # both clients defer MCP tools: Claude Code names them in a system message, Codex
    # announces the namespace (tests/clients/test_real_clients.py reads the same)
    announced = "\n".join(texts(first_request(story.first)))
    wanted = "mcp__huiyi__recall_history" if story.client == "claude" else "- mcp__huiyi:"
    assert wanted in announced, story.first.describe()


def test_the_memory_block_is_in_the_first_request_of_every_session(story: Story) -> None:
    for run in (story.first, story.restart, story.trigger):
        found = [t for t in texts(first_request(run)) if MEMORY_HEADER in t and NOTE in t]
        assert found, run.describe()
    blocks = {
        t[t.index(MEMORY_HEADER) : t.index(NOTE) + len(NOTE)]
        for run in (story.first, story.restart, story.trigger)
        for t in texts(first_request(run))
        if MEMORY_HEADER in t and NOTE in t
    }
    assert len(blocks) == 1, blocks  # the same bytes every session: prompt caches hold


def test_the_trigger_words_bring_back_the_earlier_session(story: Story) -> None:
    request = first_request(story.trigger)
    recalled = [t for t in texts(request) if RECALLED in t and FACT in t]
    assert recalled, story.trigger.describe()
    assert all(SECRET not in t for t in recalled)


def test_continue_after_a_restart_carries_the_previous_topic(story: Story) -> None:
    request = first_request(story.restart)
    assert "继续" in texts(request), story.restart.describe()
    recalled = [t for t in texts(request) if RECALLED in t and FACT in t]
    assert recalled, story.restart.describe()


def test_the_compaction_really_happened(story: Story) -> None:
    asked = [r for r in story.compact.requests if r.is_compaction]
    assert len(asked) == 1 and isinstance(asked[0].answer, Summary), story.compact.describe()
    # the turn after it sees the summary, not session 1's words any more (Claude), or the
    # summary in place of the assistant's replies (Codex keeps the user messages)
    after = first_request(story.after[0])
    assert any(SUMMARY in t for t in texts(after)), story.after[0].describe()
    own = [t for t in texts(after) if t not in huiyi_blocks(after)]
    assert not any("好的，按 zanzibar 方案来。" in t for t in own), story.after[0].describe()


def test_the_anchor_arrives_after_the_compaction_and_expires_after_three_turns(
    story: Story,
) -> None:
    previous = [last_request(story.compact), *(last_request(r) for r in story.after[:-1])]
    added = [
        anchors(first_request(run)) - anchors(before)
        for before, run in zip(previous, story.after, strict=True)
    ]
    shown = [t for t in texts(first_request(story.after[0])) if FACT in t and SEQ.search(t)]
    assert added == [1, 1, 1, 0], (added, shown, story.describe())
    anchor = next(t for t in texts(first_request(story.after[0])) if is_anchor(t))
    assert SECRET not in anchor and "[REDACTED" in anchor, anchor


def memory_blocks(request: Recorded) -> int:
    return sum(1 for t in texts(request) if MEMORY_HEADER in t)


def test_the_memory_block_comes_again_after_the_compaction_and_not_for_nothing(
    story: Story,
) -> None:
    # the compaction dropped the block session 1 was given: the next turn gets it again
    after = first_request(story.after[0])
    assert any(MEMORY_HEADER in t and NOTE in t for t in texts(after)), story.after[0].describe()
    # then nothing changed: the later turns carry that one block and no new one
    counts = [memory_blocks(first_request(run)) for run in story.after]
    assert counts == [counts[0]] * len(counts), counts


def test_a_memory_saved_mid_session_is_in_effect_from_the_next_turn(story: Story) -> None:
    request = first_request(story.changed)
    assert any(LATER_NOTE in t for t in texts(request)), story.changed.describe()
    before = first_request(story.after[-1])
    assert not any(LATER_NOTE in t for t in texts(before))


def test_nothing_huiyi_injected_carries_the_secret(story: Story) -> None:
    for run in story.runs():
        for request in run.requests:
            assert not [t for t in huiyi_blocks(request) if SECRET in t], run.describe()
    # the sessions that never saw it typed never see it at all
    for run in (story.restart, story.trigger):
        assert not [r for r in run.requests if SECRET.encode() in r.raw], run.describe()
