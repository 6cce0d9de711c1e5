"""Claude Code transcripts: what a person finds in the index after Claude Code wrote them."""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.model import Kind
from huiyi.safety.envelope import wrap
from huiyi.sources.base import Cursor
from tests.builders import claude as cc
from tests.builders.reads import BAD_REASONS, Replay, bad_line, read_growing, read_whole

CWD = "/home/ana/api"


@pytest.fixture
def claude_dir(isolated_home: Path) -> Path:
    return isolated_home / ".claude"


@pytest.fixture
def reader(claude_dir: Path) -> ClaudeReader:
    return ClaudeReader([claude_dir])


def conversation() -> list[cc.Record]:
    return [
        cc.snapshot(),
        cc.user("why does test_login fail only on CI?"),
        cc.assistant(
            cc.thinking("the port, probably"),
            "Let me read the test.",
            cc.tool_use("toolu_01", "Read", {"file_path": "/home/ana/api/tests/test_login.py"}),
            message_id="msg_01",
        ),
        cc.tool_result("toolu_01", [cc.text("1→import pytest\n2→PORT = 8080")]),
        cc.assistant("It binds the fixed port 8080, which CI already uses.", message_id="msg_02"),
    ]


def test_a_conversation_becomes_prompt_reply_and_tool_events(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(claude_dir, CWD, conversation())

    result = reader.read(path, Cursor())

    [chunk] = result.chunks
    assert [(e.seq, e.kind, e.text, e.tool_name) for e in chunk.events] == [
        (0, Kind.USER, "why does test_login fail only on CI?", None),
        (1, Kind.ASSISTANT, "Let me read the test.", None),
        (2, Kind.TOOL_CALL, 'Read {"file_path": "/home/ana/api/tests/test_login.py"}', "Read"),
        (3, Kind.TOOL_RESULT, "1→import pytest\n2→PORT = 8080", "Read"),
        (4, Kind.ASSISTANT, "It binds the fixed port 8080, which CI already uses.", None),
    ]
    assert all(e.surface == "current" and not e.injected for e in chunk.events)
    assert chunk.events[1].uid == "msg_01"
    assert chunk.events[2].uid == "toolu_01"
    session = chunk.session
    assert (session.id, session.source, session.cwd) == (cc.SESSION_ID, "claude", CWD)
    assert (session.created, session.updated) == (cc.ms(cc.at(1)), cc.ms(cc.at(4)))
    assert (session.is_subagent, session.parent) == (False, None)
    assert result.offset == path.stat().st_size
    assert result.skipped == {}


def test_a_reply_split_over_lines_is_one_assistant_event(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    ls = cc.tool_use("toolu_ls", "Bash", {"command": "ls"})
    records = [
        cc.user("list the files"),
        *cc.split_reply("msg_1", cc.thinking("easy"), "Sure.", "Sure.", "Listing now.", ls, ls),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.seq, e.kind, e.text) for e in events] == [
        (0, Kind.USER, "list the files"),
        (1, Kind.ASSISTANT, "Sure.\n\nListing now."),
        (2, Kind.TOOL_CALL, 'Bash {"command": "ls"}'),
    ]
    assert events[1].uid == "msg_1"


def test_a_reply_cut_between_two_reads_is_rewritten_under_its_seq(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    first, second, tool = cc.split_reply(
        "msg_1", "The port is fixed.", "Use port 0 instead.", cc.tool_use("toolu_1", "Edit", {})
    )
    path = cc.write_transcript(claude_dir, CWD, [cc.user("why?"), first])
    replay = Replay()
    replay.read(reader, path)
    cc.write_transcript(claude_dir, CWD, [second, tool], append=True)

    news = replay.read(reader, path).chunks[0].events

    assert [(e.seq, e.text) for e in news] == [
        (1, "The port is fixed.\n\nUse port 0 instead."),
        (2, "Edit {}"),
    ]
    assert replay.rows() == read_whole(reader, path).rows()


def test_a_record_written_twice_is_indexed_once(claude_dir: Path, reader: ClaudeReader) -> None:
    path = cc.write_transcript(claude_dir, CWD, [cc.user("deploy with make ship"), cc.user("ok")])
    first_line = path.read_bytes().splitlines(keepends=True)[0]
    with path.open("ab") as handle:
        handle.write(first_line)

    events = reader.read(path, Cursor()).chunks[0].events

    assert [e.text for e in events] == ["deploy with make ship", "ok"]


def test_compaction_shadows_what_came_before_including_earlier_reads(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(claude_dir, CWD, conversation())
    replay = Replay()
    replay.read(reader, path)
    cc.write_transcript(
        claude_dir,
        CWD,
        [cc.compact_boundary(), cc.compact_summary("login test binds a fixed port"), cc.user("go")],
        append=True,
    )

    [chunk] = replay.read(reader, path).chunks

    summary, prompt = chunk.events
    assert (summary.kind, summary.injected, summary.surface) == (Kind.SUMMARY, True, "current")
    assert "login test binds a fixed port" in summary.text
    assert chunk.shadow_before == summary.seq == 5
    assert [surface for *_, surface in replay.rows()] == ["shadowed"] * 5 + ["current"] * 2
    assert (prompt.kind, prompt.text, prompt.injected) == (Kind.USER, "go", False)


@pytest.mark.parametrize("old_style", [False, True], ids=["subagents-folder", "agent-file"])
def test_a_subagent_transcript_is_its_own_session_linked_to_its_parent(
    claude_dir: Path, reader: ClaudeReader, old_style: bool
) -> None:
    main = cc.write_transcript(claude_dir, CWD, [cc.user("review the diff")])
    sub = cc.write_transcript(
        claude_dir,
        CWD,
        [cc.user("Review this diff"), cc.assistant("LGTM")],
        agent_id="a1b2",
        old_style=old_style,
    )

    assert sorted(reader.discover()) == sorted([main, sub])
    [chunk] = reader.read(sub, Cursor()).chunks
    session = chunk.session
    assert (session.id, session.parent, session.is_subagent) == ("agent-a1b2", cc.SESSION_ID, True)
    assert [e.text for e in chunk.events] == ["Review this diff", "LGTM"]


def test_sidechain_records_mark_a_session_as_subagent(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(claude_dir, CWD, [cc.user("probe", isSidechain=True)])

    assert reader.read(path, Cursor()).chunks[0].session.is_subagent is True


def test_meta_records_and_command_wrappers_are_marked_injected(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    records = [
        cc.meta("Caveat: the messages below were generated by the user while running commands."),
        *cc.command("model", "opus", stdout="Set model to opus"),
        cc.user("now fix the login test"),
        cc.user([cc.text("[Request interrupted by user]")]),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.kind, e.injected) for e in events] == [
        (Kind.USER, True),
        (Kind.USER, True),
        (Kind.USER, True),
        (Kind.USER, False),
        (Kind.USER, True),
    ]
    assert events[3].text == "now fix the login test"


def test_the_last_summary_record_titles_the_session_in_later_reads_too(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(
        claude_dir,
        CWD,
        [cc.summary("Old title"), cc.user("hi"), cc.summary("Fix flaky login test")],
    )
    replay = Replay()

    assert replay.read(reader, path).chunks[0].session.title == "Fix flaky login test"
    cc.write_transcript(claude_dir, CWD, [cc.user("more")], append=True)
    assert replay.read(reader, path).chunks[0].session.title == "Fix flaky login test"


def test_a_custom_title_wins_over_an_ai_title_and_the_latest_of_each_wins(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(
        claude_dir,
        CWD,
        [cc.summary("From a summary"), cc.user("hi"), cc.ai_title("Greeting")],
    )
    replay = Replay()

    assert replay.read(reader, path).chunks[0].session.title == "Greeting"  # AI over summary
    cc.write_transcript(
        claude_dir,
        CWD,
        [cc.custom_title("Mine"), cc.ai_title("Login test on CI"), cc.summary("Later summary")],
        append=True,
    )
    assert replay.read(reader, path).chunks[0].session.title == "Mine"
    cc.write_transcript(claude_dir, CWD, [cc.custom_title("Mine, renamed")], append=True)
    assert replay.read(reader, path).chunks[0].session.title == "Mine, renamed"
    assert replay.sessions[cc.SESSION_ID].title == "Mine, renamed"
    assert replay.skipped == {}


def test_an_ai_title_alone_titles_the_session_and_is_no_event(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(
        claude_dir, CWD, [cc.user("why does CI fail?"), cc.ai_title("CI failure")]
    )

    [chunk] = reader.read(path, Cursor()).chunks

    assert chunk.session.title == "CI failure"
    assert [e.text for e in chunk.events] == ["why does CI fail?"]


def test_the_clients_bookkeeping_records_are_passed_over_without_being_counted(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    records = [*cc.bookkeeping(), cc.user("hello"), *cc.bookkeeping(), cc.assistant("hi")]
    path = cc.write_transcript(claude_dir, CWD, [*records, {"type": "hologram"}])

    result = reader.read(path, Cursor())

    assert [e.text for e in result.chunks[0].events] == ["hello", "hi"]
    assert result.skipped == {"unknown-type": 1}  # a type on no list is still counted


def test_a_prompt_typed_while_the_model_was_busy_is_indexed_as_the_users(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    records = [
        cc.user("migrate the orders table"),
        cc.assistant("running the migration"),
        cc.queued("also keep a backup of orders_v1", uuid="q-1"),
        cc.queued([{"type": "text", "text": "and log the row count"}], kind=None, uuid="q-2"),
        cc.queued("Task 3 finished in the background", kind="task-notification", uuid="q-3"),
        cc.queued("also keep a backup of orders_v1", uuid="q-1"),  # written twice
    ]
    path = cc.write_transcript(claude_dir, CWD, records)

    result = reader.read(path, Cursor())

    events = [(e.kind, e.text, e.injected) for e in result.chunks[0].events]
    assert events == [
        (Kind.USER, "migrate the orders table", False),
        (Kind.ASSISTANT, "running the migration", False),
        (Kind.USER, "also keep a backup of orders_v1", False),
        (Kind.USER, "and log the row count", False),
        (Kind.USER, "Task 3 finished in the background", True),
    ]
    assert result.skipped == {}


def test_discover_finds_transcripts_in_every_config_dir_and_nothing_else(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    a = cc.write_transcript(first, CWD, [cc.user("a")])
    b = cc.write_transcript(second, "/srv/web", [cc.user("b")], session_id="s-2")
    sub = cc.write_transcript(second, "/srv/web", [cc.user("c")], session_id="s-2", agent_id="x")
    session_folder = second / "projects" / cc.encode_cwd("/srv/web") / "s-2"
    (session_folder / "tool-results").mkdir()
    (session_folder / "tool-results" / "big.jsonl").write_text("{}\n")
    (session_folder / "subagents" / "notes.txt").write_text("not a transcript")
    (second / "history.jsonl").write_text("{}\n")

    found = list(ClaudeReader([first, second, tmp_path / "missing"]).discover())

    assert sorted(found) == sorted([a, b, sub])


def test_missing_config_dirs_discover_nothing(tmp_path: Path) -> None:
    reader = ClaudeReader([tmp_path / "nowhere"])

    assert reader.roots() == [tmp_path / "nowhere" / "projects"]
    assert list(reader.discover()) == []


def test_a_second_read_returns_only_appended_events(claude_dir: Path, reader: ClaudeReader) -> None:
    path = cc.write_transcript(claude_dir, CWD, conversation())
    first = reader.read(path, Cursor())
    cc.write_transcript(claude_dir, CWD, [cc.user("and on macOS?")], append=True)

    second = reader.read(path, Cursor(first.offset, first.state))

    assert [(e.seq, e.text) for e in second.chunks[0].events] == [(5, "and on macOS?")]
    assert reader.read(path, Cursor(second.offset, second.state)).chunks == []


def test_a_half_written_last_line_waits_for_the_rest(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(claude_dir, CWD, [cc.user("one"), cc.user("two")])
    data = path.read_bytes()
    cut = data.index(b"\n") + 1 + 40
    path.write_bytes(data[:cut])

    first = reader.read(path, Cursor())
    assert [e.text for e in first.chunks[0].events] == ["one"]
    assert (first.offset, first.skipped) == (data.index(b"\n") + 1, {})

    path.write_bytes(data)
    second = reader.read(path, Cursor(first.offset, first.state))
    assert [(e.seq, e.text) for e in second.chunks[0].events] == [(1, "two")]


@pytest.mark.parametrize("reason", BAD_REASONS)
def test_a_bad_line_is_counted_and_reading_goes_on(
    claude_dir: Path, reader: ClaudeReader, reason: str
) -> None:
    path = cc.write_transcript(claude_dir, CWD, [cc.user("before")])
    with path.open("ab") as handle:
        handle.write(bad_line(reason, b'{"type": "hologram", "uuid": "h1"}'))
    cc.write_transcript(claude_dir, CWD, [cc.user("after")], append=True)

    result = reader.read(path, Cursor())

    assert result.skipped == {reason: 1}
    assert [e.text for e in result.chunks[0].events] == ["before", "after"]
    assert result.offset == path.stat().st_size


def test_an_empty_transcript_gives_no_session(claude_dir: Path, reader: ClaudeReader) -> None:
    path = cc.write_transcript(claude_dir, CWD, [])

    result = reader.read(path, Cursor())

    assert (result.chunks, result.offset, result.skipped) == ([], 0, {})


def test_reads_cut_anywhere_give_the_same_index_as_one_read(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    records = [
        *conversation(),
        *cc.split_reply("msg_9", "Part one.", "Part two.", cc.tool_use("toolu_9", "Bash", {})),
        cc.tool_result("toolu_9", "ok"),
        cc.compact_boundary(),
        cc.compact_summary("fixed port"),
        cc.user("继续"),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)
    whole = read_whole(reader, path)

    grown = read_growing(reader, path, path.read_bytes(), step=97)

    assert grown.rows() == whole.rows()
    assert [surface for *_, surface in whole.rows()] == ["shadowed"] * 8 + ["current"] * 2
    assert grown.sessions == whole.sessions


def test_parallel_tool_results_in_one_record_each_find_their_tool(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    calls = cc.assistant(
        cc.tool_use("toolu_a", "Read", {"file_path": "a.py"}),
        cc.tool_use("toolu_b", "Grep", {"pattern": "PORT"}),
        message_id="msg_p",
    )
    results = cc.user(
        [
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "a.py:2: PORT"},
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "import os"},
        ]
    )
    path = cc.write_transcript(claude_dir, CWD, [calls, results])

    replay = read_whole(reader, path)

    results_seen = [
        (e.tool_name, e.text) for e in replay.events.values() if e.kind == "tool_result"
    ]
    assert results_seen == [("Grep", "a.py:2: PORT"), ("Read", "import os")]
    assert len({e.uid for e in replay.events.values()}) == 4


def test_a_compact_summary_without_a_boundary_still_shadows_what_came_before(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    path = cc.write_transcript(
        claude_dir, CWD, [cc.user("one"), cc.compact_summary("we said one"), cc.user("two")]
    )

    replay = read_whole(reader, path)

    assert [(kind, surface) for _, kind, _, surface in replay.rows()] == [
        ("user", "shadowed"),
        ("summary", "current"),
        ("user", "current"),
    ]


def test_a_cursor_saved_by_an_earlier_version_reads_on_where_it_stopped(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    # The index stores each file's cursor state; after an upgrade the reader gets back what
    # the previous version saved. This is that state, exactly as the reader saved it then,
    # after reading the first four records below: a reply in progress, a tool id, seen uuids.
    saved = {
        "seq": 3,
        "cwd": CWD,
        "title": "Fix the port",
        "created": 1772445601000,  # cc.at(1)
        "updated": 1772445603000,  # cc.at(3)
        "parent": None,
        "sidechain": False,
        "tools": {"toolu_1": "Read"},
        "uuids": ["u1", "u2", "u3"],
        "reply": {"id": "msg_1", "seq": 1, "time": 1772445602000, "texts": ["The port is fixed."]},
    }
    read_then = [
        cc.summary("Fix the port"),
        cc.user("why does test_login fail?", uuid="u1"),
        cc.assistant("The port is fixed.", message_id="msg_1", uuid="u2"),
        cc.assistant(cc.tool_use("toolu_1", "Read", {}), message_id="msg_1", uuid="u3"),
    ]
    path = cc.write_transcript(claude_dir, CWD, read_then)
    offset = path.stat().st_size
    cc.write_transcript(
        claude_dir,
        CWD,
        [
            cc.assistant("Reading conftest.", message_id="msg_1", uuid="u4"),
            cc.user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "PORT = 80"}]),
            cc.user("why does test_login fail?", uuid="u1"),  # a copy of a record read then
        ],
        append=True,
    )

    result = reader.read(path, Cursor(offset, saved))

    [chunk] = result.chunks
    assert [(e.seq, e.kind, e.text, e.tool_name) for e in chunk.events] == [
        (1, Kind.ASSISTANT, "The port is fixed.\n\nReading conftest.", None),
        (3, Kind.TOOL_RESULT, "PORT = 80", "Read"),
    ]
    session = chunk.session
    assert (session.title, session.cwd, session.created) == ("Fix the port", CWD, 1772445601000)
    assert result.skipped == {}
    # keys may be added (the titles by kind, calls waiting for a result), never renamed; the
    # uuids seen and the tool ids are kept compact under `seen` and `calls` now, and states
    # that hold them whole are still understood
    old_keys, new_keys = {"uuids", "tools"}, {"titles", "pending", "seen", "calls"}
    assert set(result.state) == set(saved) - old_keys | new_keys
    assert result.state["titles"] == {"summary": "Fix the port"}
    assert (result.state["seq"], result.state["reply"]["texts"]) == (
        4,
        ["The port is fixed.", "Reading conftest."],
    )
    # the next read remembers the uuids of both reads: their copies are dropped, a new one kept
    offset = result.offset
    cc.write_transcript(
        claude_dir,
        CWD,
        [
            cc.user("why does test_login fail?", uuid="u1"),
            cc.assistant("Reading conftest.", message_id="msg_1", uuid="u4"),
            cc.user("thanks, it passes now", uuid="u5"),
            cc.assistant(cc.tool_use("toolu_2", "Bash", {}), message_id="msg_2", uuid="u6"),
            cc.user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "again"}]),
        ],
        append=True,
    )
    again = reader.read(path, Cursor(offset, result.state))
    assert [(e.seq, e.text, e.tool_name) for c in again.chunks for e in c.events] == [
        (4, "thanks, it passes now", None),
        (5, "Bash {}", "Bash"),
        (6, "again", "Read"),  # the tool named by a call read two reads ago
    ]


# -- huiyi never recalls itself ---------------------------------------------------------------


def recalled(body: str) -> str:
    """A recall tool's answer as the model receives it: in huiyi's envelope."""
    return wrap(body)


@pytest.mark.parametrize("server", ["huiyi", "memoir"])
def test_calls_to_huiyis_tools_and_their_results_are_marked_own(
    claude_dir: Path, reader: ClaudeReader, server: str
) -> None:
    tool = f"mcp__{server}__recall_history"
    records = [
        cc.user("why did we roll back the migration?"),
        cc.assistant(cc.tool_use("toolu_1", tool, {"query": "migration"}), message_id="m1"),
        cc.tool_result("toolu_1", [cc.text(recalled("[1] we rolled back 0042 (lock timeout)"))]),
        cc.assistant(cc.tool_use("toolu_2", "Read", {"file_path": "a.py"}), message_id="m2"),
        cc.tool_result("toolu_2", "print('a')"),
        cc.assistant("It was rolled back over a lock timeout.", message_id="m3"),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.seq, e.kind, e.tool_name, e.own) for e in events] == [
        (0, Kind.USER, None, False),
        (1, Kind.TOOL_CALL, tool, True),
        (2, Kind.TOOL_RESULT, tool, True),
        (3, Kind.TOOL_CALL, "Read", False),
        (4, Kind.TOOL_RESULT, "Read", False),
        (5, Kind.ASSISTANT, None, False),
    ]


def test_a_result_in_huiyis_envelope_marks_the_call_it_answers_from_an_earlier_read(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    # a name that does not give huiyi away (a harness that drops the mcp__ prefix); the call
    # is read before its result exists, as when huiyi indexes the calling session mid-call
    records = [
        cc.user("what did we decide?"),
        cc.assistant(cc.tool_use("toolu_9", "recall_history", {"query": "decide"}), message_id="m"),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)
    replay = Replay()
    [first] = replay.read(reader, path).chunks
    assert [(e.seq, e.own) for e in first.events] == [(0, False), (1, False)]

    cc.write_transcript(
        claude_dir,
        CWD,
        [cc.tool_result("toolu_9", recalled("we decided X")), cc.assistant("X.", message_id="n")],
        append=True,
    )
    [second] = replay.read(reader, path).chunks

    assert [(e.seq, e.kind, e.own) for e in second.events] == [
        (1, Kind.TOOL_CALL, True),  # emitted again under its seq, now marked
        (2, Kind.TOOL_RESULT, True),
        (3, Kind.ASSISTANT, False),
    ]
    assert second.events[0].text == 'recall_history {"query": "decide"}'
    assert second.events[0].uid == "toolu_9"
    assert [(seq, kind) for seq, kind, *_ in replay.rows()] == [
        (0, "user"),
        (1, "tool_call"),
        (2, "tool_result"),
        (3, "assistant"),
    ]


def test_own_traffic_before_a_compaction_is_shadowed_like_the_rest(
    claude_dir: Path, reader: ClaudeReader
) -> None:
    records = [
        cc.user("what did we decide?"),
        cc.assistant(cc.tool_use("toolu_1", "mcp__huiyi__session_list", {}), message_id="m"),
        cc.tool_result("toolu_1", recalled("1 session")),
        cc.compact_boundary(),
        cc.compact_summary("We looked at past sessions."),
    ]
    path = cc.write_transcript(claude_dir, CWD, records)

    replay = read_whole(reader, path)

    assert [(kind, surface) for _, kind, _, surface in replay.rows()] == [
        ("user", "shadowed"),
        ("tool_call", "shadowed"),
        ("tool_result", "shadowed"),
        ("summary", "current"),
    ]
