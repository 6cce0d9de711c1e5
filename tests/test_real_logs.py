"""Logs written by the real clients, indexed the normal way and checked event by event.

`tests/clients/fixtures/` holds a transcript written by the real Claude Code 2.1.332 and a
rollout written by the real Codex 0.171.0 (run headless against a fake model, with huiyi
connected over MCP and one scripted `recall_history` call; `python tests/clients/harness.py
fixtures` records them again). Each is put where its client keeps it under a temporary HOME and
indexed by `Huiyi().index()`, as a user's `huiyi index` would.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.model import Event, Kind
from huiyi.recall.scope import CallerContext
from tests.builders.claude import encode_cwd

FIXTURES = Path(__file__).parent / "clients" / "fixtures"
CLAUDE_LOG = FIXTURES / "claude-code-2.1.332-transcript.jsonl"
CODEX_LOG = FIXTURES / "codex-0.171.0-rollout.jsonl"
PROMPT = "上周我们为什么回滚了数据库迁移? why did we roll back the migration?"
REPLY = "没有找到更早的记录。No earlier session mentions it."
RECALL = "mcp__huiyi__recall_history"
#: words only huiyi's own recall answer holds (its footer and notes), never the conversation
ONLY_IN_THE_RECALL_ANSWER = ("embedded", "recall_expand")


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def install_claude(home: Path) -> tuple[str, str]:
    """The transcript where Claude Code keeps it; returns (session id, cwd)."""
    first = next(r for r in records(CLAUDE_LOG) if r.get("type") == "user")
    session_id, cwd = first["sessionId"], first["cwd"]
    folder = home / ".claude" / "projects" / encode_cwd(cwd)
    folder.mkdir(parents=True)
    shutil.copyfile(CLAUDE_LOG, folder / f"{session_id}.jsonl")
    return session_id, cwd


def install_codex(home: Path) -> tuple[str, str]:
    """The rollout where Codex keeps it; returns (session id, cwd)."""
    meta = records(CODEX_LOG)[0]["payload"]
    started = datetime.fromisoformat(meta["timestamp"])
    folder = home / ".codex" / "sessions" / started.strftime("%Y/%m/%d")
    folder.mkdir(parents=True)
    name = f"rollout-{started.strftime('%Y-%m-%dT%H-%M-%S')}-{meta['id']}.jsonl"
    shutil.copyfile(CODEX_LOG, folder / name)
    return meta["id"], meta["cwd"]


def shape(events: list[Event]) -> list[tuple[int, Kind, str, bool, str | None]]:
    return [(e.seq, e.kind, e.role, e.injected, e.tool_name) for e in events]


def the_same_title_everywhere(hy: Huiyi, session_id: str, cwd: str) -> str:
    """The session's title as `huiyi sessions`, `huiyi show`, a search hit and the recall
    tools show it; asserts they agree and returns it."""
    [session] = [s for s in hy.sessions(all_workspaces=True) if s.id == session_id]
    title = session.title
    assert hy.session(session_id).title == title
    hits = hy.search("migration", all_workspaces=True, layers=("lexical",)).hits
    assert {h.title for h in hits if h.session_id == session_id} == {title}
    assert f"{title}  [{session.source}]" in _cli("show", session_id)
    assert title in _cli("sessions", "--all")
    assert title in hy.recall(CallerContext(cwd, "another-session")).session_list().text
    return title


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def indexed(isolated_home: Path) -> dict[str, tuple[str, str]]:
    claude = install_claude(isolated_home)
    codex = install_codex(isolated_home)
    with Huiyi() as hy:
        report = hy.index()
    # every line is understood: nothing skipped, nothing counted as unknown
    assert report.sources["claude"].files_read == report.sources["codex"].files_read == 1
    assert {name: dict(r.skipped) for name, r in report.sources.items()} == {
        "dsh": {},
        "claude": {},
        "codex": {},
    }
    return {"claude": claude, "codex": codex}


def test_claude_code_2_1_transcript_event_by_event(indexed: dict[str, tuple[str, str]]) -> None:
    session_id, cwd = indexed["claude"]
    with Huiyi() as hy:
        events = hy.read(session_id, from_seq=0)

        assert shape(events) == [
            (0, Kind.USER, "user", False, None),
            (1, Kind.TOOL_CALL, "assistant", False, "ToolSearch"),
            (2, Kind.TOOL_CALL, "assistant", False, RECALL),
            (3, Kind.TOOL_RESULT, "tool", False, RECALL),
            (4, Kind.ASSISTANT, "assistant", False, None),
        ]
        assert events[0].text == PROMPT
        assert events[1].text == 'ToolSearch {"query": "select:mcp__huiyi__recall_history"}'
        assert events[2].text == f'{RECALL} {{"query": "数据库 迁移 回滚"}}'
        assert events[3].text.startswith("The following is recalled history")
        assert events[4].text == REPLY
        assert all(e.surface == "current" for e in events)
        # no title record in a headless run: the first human message stands in, everywhere
        assert the_same_title_everywhere(hy, session_id, cwd) == PROMPT


def test_codex_0_171_rollout_event_by_event(indexed: dict[str, tuple[str, str]]) -> None:
    session_id, cwd = indexed["codex"]
    with Huiyi() as hy:
        events = hy.read(session_id, from_seq=0)

        assert shape(events) == [
            (0, Kind.USER, "developer", True, None),
            (1, Kind.USER, "user", True, None),
            (2, Kind.USER, "user", False, None),
            (3, Kind.TOOL_CALL, "assistant", False, RECALL),
            (4, Kind.TOOL_RESULT, "tool", False, RECALL),
            (5, Kind.ASSISTANT, "assistant", False, None),
        ]
        assert events[0].text.startswith("<skills_instructions>")
        assert events[1].text.startswith("<environment_context>")
        assert events[2].text == PROMPT
        assert events[3].text == f'{RECALL} {{"query": "数据库 迁移 回滚"}}'
        assert events[4].text.startswith("Wall time: ")
        assert "<<<HUIYI_DATA_" in events[4].text
        assert events[5].text == REPLY
        [session] = [s for s in hy.sessions(all_workspaces=True) if s.id == session_id]
        assert (session.cwd, session.user_count) == (cwd, 1)
        assert the_same_title_everywhere(hy, session_id, cwd) == PROMPT


def test_the_prompt_and_reply_are_found_and_huiyis_own_answers_are_not(
    indexed: dict[str, tuple[str, str]],
) -> None:
    both = {indexed["claude"][0], indexed["codex"][0]}
    with Huiyi() as hy:
        for query in ("roll back the migration", "earlier session mentions"):
            hits = hy.search(query, all_workspaces=True, layers=("lexical",)).hits
            assert {h.session_id for h in hits} == both
            assert {h.kind for h in hits} <= {Kind.USER, Kind.ASSISTANT}
        for word in ONLY_IN_THE_RECALL_ANSWER:
            assert hy.search(word, all_workspaces=True).hits == []
        # nor are huiyi's own calls (their arguments repeat the question's words)
        hits = hy.search("数据库 迁移 回滚", all_workspaces=True, limit=50).hits
        assert {h.kind for h in hits} <= {Kind.USER, Kind.ASSISTANT}
