"""Logs a real DSH wrote (tests/fixtures/dsh/), indexed the normal way and checked event by event.

The fixtures come from DSH 0.1.0-rc.8 run headless against the fake DeepSeek server with huiyi
connected as an MCP server (see tests/fixtures/dsh/README.md and make_fixtures.py): session
NOTE is a one-line note, session TASK reads two files with tools, is compacted when the fake
server refuses a request as over its context window, and then calls huiyi three times.

At the end: the same compaction shape built with tests/builders/dsh.py, for the recall
skeleton (what compaction removed, with each call's name and target, and counts that add up).
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.harnesses.dsh.caller import dsh_caller, pending_tool_calls
from huiyi.harnesses.dsh.frames import ZstdFrames
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.harnesses.pending import ToolCall
from huiyi.model import Event, Kind, Surface
from huiyi.recall.scope import CallerContext
from huiyi.recall.tools import Recall
from huiyi.sources.base import Cursor
from huiyi.text.toolcalls import split_tool_calls
from tests.builders import dsh as b

VERSION = "0.1.0-rc.8"
FIXTURE = Path(__file__).parent / "fixtures" / "dsh" / VERSION
CWD = "/tmp/huiyi-dsh/acme"  # the workspace of both runs (no git repository here: the cwd)
PROJECT = "--tmp-huiyi-dsh-acme--"
NOTE = "session-b7816b7a-9a8e-4283-821a-3625528d15db"
TASK = "session-cf0ac94a-e4a0-4244-9d00-c36349d3c36b"

#: records without conversation DSH wrote in every session: ignored, never counted as bad
ORDINARY = {"permission/preset", "sandbox/mode", "approval/policy", "session/title-llm-request"}


def log_path(home: Path, session: str) -> Path:
    return home / "sessions" / PROJECT / session / "session.jsonl.zstd"


def records(path: Path) -> Iterator[tuple[dict[str, object], int]]:
    """Every line of a `.zstd` log, with the end offset of the frame holding it."""
    with path.open("rb") as file:
        for lines, end in ZstdFrames(file, 0, Counter()):
            for line in lines:
                assert line is not None
                yield json.loads(line), end


def read_events(session: str) -> dict[int, Event]:
    result = DshReader(FIXTURE).read(log_path(FIXTURE, session), Cursor())
    assert result.skipped == {}
    assert result.refused is None
    return {event.seq: event for chunk in result.chunks for event in chunk.events}


@pytest.fixture
def dsh_home(isolated_home: Path) -> Path:
    home = isolated_home / ".dsh"
    shutil.copytree(FIXTURE / "sessions", home / "sessions")
    return home


@pytest.fixture
def hy(dsh_home: Path) -> Iterator[Huiyi]:
    with Huiyi() as h:
        report = h.index()
        dsh = report.sources["dsh"]
        assert (dsh.files, len(dsh.sessions), dsh.errors) == (2, 2, [])
        assert dict(dsh.skipped) == {}  # no ordinary record counted as a bad line
        yield h


# -- what DSH wrote ---------------------------------------------------------------------------


def test_the_fixtures_hold_dsh_s_ordinary_records_and_no_bad_line() -> None:
    for session in (NOTE, TASK):
        types = {str(obj["type"]) for obj, _ in records(log_path(FIXTURE, session))}
        assert types >= ORDINARY | {"session", "user/message", "assistant/message", "turn/end"}
        assert read_events(session)  # and the reader skipped nothing (asserted inside)


def test_note_session_event_by_event() -> None:
    got = read_events(NOTE)
    assert {seq: (e.kind, e.surface, e.injected) for seq, e in got.items()} == {
        7: (Kind.USER, Surface.CURRENT, False),  # the prompt
        8: (Kind.USER, Surface.CURRENT, True),  # DSH's runtime-context snapshot
        9: (Kind.TITLE, Surface.LOG_ONLY, False),  # fallback title
        23: (Kind.ASSISTANT, Surface.CURRENT, False),
        26: (Kind.TITLE, Surface.LOG_ONLY, False),  # the LLM title, after the turn ended
    }
    prompt = "记住：生产环境部署用 `make ship`，回滚用 `make rollback`。"
    assert got[7].text == prompt + "Remember this for later."
    assert got[8].text.startswith("Current runtime context.")
    reply = "好的，记住了：部署用 `make ship`，回滚用 `make rollback`。"
    assert got[23].text == reply + "Noted for later."
    assert "acknowledge" not in got[23].text  # the reasoning block is not indexed


def test_task_session_event_by_event() -> None:
    got = read_events(TASK)
    sh, current, log = Surface.SHADOWED, Surface.CURRENT, Surface.LOG_ONLY
    recall, listing = "mcp__huiyi__recall_history", "mcp__huiyi__session_list"
    assert {seq: (e.kind, e.surface, e.injected, e.tool_name) for seq, e in got.items()} == {
        7: (Kind.USER, sh, False, None),
        8: (Kind.USER, sh, True, None),
        9: (Kind.TITLE, log, False, None),
        27: (Kind.ASSISTANT, sh, False, None),  # text + a bash call block
        28: (Kind.TOOL_CALL, log, False, "bash"),  # DSH's own record of it: not shadowed
        29: (Kind.TITLE, log, False, None),
        30: (Kind.TOOL_RESULT, sh, False, "bash"),
        44: (Kind.ASSISTANT, sh, False, None),
        45: (Kind.TOOL_CALL, log, False, "bash"),
        46: (Kind.TOOL_RESULT, sh, False, "bash"),
        55: (Kind.TOOL_CALL, current, False, "read"),  # the newest unit stays on the surface
        56: (Kind.TOOL_CALL, log, False, "read"),
        57: (Kind.TOOL_RESULT, current, False, "read"),
        62: (Kind.SUMMARY, log, False, None),
        63: (Kind.USER, current, True, None),  # the checkpoint that replaced 7..46
        71: (Kind.TOOL_CALL, current, False, recall),
        72: (Kind.TOOL_CALL, log, False, recall),
        73: (Kind.TOOL_RESULT, current, False, recall),
        76: (Kind.USER, current, True, None),
        83: (Kind.TOOL_CALL, current, False, recall),
        84: (Kind.TOOL_CALL, log, False, recall),
        85: (Kind.TOOL_RESULT, current, False, recall),
        94: (Kind.TOOL_CALL, current, False, listing),
        95: (Kind.TOOL_CALL, log, False, listing),
        96: (Kind.TOOL_RESULT, current, False, listing),
        106: (Kind.ASSISTANT, current, False, None),
    }
    assert got[7].text == "检查 deploy.sh 为什么失败，然后告诉我之前定的部署命令。"
    assert split_tool_calls(got[27].text) == (
        "先看一下部署脚本。Let me read deploy.sh first.",
        [("bash", '{"command": "cat deploy.sh", "description": "Show the deploy script"}')],
    )
    assert split_tool_calls(got[44].text)[1][0][0] == "bash"
    assert got[30].text.startswith("#!/bin/sh\n# Production deploy.")
    assert got[55].text == 'read {"file_path": "logs/deploy.log", "offset": 50, "limit": 11}'
    assert got[62].text.startswith("## Primary Request and Intent\n- 检查 deploy.sh 为什么失败")
    assert "<compacted-summary>" in got[63].text
    assert got[71].text == "mcp__huiyi__recall_history {}"
    assert got[73].text.startswith("The following is recalled history")
    assert "[bash cat deploy.sh → #!/bin/sh (+3 lines)]" in got[73].text
    assert "生产部署与回滚命令" in got[85].text  # the note session, found by the query
    assert got[106].text.startswith("部署失败是因为迁移 0042_add_index 超时")


def test_the_compaction_shadowed_what_dsh_says_it_shadowed() -> None:
    summary = next(
        obj["data"]
        for obj, _ in records(log_path(FIXTURE, TASK))
        if obj["type"] == "compaction/summary"
    )
    assert isinstance(summary, dict)
    shadowed = {seq for seq, e in read_events(TASK).items() if e.surface is Surface.SHADOWED}
    assert shadowed == set(summary["shadowedSeqs"]) == {7, 8, 27, 30, 44, 46}


# -- through the index ----------------------------------------------------------------------


def test_the_llm_title_replaces_the_fallback_title(hy: Huiyi) -> None:
    assert hy.session(TASK).title == "排查部署失败"
    assert hy.session(NOTE).title == "生产部署与回滚命令"
    assert {s.id: s.workspace for s in hy.sessions(workspace=CWD)} == {TASK: CWD, NOTE: CWD}


def test_the_index_holds_the_reader_s_events(hy: Huiyi) -> None:
    expected = {
        seq: (e.kind, e.surface, e.injected)
        for seq, e in read_events(TASK).items()
        if e.kind is not Kind.TITLE
    }
    indexed = {e.seq: (e.kind, e.surface, e.injected) for e in hy.read(TASK, from_seq=0)}
    assert indexed == {seq: v for seq, v in expected.items() if v[0] is not Kind.OTHER}


def test_recall_without_query_shows_each_compacted_call_with_its_target(hy: Huiyi) -> None:
    """DSH shadowed the assistant messages that hold the call blocks, not its `tool/call`
    records: the skeleton takes name and target from the messages, and its counts add up."""
    out = hy.recall(CallerContext(CWD, TASK)).history().text
    body = out.split("\n\n")[1].splitlines()
    assert body == [
        "U#7 检查 deploy.sh 为什么失败，然后告诉我之前定的部署命令。",
        "A#27 先看一下部署脚本。Let me read deploy.sh first. "
        "[bash cat deploy.sh → #!/bin/sh (+3 lines)]",
        "A#44 脚本调用了 `make ship ENV=production`。Now the deploy log. "
        "[bash cat logs/deploy.log → "
        "2026-11-02T01:15:00Z make ship: step 01 ok (artifact build-… (+59 lines)]",
    ]
    assert "6 compacted events" in out
    assert (
        "shown: 3 lines for 6 compacted events: 2 tool results folded into their calls, "
        "1 host-injected message left out"
    ) in out
    assert "R#30" not in out and "Current runtime context" not in out


# -- caller binding ---------------------------------------------------------------------------


def _log_at_call(dsh_home: Path, call_id: str) -> Path:
    """Cut the task log right after the frame holding the `tool/call` of `call_id`: the log as
    it was while DSH ran that tool (its checkpoint makes the call durable first)."""
    path = log_path(dsh_home, TASK)
    found = [
        (obj, end)
        for obj, end in records(path)
        if obj["type"] == "tool/call" and isinstance(obj["data"], dict)
        if obj["data"].get("callId") == call_id
    ]
    assert len(found) == 1
    end = found[0][1]
    last = [obj for obj, frame_end in records(path) if frame_end == end][-1]
    assert last == found[0][0]  # the call ends its frame: nothing was written after it yet
    data = path.read_bytes()
    assert end < len(data)
    path.write_bytes(data[:end])
    return path


@pytest.mark.parametrize(
    ("call_id", "tool", "arguments"),
    [
        ("call_recall_compacted", "recall_history", {}),
        ("call_recall_q", "recall_history", {"query": "make ship"}),
        ("call_session_list", "session_list", {"limit": 5}),
    ],
)
def test_the_huiyi_call_dsh_made_is_bound_to_its_session(
    dsh_home: Path, call_id: str, tool: str, arguments: dict[str, object]
) -> None:
    path = _log_at_call(dsh_home, call_id)
    raw = json.dumps(arguments)
    assert pending_tool_calls(path) == [(f"mcp__huiyi__{tool}", raw)]
    now = max(os.stat(p).st_mtime for p in (path, log_path(dsh_home, NOTE)))

    caller = dsh_caller(ToolCall("huiyi", tool, arguments), dsh_home, now=now)
    assert caller is not None
    assert (caller.session_id, caller.workspace) == (TASK, CWD)
    other = {"query": "something else"} if tool == "recall_history" else {"limit": 6}
    assert dsh_caller(ToolCall("huiyi", tool, other), dsh_home, now=now) is None
    assert dsh_caller(ToolCall("elsewhere", tool, arguments), dsh_home, now=now) is None


def test_once_answered_the_call_binds_no_session(dsh_home: Path) -> None:
    now = os.stat(log_path(dsh_home, TASK)).st_mtime
    assert pending_tool_calls(log_path(dsh_home, TASK)) == []
    assert dsh_caller(ToolCall("huiyi", "session_list", {"limit": 5}), dsh_home, now=now) is None


# -- the same shape, built ----------------------------------------------------------------------


def built_compaction(home: Path, cwd: str) -> None:
    """As DSH 0.1.0-rc.8 writes it (formats/dsh.md, "Measured"): a prompt, an injected
    runtime context, a message with text and a bash call, one with two read calls only, their
    `tool/call` records and results; an overflow compaction shadows the messages and results
    but not the `tool/call` records."""
    bash = json.dumps({"command": "alembic upgrade head", "description": "Run migrations"})
    read_a = json.dumps({"file_path": "migrations/0042_add_index.py"})
    read_b = json.dumps({"file_path": "alembic.ini"})
    b.write_session(
        home / ".dsh",
        cwd,
        [
            [
                b.user(1, "迁移为什么失败？"),
                b.user(2, "Current runtime context. ...", source="plugin"),
                b.assistant(3, "先跑一下迁移。Running it.", calls=[("c1", "bash", bash)]),
                b.tool_call(4, "bash", bash, call_id="c1"),
                b.tool_result(5, "c1", "ERROR: lock timeout\nrolled back"),
                b.assistant(6, calls=[("c2", "read", read_a), ("c3", "read", read_b)]),
                b.tool_call(7, "read", read_a, call_id="c2"),
                b.tool_call(8, "read", read_b, call_id="c3"),
                b.tool_result(9, "c2", "op.create_index(...)"),
                b.tool_result(10, "c3", "[alembic]\nscript_location = migrations"),
                b.assistant(11, "The index build takes the lock.\nMore below."),
            ],
            b.compaction(12, "Migration 0042 fails on a lock timeout.", start=1, end=11),
            [b.user(16, "继续")],
        ],
        session_id=TASK,
    )


def test_built_compaction_skeleton_names_every_call_and_counts_add_up(
    isolated_home: Path,
) -> None:
    cwd = str(isolated_home / "acme")
    built_compaction(isolated_home, cwd)
    with Huiyi() as h:
        h.index()
        out = h.recall(CallerContext(cwd, TASK)).history().text
    body = out.split("\n\n")[1].splitlines()
    assert body == [
        "U#1 迁移为什么失败？",
        "A#3 先跑一下迁移。Running it. [bash alembic upgrade head → ERROR: lock timeout (+1 line)]",
        "T#6 read migrations/0042_add_index.py → op.create_index(...); "
        "read alembic.ini → [alembic] (+1 line)",
        "A#11 The index build takes the lock.",
    ]
    assert "8 compacted events" in out
    assert (
        "shown: 4 lines for 8 compacted events: 3 tool results folded into their calls, "
        "1 host-injected message left out"
    ) in out


def test_built_compaction_folded_by_user_message_still_adds_up(isolated_home: Path) -> None:
    cwd = str(isolated_home / "acme")
    built_compaction(isolated_home, cwd)
    with Huiyi() as h:
        h.index()
        out = Recall(h.store, CallerContext(cwd, TASK), max_inject_chars=460).history().text
    assert "U#1 迁移为什么失败？  (+3 steps)" in out
    assert (
        "shown: folded by user message: 1 user message for 8 compacted events: "
        "3 steps and 3 tool results folded into their user messages, "
        "1 host-injected message left out"
    ) in out
