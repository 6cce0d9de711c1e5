"""A real DSH with huiyi connected by `huiyi install dsh` alone (tests/fixtures/dsh/<version>/
installed/, made by make_install_fixtures.py): what its hooks bridge and command registry did.

Three headless sessions ran in DSH's bubblewrap sandbox: a greeting, a note, and a task before
whose first step `/recall make check` and a bare `/recall` went through DSH's own command
registry. The workspace memory holds a trigger word. Read here: every request DSH sent to the
model, what each run printed, what the registry returned, huiyi's record of the hooks that ran
and the session logs, indexed the normal way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from huiyi.config import Settings
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.model import Kind
from huiyi.recall.triggers import find_trigger
from huiyi.sources.base import Cursor
from tests.fixtures.dsh.make_install_fixtures import (
    GREETING_REPLY,
    NOTE,
    NOTE_REPLY,
    TASK,
    TASK_REPLY,
    WORKSPACE_NOTE,
)

INSTALLED = Path(__file__).parent / "fixtures" / "dsh" / "0.1.0-rc.8" / "installed"
HEADING = "Saved memory (from huiyi)"
RECALLED = "The following is recalled history"
TASKS = {1: "你好", 2: NOTE, 3: TASK}


def load(name: str) -> Any:
    return json.loads((INSTALLED / name).read_text(encoding="utf-8"))


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return out


def loop_requests(session: int) -> list[dict[str, Any]]:
    return [r for r in load("requests.json") if r["session"] == session and r["purpose"] == "loop"]


@pytest.mark.parametrize("session", [1, 2, 3])
def test_the_memory_block_is_in_the_first_request_and_no_request_follows(session: int) -> None:
    (only,) = loop_requests(session)  # DSH sent one loop request: none ends with the memory
    sent = texts(only["messages"])
    assert sent.count(TASKS[session]) == 1
    blocks = [t for t in sent if t.startswith(HEADING)]
    assert len(blocks) == 1  # once: not again from SessionStart, not as a digest besides
    assert WORKSPACE_NOTE in blocks[0]
    # the task comes before the block, which the bridge appends to the step's messages
    assert sent.index(TASKS[session]) < sent.index(blocks[0])


def test_each_run_printed_the_reply_to_its_task_not_to_the_memory() -> None:
    assert load("printed.json") == [f"{GREETING_REPLY}\n", f"{NOTE_REPLY}\n", f"{TASK_REPLY}\n"]


def test_a_trigger_word_inside_the_memory_block_recalls_nothing() -> None:
    settings = Settings.from_env(env={})
    assert find_trigger(WORKSPACE_NOTE, settings.triggers) is not None  # typed, it would
    for request in load("requests.json"):
        assert not any(RECALLED in t for t in texts(request["messages"]))


def test_recall_typed_in_dsh_returns_what_the_tool_returns() -> None:
    found, bare = load("commands.json")
    assert found["line"] == "/recall make check"
    assert "recall" in found["listed"]
    assert found["result"]["kind"] == "success"
    text = found["result"]["text"]
    assert text.startswith(RECALLED)
    assert 'recall_history: 1 result for "make check"' in text
    assert "部署前先跑 make check" in text  # session 2, indexed by its Stop hook
    assert bare["result"] == {
        "kind": "error",
        "text": "Usage: /recall WORDS (search this workspace's history with huiyi, "
        "e.g. /recall 部署脚本)",
    }


def test_hooks_in_the_sandbox_are_recorded_as_having_run() -> None:
    ran = load("hooks-ran.json")["dsh"]
    assert ran["UserPromptSubmit"]["answered"] == "context"
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= set(ran)


def test_the_logs_index_the_memory_block_as_huiyis_and_the_prompts_as_the_users() -> None:
    reader = DshReader(INSTALLED)
    logs = sorted((INSTALLED / "sessions").glob("*/*/session.jsonl.zstd"))
    assert len(logs) == 3
    prompts: list[str] = []
    for log in logs:
        result = reader.read(log, Cursor())
        assert result.skipped == {}  # hook and command records are no bad lines
        for chunk in result.chunks:
            for event in chunk.events:
                if event.kind == Kind.USER and not event.injected:
                    prompts.append(event.text)
                if event.text.startswith(HEADING):
                    assert event.injected
    assert sorted(prompts) == sorted(TASKS.values())
