"""Ask before recall with the real Claude Code and Codex, headless against the fake model.

Both declare the MCP `elicitation` capability in `initialize`. Headless, `claude -p` answers a
question with whatever its `Elicitation` command says (answer_elicitation.py), and with
"cancel" when none is configured; `codex exec` declines every question. Each run asks huiyi
twice in one reply (a search, then a read of the earlier session the search found) with
`HUIYI_ASK_BEFORE_RECALL=on`: the user is asked once, and the model gets the history only
after an accept. A workspace's earlier session is a Claude Code transcript the test writes.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from huiyi.harnesses.claude_code.caller import claude_prompt_id
from tests.builders import claude as cb
from tests.clients.fake_model import (
    Reply,
    ToolCall,
    ToolSearch,
    Turn,
    function_call_outputs,
    tool_result_text,
    tool_results,
)
from tests.clients.harness import Run, run_claude, run_codex

ANSWER = Path(__file__).resolve().parent / "answer_elicitation.py"
OLD = "5f0c2d1e-1111-4222-8333-444455556666"
ASKED = "does the lanternfig login test fail only on CI"
ANSWERED = "The lanternfig test binds fixed port 8080"
PROMPT = "上次 lanternfig 的测试为什么失败? why did the lanternfig test fail?"
ON = {"HUIYI_ASK_BEFORE_RECALL": "on"}


def earlier_session(home: Path, cwd: Path) -> None:
    """The workspace's earlier session, as Claude Code wrote it."""
    cb.write_transcript(
        home / ".claude",
        str(cwd),
        [cb.summary("Login test on CI"), cb.user(f"why {ASKED}?"), cb.assistant(ANSWERED)],
        session_id=OLD,
    )


def claude_run(tmp_path: Path, action: str | None) -> tuple[Run, list[dict[str, Any]]]:
    """One `claude -p` reply that searches and then reads; `action` is what the configured
    `Elicitation` command answers (None: no command). Returns the run and the questions."""
    home, log = tmp_path / "home", tmp_path / "questions.jsonl"
    cwd = home / "api"
    earlier_session(home, cwd)
    if action is not None:
        command = shlex.join([sys.executable, str(ANSWER), str(log), action])
        hooks = {
            "Elicitation": [
                {"matcher": "huiyi", "hooks": [{"type": "command", "command": command}]}
            ]
        }
        (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    script: list[Turn] = [
        ToolCall(
            "ToolSearch",
            {"query": "select:mcp__huiyi__recall_history,mcp__huiyi__session_read"},
            call_id="toolu_01search",
        ),
        ToolCall("mcp__huiyi__recall_history", {"query": "lanternfig"}, call_id="toolu_01first"),
        ToolCall("mcp__huiyi__session_read", {"sessionId": OLD}, call_id="toolu_01second"),
        Reply("done"),
    ]
    run = run_claude(home, cwd, PROMPT, script, huiyi_extra_env=ON)
    assert run.returncode == 0, run.describe()
    questions = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return run, questions


def claude_answers(run: Run) -> list[str]:
    results = {b["tool_use_id"]: b for b in tool_results(run.main_requests[-1:])}
    return [tool_result_text(results[ident]) for ident in ("toolu_01first", "toolu_01second")]


def test_claude_code_asks_once_per_reply_and_answers_after_accept(
    tmp_path: Path, claude_bin: Path
) -> None:
    run, questions = claude_run(tmp_path, "accept")
    (question,) = questions
    assert question["mcp_server_name"] == "huiyi"
    assert question["message"].startswith("huiyi wants to search the earlier sessions")
    assert '"lanternfig"' in question["message"]
    # both calls belong to the reply huiyi finds in the transcript: the prompt Claude Code
    # itself names when it asks
    dirs = [run.home / ".claude"]
    for tool_use in ("toolu_01first", "toolu_01second"):
        prompt = claude_prompt_id(tool_use, question["session_id"], dirs)
        assert prompt == question["prompt_id"]
    found, read = claude_answers(run)
    # the search found the earlier session; both of its messages hold the word, and BM25 (no
    # lengths kept) ranks them alike, so the first of them stands for the pair
    assert OLD in found and ASKED in found
    assert ASKED in read and ANSWERED in read


@pytest.mark.parametrize(
    ("action", "said"),
    [("decline", "the user declined"), (None, "the user dismissed the question")],
    ids=["declined", "no-answer-configured"],
)
def test_claude_code_without_consent_reads_nothing(
    tmp_path: Path, claude_bin: Path, action: str | None, said: str
) -> None:
    run, questions = claude_run(tmp_path, action)
    assert len(questions) == (1 if action else 0)
    for answer, tool in zip(claude_answers(run), ("recall_history", "session_read"), strict=True):
        assert answer.startswith(f"{tool}: {said}"), answer
        assert "lanternfig" not in answer and ANSWERED not in answer


def test_codex_exec_declines_and_reads_nothing(tmp_path: Path, codex_bin: Path) -> None:
    home = tmp_path / "home"
    cwd = home / "api"
    earlier_session(home, cwd)
    script: list[Turn] = [
        ToolSearch("huiyi recall history session read", call_id="call_search"),
        ToolCall(
            "recall_history", {"query": "lanternfig"}, namespace="mcp__huiyi", call_id="call_1"
        ),
        ToolCall("session_read", {"sessionId": OLD}, namespace="mcp__huiyi", call_id="call_2"),
        Reply("done"),
    ]
    run = run_codex(home, cwd, PROMPT, script, huiyi_extra_env=ON)
    assert run.returncode == 0, run.describe()
    outputs = {o["call_id"]: o["output"] for o in function_call_outputs(run.main_requests[-1:])}
    for ident, tool in (("call_1", "recall_history"), ("call_2", "session_read")):
        text = outputs[ident][1]["text"]
        assert text.startswith(f"{tool}: the user declined"), text
        assert "lanternfig" not in text and ANSWERED not in text
