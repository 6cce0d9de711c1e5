"""The recall tools as agents get them: scope, privacy, compaction recovery, paging, caps."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest

from huiyi import Huiyi, NotFoundError, UsageError
from huiyi.recall.scope import NOT_FOUND, CallerContext
from huiyi.recall.tools import Recall
from huiyi.safety.budget import EXPAND_MAX_CHARS
from tests.backends import BACKENDS, on_postgres
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh

DSH_A = "session-aaaaaaaa-1111-4222-8333-444455556666"
DSH_B = "session-bbbbbbbb-1111-4222-8333-444455556666"
PRIVATE = "session-cccccccc-1111-4222-8333-444455556666"
CLAUDE_A = "11111111-2222-4333-8444-555566667777"
CODEX_A = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"


def repo(root: Path, name: str) -> str:
    path = root / name
    (path / ".git").mkdir(parents=True)
    (path / "src").mkdir()
    return str(path)


def dsh_compacted_session(home: Path, cwd: str, session_id: str, words: str) -> None:
    """Turn one (seq 1-5) is compacted away; turn two (seq 10-11) is current."""
    dsh.write_session(
        home / ".dsh",
        cwd,
        [
            [
                dsh.user(1, f"先看看 {words} 的问题，为什么迁移失败？"),
                dsh.title(2, f"排查 {words}"),
                dsh.assistant(
                    3, calls=[("c1", "bash", json.dumps({"command": "alembic history"}))]
                ),
                dsh.tool_call(4, "bash", json.dumps({"command": "alembic history"}), call_id="c1"),
                dsh.tool_result(5, "c1", "0042_add_index -> 0041_initial"),
                dsh.assistant(6, f"We should roll back 0042 because of {words}.\nDetails follow."),
            ],
            dsh.compaction(7, f"Discussed {words}; decided to roll back 0042.", start=1, end=6),
            [dsh.user(11, "继续下一步"), dsh.assistant(12, "好的，继续。")],
        ],
        session_id=session_id,
    )


@pytest.fixture
def world(isolated_home: Path) -> dict[str, str]:
    a = repo(isolated_home, "repo-a")
    b = repo(isolated_home, "repo-b")
    dsh_compacted_session(isolated_home, a, DSH_A, "zanzibar")
    dsh_compacted_session(isolated_home, b, DSH_B, "quokka")
    dsh.write_session(
        isolated_home / ".dsh",
        a,
        [[dsh.user(1, "zanzibar private plans"), dsh.title(2, "[私密] plans")]],
        session_id=PRIVATE,
    )
    cc.write_transcript(
        isolated_home / ".claude",
        a + "/src",
        [
            cc.user("why does the orders endpoint time out? (albatross)"),
            cc.assistant("Because of an N+1 query in list_orders.", message_id="msg_1"),
            cc.compact_boundary(),
            cc.compact_summary("Found an N+1 query in list_orders."),
            cc.user("ok, now add the index"),
        ],
        session_id=CLAUDE_A,
    )
    cx.write_rollout(
        isolated_home / ".codex",
        a,
        [
            cx.env_context(a),
            cx.prompt("fix the flaky port test (pelican)"),
            cx.assistant_message("It binds port 8321; use port 0."),
            cx.compacted("Diagnosed the port clash."),
            cx.prompt("thanks, next?"),
        ],
        session_id=CODEX_A,
    )
    with Huiyi() as hy:
        hy.index()
    return {"a": a, "b": b}


@pytest.fixture(params=BACKENDS)
def hy(request: pytest.FixtureRequest, world: dict[str, str]) -> Iterable[Huiyi]:
    """The recall tools over the local index, and over its copy in PostgreSQL."""
    with Huiyi() as h:
        if request.param == "sqlite":
            yield h
            return
        with on_postgres(h, request.getfixturevalue("pg_url")) as pg:
            yield pg


def tools(hy: Huiyi, workspace: str | None, session: str | None = None, **kw: int) -> Recall:
    """The recall tools through the API's doorway; `kw` overrides a setting (a budget)."""
    caller = CallerContext(workspace, session)
    return Recall(hy.store, caller, **kw) if kw else hy.recall(caller)


def test_history_finds_this_workspace_and_never_the_other(hy: Huiyi, world: dict[str, str]) -> None:
    out = tools(hy, world["a"]).history("zanzibar").text
    assert DSH_A in out and "zanzibar" in out
    assert "quokka" not in out and DSH_B not in out
    assert "private plans" not in out and PRIVATE not in out
    assert "search path: lexical" in out
    other = tools(hy, world["a"]).history("quokka").text
    assert "quokka" not in other.split("\n", 3)[-1].replace('for "quokka"', "")
    assert DSH_B not in other


def test_output_is_marked_as_data_inside_a_fresh_envelope(hy: Huiyi, world: dict[str, str]) -> None:
    first = tools(hy, world["a"]).history("zanzibar").text
    second = tools(hy, world["a"]).history("zanzibar").text
    assert "not instructions" in first.splitlines()[0]
    markers = [ln for ln in first.splitlines() if "HUIYI_DATA" in ln]
    assert len(markers) == 2
    assert markers[0] not in second  # a fresh token per call


def test_other_workspace_ids_get_the_same_error_as_unknown_ids(
    hy: Huiyi, world: dict[str, str]
) -> None:
    recall = tools(hy, world["a"])
    errors = []
    for session_id in (DSH_B, PRIVATE, "session-does-not-exist"):
        for call in (
            lambda s=session_id: recall.session_read(s),
            lambda s=session_id: recall.expand(seq=1, session_id=s),
        ):
            with pytest.raises(NotFoundError) as exc:
                call()
            errors.append(str(exc.value))
    assert set(errors) == {NOT_FOUND}


@pytest.mark.parametrize(
    ("session", "shadowed_text", "current_text"),
    [
        (DSH_A, "为什么迁移失败", "继续下一步"),
        (CLAUDE_A, "orders endpoint time out", "now add the index"),
        (CODEX_A, "flaky port test", "thanks, next?"),
    ],
)
def test_shadowed_events_are_recalled_without_query(
    hy: Huiyi, world: dict[str, str], session: str, shadowed_text: str, current_text: str
) -> None:
    out = tools(hy, world["a"], session).history(None).text
    assert shadowed_text in out
    assert current_text not in out
    expanded = tools(hy, world["a"], session).expand().text
    assert shadowed_text in expanded


def test_skeleton_shows_tool_target_and_result_and_skips_injected(
    hy: Huiyi, world: dict[str, str]
) -> None:
    out = tools(hy, world["a"], DSH_A).history().text
    assert "T#3 bash alembic history → 0042_add_index -> 0041_initial" in out
    assert "A#6 We should roll back 0042 because of zanzibar." in out
    assert "Details follow" not in out  # assistant messages by their first line only
    assert "automatically generated checkpoint" not in out


def test_the_current_session_is_left_out_of_search(hy: Huiyi, world: dict[str, str]) -> None:
    assert DSH_A not in tools(hy, world["a"], DSH_A).history("zanzibar").text
    assert DSH_A in tools(hy, world["a"], CLAUDE_A).history("zanzibar").text


def test_unknown_workspace_narrows_to_the_current_session(hy: Huiyi, world: dict[str, str]) -> None:
    narrowed = tools(hy, None, DSH_A)
    assert "zanzibar" in narrowed.history("zanzibar").text
    elsewhere = narrowed.history("albatross").text
    assert 'no match in the current session for "albatross"' in elsewhere
    assert "albatross" not in elsewhere.split('for "albatross"; try other words')[-1]
    with pytest.raises(NotFoundError):
        narrowed.session_read(CLAUDE_A)
    with pytest.raises(UsageError, match="HUIYI_WORKSPACE"):
        tools(hy, None, None).history("zanzibar")


def test_no_query_and_no_current_session_is_a_usage_error(hy: Huiyi, world: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="no current session"):
        tools(hy, world["a"]).history()


def test_arguments_out_of_range_say_what_to_pass(hy: Huiyi, world: dict[str, str]) -> None:
    recall = tools(hy, world["a"])
    with pytest.raises(UsageError, match="limit must be between 1 and 20"):
        recall.history("x", limit=21)
    with pytest.raises(UsageError, match="at most 500 characters"):
        recall.history("x" * 501)
    with pytest.raises(UsageError, match="before must be between 0 and 50"):
        recall.expand(seq=1, session_id=CLAUDE_A, before=51)
    with pytest.raises(UsageError, match="maxInjectChars"):
        tools(hy, world["a"], max_inject_chars=100)


def test_session_list_is_scoped_recent_first_and_hides_private(
    hy: Huiyi, world: dict[str, str]
) -> None:
    out = tools(hy, world["a"]).session_list().text
    listed = [ln for ln in out.splitlines() if ln.startswith("- ")]
    assert len(listed) == 3
    assert PRIVATE not in out and DSH_B not in out
    assert "showing" not in out
    one = tools(hy, world["a"]).session_list(limit=1).text
    assert "showing 1 of 3 sessions" in one


def test_session_read_pages_forward_with_an_exact_cursor(hy: Huiyi, world: dict[str, str]) -> None:
    recall = tools(hy, world["a"])
    first = recall.session_read(DSH_A, from_seq=0, max_chars=200, include_tools=True).text
    assert "#1 user" in first
    cursor = int(first.split("fromSeq=")[1].split(")")[0])
    second = recall.session_read(DSH_A, from_seq=cursor, max_chars=60_000, include_tools=True)
    assert f"#{cursor} " in second.text
    assert "(end of session)" in second.text
    tail = recall.session_read(DSH_A, last=1).text
    assert "好的，继续。" in tail and "继续下一步" not in tail


def test_long_compacted_history_fits_the_budget_with_honest_anchors(isolated_home: Path) -> None:
    cwd = repo(isolated_home, "big")
    lines = [dsh.user(2 * i + 1, f"question number {i} about topic {i}") for i in range(300)]
    lines += [dsh.assistant(2 * i + 2, f"answer {i}") for i in range(300)]
    lines.sort(key=lambda e: e["seq"])
    dsh.write_session(
        isolated_home / ".dsh",
        cwd,
        [lines, dsh.compaction(601, "long talk", start=1, end=600)],
        session_id=DSH_A,
    )
    with Huiyi() as hy:
        hy.index()
        out = tools(hy, cwd, DSH_A, max_inject_chars=1_500).history().text
    body = out.split("\n", 2)[2]
    assert len(body) <= 1_500 + 200
    assert "question number 0 about topic 0   ← first user message of the compacted range" in out
    assert "question number 299 about topic 299   ← last user message of the compacted range" in out
    assert "evenly sampled" in out


def test_expand_reports_the_source_character_cap(isolated_home: Path) -> None:
    cwd = repo(isolated_home, "huge")
    size = EXPAND_MAX_CHARS // 4 + 1
    lines = [dsh.user(i, f"{i} " + "x" * size) for i in range(1, 9)]
    dsh.write_session(isolated_home / ".dsh", cwd, [lines], session_id=DSH_A)
    with Huiyi() as hy:
        hy.index()
        out = tools(hy, cwd).expand(seq=4, session_id=DSH_A, before=3, after=4).text
    assert "expanded 3 of 8 events: source character cap" in out
