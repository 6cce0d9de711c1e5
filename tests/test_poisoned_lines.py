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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from huiyi import Huiyi
from huiyi.cli import main
from huiyi.recall.scope import CallerContext
from huiyi.sources.base import MALFORMED_RECORD
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh

FIRST = "the first good record says pelican"
LAST = "the last good record says zanzibar"
DSH_ID = "session-0f0f0f0f-1111-4222-8333-444455556666"
JSONL_ID = "imported-chat"
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
