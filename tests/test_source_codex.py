"""Codex CLI rollouts: each thing the model saw is indexed once, host-injected text is marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi.harnesses.codex.reader import CodexReader, summary_of
from huiyi.model import Kind
from huiyi.safety.envelope import wrap
from huiyi.sources.base import Cursor
from tests.builders import codex as cx
from tests.builders.reads import BAD_REASONS, Replay, bad_line, read_growing, read_whole

CWD = "/home/ana/api"


@pytest.fixture
def codex_home(isolated_home: Path) -> Path:
    return isolated_home / ".codex"


@pytest.fixture
def reader(codex_home: Path) -> CodexReader:
    return CodexReader(codex_home)


def turn() -> list[cx.Item]:
    return [
        cx.developer(
            "<permissions instructions>sandbox: workspace-write</permissions instructions>"
        ),
        cx.user_instructions("Always run the tests with -q."),
        cx.env_context(CWD),
        cx.turn_context(CWD),
        cx.prompt("why does test_login fail only on CI?"),
        cx.reasoning(),
        cx.function_call("shell", {"command": ["pytest", "-q"]}, "call_7Xa", output="1 failed"),
        cx.token_count(),
        cx.assistant_message("The test binds fixed port 8080, which CI already uses."),
    ]


def test_a_turn_is_indexed_once_with_injected_blocks_marked(
    codex_home: Path, reader: CodexReader
) -> None:
    path = cx.write_rollout(codex_home, CWD, turn())

    result = reader.read(path, Cursor())

    [chunk] = result.chunks
    assert [(e.seq, e.kind, e.role, e.injected, e.tool_name) for e in chunk.events] == [
        (0, Kind.USER, "developer", True, None),
        (1, Kind.USER, "user", True, None),
        (2, Kind.USER, "user", True, None),
        (3, Kind.USER, "user", False, None),
        (4, Kind.TOOL_CALL, "assistant", False, "shell"),
        (5, Kind.TOOL_RESULT, "tool", False, "shell"),
        (6, Kind.ASSISTANT, "assistant", False, None),
    ]
    texts = [e.text for e in chunk.events]
    assert "<user_instructions>" in texts[1] and "<environment_context>" in texts[2]
    assert texts[3:] == [
        "why does test_login fail only on CI?",
        'shell {"command": ["pytest", "-q"]}',
        "1 failed",
        "The test binds fixed port 8080, which CI already uses.",
    ]
    assert all(e.surface == "current" for e in chunk.events)
    session = chunk.session
    assert (session.id, session.source, session.cwd) == (cx.SESSION_ID, "codex", CWD)
    assert (session.title, session.is_subagent) == (None, False)
    assert (session.created, session.updated) == (cx.ms(cx.START), cx.ms(cx.at(12)))
    assert result.skipped == {}


def test_custom_tool_output_carries_the_tool_name(codex_home: Path, reader: CodexReader) -> None:
    patch = "*** Begin Patch\n*** Update File: app.py\n*** End Patch"
    path = cx.write_rollout(
        codex_home, CWD, [cx.custom_tool_call("apply_patch", patch, "c1", output="Done!")]
    )

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.kind, e.tool_name, e.text) for e in events] == [
        (Kind.TOOL_CALL, "apply_patch", f"apply_patch {patch}"),
        (Kind.TOOL_RESULT, "apply_patch", "Done!"),
    ]


def test_compacted_becomes_a_summary_and_shadows_earlier_reads(
    codex_home: Path, reader: CodexReader
) -> None:
    path = cx.write_rollout(codex_home, CWD, turn())
    replay = Replay()
    replay.read(reader, path)
    cx.write_rollout(
        codex_home,
        CWD,
        [
            cx.compacted("Earlier: diagnosed the CI port clash; fix = ephemeral port."),
            cx.prompt("ok"),
        ],
        append=True,
    )

    [chunk] = replay.read(reader, path).chunks

    summary, prompt = chunk.events
    assert (summary.seq, summary.kind, summary.injected) == (7, Kind.SUMMARY, True)
    assert summary.text == "Earlier: diagnosed the CI port clash; fix = ephemeral port."
    assert chunk.shadow_before == 7
    assert (prompt.kind, prompt.text) == (Kind.USER, "ok")
    assert [surface for *_, surface in replay.rows()] == ["shadowed"] * 7 + ["current"] * 2


def test_a_subagent_rollout_is_marked(codex_home: Path, reader: CodexReader) -> None:
    path = cx.rollout_path(codex_home)
    path.parent.mkdir(parents=True)
    meta = cx.session_meta(cx.SESSION_ID, CWD, source={"subagent": "review"})
    path.write_bytes(cx.lines([meta, *cx.prompt("review my change")]))

    assert reader.read(path, Cursor()).chunks[0].session.is_subagent is True


def test_without_session_meta_the_id_comes_from_the_file_name(
    codex_home: Path, reader: CodexReader
) -> None:
    path = cx.rollout_path(codex_home, "0199ffff-0000-7000-8000-000000000001")
    path.parent.mkdir(parents=True)
    path.write_bytes(cx.lines(cx.prompt("hello")))

    [chunk] = reader.read(path, Cursor()).chunks

    assert chunk.session.id == "0199ffff-0000-7000-8000-000000000001"
    assert [e.text for e in chunk.events] == ["hello"]


def test_discover_finds_live_and_archived_rollouts_only(
    codex_home: Path, reader: CodexReader
) -> None:
    live = cx.write_rollout(codex_home, CWD, [cx.prompt("a")])
    archived = cx.write_rollout(codex_home, CWD, [cx.prompt("b")], session_id="s-2", archived=True)
    (codex_home / "history.jsonl").write_text('{"session_id": "x", "ts": 1, "text": "a"}\n')
    (live.parent / "notes.jsonl").write_text("{}\n")

    assert list(reader.discover()) == [live, archived]


def test_a_missing_codex_home_discovers_nothing(tmp_path: Path) -> None:
    reader = CodexReader(tmp_path / "nowhere")

    assert reader.roots() == [
        tmp_path / "nowhere" / "sessions",
        tmp_path / "nowhere" / "archived_sessions",
    ]
    assert list(reader.discover()) == []


def test_a_second_read_returns_only_appended_events(codex_home: Path, reader: CodexReader) -> None:
    path = cx.write_rollout(codex_home, CWD, turn())
    first = reader.read(path, Cursor())
    cx.write_rollout(codex_home, CWD, [cx.prompt("and on macOS?")], append=True)

    second = reader.read(path, Cursor(first.offset, first.state))

    [chunk] = second.chunks
    assert [(e.seq, e.text) for e in chunk.events] == [(7, "and on macOS?")]
    assert chunk.session.id == cx.SESSION_ID
    assert reader.read(path, Cursor(second.offset, second.state)).chunks == []


def test_a_half_written_last_line_waits_for_the_rest(codex_home: Path, reader: CodexReader) -> None:
    path = cx.write_rollout(codex_home, CWD, [cx.user_message("one"), cx.user_message("two")])
    data = path.read_bytes()
    complete = data.rindex(b"\n", 0, len(data) - 1) + 1
    path.write_bytes(data[: complete + 30])

    first = reader.read(path, Cursor())
    assert [e.text for e in first.chunks[0].events] == ["one"]
    assert (first.offset, first.skipped) == (complete, {})

    path.write_bytes(data)
    second = reader.read(path, Cursor(first.offset, first.state))
    assert [(e.seq, e.text) for e in second.chunks[0].events] == [(1, "two")]


@pytest.mark.parametrize("reason", BAD_REASONS)
def test_a_bad_line_is_counted_and_reading_goes_on(
    codex_home: Path, reader: CodexReader, reason: str
) -> None:
    path = cx.write_rollout(codex_home, CWD, [cx.user_message("before")])
    with path.open("ab") as handle:
        handle.write(bad_line(reason, b'{"type": "hologram", "payload": {}}'))
    cx.write_rollout(codex_home, CWD, [cx.user_message("after")], append=True)

    result = reader.read(path, Cursor())

    assert result.skipped == {reason: 1}
    assert [e.text for e in result.chunks[0].events] == ["before", "after"]


def test_an_empty_rollout_gives_no_session(codex_home: Path, reader: CodexReader) -> None:
    path = cx.rollout_path(codex_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")

    result = reader.read(path, Cursor())

    assert (result.chunks, result.offset, result.skipped) == ([], 0, {})


def test_reads_cut_anywhere_give_the_same_index_as_one_read(
    codex_home: Path, reader: CodexReader
) -> None:
    items = [*turn(), cx.compacted("port clash"), cx.prompt("继续"), *turn()]
    path = cx.write_rollout(codex_home, CWD, items)
    whole = read_whole(reader, path)

    grown = read_growing(reader, path, path.read_bytes(), step=89)

    assert grown.rows() == whole.rows()
    assert [surface for *_, surface in whole.rows()] == ["shadowed"] * 7 + ["current"] * 9
    assert grown.sessions == whole.sessions


def test_a_cursor_saved_by_an_earlier_version_reads_on_where_it_stopped(
    codex_home: Path, reader: CodexReader
) -> None:
    # The index stores each file's cursor state; after an upgrade the reader gets back what
    # the previous version saved. This is that state, exactly as the reader saved it then,
    # after reading the first four lines below (a subagent's rollout with a call in flight).
    saved = {
        "seq": 2,
        "id": cx.SESSION_ID,
        "cwd": CWD,
        "created": 1772446500000,  # cx.START
        "updated": 1772446503000,  # cx.at(3)
        "subagent": True,
        "calls": {"call_7Xa": "shell"},
    }
    path = cx.rollout_path(codex_home)
    path.parent.mkdir(parents=True)
    meta = cx.session_meta(cx.SESSION_ID, CWD, source={"subagent": "review"})
    read_then = [meta, *cx.prompt("review my change"), *cx.function_call("shell", {}, "call_7Xa")]
    path.write_bytes(cx.lines(read_then))
    offset = path.stat().st_size
    with path.open("ab") as handle:
        news = [
            cx.function_call_output("call_7Xa", "1 file changed"),
            cx.message("assistant", "ok"),
        ]
        handle.write(cx.lines(news, first=len(read_then)))

    result = reader.read(path, Cursor(offset, saved))

    [chunk] = result.chunks
    assert [(e.seq, e.kind, e.text, e.tool_name) for e in chunk.events] == [
        (2, Kind.TOOL_RESULT, "1 file changed", "shell"),
        (3, Kind.ASSISTANT, "ok", None),
    ]
    session = chunk.session
    assert (session.id, session.cwd, session.is_subagent) == (cx.SESSION_ID, CWD, True)
    assert (session.created, session.updated) == (1772446500000, cx.ms(cx.at(5)))
    assert result.skipped == {}
    # keys may be added (calls waiting for a result, recent prompts, the last reply), never
    # renamed
    assert result.state == {
        **saved,
        "seq": 4,
        "updated": cx.ms(cx.at(5)),
        "pending": {},
        "prompts": [],
        "reply": [3, cx.ms(cx.at(5)), result.state["reply"][2]],
    }


# -- Codex 0.171: prompts without event_msg/user_message, namespaced MCP tools -----------------


def turn_171() -> list[cx.Item]:
    return [
        cx.message_171(
            "developer", ("<skills_instructions>\n## Skills\n</skills_instructions>", "skills")
        ),
        cx.env_context_171(CWD),
        *cx.bookkeeping_171(),
        cx.prompt_171("上周为什么回滚了迁移? why did we roll back?"),
        cx.assistant_message("A lock timeout on 0042.", with_ui_copy=False),
    ]


def test_a_codex_171_prompt_is_one_human_user_event(codex_home: Path, reader: CodexReader) -> None:
    path = cx.write_rollout(codex_home, CWD, turn_171())

    result = reader.read(path, Cursor())

    [chunk] = result.chunks
    assert [(e.seq, e.kind, e.role, e.injected) for e in chunk.events] == [
        (0, Kind.USER, "developer", True),
        (1, Kind.USER, "user", True),
        (2, Kind.USER, "user", False),
        (3, Kind.ASSISTANT, "assistant", False),
    ]
    assert chunk.events[2].text == "上周为什么回滚了迁移? why did we roll back?"
    assert result.skipped == {}


@pytest.mark.parametrize(
    "copies",
    [
        ["item", "event"],  # older Codex
        ["item", "completed"],  # 0.171
        ["event", "item"],  # the UI copy first
        ["completed", "item", "event"],  # every copy at once
        ["event"],  # only the UI copy
        ["item"],  # only the model's copy
    ],
)
def test_each_prompt_is_indexed_once_whichever_copies_the_rollout_has(
    codex_home: Path, reader: CodexReader, copies: list[str]
) -> None:
    def prompt(text: str) -> list[cx.Line]:
        made = {
            "item": cx.message("user", text),
            "event": cx.user_message(text),
            "completed": cx.user_message_item(text),
        }
        return [made[copy] for copy in copies]

    items = [*prompt("run the tests"), cx.message("assistant", "ok"), *prompt("run the tests")]
    path = cx.write_rollout(codex_home, CWD, items)

    whole = read_whole(reader, path)
    grown = read_growing(reader, path, path.read_bytes(), step=61)

    assert [(kind, text) for _, kind, text, _ in whole.rows()] == [
        ("user", "run the tests"),
        ("assistant", "ok"),
        ("user", "run the tests"),  # typed twice, indexed twice
    ]
    assert grown.rows() == whole.rows()


def test_injected_blocks_are_told_apart_item_by_item(codex_home: Path, reader: CodexReader) -> None:
    mixed = cx._item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "# AGENTS.md instructions for /home/ana/api\n..."},
                {"type": "input_text", "text": "<turn_aborted>interrupted</turn_aborted>"},
                {"type": "input_text", "text": "<subagent_note>\nhi\n</subagent_note>"},
                {"type": "input_text", "text": "why is <environment_context> in my prompt?"},
            ],
        }
    )
    labelled = cx.message_171(
        "user", ("<environment_context>hand-typed</environment_context>", "user"), ("x", "hook")
    )
    path = cx.write_rollout(codex_home, CWD, [mixed, labelled])

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.injected, e.text.splitlines()[0]) for e in events] == [
        (True, "# AGENTS.md instructions for /home/ana/api"),
        (False, "why is <environment_context> in my prompt?"),
        (True, "x"),  # provenance decides where a message says it
        (False, "<environment_context>hand-typed</environment_context>"),
    ]


def test_an_mcp_call_keeps_its_namespace_and_huiyis_own_are_marked(
    codex_home: Path, reader: CodexReader
) -> None:
    answer = wrap("recall_history: 1 result\n[1] rolled back 0042")
    items = [
        cx.prompt_171("why did we roll back?"),
        cx.mcp_call("recall_history", {"query": "rollback"}, "c1", output=answer),
        cx.mcp_call("search_issues", {"q": "x"}, "c2", namespace="mcp__github", output="[]"),
        cx.function_call("shell", {"command": ["ls"]}, "c3", output="a.py"),
    ]
    path = cx.write_rollout(codex_home, CWD, items)

    events = reader.read(path, Cursor()).chunks[0].events

    assert [(e.kind, e.tool_name, e.own) for e in events[1:]] == [
        (Kind.TOOL_CALL, "mcp__huiyi__recall_history", True),
        (Kind.TOOL_RESULT, "mcp__huiyi__recall_history", True),
        (Kind.TOOL_CALL, "mcp__github__search_issues", False),
        (Kind.TOOL_RESULT, "mcp__github__search_issues", False),
        (Kind.TOOL_CALL, "shell", False),
        (Kind.TOOL_RESULT, "shell", False),
    ]
    assert events[1].text == 'mcp__huiyi__recall_history {"query": "rollback"}'
    assert events[2].text.startswith("Wall time: 0.4937 seconds\nOutput:\nThe following is")


def test_an_older_mcp_name_is_marked_own_by_the_result_it_gets(
    codex_home: Path, reader: CodexReader
) -> None:
    # older Codex named MCP tools `<server>__<tool>`, with no namespace
    items = [
        cx.prompt("what did we decide?"),
        cx.function_call("memo__session_list", {}, "c1"),
    ]
    path = cx.write_rollout(codex_home, CWD, items)
    replay = Replay()
    assert [e.own for e in replay.read(reader, path).chunks[0].events] == [False, False]
    cx.write_rollout(
        codex_home, CWD, [cx.function_call_output("c1", wrap("2 sessions"))], append=True
    )

    [chunk] = replay.read(reader, path).chunks

    assert [(e.seq, e.kind, e.own) for e in chunk.events] == [
        (1, Kind.TOOL_CALL, True),
        (2, Kind.TOOL_RESULT, True),
    ]


def test_an_unknown_event_or_item_type_is_still_counted(
    codex_home: Path, reader: CodexReader
) -> None:
    items = [
        cx._event({"type": "hologram_started"}),
        cx._item({"type": "hologram_call"}),
        cx.prompt_171("hi"),
    ]
    path = cx.write_rollout(codex_home, CWD, items)

    result = reader.read(path, Cursor())

    assert result.skipped == {"unknown-type": 2}
    assert [e.text for e in result.chunks[0].events] == ["hi"]


# -- Codex 0.171 compaction: the preamble, and the summary logged as a reply first -------------

SUMMARY = "Kestrel-summary: the team settled how to undo the schema change and paused writes."
#: another wording of the preamble, as a later build might write it
OTHER_PREAMBLE = (
    "A previous model worked on this task and wrote the summary below for the next agent. "
    "Treat it as background and build on it instead of redoing the work it describes:"
)


def compacted_171(**options: object) -> list[cx.Item]:
    return [
        *turn_171(),
        cx.compaction_171(SUMMARY, **options),  # type: ignore[arg-type]
        cx.prompt_171("把单元测试再跑一遍"),
    ]


def kinds(replay: Replay) -> list[tuple[int, Kind, bool, str]]:
    return [(e.seq, e.kind, e.injected, e.surface.value) for _, e in sorted(replay.events.items())]


@pytest.mark.parametrize(
    "options",
    [
        {},  # as 0.171 writes it
        {"flagged": False},  # no `compaction_output` on the record
        {"flagged": False, "preamble": OTHER_PREAMBLE},  # and a preamble in other words
    ],
)
@pytest.mark.parametrize("step", [None, 97])
def test_a_codex_171_compaction_keeps_the_summary_alone_and_the_reply_is_not_conversation(
    codex_home: Path, reader: CodexReader, options: dict[str, object], step: int | None
) -> None:
    path = cx.write_rollout(codex_home, CWD, compacted_171(**options))
    replay = (
        read_whole(reader, path)
        if step is None
        else read_growing(reader, path, path.read_bytes(), step=step)
    )

    assert kinds(replay) == [
        (0, Kind.USER, True, "shadowed"),
        (1, Kind.USER, True, "shadowed"),
        (2, Kind.USER, False, "shadowed"),
        (3, Kind.ASSISTANT, False, "shadowed"),
        (4, Kind.ASSISTANT, True, "shadowed"),  # the summary the model wrote, as it was asked
        (5, Kind.SUMMARY, True, "current"),
        (6, Kind.USER, False, "current"),
    ]
    texts = [e.text for _, e in sorted(replay.events.items())]
    assert texts[4] == texts[5] == SUMMARY
    assert replay.skipped == {}


def test_a_reply_that_is_not_the_summary_stays_conversation(
    codex_home: Path, reader: CodexReader
) -> None:
    items = [
        *turn_171(),
        cx.assistant_message("Done: the lock timeout is fixed.", with_ui_copy=False),
        cx.compacted(f"{cx.PREAMBLE_171}\n{SUMMARY}"),
    ]
    path = cx.write_rollout(codex_home, CWD, items)

    events = reader.read(path, Cursor()).chunks[0].events

    reply, summary = events[-2:]
    assert (reply.kind, reply.injected, reply.text) == (
        Kind.ASSISTANT,
        False,
        "Done: the lock timeout is fixed.",
    )
    assert (summary.kind, summary.text) == (Kind.SUMMARY, SUMMARY)


@pytest.mark.parametrize(
    ("message", "summary"),
    [
        (f"{cx.PREAMBLE_171}\n{SUMMARY}", SUMMARY),
        (
            f"{cx.PREAMBLE_171}\n\n{SUMMARY}\n\nNext: run the tests.",
            f"{SUMMARY}\n\nNext: run the tests.",
        ),
        (f"{OTHER_PREAMBLE}\n{SUMMARY}", SUMMARY),
        # older builds: the summary alone, a summary with a heading line of its own, or a
        # preamble with nothing after it are kept as they are
        (SUMMARY, SUMMARY),
        (f"Summary of the model's work:\n{SUMMARY}", f"Summary of the model's work:\n{SUMMARY}"),
        (f"{cx.PREAMBLE_171}\n", f"{cx.PREAMBLE_171}\n"),
    ],
)
def test_summary_of_strips_a_preamble_by_its_shape_and_keeps_anything_else(
    message: str, summary: str
) -> None:
    assert summary_of(message) == summary


def test_summary_of_finds_the_summary_behind_any_preamble_when_the_reply_is_known() -> None:
    preamble = "Context handed over from an earlier run:"  # too short to be told by its shape
    assert summary_of(f"{preamble}\n{SUMMARY}") == f"{preamble}\n{SUMMARY}"
    assert summary_of(f"{preamble}\n{SUMMARY}", SUMMARY) == SUMMARY
    assert summary_of(SUMMARY, SUMMARY) == SUMMARY
