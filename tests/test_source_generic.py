"""The generic JSONL import format, as `docs/generic-jsonl.md` documents it."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from huiyi.model import Kind
from huiyi.sources.base import Cursor
from huiyi.sources.generic import GenericReader, default_session_id
from tests.builders.reads import BAD_REASONS, Replay, bad_line, read_growing, read_whole

DOC = Path(__file__).parent.parent / "docs" / "generic-jsonl.md"
T0 = 1772446500000  # 2026-03-02T10:15:00Z


def write(path: Path, *records: dict[str, Any], append: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    with path.open("ab" if append else "wb") as handle:
        handle.write(data)
    return path


def read(path: Path) -> Replay:
    return read_whole(GenericReader([path]), path)


def test_the_documented_example_reads_as_the_doc_says() -> None:
    example = re.search(r"```jsonl\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert example is not None
    path = Path(os.environ["HOME"]) / "example.jsonl"
    path.write_text(example.group(1), encoding="utf-8")

    replay = read(path)

    session = replay.sessions["chat-2026-03-02"]
    assert (session.cwd, session.title, session.source) == (
        "/home/ana/api",
        "Fix flaky login test",
        "jsonl",
    )
    assert [(seq, kind, surface) for seq, kind, _, surface in replay.rows()] == [
        (0, "user", "shadowed"),
        (1, "tool_call", "shadowed"),
        (2, "tool_result", "shadowed"),
        (3, "assistant", "shadowed"),
        (4, "summary", "current"),
        (5, "user", "current"),
    ]
    times = [e.time for e in replay.events.values()]
    assert times[:4] == [T0, T0 + 2000, T0 + 5000, T0 + 7000]
    assert replay.skipped == {}


def test_a_file_without_headers_is_one_session_in_its_folder(tmp_path: Path) -> None:
    path = write(
        tmp_path / "notes" / "history.jsonl",
        {"role": "user", "text": "how do we deploy?", "time": T0},
        {"role": "assistant", "text": "make ship", "time": T0 + 1000},
        {"role": "system", "text": "You are a helpful agent.", "time": T0 + 2000},
    )

    replay = read(path)

    [(sid, session)] = replay.sessions.items()
    assert sid == default_session_id(path) != default_session_id(tmp_path / "history.jsonl")
    assert sid.startswith("history-")
    assert (session.cwd, session.created, session.updated) == (
        str(tmp_path / "notes"),
        T0,
        T0 + 2000,
    )
    events = list(replay.events.values())
    assert [(e.kind, e.role, e.injected) for e in events] == [
        (Kind.USER, "user", False),
        (Kind.ASSISTANT, "assistant", False),
        (Kind.USER, "system", True),
    ]


def test_a_line_cwd_sets_the_session_directory(tmp_path: Path) -> None:
    path = write(tmp_path / "h.jsonl", {"role": "user", "text": "hi", "cwd": "/srv/web", "time": 1})

    [session] = read(path).sessions.values()

    assert session.cwd == "/srv/web"


def test_headers_route_messages_to_their_sessions(tmp_path: Path) -> None:
    path = write(
        tmp_path / "export.jsonl",
        {"type": "session", "id": "a", "cwd": "/srv/a", "title": "A", "created": "2026-03-01"},
        {"role": "user", "text": "first in a", "time": T0},
        {"type": "session", "id": "b", "cwd": "/srv/b", "parent": "a", "subagent": True},
        {"role": "user", "text": "first in b", "time": T0},
        {"session": "a", "role": "assistant", "text": "second in a", "time": T0 + 1},
        {"role": "assistant", "text": "second in b", "time": T0 + 2},
    )

    replay = read(path)

    a, b = replay.sessions["a"], replay.sessions["b"]
    assert (a.cwd, a.title, a.parent, a.is_subagent) == ("/srv/a", "A", None, None)
    assert a.created == 1772323200000  # 2026-03-01T00:00:00Z
    assert (b.cwd, b.parent, b.is_subagent) == ("/srv/b", "a", True)
    assert [text for _, _, text, _ in replay.rows("a")] == ["first in a", "second in a"]
    assert [text for _, _, text, _ in replay.rows("b")] == ["first in b", "second in b"]


def test_given_seqs_kinds_tools_and_flags_are_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "h.jsonl",
        {"seq": 10, "role": "user", "text": "old question", "time": 1, "compacted": True},
        {"role": "assistant", "kind": "tool_call", "tool": "grep", "text": "grep -r port"},
        {"role": "tool", "tool": "grep", "text": "app.py: PORT = 8080", "uid": "r-1"},
        {"role": "user", "text": "AGENTS.md says: be brief", "injected": True},
        {"seq": 10, "role": "user", "text": "old question, edited"},
    )

    events = read(path).events.values()

    assert [(e.seq, e.kind, e.tool_name, e.injected, e.surface, e.text) for e in events] == [
        (10, Kind.USER, None, False, "current", "old question, edited"),
        (11, Kind.TOOL_CALL, "grep", False, "current", "grep -r port"),
        (12, Kind.TOOL_RESULT, "grep", False, "current", "app.py: PORT = 8080"),
        (13, Kind.USER, None, True, "current", "AGENTS.md says: be brief"),
    ]
    assert [e.time for e in events] == [1000] * 4  # seconds, carried forward
    assert [e.uid for e in events][2] == "r-1"


def test_compaction_lines_shadow_earlier_reads(tmp_path: Path) -> None:
    path = write(tmp_path / "h.jsonl", {"role": "user", "text": "one", "time": T0})
    reader = GenericReader([path])
    replay = Replay()
    replay.read(reader, path)
    write(
        path,
        {"type": "compaction", "summary": "we said one"},
        {"role": "user", "text": "two"},
        append=True,
    )

    [chunk] = replay.read(reader, path).chunks

    assert chunk.shadow_before == 1
    assert replay.rows() == [
        (0, "user", "one", "shadowed"),
        (1, "summary", "we said one", "current"),
        (2, "user", "two", "current"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        {"text": "no role"},
        {"role": "robot", "text": "unknown role"},
        {"role": "user", "text": 42},
        {"role": "user", "text": "x", "kind": "poem"},
        {"role": "user", "text": "x", "seq": -1},
        {"role": "user", "text": "x", "seq": 2**53 + 1},
        {"role": "user", "text": "x", "seq": 2**64},
        {"type": "compaction", "seq": 2**64},
        {"role": "user", "text": "x", "session": 7},
        {"type": "session", "title": "no id"},
    ],
)
def test_an_unusable_line_is_counted_as_a_bad_record(tmp_path: Path, line: dict[str, Any]) -> None:
    path = write(tmp_path / "h.jsonl", line, {"role": "user", "text": "fine", "time": 1})

    replay = read(path)

    assert replay.skipped == {"bad-record": 1}
    assert [text for _, _, text, _ in replay.rows()] == ["fine"]


@pytest.mark.parametrize(
    "line",
    [
        {"role": "user", "text": "x", "kind": ["user"]},
        {"role": "user", "text": "x", "kind": {"tool": 1}},
    ],
)
def test_a_line_of_the_wrong_shape_is_skipped_as_malformed(
    tmp_path: Path, line: dict[str, Any]
) -> None:
    path = write(tmp_path / "h.jsonl", {"role": "user", "text": "one"}, line)
    write(path, {"role": "user", "text": "two"}, append=True)

    replay = read(path)

    assert replay.skipped == {"malformed-record": 1}
    assert [(seq, text) for seq, _, text, _ in replay.rows()] == [(0, "one"), (1, "two")]


@pytest.mark.parametrize("time", [3 * 10**14, -(10**12), 2**64, float("inf")])
def test_a_time_the_index_cannot_hold_is_left_out(tmp_path: Path, time: float) -> None:
    path = write(
        tmp_path / "h.jsonl",
        {"role": "user", "text": "one", "time": T0},
        {"role": "user", "text": "two", "time": time},
    )

    replay = read(path)

    assert [e.time for e in replay.events.values()] == [T0, T0]  # the previous line's time
    assert replay.skipped == {}


def test_discover_takes_files_and_folders_and_skips_what_is_missing(tmp_path: Path) -> None:
    single = write(tmp_path / "one.log", {"role": "user", "text": "a"})
    nested = write(tmp_path / "dir" / "deep" / "b.jsonl", {"role": "user", "text": "b"})
    top = write(tmp_path / "dir" / "a.jsonl", {"role": "user", "text": "c"})
    (tmp_path / "dir" / "readme.txt").write_text("not a log")
    reader = GenericReader([single, tmp_path / "dir", tmp_path / "missing"])

    assert list(reader.discover()) == [single, top, nested]
    assert reader.roots() == [single, tmp_path / "dir", tmp_path / "missing"]


def test_a_second_read_returns_only_appended_events(tmp_path: Path) -> None:
    path = write(tmp_path / "h.jsonl", {"role": "user", "text": "one", "time": T0})
    reader = GenericReader([path])
    first = reader.read(path, Cursor())
    write(path, {"role": "user", "text": "two", "time": T0 + 1}, append=True)

    second = reader.read(path, Cursor(first.offset, first.state))

    assert [(e.seq, e.text) for e in second.chunks[0].events] == [(1, "two")]
    assert second.chunks[0].session.cwd is None  # already known: not re-sent
    assert reader.read(path, Cursor(second.offset, second.state)).chunks == []


def test_a_half_written_last_line_waits_for_the_rest(tmp_path: Path) -> None:
    path = write(
        tmp_path / "h.jsonl", {"role": "user", "text": "one"}, {"role": "user", "text": "two"}
    )
    data = path.read_bytes()
    complete = data.index(b"\n") + 1
    path.write_bytes(data[: complete + 10])
    reader = GenericReader([path])

    first = reader.read(path, Cursor())
    assert [e.text for e in first.chunks[0].events] == ["one"]
    assert (first.offset, first.skipped) == (complete, {})

    path.write_bytes(data)
    second = reader.read(path, Cursor(first.offset, first.state))
    assert [(e.seq, e.text) for e in second.chunks[0].events] == [(1, "two")]


@pytest.mark.parametrize("reason", BAD_REASONS)
def test_a_bad_line_is_counted_and_reading_goes_on(tmp_path: Path, reason: str) -> None:
    path = write(tmp_path / "h.jsonl", {"role": "user", "text": "before", "time": 1})
    with path.open("ab") as handle:
        handle.write(bad_line(reason, b'{"type": "hologram"}'))
    write(path, {"role": "user", "text": "after"}, append=True)

    replay = read(path)

    assert replay.skipped == {reason: 1}
    assert [text for _, _, text, _ in replay.rows()] == ["before", "after"]


def test_an_empty_file_gives_no_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")

    result = GenericReader([path]).read(path, Cursor())

    assert (result.chunks, result.offset, result.skipped) == ([], 0, {})


def test_reads_cut_anywhere_give_the_same_index_as_one_read(tmp_path: Path) -> None:
    path = write(
        tmp_path / "h.jsonl",
        {"type": "session", "id": "a", "cwd": "/srv/a"},
        *({"role": "user", "text": f"问题 {n}", "time": T0 + n} for n in range(5)),
        {"type": "compaction", "summary": "five questions"},
        {"type": "session", "id": "b", "cwd": "/srv/b"},
        {"role": "assistant", "text": "answer", "time": T0},
        {"session": "a", "role": "user", "text": "back to a", "time": T0 + 9},
    )
    reader = GenericReader([path])
    whole = read_whole(reader, path)

    grown = read_growing(reader, path, path.read_bytes(), step=23)

    assert grown.rows() == whole.rows()
    assert len(whole.rows("a")) == 7 and len(whole.rows("b")) == 1
    assert grown.sessions == whole.sessions


def test_a_huge_line_is_skipped_without_being_held_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(bad_line("line-too-long", b"") + b'{"role": "user", "text": "after"}\n')
    tracemalloc.start()
    try:
        replay = read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert replay.skipped == {"line-too-long": 1}
    assert [text for _, _, text, _ in replay.rows()] == ["after"]
    assert peak < path.stat().st_size * 0.75  # it streamed past; it was never read whole


def test_a_cursor_saved_by_an_earlier_version_reads_on_where_it_stopped(tmp_path: Path) -> None:
    # The index stores each file's cursor state; after an upgrade the reader gets back what
    # the previous version saved. This is that state, exactly as the reader saved it then,
    # after reading the first three lines below.
    saved = {"sessions": {"chat-1": 2}, "current": "chat-1", "time": T0 + 1000}
    path = write(
        tmp_path / "h.jsonl",
        {"type": "session", "id": "chat-1", "cwd": "/srv/a"},
        {"role": "user", "text": "one", "time": T0},
        {"role": "assistant", "text": "two", "time": T0 + 1000},
    )
    offset = path.stat().st_size
    write(path, {"role": "user", "text": "three"}, append=True)

    result = GenericReader([path]).read(path, Cursor(offset, saved))

    [chunk] = result.chunks
    assert [(e.session, e.seq, e.text, e.time) for e in chunk.events] == [
        ("chat-1", 2, "three", T0 + 1000)
    ]
    assert chunk.session.cwd is None  # known from the earlier read: not re-sent
    assert result.state == {**saved, "sessions": {"chat-1": 3}}
