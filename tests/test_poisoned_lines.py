"""One bad line never stops the index (issue 13, item 3).

A record of the wrong shape (a `type` that is a list, a number beyond 64 bits, nesting deeper
than the JSON parser goes) used to raise out of a reader: `huiyi index` stopped there, and the
recall tools, which index before they answer, failed until the line was removed. Each case here
goes through the real CLI, with a good record before and after the bad one in the same file,
and through a recall tool afterwards.

The property tests below it take a valid record of every type each reader knows, put a random
JSON value in one of its fields (at any depth), and index it between two good records.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import event, given, settings
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.harnesses.codex.reader import CodexReader
from huiyi.harnesses.dsh.caller import pending_tool_calls, read_header
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.recall.scope import CallerContext
from huiyi.sources.base import MALFORMED_RECORD, Reader
from huiyi.sources.generic import GenericReader
from huiyi.store import migrations
from huiyi.store.ingest import Ingestor, SourceReport
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh
from tests.builders.reads import read_whole

FIRST = "the first good record says pelican"
LAST = "the last good record says zanzibar"
DSH_ID = "session-0f0f0f0f-1111-4222-8333-444455556666"
JSONL_ID = "imported-chat"
#: The cwd of the property tests' sessions (never read from disk).
CWD = "/home/ana/acme"
#: Nesting far deeper than `json.loads` goes (it raises RecursionError, not ValueError).
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def workspace(isolated_home: Path) -> str:
    path = isolated_home / "acme"
    (path / ".git").mkdir(parents=True)
    return str(path)


def _claude(home: Path, ws: str, bad: bytes) -> tuple[str, list[str]]:
    path = cc.write_transcript(home / ".claude", ws, [cc.user(FIRST)])
    with path.open("ab") as handle:
        handle.write(bad + b"\n")
    cc.write_transcript(home / ".claude", ws, [cc.user(LAST)], append=True)
    return cc.SESSION_ID, []


def _codex(home: Path, ws: str, bad: bytes) -> tuple[str, list[str]]:
    path = cx.write_rollout(home / ".codex", ws, [cx.prompt(FIRST)])
    with path.open("ab") as handle:
        handle.write(bad + b"\n")
    cx.write_rollout(home / ".codex", ws, [cx.prompt(LAST)], append=True)
    return cx.SESSION_ID, []


def _dsh(home: Path, ws: str, bad: bytes) -> tuple[str, list[str]]:
    dsh.write_session(
        home / ".dsh", ws, [[dsh.user(1, FIRST), bad, dsh.user(3, LAST)]], session_id=DSH_ID
    )
    return DSH_ID, []


def _jsonl(home: Path, ws: str, bad: bytes) -> tuple[str, list[str]]:
    path = home / "import.jsonl"
    lines = [
        json.dumps({"type": "session", "id": JSONL_ID, "cwd": ws}).encode(),
        json.dumps({"role": "user", "text": FIRST}).encode(),
        bad,
        json.dumps({"role": "user", "text": LAST}).encode(),
    ]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return JSONL_ID, ["--jsonl", str(path)]


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode()


def _dsh_user(seq: int, time: int) -> bytes:
    return _line({**dsh.user(2, "bad"), "seq": seq, "time": time})


#: (case, source, file writer, the bad line, the reason it is counted under)
CASES = [
    (
        "claude-type-list",
        "claude",
        _claude,
        _line({**cc.user("bad"), "type": ["user"], "uuid": "u-bad"}),
        MALFORMED_RECORD,
    ),
    ("claude-deep", "claude", _claude, b'{"type":"user","message":' + DEEP.encode() + b"}", None),
    (
        "codex-type-list",
        "codex",
        _codex,
        _line({"timestamp": "2026-03-02T10:15:09Z", "type": ["response_item"], "payload": {}}),
        MALFORMED_RECORD,
    ),
    (
        "codex-item-type-list",
        "codex",
        _codex,
        _line({**cx.message("user", "bad"), "payload": {"type": ["message"], "role": "user"}}),
        MALFORMED_RECORD,
    ),
    (
        "codex-event-type-list",
        "codex",
        _codex,
        _line({"type": "event_msg", "payload": {"type": ["user_message"], "message": "bad"}}),
        MALFORMED_RECORD,
    ),
    ("codex-deep", "codex", _codex, b'{"type":"event_msg","payload":' + DEEP.encode() + b"}", None),
    ("dsh-seq-beyond-64-bits", "dsh", _dsh, _dsh_user(2**64, dsh.T0 + 2000), MALFORMED_RECORD),
    ("dsh-seq-beyond-2**53", "dsh", _dsh, _dsh_user(2**53 + 1, dsh.T0 + 2000), MALFORMED_RECORD),
    ("dsh-time-beyond-64-bits", "dsh", _dsh, _dsh_user(2, 2**64), MALFORMED_RECORD),
    ("dsh-time-after-year-9999", "dsh", _dsh, _dsh_user(2, 10**16), MALFORMED_RECORD),
    ("dsh-deep", "dsh", _dsh, b'{"type":"user/message","data":' + DEEP.encode() + b"}", None),
    (
        "jsonl-kind-list",
        "jsonl",
        _jsonl,
        _line({"role": "user", "text": "bad", "kind": ["user"]}),
        MALFORMED_RECORD,
    ),
    (
        "jsonl-seq-beyond-64-bits",
        "jsonl",
        _jsonl,
        _line({"role": "user", "text": "b", "seq": 2**64}),
        "bad-record",
    ),
    ("jsonl-deep", "jsonl", _jsonl, b'{"role":"user","text":' + DEEP.encode() + b"}", None),
]


@pytest.mark.parametrize(
    ("source", "write", "bad", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_bad_line_is_counted_and_the_rest_is_indexed_and_recalled(
    isolated_home: Path,
    workspace: str,
    source: str,
    write: Callable[[Path, str, bytes], tuple[str, list[str]]],
    bad: bytes,
    reason: str | None,
) -> None:
    session_id, args = write(isolated_home, workspace, bad)

    result = CliRunner().invoke(main, ["index", "--no-embed", *args])

    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith(source))
    assert f"{reason or 'invalid-json'} 1" in row, result.stdout
    with Huiyi() as hy:
        tools = hy.recall(CallerContext(workspace, None))
        listed = tools.session_list().text
        assert session_id in listed and "2 events" in listed, listed
        read = tools.session_read(session_id).text
        assert FIRST in read and LAST in read and "bad" not in read.split(FIRST)[1].split(LAST)[0]
        # indexing again (what the recall tools do before answering) is quiet and harmless
        again = CliRunner().invoke(main, ["index", "--no-embed", *args])
        assert again.exit_code == 0, again.output


def test_lone_surrogates_in_a_dsh_log_are_replaced_not_fatal(
    isolated_home: Path, workspace: str
) -> None:
    # JSON may escape half of a UTF-16 pair ("\ud800"); SQLite cannot store it
    bad = rb'{"type":"user/message","seq":2,"data":{"content":[{"type":"text","text":"x\ud800y"}]}}'
    title = rb'{"type":"session/title","seq":4,"data":{"title":"t\udc00"}}'
    dsh.write_session(
        isolated_home / ".dsh",
        workspace,
        [[dsh.user(1, FIRST), bad, dsh.user(3, LAST), title]],
        session_id=DSH_ID,
    )

    result = CliRunner().invoke(main, ["index", "--no-embed"])

    assert result.exit_code == 0, result.output
    with Huiyi() as hy:
        read = hy.recall(CallerContext(workspace, None)).session_read(DSH_ID).text
    assert FIRST in read and "x\ufffdy" in read and LAST in read


# -- property: any value in any field of any record ---------------------------------------------

#: Words the readers branch on, so a random value often takes a path a real record takes.
_WORDS = [
    "user", "assistant", "system", "tool", "text", "tool_use", "tool_result", "message",
    "compact_boundary", "summary", "session", "compaction", "response_item", "event_msg",
    "session_meta", "compacted", "function_call", "function_call_output", "user_message",
    "item_completed", "UserMessage", "developer", "user/message", "assistant/message",
    "tool/call", "tool/result", "session/title", "todo/write", "tool-call", "tool-result",
    "text-chunks", "replace", "append", "subagent", "plain", "2026-03-02T10:15:00Z",
]  # fmt: skip
_TEXT = st.text(max_size=12) | st.sampled_from(_WORDS) | st.text(st.characters(categories=["Cs"]))
_NUMBERS = (
    st.integers(-(2**70), 2**70)
    | st.integers(2**63 - 2, 2**63 + 2)
    | st.sampled_from([2**53, 2**53 + 1, 2**64, -1, 10**16, 253_402_300_800_000])
    | st.floats(allow_nan=True, allow_infinity=True)
)
JSON = st.recursive(
    st.none() | st.booleans() | _NUMBERS | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "text", "content", "id"]) | _TEXT, inner, max_size=3
        )
    ),
    max_leaves=8,
)


@dataclass(frozen=True)
class Deep:
    """Nesting `depth` lists deep: around the recursion limit, `json.dumps` of it in a reader
    can fail where `json.loads` did not (written into the line as text)."""

    depth: int


VALUES = JSON | st.integers(200, 3_000).map(Deep)
_DEEP_MARK = "\x00deep\x00"


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a record where a value sits: keys of objects, items of lists."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*at, key)
            yield from _paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*at, index)
            yield from _paths(inner, (*at, index))


def _replace(record: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(record))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return copy


def _encode(record: dict[str, Any], value: Any) -> bytes:
    """One JSON line (surrogates escaped, as JSON allows); a `Deep` value written as text."""
    if not isinstance(value, Deep):
        return json.dumps(record).encode()
    text = json.dumps(record)
    return text.replace(json.dumps(_DEEP_MARK), "[" * value.depth + "]" * value.depth).encode()


def _with(record: dict[str, Any], path: tuple[Any, ...], value: Any) -> bytes:
    return _encode(_replace(record, path, _DEEP_MARK if isinstance(value, Deep) else value), value)


@dataclass(frozen=True)
class Format:
    """One reader's side of the property: its valid records, and a file of them."""

    name: str
    #: valid records of every type the reader knows (the one in the middle of the file)
    records: list[dict[str, Any]]
    #: the file's lines around the middle one: (first good line(s), last good line)
    around: Callable[[], tuple[list[bytes], list[bytes]]]
    #: where the file goes under a root, and the reader that reads it there
    place: Callable[[Path], tuple[Reader, Path]]


def _claude_format() -> Format:
    tool = cc.tool_use("toolu_p", "Read", {"file_path": "/a", "opts": [1, {"x": None}]})
    middle = [
        cc.user("typed prompt"),
        cc.meta("<system-reminder>caveat</system-reminder>"),
        *cc.command("clear", "now", stdout="cleared"),
        cc.assistant(cc.thinking("hm"), "Let me look.", tool, message_id="msg_p"),
        cc.tool_result("toolu_p", "PORT = 8080"),
        cc.tool_result("toolu_p", [cc.text("a"), {"type": "image"}], is_error=True),
        cc.compact_boundary(),
        cc.compact_summary("Earlier: things."),
        cc.summary("A summary title", "u1"),
        cc.ai_title("An AI title"),
        cc.custom_title("A custom title"),
        *cc.bookkeeping(),
    ]
    records = [
        cc.complete([r], session_id=cc.SESSION_ID, cwd=CWD, first=1, sidechain=False)[0]
        for r in middle
    ]

    def around() -> tuple[list[bytes], list[bytes]]:
        first, _, last = cc.complete(
            [cc.user(FIRST), {}, cc.user(LAST)],
            session_id=cc.SESSION_ID,
            cwd=CWD,
            first=0,
            sidechain=False,
        )
        return [_encode(first, None)], [_encode(last, None)]

    def place(root: Path) -> tuple[Reader, Path]:
        return ClaudeReader([root / ".claude"]), cc.transcript_path(root / ".claude", CWD)

    return Format("claude", records, around, place)


def _codex_format() -> Format:
    middle = [
        cx.session_meta(cx.SESSION_ID, CWD, source={"subagent": "review"}),
        cx.env_context(CWD),
        *cx.prompt("typed prompt"),
        *cx.assistant_message("the answer"),
        cx.developer("be brief"),
        *cx.function_call("shell", {"command": ["ls"]}, "call_p", output="a b"),
        *cx.custom_tool_call("apply_patch", "*** Begin Patch", "call_q", output="done"),
        cx.message_171("user", ("typed again", "user"), ("<x_y>z</x_y>", "harness")),
        cx.user_message_item("typed again"),
        *cx.mcp_call("recall_history", {"query": "q"}, "call_r", output="hits"),
        cx.reasoning(),
        cx.turn_context(CWD),
        cx.compacted("Earlier: things."),
        *cx.bookkeeping_171(),
        {"type": "response_item", "payload": {"type": "local_shell_call", "action": {"a": 1}}},
    ]
    records = [{"timestamp": cx.iso(cx.at(1)), **r} for r in middle]

    def around() -> tuple[list[bytes], list[bytes]]:
        meta = {"timestamp": cx.iso(cx.at(0)), **cx.session_meta(cx.SESSION_ID, CWD)}
        first = {"timestamp": cx.iso(cx.at(0)), **cx.user_message(FIRST)}
        last = {"timestamp": cx.iso(cx.at(2)), **cx.user_message(LAST)}
        return [_encode(meta, None), _encode(first, None)], [_encode(last, None)]

    def place(root: Path) -> tuple[Reader, Path]:
        return CodexReader(root / ".codex"), cx.rollout_path(root / ".codex")

    return Format("codex", records, around, place)


#: Seqs of the DSH and generic files: far from the small numbers a random value likes, so the
#: middle record rarely takes a good record's seq (which would rightly replace it).
SEQ = 1_000


def _dsh_format() -> Format:
    call = ("c1", "bash", json.dumps({"command": "ls", "n": [1, 2]}))
    middle = [
        dsh.user(SEQ + 1, "typed prompt"),
        dsh.user(SEQ + 1, "injected", source="plugin", surface_op=None),
        dsh.assistant(SEQ + 1, "the answer", calls=[call], reasoning="hm"),
        dsh.assistant(SEQ + 1, calls=[call]),
        dsh.tool_call(SEQ + 1, "bash", call[2], call_id="c1"),
        dsh.tool_result(SEQ + 1, "c1", "out", error={"name": "E", "code": 2}),
        dsh.event("tool/result", SEQ + 1, {"callId": "c1", "content": "legacy"}),
        dsh.title(SEQ + 1, "A title"),
        *dsh.compaction(SEQ + 1, "Earlier: things.", start=SEQ, end=SEQ),
        dsh.chunks(SEQ + 1, ["a", "b"]),
        dsh.chunks(SEQ + 1, ["{}"], kind="tool-call"),
        dsh.event("todo/write", SEQ + 1, {"todos": [{"status": "done", "content": "x"}]}),
        dsh.event("turn/start", SEQ + 1, {"turn": 1}),
        dsh.event("future/thing", SEQ + 1, {}, ignorable=True),
    ]

    def around() -> tuple[list[bytes], list[bytes]]:
        head = dsh.header(DSH_ID, CWD)
        first, last = dsh.user(SEQ, FIRST), dsh.user(SEQ + 5, LAST)
        return [_encode(head, None), _encode(first, None)], [_encode(last, None)]

    def place(root: Path) -> tuple[Reader, Path]:
        folder = root / ".dsh" / "sessions" / "--acme--" / DSH_ID
        return DshReader(root / ".dsh"), folder / "session.jsonl"

    return Format("dsh", middle, around, place)


def _jsonl_format() -> Format:
    middle: list[dict[str, Any]] = [
        {"type": "session", "id": "other", "cwd": CWD, "title": "T", "created": 1, "parent": "p"},
        {"type": "session", "id": JSONL_ID, "subagent": True},
        {"role": "user", "text": "typed", "time": "2026-03-02T10:15:00Z", "uid": "u"},
        {"type": "message", "role": "assistant", "text": "answer", "time": 1772446500},
        {"role": "assistant", "kind": "tool_call", "tool": "bash", "text": "ls", "seq": SEQ + 1},
        {"role": "tool", "text": "out", "injected": False, "compacted": True, "session": "s"},
        {"role": "system", "text": "be brief", "cwd": "/elsewhere"},
        {"type": "compaction", "summary": "Earlier: things.", "seq": SEQ + 1, "time": 1},
    ]

    def around() -> tuple[list[bytes], list[bytes]]:
        head = {"type": "session", "id": JSONL_ID, "cwd": CWD}
        first = {"role": "user", "text": FIRST, "seq": SEQ, "time": 1772446500000}
        last = {"role": "user", "text": LAST, "seq": SEQ + 5}
        return [_encode(head, None), _encode(first, None)], [_encode(last, None)]

    def place(root: Path) -> tuple[Reader, Path]:
        path = root / "import.jsonl"
        return GenericReader([path]), path

    return Format("jsonl", middle, around, place)


FORMATS = {f.name: f for f in (_claude_format(), _codex_format(), _dsh_format(), _jsonl_format())}


def _write(fmt: Format, root: Path, middle: bytes | None) -> tuple[Reader, Path]:
    reader, path = fmt.place(root)
    before, after = fmt.around()
    lines = [*before, *([middle] if middle is not None else []), *after]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return reader, path


def _index(reader: Reader, path: Path) -> tuple[Counter[str], list[str]]:
    """Index one file into a fresh in-memory index: what was skipped, every event's text."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrations.apply(conn)
        conn.isolation_level = "DEFERRED"
        report = SourceReport(reader.source)
        Ingestor(conn).index_file(reader, path, report)
        conn.commit()
        texts = [text for (text,) in conn.execute("SELECT text FROM events")]
    finally:
        conn.close()
    return report.skipped, texts


def _fold(reader: Reader, path: Path) -> tuple[object, ...]:
    """What a reader makes of a file, cursor state and sessions included (not the offset)."""
    replay = read_whole(reader, path)
    return replay.rows(), replay.cursor.state, sorted(map(repr, replay.sessions.values()))


@st.composite
def _poisoned(draw: st.DrawFn, fmt: Format) -> tuple[dict[str, Any], tuple[Any, ...], Any]:
    """A valid record (by its index, so a failing example prints short), a place in it and
    the value put there."""
    record = fmt.records[draw(st.integers(0, len(fmt.records) - 1))]
    path = draw(st.sampled_from(list(_paths(record))))
    return record, path, draw(VALUES)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=50)
@given(data=st.data())
def test_any_value_in_any_field_is_read_or_skipped_and_the_rest_is_indexed(
    name: str, data: st.DataObject
) -> None:
    fmt = FORMATS[name]
    record, path, value = data.draw(_poisoned(fmt))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        reader, file = _write(fmt, root / "poisoned", _with(record, path, value))

        skipped, texts = _index(reader, file)

        event(", ".join(skipped) or "read")  # `--hypothesis-show-statistics` shows the mix
        assert FIRST in texts and LAST in texts
        if name == "dsh":  # the lookups the MCP server makes in a DSH log survive it too
            pending_tool_calls(file)
            read_header(file)
        # only the middle line may be skipped, and it is counted once
        assert sum(skipped.values()) <= 1, skipped
        if skipped[MALFORMED_RECORD]:
            # skipped whole: the reader is as if the line had never been there
            clean_reader, clean = _write(fmt, root / "clean", None)
            poisoned = _fold(reader, file)
            assert poisoned == _fold(clean_reader, clean)


@settings(max_examples=40)
@given(data=st.data())
def test_any_value_in_any_field_of_a_dsh_header_refuses_the_file_or_reads_it(
    data: st.DataObject,
) -> None:
    head = dsh.header(DSH_ID, CWD, parentSession="session-p", origin="subagent", seedLength=0)
    path = data.draw(st.sampled_from(list(_paths(head))))
    value = data.draw(VALUES)
    with tempfile.TemporaryDirectory() as tmp:
        reader, file = FORMATS["dsh"].place(Path(tmp))
        file.parent.mkdir(parents=True)
        lines = [_with(head, path, value), _encode(dsh.user(1, FIRST), None)]
        file.write_bytes(
            b"".join(line + b"\n" for line in [*lines, _encode(dsh.user(2, LAST), None)])
        )

        skipped, texts = _index(reader, file)

        event(", ".join(skipped) or "read")
        if not skipped["refused"] and path != ("seedLength",):  # seeded events are not news
            assert FIRST in texts and LAST in texts
        read_header(file)  # the lookups the MCP server makes survive it too
        pending_tool_calls(file)


def test_a_compacted_call_nested_too_deep_still_gives_the_skeleton(isolated_home: Path) -> None:
    """Recall without a query reads compacted calls' arguments: one nested past Python's
    recursion limit is shown as text, not an error."""

    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    deep = "[" * 5000 + "]" * 5000
    session = "session-deep0000-1111-4222-8333-444455556666"
    dsh.write_session(
        isolated_home / ".dsh",
        str(cwd),
        [
            [
                dsh.user(1, "zanzibar first"),
                dsh.assistant(2, calls=[("c1", "bash", deep)]),
                dsh.tool_result(3, "c1", "ok"),
            ],
            dsh.compaction(4, "Earlier: zanzibar.", start=1, end=3),
            [dsh.user(8, "继续")],
        ],
        session_id=session,
    )
    with Huiyi() as hy:
        hy.index()
        text = hy.recall(CallerContext(str(cwd), session)).history().text
    assert "what compaction removed" in text and "zanzibar first" in text


@pytest.mark.parametrize(
    ("source", "write", "record"),
    [
        ("claude", _claude, {**cc.user("the middle record says okapi"), "uuid": "u-mid"}),
        ("codex", _codex, cx.message("user", "the middle record says okapi")),
        ("dsh", _dsh, {**dsh.user(2, "the middle record says okapi"), "seq": 2}),
        ("jsonl", _jsonl, {"role": "user", "text": "the middle record says okapi"}),
    ],
    ids=["claude", "codex", "dsh", "jsonl"],
)
def test_a_line_only_the_standard_library_reads_is_indexed_like_any_other(
    isolated_home: Path,
    workspace: str,
    source: str,
    write: Callable[[Path, str, bytes], tuple[str, list[str]]],
    record: dict[str, Any],
) -> None:
    # the readers parse with orjson and leave what it declines (NaN here) to `json`
    line = json.dumps({**record, "costUSD": float("nan")}).encode()
    assert b"NaN" in line
    session_id, args = write(isolated_home, workspace, line)

    result = CliRunner().invoke(main, ["index", "--no-embed", *args])

    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith(source))
    assert "invalid-json" not in row, result.stdout
    with Huiyi() as hy:
        read = hy.recall(CallerContext(workspace, None)).session_read(session_id).text
        assert FIRST in read and "okapi" in read and LAST in read, read
