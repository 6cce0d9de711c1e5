"""Finding the caller of an MCP tool call: each rule, in order, on logs in the real formats."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from huiyi.harnesses.claude_code.caller import HOW_PENDING as HOW_CLAUDE
from huiyi.harnesses.claude_code.caller import HOW_TOOL_USE as HOW_CLAUDE_ID
from huiyi.harnesses.claude_code.caller import claude_caller, claude_caller_by_id
from huiyi.harnesses.codex.caller import HOW as HOW_CODEX
from huiyi.harnesses.codex.caller import codex_caller
from huiyi.harnesses.dsh import caller as context
from huiyi.harnesses.dsh.caller import HOW as HOW_DSH
from huiyi.harnesses.dsh.caller import dsh_caller
from huiyi.harnesses.pending import MAX_AGE_SECONDS, ToolCall, same_arguments
from huiyi.policy.caller import HOW_CWD, HOW_ROOTS, CallerFinder, workspace_from_roots
from tests.builders import claude as cb
from tests.builders import codex as cx
from tests.builders import dsh as b

TOOL = "mcp__huiyi__recall_history"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project; sessions run in its `src` folder, so the workspace is the git root."""
    root = tmp_path / "acme"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


@pytest.fixture
def other(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    return root


def dsh_session(
    dsh_home: Path,
    cwd: Path | str,
    *,
    pending: Sequence[tuple[str, str]] = (),
    after: Sequence[dict[str, Any]] = (),
    session_id: str | None = None,
) -> str:
    """A DSH session whose last turn calls `pending` tools `(name, raw arguments)`."""
    calls = [(f"call-{n}", name, args) for n, (name, args) in enumerate(pending)]
    lines: list[b.Line] = [
        b.user(0, "where do deploys go?"),
        b.assistant(1, "Let me check.", calls=calls),
        *(b.tool_call(2 + n, name, args, call_id=cid) for n, (cid, name, args) in enumerate(calls)),
        *after,
    ]
    path = b.write_session(dsh_home, str(cwd), [lines], session_id=session_id)
    return path.parent.name


def finder(
    home: Path, cwd: Path, *, forced: str | None = None, forced_how: str = "HUIYI_WORKSPACE"
) -> CallerFinder:
    return CallerFinder(
        server="huiyi",
        dsh_home=home / ".dsh",
        claude_dirs=[home / ".claude"],
        cwd=str(cwd),
        forced=forced,
        forced_how=forced_how,
        codex_home=home / ".codex",
        claude_wait=0.0,
    )


# -- arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logged", "given", "same"),
    [
        ('{"query": "deploy", "limit": 5}', {"limit": 5, "query": "deploy"}, True),
        ('{ "limit":5,\n "query":"deploy" }', {"query": "deploy", "limit": 5}, True),
        ('{"query": "\\u56de\\u6eda"}', {"query": "回滚"}, True),
        ('{"query": "deploy", "limit": 5}', {"query": "deploy"}, False),
        ('{"limit": 5}', {"limit": 6}, False),
        ('{"limit": "5"}', {"limit": 5}, False),
        ("", {}, True),
        ("{}", None, True),
        ("", {"limit": 5}, False),
        ("{not json", {}, False),
        ({"limit": 5}, {"limit": 5}, True),
    ],
)
def test_arguments_are_compared_as_parsed_json(logged: object, given: Any, same: bool) -> None:
    assert same_arguments(logged, given) is same


# -- DSH ---------------------------------------------------------------------------------------


def test_the_dsh_session_with_the_pending_call_is_the_caller(
    isolated_home: Path, project: Path, other: Path
) -> None:
    dsh = isolated_home / ".dsh"
    caller = dsh_session(dsh, project / "src", pending=[(TOOL, '{"query": "deploy"}')])
    dsh_session(dsh, other, pending=[(TOOL, '{"query": "something else"}')])
    dsh_session(dsh, other)  # no pending call at all

    found = dsh_caller(ToolCall("huiyi", "recall_history", {"query": "deploy"}), dsh)

    assert found is not None
    assert (found.session_id, found.workspace, found.how) == (caller, str(project), HOW_DSH)


def test_a_parallel_call_still_finds_its_session(isolated_home: Path, project: Path) -> None:
    dsh = isolated_home / ".dsh"
    caller = dsh_session(
        dsh,
        project,
        pending=[(TOOL, '{"query": "deploy"}'), ("mcp__huiyi__session_list", "{}")],
    )

    found = dsh_caller(ToolCall("huiyi", "recall_history", {"query": "deploy"}), dsh)

    assert found is not None and found.session_id == caller


def test_two_sessions_pending_the_same_call_are_ambiguous(
    isolated_home: Path, project: Path, other: Path
) -> None:
    dsh = isolated_home / ".dsh"
    dsh_session(dsh, project, pending=[(TOOL, "{}")])
    dsh_session(dsh, other, pending=[(TOOL, "{}")])

    assert dsh_caller(ToolCall("huiyi", "recall_history", {}), dsh) is None
    # and so the order goes on to the next rule
    ctx = finder(isolated_home, other).resolve("recall_history", {})
    assert (ctx.session_id, ctx.how) == (None, HOW_CWD)


@pytest.mark.parametrize(
    "after",
    [
        [b.tool_result(9, "call-0", "done")],  # answered
        [b.event("turn/end", 9, {"turn": 1, "reason": {"kind": "aborted"}})],  # turn over
        [b.user(9, "never mind")],  # the user moved on
    ],
    ids=["answered", "turn-ended", "new-prompt"],
)
def test_a_call_that_is_no_longer_pending_binds_nothing(
    isolated_home: Path, project: Path, after: list[dict[str, Any]]
) -> None:
    dsh = isolated_home / ".dsh"
    dsh_session(dsh, project, pending=[(TOOL, "{}")], after=after)

    assert dsh_caller(ToolCall("huiyi", "recall_history", {}), dsh) is None


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("other-server", "recall_history", {}),
        ToolCall("huiyi", "session_list", {}),
        ToolCall("huiyi", "recall_history", {"query": "x"}),
    ],
    ids=["server-name", "tool-name", "arguments"],
)
def test_only_the_same_server_tool_and_arguments_match(
    isolated_home: Path, project: Path, call: ToolCall
) -> None:
    dsh = isolated_home / ".dsh"
    dsh_session(dsh, project, pending=[(TOOL, "{}")])

    assert dsh_caller(call, dsh) is None


def test_a_log_not_written_recently_is_not_examined(isolated_home: Path, project: Path) -> None:
    dsh = isolated_home / ".dsh"
    dsh_session(dsh, project, pending=[(TOOL, "{}")])
    call = ToolCall("huiyi", "recall_history", {})

    later = time.time() + MAX_AGE_SECONDS + 60
    assert dsh_caller(call, dsh, now=later) is None
    assert dsh_caller(call, dsh) is not None


def test_only_the_newest_logs_are_examined(isolated_home: Path, project: Path) -> None:
    dsh = isolated_home / ".dsh"
    caller = dsh_session(dsh, project, pending=[(TOOL, "{}")])
    newer = [dsh_session(dsh, project) for _ in range(3)]
    now = time.time()
    for n, sid in enumerate(newer, 1):
        log = next((dsh / "sessions").glob(f"*/{sid}/session.jsonl.zstd"))
        os.utime(log, (now + n, now + n))
    call = ToolCall("huiyi", "recall_history", {})

    assert dsh_caller(call, dsh, limit=3, now=now + 10) is None
    found = dsh_caller(call, dsh, limit=4, now=now + 10)
    assert found is not None and found.session_id == caller


# -- Claude Code -------------------------------------------------------------------------------


def claude_session(claude_dir: Path, cwd: Path, session_id: str, records: list[cb.Record]) -> Path:
    return cb.write_transcript(claude_dir, str(cwd), records, session_id=session_id)


def pending_reply(arguments: dict[str, Any]) -> list[cb.Record]:
    return [
        cb.user("what did we decide about deploys?"),
        *cb.split_reply(
            "msg_9",
            "Let me look that up.",
            cb.tool_use("toolu_9", TOOL, arguments),
        ),
    ]


def test_the_claude_transcript_with_the_pending_tool_use_is_the_caller(
    isolated_home: Path, project: Path
) -> None:
    claude = isolated_home / ".claude"
    sid = "5f0c2d1e-1111-4222-8333-444455556666"
    claude_session(claude, project, sid, pending_reply({"query": "deploy"}))

    found = claude_caller(
        ToolCall("huiyi", "recall_history", {"query": "deploy"}), [claude], str(project)
    )

    assert found is not None
    assert (found.session_id, found.workspace, found.how) == (sid, str(project), HOW_CLAUDE)


def test_an_answered_claude_tool_use_binds_nothing(isolated_home: Path, project: Path) -> None:
    claude = isolated_home / ".claude"
    records = [*pending_reply({}), cb.tool_result("toolu_9", "3 results")]
    claude_session(claude, project, "5f0c2d1e-1111-4222-8333-444455556666", records)

    assert claude_caller(ToolCall("huiyi", "recall_history", {}), [claude], str(project)) is None


def test_the_newest_matching_claude_transcript_wins(isolated_home: Path, project: Path) -> None:
    claude = isolated_home / ".claude"
    old = claude_session(claude, project, "aaaaaaaa-1111-4222-8333-444455556666", pending_reply({}))
    claude_session(claude, project, "bbbbbbbb-1111-4222-8333-444455556666", pending_reply({}))
    now = time.time()
    os.utime(old, (now - 30, now - 30))

    found = claude_caller(ToolCall("huiyi", "recall_history", {}), [claude], str(project))

    assert found is not None and found.session_id == "bbbbbbbb-1111-4222-8333-444455556666"


def test_claude_transcripts_of_other_projects_are_not_read(
    isolated_home: Path, project: Path, other: Path
) -> None:
    claude = isolated_home / ".claude"
    claude_session(claude, project, "5f0c2d1e-1111-4222-8333-444455556666", pending_reply({}))

    assert claude_caller(ToolCall("huiyi", "recall_history", {}), [claude], str(other)) is None


# -- roots and cwd -----------------------------------------------------------------------------


def test_the_first_file_root_gives_the_workspace(project: Path, other: Path) -> None:
    spaced = other / "my project"
    spaced.mkdir()
    assert workspace_from_roots(["https://example.com/x", (project / "src").as_uri()]) == str(
        project
    )
    assert workspace_from_roots([spaced.as_uri(), project.as_uri()]) == str(spaced)
    assert workspace_from_roots(["https://example.com/x"]) is None
    assert workspace_from_roots([]) is None


def test_without_anything_else_the_server_cwd_is_the_workspace(
    isolated_home: Path, project: Path
) -> None:
    ctx = finder(isolated_home, project / "src").resolve("recall_history", {})

    assert (ctx.workspace, ctx.session_id, ctx.how) == (str(project), None, HOW_CWD)


# -- the order ---------------------------------------------------------------------------------


def test_rules_apply_in_order(isolated_home: Path, project: Path, other: Path) -> None:
    roots = [other.as_uri()]
    cwd = isolated_home
    find = finder(isolated_home, cwd)

    # nothing anywhere: the server's cwd
    assert find.resolve("recall_history", {}).how == HOW_CWD

    # a DSH session pending this very call beats the cwd
    sid = dsh_session(isolated_home / ".dsh", project, pending=[(TOOL, "{}")])
    ctx = find.resolve("recall_history", {})
    assert (ctx.how, ctx.session_id, ctx.workspace) == (HOW_DSH, sid, str(project))

    # roots beat the DSH logs (a client that offers roots is not DSH)
    assert find.resolve("recall_history", {}, roots).how == HOW_ROOTS
    assert find.resolve("recall_history", {}, roots).workspace == str(other)

    # a Claude session in the server's project with the call pending beats roots
    claude_session(
        isolated_home / ".claude", cwd, "5f0c2d1e-1111-4222-8333-444455556666", pending_reply({})
    )
    assert find.resolve("recall_history", {}, roots).how == HOW_CLAUDE

    # the client naming its session beats every guess
    codex_sid = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
    cx.write_rollout(isolated_home / ".codex", str(project / "src"), [], session_id=codex_sid)
    ctx = find.resolve("recall_history", {}, roots, meta={"sessionId": codex_sid})
    assert (ctx.how, ctx.session_id, ctx.workspace) == (HOW_CODEX, codex_sid, str(project))

    # a forced workspace beats everything
    forced = finder(isolated_home, cwd, forced=str(other)).resolve("recall_history", {}, roots)
    assert (forced.workspace, forced.session_id, forced.how) == (
        str(other),
        None,
        "HUIYI_WORKSPACE",
    )


def test_a_forced_workspace_keeps_the_session_found_in_it(
    isolated_home: Path, project: Path
) -> None:
    sid = dsh_session(isolated_home / ".dsh", project / "src", pending=[(TOOL, "{}")])
    find = finder(isolated_home, isolated_home, forced=str(project), forced_how="--workspace")

    ctx = find.resolve("recall_history", {})

    assert (ctx.workspace, ctx.session_id, ctx.how) == (str(project), sid, "--workspace+dsh-log")


# -- what the client says ----------------------------------------------------------------------


def test_claude_s_tool_use_id_names_the_calling_transcript_exactly(
    isolated_home: Path, project: Path, other: Path
) -> None:
    claude = isolated_home / ".claude"
    claude_session(claude, project, "aaaaaaaa-1111-4222-8333-444455556666", pending_reply({}))
    other_reply = [cb.user("hi"), *cb.split_reply("msg_7", cb.tool_use("toolu_other", TOOL, {}))]
    claude_session(claude, other, "bbbbbbbb-1111-4222-8333-444455556666", other_reply)

    # the server runs in `project`, but the id says the call came from the session in `other`
    found = claude_caller_by_id("toolu_other", [claude], str(project), wait=0.0)

    assert found is not None
    assert (found.session_id, found.workspace, found.how) == (
        "bbbbbbbb-1111-4222-8333-444455556666",
        str(other),
        HOW_CLAUDE_ID,
    )
    assert claude_caller_by_id("toolu_nowhere", [claude], str(project), wait=0.0) is None


def test_a_tool_use_written_after_the_call_arrives_is_waited_for(
    isolated_home: Path, project: Path
) -> None:
    claude = isolated_home / ".claude"
    sid = "cccccccc-1111-4222-8333-444455556666"
    path = claude_session(claude, project, sid, [cb.user("what did we decide?")])
    late = json.dumps(
        {
            **cb.assistant(cb.tool_use("toolu_late", TOOL, {}), message_id="msg_late"),
            "type": "assistant",
            "sessionId": sid,
            "cwd": str(project),
            "uuid": "u-late",
        }
    )
    written = threading.Event()

    def write_later() -> None:
        time.sleep(0.2)  # Claude flushes its transcript about every 100 ms
        with path.open("a", encoding="utf-8") as handle:
            handle.write(late + "\n")
        written.set()

    writer = threading.Thread(target=write_later)
    writer.start()
    found = claude_caller_by_id("toolu_late", [claude], str(project), wait=30.0)
    writer.join()

    assert written.is_set()
    assert found is not None and found.session_id == sid


def test_codex_s_session_id_names_the_rollout_and_its_workspace(
    isolated_home: Path, project: Path
) -> None:
    codex_home = isolated_home / ".codex"
    sid = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
    cx.write_rollout(codex_home, str(project / "src"), [], session_id=sid)

    found = codex_caller(sid, codex_home)
    assert found is not None
    assert (found.session_id, found.workspace, found.how) == (sid, str(project), HOW_CODEX)
    assert codex_caller("0199a1b2-0000-0000-0000-000000000000", codex_home) is None
    assert codex_caller("../../etc/passwd", codex_home) is None

    meta = {"x-codex-turn-metadata": {"session_id": sid}}
    ctx = finder(isolated_home, isolated_home).resolve("recall_history", {}, meta=meta)
    assert (ctx.session_id, ctx.how) == (sid, HOW_CODEX)


def test_an_unchanged_dsh_log_is_not_read_again(
    isolated_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsh_session(isolated_home / ".dsh", project, pending=[(TOOL, "{}")])
    find = finder(isolated_home, isolated_home)
    assert find.resolve("recall_history", {}).how == HOW_DSH

    reads: list[Path] = []
    real = context.pending_tool_calls
    monkeypatch.setattr(context, "pending_tool_calls", lambda p: reads.append(p) or real(p))
    assert find.resolve("recall_history", {}).how == HOW_DSH
    assert reads == []
