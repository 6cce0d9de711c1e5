"""huiyi never recalls itself: its own tool calls and results, in any harness and under any
server name, are kept in the session but never indexed, so they never come back as hits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.model import Event, Kind
from huiyi.recall.scope import CallerContext
from huiyi.safety.envelope import wrap
from huiyi.sources.base import is_own_output, is_own_tool, is_own_traffic
from huiyi.store.textindex import is_indexed
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh

CLAUDE_CALLER = "22222222-2222-4333-8444-555566667777"
CODEX_CALLER = "0199a1b2-0000-7e4f-8a9b-0c1d2e3f4a5b"
DSH_CALLER = "session-dddddddd-1111-4222-8333-444455556666"
DSH_HISTORY = "session-aaaaaaaa-1111-4222-8333-444455556666"


def repo(root: Path) -> str:
    path = root / "repo"
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return str(path)


def lexical_sessions(hy: Huiyi, query: str) -> set[str]:
    hits = hy.search(query, all_workspaces=True, layers=("lexical",), limit=50).hits
    return {hit.session_id for hit in hits}


def stored(hy: Huiyi, session_id: str) -> list[tuple[str, str | None]]:
    return [(e.kind.value, e.tool_name) for e in hy.read(session_id, from_seq=0)]


# -- recognising it --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "own"),
    [
        ("mcp__huiyi__recall_history", True),
        ("mcp__my-memory__session_read", True),  # whatever the user named the server
        ("mcp__huiyi__memory", True),
        ("mcp__huiyi__memory_search", True),
        ("mcp__plugin_x_huiyi__recall_expand", True),
        ("recall_history", False),  # bare: only a result in the envelope gives it away
        ("mcp__huiyi__recall_history_v2", False),
        ("mcp__github__search_issues", False),
        ("Read", False),
        (None, False),
    ],
)
def test_own_tool_names(name: str | None, own: bool) -> None:
    assert is_own_tool(name) is own


def test_own_output_is_huiyis_envelope_not_talk_about_it() -> None:
    answer = wrap("recall_history: 1 result\n[1] rolled back 0042")
    assert is_own_output(answer)
    assert is_own_output("Wall time: 0.49 seconds\nOutput:\n" + answer)  # Codex's prefix
    assert is_own_output(wrap("2 entries", label="your saved memory entries"))
    # a marker on a line of its own, whatever came first
    assert is_own_output("result:\n" + answer.split("\n", 1)[1])
    assert not is_own_output("grep found HUIYI_DATA in src/huiyi/safety/envelope.py")
    assert not is_own_output('{"text": "...\\n<<<HUIYI_DATA_3422a1468a992499>>>\\n..."}')
    assert not is_own_output("1 failed: Address already in use")


def test_is_indexed_leaves_out_own_traffic_only() -> None:
    def event(kind: Kind, text: str, tool: str | None = None, own: bool = False) -> Event:
        return Event("s", 0, 0, kind, "tool", text, tool_name=tool, own=own)

    assert not is_indexed(event(Kind.TOOL_CALL, "q", "mcp__x__recall_history"))
    assert not is_indexed(event(Kind.TOOL_RESULT, "no such session", "mcp__x__session_read"))
    assert not is_indexed(event(Kind.TOOL_RESULT, wrap("data"), None))
    assert not is_indexed(event(Kind.TOOL_CALL, "recall_history {}", "recall_history", own=True))
    assert is_indexed(event(Kind.TOOL_CALL, "recall_history {}", "recall_history"))
    assert is_indexed(event(Kind.TOOL_RESULT, "PORT = 8080", "Read"))
    # a person quoting a recall in conversation is conversation
    assert is_indexed(event(Kind.USER, wrap("pasted")))
    assert not is_own_traffic(event(Kind.ASSISTANT, wrap("quoted")))


# -- through the index, per harness ------------------------------------------------------------


def history(home: Path, cwd: str) -> None:
    """An earlier session that talked about the kumquat migration."""
    dsh.write_session(
        home / ".dsh",
        cwd,
        [
            [
                dsh.user(1, "why did the kumquat migration fail?"),
                dsh.assistant(2, "The kumquat migration 0042 hit a lock timeout; rolled back."),
            ]
        ],
        session_id=DSH_HISTORY,
    )


def recall_answer(hy: Huiyi, cwd: str, caller: str) -> str:
    """What recall_history really answers the calling session."""
    return hy.recall(CallerContext(cwd, caller)).history("kumquat").text


@pytest.mark.parametrize("server", ["huiyi", "memoir"])
def test_a_claude_session_that_recalled_is_not_found_by_what_it_recalled(
    isolated_home: Path, server: str
) -> None:
    cwd = repo(isolated_home)
    history(isolated_home, cwd)
    with Huiyi() as hy:
        hy.index()
        answer = recall_answer(hy, cwd, CLAUDE_CALLER)
        assert "kumquat" in answer
        tool = f"mcp__{server}__recall_history"
        cc.write_transcript(
            isolated_home / ".claude",
            cwd,
            [
                cc.user("what happened with that migration?"),
                cc.assistant(cc.tool_use("toolu_1", tool, {"query": "kumquat"}), message_id="m1"),
                cc.tool_result("toolu_1", [cc.text(answer)]),
                cc.assistant("It hit a lock timeout and was rolled back.", message_id="m2"),
            ],
            session_id=CLAUDE_CALLER,
        )
        report = hy.index()

        assert report.sources["claude"].skipped == {}
        assert lexical_sessions(hy, "kumquat") == {DSH_HISTORY}
        assert DSH_HISTORY in {h.session_id for h in hy.search("kumquat", all_workspaces=True).hits}
        # kept where it happened: reading the session shows the call and its result
        assert stored(hy, CLAUDE_CALLER) == [
            ("user", None),
            ("tool_call", tool),
            ("tool_result", tool),
            ("assistant", None),
        ]
        assert lexical_sessions(hy, "lock timeout") == {DSH_HISTORY, CLAUDE_CALLER}
        # and another agent's recall does not find it either
        later = hy.recall(CallerContext(cwd, "someone-else")).history("kumquat").text
        assert DSH_HISTORY in later and CLAUDE_CALLER not in later


def test_a_codex_session_that_recalled_is_not_found_by_what_it_recalled(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    history(isolated_home, cwd)
    with Huiyi() as hy:
        hy.index()
        answer = recall_answer(hy, cwd, CODEX_CALLER)
        cx.write_rollout(
            isolated_home / ".codex",
            cwd,
            [
                cx.env_context_171(cwd),
                cx.prompt_171("what happened with that migration?"),
                cx.mcp_call("recall_history", {"query": "kumquat"}, "c1", output=answer),
                cx.assistant_message("It was rolled back.", with_ui_copy=False),
            ],
            session_id=CODEX_CALLER,
        )
        report = hy.index()

        assert report.sources["codex"].skipped == {}
        assert lexical_sessions(hy, "kumquat") == {DSH_HISTORY}
        assert ("tool_result", "mcp__huiyi__recall_history") in stored(hy, CODEX_CALLER)


@pytest.mark.parametrize("server", ["huiyi", "notes"])
def test_a_dsh_session_that_recalled_is_not_found_by_what_it_recalled(
    isolated_home: Path, server: str
) -> None:
    cwd = repo(isolated_home)
    history(isolated_home, cwd)
    tool = f"mcp__{server}__recall_history"
    with Huiyi() as hy:
        hy.index()
        answer = recall_answer(hy, cwd, DSH_CALLER)
        arguments = json.dumps({"query": "kumquat"})
        dsh.write_session(
            isolated_home / ".dsh",
            cwd,
            [
                [
                    dsh.user(1, "what happened with that migration?"),
                    dsh.assistant(2, calls=[("c1", tool, arguments)]),
                    dsh.tool_call(3, tool, arguments, call_id="c1"),
                    dsh.tool_result(4, "c1", answer),
                    dsh.assistant(5, "It was rolled back."),
                ]
            ],
            session_id=DSH_CALLER,
        )
        hy.index()

        assert lexical_sessions(hy, "kumquat") == {DSH_HISTORY}
        assert [kind for kind, _ in stored(hy, DSH_CALLER)] == [
            "user",
            "tool_call",
            "tool_call",
            "tool_result",
            "assistant",
        ]


def test_a_dsh_result_in_the_envelope_is_left_out_whatever_its_call_was_named(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    history(isolated_home, cwd)
    with Huiyi() as hy:
        hy.index()
        answer = recall_answer(hy, cwd, DSH_CALLER)
        dsh.write_session(
            isolated_home / ".dsh",
            cwd,
            [[dsh.user(1, "and then?"), dsh.tool_result(2, "unknown-call", answer)]],
            session_id=DSH_CALLER,
        )
        hy.index()

        assert lexical_sessions(hy, "kumquat") == {DSH_HISTORY}
