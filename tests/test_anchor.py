"""The compaction anchor: the summary and a few original fragments of what a compaction moved
out of the model's context, built from real-shaped logs of every harness, offered for three
turns and then gone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.recall.anchor import (
    ANCHOR_TURNS,
    FRAGMENT_CHARS,
    FRESH_MS,
    SUMMARY_CHARS,
    AnchorState,
    Compaction,
    latest_compaction,
    render_anchor,
)
from huiyi.store import queries
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh

SECRET = "sk-proj-" + "Q7x9Lm2Pz4Rt8Wv6Yb1Nc3Kd5Hf0Jg"
SUMMARY = "We moved the login test to an ephemeral port; " + "the rest is detail. " * 40
USERS = [
    "why does test_login fail only on CI?",
    f"the CI key is {SECRET}, use it to rerun",
    "make it bind an ephemeral port " + "and keep the fixture small " * 12,
    "now rerun the whole suite",
]
REPLIES = ["It binds fixed port 8080.", "Rerunning.", "Done: port 0 now.", "All green."]
AFTER = "what is next?"


def repo(home: Path) -> str:
    path = home / "api"
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return str(path)


def claude_log(home: Path) -> str:
    cwd = repo(home)
    records: list[cc.Record] = []
    for said, reply in zip(USERS, REPLIES, strict=True):
        records += [cc.user(said), cc.assistant(reply)]
    records += [cc.compact_boundary(), cc.compact_summary(SUMMARY), cc.user(AFTER)]
    cc.write_transcript(home / ".claude", cwd, records)
    return cc.SESSION_ID


def codex_log(home: Path) -> str:
    cwd = repo(home)
    items: list[cx.Item] = [cx.env_context_171(cwd)]
    for said, reply in zip(USERS, REPLIES, strict=True):
        items += [cx.prompt_171(said), cx.assistant_message(reply)]
    items += [cx.compacted(SUMMARY), cx.prompt_171(AFTER)]
    cx.write_rollout(home / ".codex", cwd, items)
    return cx.SESSION_ID


def dsh_log(home: Path) -> str:
    cwd = repo(home)
    lines: list[dsh.Line] = []
    seq = 0
    for said, reply in zip(USERS, REPLIES, strict=True):
        lines += [dsh.user(seq, said), dsh.assistant(seq + 1, reply)]
        seq += 2
    lines += dsh.compaction(seq, SUMMARY, start=0, end=seq - 1)
    lines.append(dsh.user(seq + 4, AFTER))
    session = "session-aaaaaaaa-1111-4222-8333-444455556666"
    dsh.write_session(home / ".dsh", cwd, [lines], session_id=session)
    return session


LOGS: dict[str, Callable[[Path], str]] = {"claude": claude_log, "codex": codex_log, "dsh": dsh_log}


def compaction_of(home: Path, session_id: str) -> Compaction:
    with Huiyi() as hy:
        hy.index()
        row = queries.session_by_id(hy.conn, session_id)
        assert row is not None
        found = latest_compaction(hy.store, row.sid, session_id)
    assert found is not None
    return found


@pytest.mark.parametrize("harness", sorted(LOGS))
def test_the_anchor_carries_the_summary_and_the_latest_user_messages(
    harness: str, isolated_home: Path
) -> None:
    compaction = compaction_of(isolated_home, LOGS[harness](isolated_home))
    assert "ephemeral port" in compaction.summary
    texts = [e.text for e in compaction.fragments]
    assert texts == USERS[1:]  # the user's own words first: the three latest, in order
    assert compaction.shadowed >= len(USERS) + len(REPLIES)
    assert compaction.first is not None and compaction.last is not None
    assert compaction.first <= min(e.seq for e in compaction.fragments)

    anchor = render_anchor(compaction, max_chars=3_000)
    assert anchor is not None
    text = anchor.text
    assert text.startswith("The following is what compaction removed")
    summary_line = next(line for line in text.splitlines() if line.startswith("summary: "))
    assert len(summary_line) - len("summary: ") <= SUMMARY_CHARS
    fragments = [line for line in text.splitlines() if line.startswith("- #")]
    assert len(fragments) == 3
    for line, event in zip(fragments, compaction.fragments, strict=True):
        assert line.startswith(f"- #{event.seq} user: ")
        assert len(line.split(": ", 1)[1]) <= FRAGMENT_CHARS
    assert SECRET not in text and "[REDACTED" in text
    assert AFTER not in text  # said after the compaction: still in the model's context
    assert f"seq {compaction.first}..{compaction.last}" in text
    assert "recall_expand(seq=N)" in text


def test_assistant_replies_fill_in_when_fewer_than_three_user_messages_were_shadowed(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    records = [
        cc.user("one question about the flaky test"),
        cc.assistant("first answer"),
        cc.assistant("second answer"),
        cc.compact_boundary(),
        cc.compact_summary("short summary"),
    ]
    cc.write_transcript(isolated_home / ".claude", cwd, records)
    compaction = compaction_of(isolated_home, cc.SESSION_ID)
    kinds = [(e.kind.value, e.text) for e in compaction.fragments]
    assert kinds == [
        ("user", "one question about the flaky test"),
        ("assistant", "first answer"),
        ("assistant", "second answer"),
    ]


def test_a_second_compaction_anchors_only_what_it_shadowed(isolated_home: Path) -> None:
    cwd = repo(isolated_home)
    records = [
        cc.user("early talk about the database"),
        cc.assistant("ok"),
        cc.compact_boundary(),
        cc.compact_summary("first summary"),
        cc.user("later talk about the cache layer"),
        cc.assistant("sure"),
        cc.compact_boundary(),
        cc.compact_summary("second summary"),
    ]
    cc.write_transcript(isolated_home / ".claude", cwd, records)
    compaction = compaction_of(isolated_home, cc.SESSION_ID)
    assert compaction.summary.endswith("second summary")
    assert [e.text for e in compaction.fragments] == ["later talk about the cache layer", "sure"]


def test_a_session_never_compacted_has_no_anchor(isolated_home: Path) -> None:
    cwd = repo(isolated_home)
    cc.write_transcript(isolated_home / ".claude", cwd, [cc.user("hi"), cc.assistant("hello")])
    with Huiyi() as hy:
        hy.index()
        row = queries.session_by_id(hy.conn, cc.SESSION_ID)
        assert row is not None
        assert latest_compaction(hy.store, row.sid, cc.SESSION_ID) is None


@pytest.mark.parametrize("max_chars", [400, 700, 1_000])
def test_the_anchor_fits_the_injection_budget_dropping_the_oldest_fragments_first(
    max_chars: int, isolated_home: Path
) -> None:
    compaction = compaction_of(isolated_home, claude_log(isolated_home))
    anchor = render_anchor(compaction, max_chars=max_chars)
    if anchor is None:  # the smallest budget may hold no anchor at all: then none is sent
        assert max_chars == 400
        return
    text = anchor.text
    assert len(text) <= max_chars
    assert "summary: " in text
    shown = [line for line in text.splitlines() if line.startswith("- #")]
    if shown:  # what is kept is the newest
        assert shown[-1].startswith(f"- #{compaction.fragments[-1].seq} ")


def compaction_at(seq: int, time: int) -> Compaction:
    return Compaction("s", seq, time, "summary", 2, 0, 1)


def test_the_anchor_is_offered_for_three_turns_then_expires() -> None:
    now = 10 * FRESH_MS
    state = AnchorState()
    assert not state.active
    state.follow(compaction_at(7, now), now, known=False)
    offered = []
    for _turn in range(ANCHOR_TURNS + 2):
        offered.append(state.active)
        if state.active:
            state.turns += 1
    assert offered == [True, True, True, False, False]
    state.follow(compaction_at(7, now), now, known=True)  # the same compaction: still expired
    assert not state.active
    state.follow(compaction_at(20, now), now, known=True)  # a new one starts the count again
    assert state.active and state.turns == 0


def test_an_anchor_session_start_offered_is_the_next_turns_and_the_prompt_skips_it() -> None:
    now = 10 * FRESH_MS
    state = AnchorState()
    state.follow(compaction_at(7, now), now, known=False)
    turns = []
    for _turn in range(ANCHOR_TURNS + 1):  # a resumed session: SessionStart, then the prompt
        start = state.at_session_start()
        saved = AnchorState.from_dict(state.as_dict())  # the hooks run in separate processes
        turns.append((start, saved.at_prompt()))
        state = saved
    assert turns == [(True, False)] * ANCHOR_TURNS + [(False, False)]


def test_prompts_without_session_start_offer_the_anchor_themselves() -> None:
    now = 10 * FRESH_MS
    state = AnchorState()
    state.follow(compaction_at(7, now), now, known=False)
    assert state.at_session_start()  # offered at start (say, Claude's SessionStart compact)
    assert [state.at_prompt() for _ in range(ANCHOR_TURNS)] == [False, True, True]
    assert not state.active
    state.follow(compaction_at(9, now), now, known=True)  # a new compaction: a fresh count
    assert (state.turns, state.offered, state.at_prompt()) == (0, False, True)


def test_a_compaction_first_seen_long_after_it_happened_is_not_anchored() -> None:
    now = 10 * FRESH_MS
    state = AnchorState()
    state.follow(compaction_at(7, now - FRESH_MS - 1), now, known=False)
    assert not state.active
    fresh = AnchorState()
    fresh.follow(compaction_at(7, now - FRESH_MS + 1), now, known=False)
    assert fresh.active


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "x",
        {"compaction": "7", "turns": True},
        {"turns": -3, "noted": 1.5},
        {"offered": "yes"},
    ],
)
def test_a_malformed_saved_state_reads_as_a_fresh_one(data: object) -> None:
    state = AnchorState.from_dict(data)
    assert state.turns >= 0
    assert state.compaction is None or isinstance(state.compaction, int)
    assert AnchorState.from_dict(state.as_dict()) == state
