"""The DSH reader against logs written the way DSH writes them (see tests/builders/dsh.py)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huiyi.harnesses.dsh.caller import pending_tool_call, pending_tool_calls, read_header
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.model import Event, Kind, Surface
from huiyi.sources.base import MAX_LINE_BYTES, Cursor, ReadResult
from huiyi.text.toolcalls import split_tool_calls, tool_call_line
from tests.builders import dsh as b
from tests.builders.reads import read_growing, read_whole

CWD = "/home/alice/acme"
SID = "session-7d1e2f3a-1111-4222-8333-944455556666"

# The example of docs/formats/dsh.md, verbatim: header, one turn with packed chunks, a compaction.
DOC_EXAMPLE = """\
{"type":"session","version":0,"id":"session-7d1e2f3a-1111-4222-8333-944455556666","createdAt":1787000000000,"cwd":"/home/alice/acme","delegationDepth":0,"agentPreset":"standard"}

{"type":"turn/start","seq":0,"time":1787000000100,"data":{"turn":1}}
{"type":"user/message","seq":1,"time":1787000000101,"data":{"content":[{"type":"text","text":"Remember: production deploys use `make ship`."}],"source":{"kind":"user"},"role":"user","id":"m1"},"surfaceOp":"append"}
{"type":"session/title","seq":2,"time":1787000000102,"data":{"title":"Production deploys","messageSeqs":[1],"source":{"kind":"fallback"}}}
{"type":"step/start","seq":3,"time":1787000000150,"data":{"turn":1,"step":1}}
{"type":"assistant/chunk","seq":4,"time":1787000000700,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}
{"type":"text-chunks","seq0":5,"time0":1787000000701,"data":{"turn":1,"step":1,"index":0,"dt":[12,9],"texts":["Noted:"," deploys use"," `make ship`."]}}
{"type":"assistant/message","seq":8,"time":1787000000732,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"Noted: deploys use `make ship`."}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"},"id":"m2"}},"sourceEventSeqs":[4,5,6,7],"surfaceOp":"append"}
{"type":"step/end","seq":9,"time":1787000000733,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":10,"time":1787000000734,"data":{"turn":1,"reason":{"kind":"completed"}}}

{"type":"compaction/start","seq":11,"time":1787000200000,"data":{"compactionId":"c1","turn":null}}
{"type":"compaction/summary","seq":12,"time":1787000203000,"data":{"compactionId":"c1","summary":[{"type":"text","text":"User recorded that deploys use `make ship`."}],"shadowedSeqs":[1,8]}}
{"type":"user/message","seq":13,"time":1787000203001,"data":{"content":[{"type":"text","text":"This is an automatically generated checkpoint ...\\n\\n<compacted-summary>"},{"type":"text","text":"User recorded that deploys use `make ship`."},{"type":"text","text":"</compacted-summary>"}],"source":{"kind":"plugin","plugin":"compact","compactionId":"c1"},"role":"user","id":"m3"},"sourceEventSeqs":[11,12,1,8],"surfaceOp":{"op":"replace","start":1,"end":8}}
{"type":"compaction/end","seq":14,"time":1787000203002,"data":{"compactionId":"c1","turn":null}}
"""  # noqa: E501


def write_doc_example(dsh_home: Path) -> Path:
    folder = dsh_home / "sessions" / "--home-alice-acme--" / SID
    folder.mkdir(parents=True)
    path = folder / "session.jsonl.zstd"
    frames = DOC_EXAMPLE.strip().split("\n\n")  # one frame per block, as in the doc
    path.write_bytes(b"".join(b.frame(frame.splitlines()) for frame in frames))
    return path


class Index:
    """What the store does with read results: upsert events, apply surface changes, keep the
    cursor (round-tripped through JSON, as the store keeps it)."""

    def __init__(self, reader: DshReader, path: Path) -> None:
        self.reader, self.path = reader, path
        self.cursor = Cursor()
        self.events: dict[int, Event] = {}
        self.title: str | None = None

    def read(self) -> ReadResult:
        result = self.reader.read(self.path, self.cursor)
        assert result.refused is None
        for chunk in result.chunks:
            for event in chunk.events:
                self.events[event.seq] = event
            for seq, surface in chunk.surface.items():
                # only events emitted before may change
                self.events[seq] = self.events[seq]._replace(surface=surface)
            self.title = chunk.session.title or self.title
        self.cursor = Cursor(result.offset, json.loads(json.dumps(result.state)))
        return result

    def surfaces(self) -> dict[int, Surface]:
        return {seq: event.surface for seq, event in sorted(self.events.items())}


def read(path: Path, dsh_home: Path) -> ReadResult:
    return DshReader(dsh_home).read(path, Cursor())


def events(result: ReadResult) -> dict[int, Event]:
    return {event.seq: event for chunk in result.chunks for event in chunk.events}


@pytest.fixture
def dsh_home(tmp_path: Path) -> Path:
    return tmp_path / "dsh"


def test_doc_example_folds_compaction_into_shadowed_current_and_log_only(dsh_home: Path) -> None:
    path = write_doc_example(dsh_home)
    result = read(path, dsh_home)

    assert result.offset == path.stat().st_size
    assert not result.skipped
    [chunk] = result.chunks
    assert chunk.session.id == SID
    assert chunk.session.cwd == CWD
    assert chunk.session.title == "Production deploys"
    assert chunk.session.created == 1787000000000
    assert chunk.session.updated == 1787000203002
    assert chunk.session.is_subagent is False
    got = events(result)
    assert {seq: (e.kind, e.surface) for seq, e in got.items()} == {
        1: (Kind.USER, Surface.SHADOWED),
        2: (Kind.TITLE, Surface.LOG_ONLY),
        8: (Kind.ASSISTANT, Surface.SHADOWED),
        12: (Kind.SUMMARY, Surface.LOG_ONLY),
        13: (Kind.USER, Surface.CURRENT),
    }
    assert got[8].text == "Noted: deploys use `make ship`."  # seq exact after packed chunks
    assert got[1].injected is False
    assert got[13].injected is True
    assert "<compacted-summary>\nUser recorded" in got[13].text
    assert got[12].text == "User recorded that deploys use `make ship`."


def test_packed_chunk_rows_emit_nothing_and_keep_seqs(dsh_home: Path) -> None:
    reply = b.assistant(8, "Here they are", reasoning="thinking hard")
    del reply["seq"]  # a line without its seq takes the next one, counting chunk members
    batch = [
        b.user(0, "list the files"),
        b.chunks(1, ["thinking", " hard"], kind="reasoning"),
        b.chunks(3, ['{"pa', 'th":"."}'], kind="tool-call"),
        b.chunks(5, ["Here", " they", " are"]),
        reply,
        b.user(9, "thanks"),
    ]
    result = read(b.write_session(dsh_home, CWD, [batch]), dsh_home)

    assert not result.skipped
    assert {seq: e.text for seq, e in events(result).items()} == {
        0: "list the files",
        8: "Here they are",  # the reasoning block is not indexed
        9: "thanks",
    }


def test_compaction_in_a_later_read_shadows_events_of_an_earlier_one(dsh_home: Path) -> None:
    path = b.write_session(
        dsh_home, CWD, [[b.user(0, "deploy with make ship"), b.assistant(1, "ok")]]
    )
    index = Index(DshReader(dsh_home), path)
    index.read()
    assert index.cursor.offset == path.stat().st_size
    assert index.surfaces() == {0: Surface.CURRENT, 1: Surface.CURRENT}

    b.append_batch(path, [b.user(2, "and staging?"), b.assistant(3, "make stage")])
    second = index.read()
    assert sorted(events(second)) == [2, 3]  # nothing read twice
    b.append_batch(path, b.compaction(4, "deploys: make ship", start=0, end=2))
    third = index.read()

    assert index.cursor.offset == path.stat().st_size
    assert third.chunks[0].surface == dict.fromkeys([0, 1, 2], Surface.SHADOWED)
    assert events(third)[6].surface == Surface.CURRENT
    assert index.surfaces() == {
        0: Surface.SHADOWED,
        1: Surface.SHADOWED,
        2: Surface.SHADOWED,
        3: Surface.CURRENT,
        5: Surface.LOG_ONLY,
        6: Surface.CURRENT,
    }


def test_tool_result_pruning_shadows_exactly_one_result(dsh_home: Path) -> None:
    batch = [
        b.user(0, "read both files"),
        b.assistant(1, calls=[("c1", "read", '{"path":"a.py"}'), ("c2", "read", '{"path":"b"}')]),
        b.tool_call(2, "read", '{"path":"a.py"}', call_id="c1"),
        b.tool_result(3, "c1", "print('a')"),
        b.tool_call(4, "read", '{"path":"b"}', call_id="c2"),
        b.tool_result(5, "c2", "bbb"),
        b.event("compaction/prune", 6, {"seqs": [3]}),
        b.tool_result(7, "c1", "[pruned]", surface_op={"op": "replace", "start": 3, "end": 3}),
    ]
    got = events(read(b.write_session(dsh_home, CWD, [batch]), dsh_home))

    assert {seq: e.surface for seq, e in got.items()} == {
        0: Surface.CURRENT,
        1: Surface.CURRENT,
        2: Surface.LOG_ONLY,
        3: Surface.SHADOWED,
        4: Surface.LOG_ONLY,
        5: Surface.CURRENT,
        7: Surface.CURRENT,
    }
    assert got[1].kind == Kind.TOOL_CALL
    assert got[1].tool_name == "read"
    assert got[1].text == 'read {"path":"a.py"}\nread {"path":"b"}'
    assert (got[2].kind, got[2].text) == (Kind.TOOL_CALL, 'read {"path":"a.py"}')
    assert (got[3].kind, got[3].tool_name, got[3].text) == (Kind.TOOL_RESULT, "read", "print('a')")


def test_an_assistant_message_with_text_keeps_its_tool_calls_in_stable_lines(
    dsh_home: Path,
) -> None:
    """DSH's usual shape: text, then tool-call blocks, in one assistant message. The calls stay
    in the event text after the message, one `[tool call: NAME] ARGUMENTS` line each (long
    string values shortened, the JSON still whole), and `split_tool_calls` takes them back."""
    write = json.dumps({"file_path": "notes.md", "content": "长" * 5000})
    batch = [
        b.user(0, "看看 deploy.sh"),
        b.assistant(
            1,
            "先看一下部署脚本。\nThen the notes.",
            calls=[
                ("c1", "bash", '{"command": "cat deploy.sh", "description": "Show it"}'),
                ("c2", "write", write),
            ],
            reasoning="private thoughts",
        ),
        b.tool_call(2, "bash", '{"command": "cat deploy.sh"}', call_id="c1"),
        b.tool_result(3, "c1", "#!/bin/sh"),
    ]
    got = events(read(b.write_session(dsh_home, CWD, [batch]), dsh_home))

    message = got[1]
    assert message.kind is Kind.ASSISTANT
    assert message.text.startswith(
        "先看一下部署脚本。\nThen the notes.\n\n"
        '[tool call: bash] {"command": "cat deploy.sh", "description": "Show it"}\n'
        "[tool call: write] "
    )
    assert "private thoughts" not in message.text
    assert len(message.text) < 500
    text, calls = split_tool_calls(message.text)
    assert text == "先看一下部署脚本。\nThen the notes."
    assert [name for name, _ in calls] == ["bash", "write"]
    shortened = json.loads(calls[1][1])
    assert shortened["file_path"] == "notes.md"
    assert shortened["content"] == "长" * 199 + "…"
    assert got[3].tool_name == "bash"


def test_split_tool_calls_takes_only_the_lines_that_end_the_text() -> None:
    line = tool_call_line("grep", '{"pattern": "TODO"}')
    assert line == '[tool call: grep] {"pattern": "TODO"}'
    assert split_tool_calls("no calls") == ("no calls", [])
    quoted = f"I would run\n{line}\nbut did not."
    assert split_tool_calls(quoted) == (quoted, [])
    assert split_tool_calls(f"ok\n\n{line}") == ("ok", [("grep", '{"pattern": "TODO"}')])
    assert tool_call_line("bash", "not json\n  at all") == "[tool call: bash] not json at all"


def test_tool_result_carries_error_and_todos_are_text(dsh_home: Path) -> None:
    batch = [
        b.tool_call(0, "bash", '{"cmd":"make"}', call_id="x"),
        b.tool_result(1, "x", "make: *** no rule", error={"name": "ExitError", "code": 2}),
        b.event("todo/write", 2, {"todos": [{"content": "fix make", "status": "pending"}]}),
    ]
    got = events(read(b.write_session(dsh_home, CWD, [batch]), dsh_home))

    assert got[1].text == "make: *** no rule\nerror: ExitError 2"
    assert got[1].tool_name == "bash"
    assert (got[2].kind, got[2].text) == (Kind.OTHER, "[pending] fix make")


def test_torn_final_frame_is_kept_back_until_it_is_finished(dsh_home: Path) -> None:
    last = [b.user(2, "second question"), b.assistant(3, "second answer")]
    path = b.write_session(
        dsh_home, CWD, [[b.user(0, "first"), b.assistant(1, "answer")], last], torn_tail=True
    )
    index = Index(DshReader(dsh_home), path)
    first = index.read()

    assert sorted(events(first)) == [0, 1]
    assert index.cursor.offset < path.stat().st_size
    assert not first.skipped  # may just be still being written
    again = index.read()
    assert again.skipped == {"torn-frame": 1}  # unchanged since last time: really torn
    assert events(again) == {}
    assert not index.read().skipped  # counted once

    b.finish_torn(path, last)
    done = index.read()
    assert sorted(events(done)) == [2, 3]
    assert index.cursor.offset == path.stat().st_size
    assert index.surfaces() == dict.fromkeys(range(4), Surface.CURRENT)


def test_torn_frame_replaced_by_a_repair_frame_is_read_once(dsh_home: Path) -> None:
    path = b.write_session(
        dsh_home,
        CWD,
        [[b.user(0, "first")], [b.user(1, "lost"), b.user(2, "half")]],
        torn_tail=True,
    )
    index = Index(DshReader(dsh_home), path)
    index.read()
    with path.open("r+b") as file:  # what DSH does on the next open
        file.truncate(index.cursor.offset)
    b.append_batch(path, [b.user(1, "repaired")])
    index.read()

    assert {seq: e.text for seq, e in index.events.items()} == {0: "first", 1: "repaired"}


def test_corrupt_frame_in_the_middle_is_skipped_and_reading_goes_on(dsh_home: Path) -> None:
    batches = [[b.user(0, "one")], [b.user(1, "two " * 50)], [b.user(2, "three")]]
    path = b.write_session(dsh_home, CWD, batches, session_id=SID)
    data = bytearray(path.read_bytes())
    end_of_second = sum(len(b.frame(lines)) for lines in [[b.header(SID, CWD)], *batches[:2]])
    data[end_of_second - 1] ^= 0xFF  # frame 2's checksum no longer matches
    path.write_bytes(bytes(data))
    result = read(path, dsh_home)

    assert result.skipped == {"corrupt-frame": 1}
    assert {seq: e.text for seq, e in events(result).items()} == {0: "one", 2: "three"}
    assert result.offset == len(data)


def test_corrupt_frame_before_a_torn_one_is_counted_once(dsh_home: Path) -> None:
    batches = [[b.user(0, "one")], [b.user(1, "two " * 50)], [b.user(2, "three " * 50)]]
    path = b.write_session(dsh_home, CWD, batches, session_id=SID, torn_tail=True)
    data = bytearray(path.read_bytes())
    end_of_second = sum(len(b.frame(lines)) for lines in [[b.header(SID, CWD)], *batches[:2]])
    data[end_of_second - 1] ^= 0xFF
    path.write_bytes(bytes(data))
    index = Index(DshReader(dsh_home), path)

    assert index.read().skipped == {"corrupt-frame": 1}
    assert index.read().skipped == {"torn-frame": 1}
    b.finish_torn(path, batches[2])
    index.read()
    assert {seq: e.text[:5] for seq, e in index.events.items()} == {0: "one", 2: "three"}


def test_garbage_after_the_last_frame_is_counted_and_consumed(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(0, "one")]])
    with path.open("ab") as file:
        file.write(b"\0" * 64)
    result = read(path, dsh_home)

    assert result.skipped == {"corrupt-frame": 1}
    assert sorted(events(result)) == [0]
    assert result.offset == path.stat().st_size


def test_fork_skips_seed_events_but_folds_them(dsh_home: Path) -> None:
    seed = [
        b.user(0, "parent question"),
        b.title(1, "Parent topic"),
        b.assistant(2, "parent reply"),
    ]
    fork = [
        b.user(3, "fork question"),
        *b.compaction(4, "summary", start=2, end=3),
    ]
    path = b.write_session(
        dsh_home, CWD, [seed, fork], seedLength=3, parentSession="session-parent"
    )
    index = Index(DshReader(dsh_home), path)
    result = index.read()

    assert index.surfaces() == {3: Surface.SHADOWED, 5: Surface.LOG_ONLY, 6: Surface.CURRENT}
    assert result.chunks[0].surface == {}  # no change reported for the parent's copies
    assert result.chunks[0].session.parent == "session-parent"
    assert index.title == "Parent topic"  # inherited until the fork gets its own
    assert result.chunks[0].session.updated == b.T0 + 7000  # seed times are the parent's


def test_seed_events_shadowed_in_a_later_read_are_not_reported(dsh_home: Path) -> None:
    seed = [b.user(0, "parent question"), b.assistant(1, "parent reply")]
    path = b.write_session(dsh_home, CWD, [seed, [b.user(2, "fork")]], seedLength=2)
    index = Index(DshReader(dsh_home), path)
    index.read()
    b.append_batch(path, b.compaction(3, "summary", start=0, end=2))
    later = index.read()

    assert later.chunks[0].surface == {2: Surface.SHADOWED}
    assert index.surfaces() == {2: Surface.SHADOWED, 4: Surface.LOG_ONLY, 5: Surface.CURRENT}


@pytest.mark.parametrize(
    ("fields", "subagent"),
    [({}, False), ({"origin": "subagent"}, True), ({"delegationDepth": 1}, True)],
)
def test_subagent_sessions_are_marked(dsh_home: Path, fields: dict[str, object], subagent: bool):
    path = b.write_session(dsh_home, CWD, [[b.user(0, "task")]], **fields)
    assert read(path, dsh_home).chunks[0].session.is_subagent is subagent


@pytest.mark.parametrize(
    ("source", "injected"),
    [
        ("user", False),
        (None, False),  # legacy logs without a source: the human
        ("plugin", True),
        ("agent-instructions", True),
        ("skill-review", True),
        ("session-reference", True),
        ("team-message", True),
        ("goal", True),
    ],
)
def test_host_injected_user_messages_are_marked(
    dsh_home: Path, source: str | None, injected: bool
) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(0, "hello", source=source)]])
    [event] = events(read(path, dsh_home)).values()
    assert (event.kind, event.role, event.injected) == (Kind.USER, "user", injected)


def test_legacy_pre_identity_shapes_are_read(dsh_home: Path) -> None:
    batch = [
        b.event("user/message", 0, {"content": [{"type": "text", "text": "old question"}]}),
        b.event(
            "assistant/message",
            1,
            {
                "content": [
                    {"type": "text", "text": "old answer"},
                    {"type": "tool-call", "id": "k1", "name": "grep", "arguments": "{}"},
                ],
                "provenance": {"kind": "model"},
            },
        ),
        b.event("tool/result", 2, {"callId": "k1", "content": "3 matches", "isError": False}),
    ]
    got = events(read(b.write_session(dsh_home, CWD, [batch]), dsh_home))

    assert {seq: (e.kind, e.text, e.surface) for seq, e in got.items()} == {
        0: (Kind.USER, "old question", Surface.CURRENT),  # no surfaceOp: appended
        1: (Kind.ASSISTANT, "old answer\n\n[tool call: grep] {}", Surface.CURRENT),
        2: (Kind.TOOL_RESULT, "3 matches", Surface.CURRENT),
    }
    assert got[0].injected is False
    assert got[2].tool_name == "grep"


def test_title_is_the_last_session_title(dsh_home: Path) -> None:
    path = b.write_session(
        dsh_home, CWD, [[b.title(0, "Draft"), b.user(1, "hi")], [b.title(2, "Deploy [私密]")]]
    )
    result = read(path, dsh_home)
    assert result.chunks[0].session.title == "Deploy [私密]"
    assert [e.text for e in events(result).values() if e.kind == Kind.TITLE] == [
        "Draft",
        "Deploy [私密]",
    ]


def test_unsupported_version_is_refused_with_a_reason(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(0, "from the future")]], version=1)
    reader = DshReader(dsh_home)
    result = reader.read(path, Cursor())

    assert result.refused is not None
    assert "version 1" in result.refused
    assert result.chunks == []
    assert result.skipped == {"unsupported-version": 1}
    assert reader.read(path, Cursor(result.offset, result.state)).refused == result.refused


def test_a_file_without_header_is_refused(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [], compress=False)
    path.write_bytes(b.encode([b.user(0, "no header")]))
    result = read(path, dsh_home)
    assert result.refused is not None
    assert "header" in result.refused
    assert result.chunks == []


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"type":"user/message","seq":1,', "invalid-json"),
        (b'{"type":"user/message","seq":1,"data":{"content":"\xff\xfe"}}', "invalid-utf8"),
        (b.event("plan/update", 1, {"plan": "x"}), "unknown-type"),
        (b'["not", "an", "event"]', "bad-record"),
        (b'{"type":"user/message","seq":1,"data":{"content":"' + b"x" * (20 << 20) + b'"}}', None),
    ],
    ids=["invalid-json", "invalid-utf8", "unknown-type", "bad-record", "line-too-long"],
)
def test_bad_lines_are_counted_and_skipped(
    dsh_home: Path, compress: bool, bad: b.Line, reason: str | None
) -> None:
    assert len(b"x" * (20 << 20)) > MAX_LINE_BYTES
    batch = [b.user(0, "before"), bad, b.user(2, "after")]
    path = b.write_session(dsh_home, CWD, [batch], compress=compress)
    result = read(path, dsh_home)

    assert result.skipped == {reason or "line-too-long": 1}
    assert {seq: e.text for seq, e in events(result).items()} == {0: "before", 2: "after"}
    assert result.offset == path.stat().st_size


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seq", "2"),
        ("seq", -1),
        ("seq", 2**53 + 1),
        ("seq", 2**64),
        ("time", 1.5),
        ("time", -1),
        ("time", "2026-03-02T10:15:00Z"),
        ("time", 10**16),  # year 318857: no date to show
        ("time", 2**64),
    ],
)
def test_an_event_the_index_cannot_hold_is_skipped_whole(
    dsh_home: Path, field: str, value: object
) -> None:
    """A seq or time out of range (or not an integer) skips the event as malformed, and it
    leaves nothing behind: its call is not remembered, no seq is taken."""
    bad = {**b.tool_call(2, "bash", "{}", call_id="c9"), field: value}
    before = [b.user(1, "one"), b.tool_result(3, "c9", "out"), b.user(4, "two")]
    path = b.write_session(dsh_home, CWD, [[before[0], bad, *before[1:]]], session_id=SID)

    result = read(path, dsh_home)

    assert result.skipped == {"malformed-record": 1}
    clean = b.write_session(dsh_home / "clean", CWD, [before], session_id=SID)
    expected = read(clean, dsh_home / "clean")
    assert events(result) == events(expected)
    assert events(result)[3].tool_name is None  # the call it named was never taken
    assert result.state == expected.state


def test_a_packed_row_past_the_largest_seq_is_skipped(dsh_home: Path) -> None:
    path = b.write_session(
        dsh_home, CWD, [[b.user(1, "one"), b.chunks(2**53 - 1, ["a", "b"]), b.user(2, "two")]]
    )

    result = read(path, dsh_home)

    assert result.skipped == {"malformed-record": 1}
    assert [e.text for e in events(result).values()] == ["one", "two"]
    assert result.state["next"] == 3


def test_a_header_time_out_of_range_is_left_out(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(1, "one")]], createdAt=2**64)

    result = read(path, dsh_home)

    assert result.chunks[0].session.created is None
    assert [e.text for e in events(result).values()] == ["one"]


def test_tool_call_arguments_too_deep_to_walk_are_shortened_as_text() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    line = tool_call_line("bash", deep)
    assert line.startswith("[tool call: bash] [[[") and len(line) < 700


def test_ordinary_dsh_records_are_skipped_silently(dsh_home: Path) -> None:
    """Records a real DSH writes in every session (seen in tests/fixtures/dsh/) and the rest of
    its own vocabulary carry no conversation: skipped, and not counted as unknown. So is an
    unknown record DSH marks `ignorable`; an unknown one without the mark is counted."""
    batch = [
        b.event("permission/preset", 0, {"preset": "workspace-write"}),
        b.event("sandbox/mode", 1, {"mode": "workspace-write"}),
        b.event("approval/policy", 2, {"policy": "ask"}),
        b.user(3, "部署失败了"),
        b.event("session/title-llm-request", 4, {"messageSeqs": [3], "system": "Create a title"}),
        b.event("llm/retry", 5, {"attempt": 1}),
        b.event("hook/result", 6, {"hook": "Stop"}),
        b.event("future/record", 7, {"x": 1}, ignorable=True),
        b.event("future/other", 8, {"x": 1}),
        b.assistant(9, "看看日志。"),
    ]
    result = read(b.write_session(dsh_home, CWD, [batch]), dsh_home)

    assert result.skipped == {"unknown-type": 1}
    assert {seq: e.text for seq, e in events(result).items()} == {3: "部署失败了", 9: "看看日志。"}


@pytest.mark.parametrize("name", ["session.jsonl.zstd", "session.jsonl"])
def test_an_empty_file_is_counted(dsh_home: Path, name: str) -> None:
    path = dsh_home / "sessions" / "--x--" / "session-empty" / name
    path.parent.mkdir(parents=True)
    path.touch()
    result = read(path, dsh_home)
    assert (result.chunks, result.offset, result.skipped) == ([], 0, {"empty-file": 1})


def test_plain_jsonl_leaves_a_half_written_last_line_for_the_next_read(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(0, "done")]], compress=False)
    whole = b.encode([b.user(1, "still typing")])
    with path.open("ab") as file:
        file.write(whole[:-10])
    index = Index(DshReader(dsh_home), path)
    first = index.read()

    assert sorted(events(first)) == [0]
    assert not first.skipped
    assert index.cursor.offset == path.stat().st_size - len(whole) + 10
    with path.open("ab") as file:
        file.write(whole[-10:])
    assert {seq: e.text for seq, e in events(index.read()).items()} == {1: "still typing"}


def test_discover_finds_logs_and_ignores_tmp_files(dsh_home: Path) -> None:
    zstd = b.write_session(dsh_home, CWD, [[b.user(0, "a")]])
    plain = b.write_session(dsh_home, "/srv/other", [[b.user(0, "b")]], compress=False)
    (zstd.parent / "session.jsonl.zstd.tmp").write_bytes(b"partial")
    (dsh_home / "sessions" / "stray.txt").write_text("not a project")

    reader = DshReader(dsh_home)
    assert reader.roots() == [dsh_home / "sessions"]
    assert sorted(reader.discover()) == sorted([zstd, plain])


def test_discover_on_a_missing_root_yields_nothing(tmp_path: Path) -> None:
    assert list(DshReader(tmp_path / "no-such-dsh").discover()) == []


def test_read_header_returns_the_first_line(dsh_home: Path) -> None:
    path = b.write_session(dsh_home, CWD, [[b.user(0, "a")]], session_id=SID, seedLength=2)
    header = read_header(path)
    assert header is not None
    assert (header["id"], header["cwd"], header["seedLength"]) == (SID, CWD, 2)
    assert read_header(dsh_home / "missing.jsonl.zstd") is None


def test_pending_tool_call_finds_the_unanswered_call_a_log_ends_with(dsh_home: Path) -> None:
    args = '{"query":"deploy"}'
    calls = [
        b.user(0, "what did we say about deploys?"),
        b.assistant(1, calls=[("c1", "mcp__huiyi__recall_history", args)]),
        b.tool_call(2, "mcp__huiyi__recall_history", args, call_id="c1"),
    ]
    path = b.write_session(dsh_home, CWD, [calls])
    assert pending_tool_call(path) == ("mcp__huiyi__recall_history", args)

    b.append_batch(path, [b.tool_result(3, "c1", "found it")])
    assert pending_tool_call(path) is None


def test_pending_tool_call_ignores_calls_left_unanswered_in_an_earlier_turn(dsh_home: Path) -> None:
    batch = [
        b.tool_call(0, "bash", '{"cmd":"sleep 99"}', call_id="old"),
        b.event("turn/end", 1, {"reason": {"kind": "aborted"}}),
        b.user(2, "never mind"),
        b.tool_call(3, "read", '{"path":"a"}', call_id="a"),
        b.tool_call(4, "read", '{"path":"b"}', call_id="b"),
    ]
    path = b.write_session(dsh_home, CWD, [batch], compress=False)
    assert pending_tool_calls(path) == [("read", '{"path":"a"}'), ("read", '{"path":"b"}')]
    assert pending_tool_call(path) == ("read", '{"path":"b"}')
    assert pending_tool_call(dsh_home / "gone" / "session.jsonl.zstd") is None


# A small session touching every kind of event, including a compaction that spans batches.
SCRIPT: list[b.Line] = [
    b.user(0, "deploy?"),
    b.title(1, "Deploys"),
    b.chunks(2, ["use", " make"]),
    b.assistant(4, "use make ship", calls=[("c1", "bash", '{"cmd":"make ship"}')]),
    b.tool_call(5, "bash", '{"cmd":"make ship"}', call_id="c1"),
    b.tool_result(6, "c1", "shipped"),
    *b.compaction(7, "deploys use make ship", start=0, end=6),
    b.user(11, "and staging?"),
    b.assistant(12, "make stage"),
    *b.compaction(13, "deploys and staging", start=9, end=12),
    b.title(17, "Deploys and staging"),
]


def snapshot(index: Index) -> dict[int, tuple[Kind, str, Surface, str | None]]:
    return {s: (e.kind, e.text, e.surface, e.tool_name) for s, e in sorted(index.events.items())}


@settings(max_examples=40, deadline=None)
@given(
    cuts=st.lists(st.integers(1, len(SCRIPT) - 1), unique=True).map(sorted),
    reads=st.sets(st.integers(0, len(SCRIPT))),
    compress=st.booleans(),
)
def test_any_framing_and_any_read_points_give_the_same_index(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int], reads: set[int], compress: bool
) -> None:
    home = tmp_path_factory.mktemp("dsh")
    whole = b.write_session(home, CWD, [SCRIPT], session_id="session-whole")
    expected = Index(DshReader(home), whole)
    expected.read()
    by_surface = {s: [q for q, e in expected.events.items() if e.surface == s] for s in Surface}
    assert by_surface[Surface.SHADOWED] == [0, 4, 6, 9, 11, 12]
    assert by_surface[Surface.CURRENT] == [15]

    bounds = [0, *cuts, len(SCRIPT)]
    batches = [SCRIPT[start:end] for start, end in itertools.pairwise(bounds)]
    path = b.write_session(home, CWD, batches[:1], session_id="session-split", compress=compress)
    index = Index(DshReader(home), path)
    for number, batch in enumerate(batches[1:], start=1):
        if bounds[number] in reads:
            index.read()
        b.append_batch(path, batch)
    index.read()

    assert snapshot(index) == snapshot(expected)
    assert index.title == expected.title == "Deploys and staging"
    assert index.cursor.offset == path.stat().st_size


@settings(max_examples=30, deadline=None)
@given(step=st.integers(1, 300), compress=st.booleans())
def test_a_log_read_while_it_grows_matches_one_read_of_the_whole(
    tmp_path_factory: pytest.TempPathFactory, step: int, compress: bool
) -> None:
    home = tmp_path_factory.mktemp("dsh")
    batches = [SCRIPT[:4], SCRIPT[4:9], SCRIPT[9:]]
    path = b.write_session(home, CWD, batches, compress=compress)
    reader = DshReader(home)
    whole = read_whole(reader, path)

    grown = read_growing(reader, path, path.read_bytes(), step)  # cut anywhere, mid-frame too

    assert grown.rows() == whole.rows()
    assert grown.sessions == whole.sessions
    assert not grown.skipped  # a frame or line still being written is not a fault
