"""One file never stops, hangs or exhausts the index: odd names, FIFOs, device links, zstd
bombs and logs larger than one read.

Each case is made for real in the test (a FIFO with `mkfifo`, a link to `/dev/zero`, a zstd
frame that inflates to a gigabyte, compressed here as it streams so it stays small on disk),
and `huiyi index` runs in a child process, so a read that would block or exhaust memory is a
failing test, not a hung suite: the child's peak memory is what the bounds are checked on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.harnesses.dsh import reader as dsh_reader
from huiyi.harnesses.dsh.frames import FRAME_TOO_LARGE, MAX_FRAME_BYTES
from huiyi.sources import base, fold
from huiyi.sources.base import NOT_REGULAR, READ_BYTES, Cursor
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh

#: a guard, not a measurement: a child that has not finished by then is hung
HUNG_AFTER_S = 300

#: the most a bomb may add to the peak memory of indexing the same history without it
BOMB_ALLOWANCE = 200 * 1024 * 1024

_PEAK = (
    "import resource, sys\n"
    "from huiyi.cli.root import main\n"
    "try:\n"
    "    main(['index'], standalone_mode=False)\n"
    "finally:\n"
    "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
    "    print('peak', peak, file=sys.stderr)\n"
)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def index_in_child() -> tuple[subprocess.CompletedProcess[str], int]:
    """`huiyi index` in a fresh process (with this test's environment): its result and its
    peak resident memory in bytes."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK],
        capture_output=True,
        text=True,
        timeout=HUNG_AFTER_S,
        env={**os.environ, "HUIYI_SERVICE": "off"},
        check=False,
    )
    peak = [line for line in done.stderr.splitlines() if line.startswith("peak ")]
    return done, int(peak[-1].split()[1]) if peak else 0


def good_claude_session(home: Path, text: str = "the deploy script needs a retry") -> Path:
    return cc.write_transcript(home / ".claude", "/w/acme", [cc.user(text), cc.assistant("ok")])


def found(query: str) -> list[str]:
    with Huiyi() as hy:
        result = hy.search(query, workspace="/w/acme", layers=("lexical",), abstain=False)
        return [hit.snippet for hit in result.hits]


# -- names that are not UTF-8 --------------------------------------------------------------


def test_names_that_are_not_utf8_are_indexed_beside_good_sessions(isolated_home: Path) -> None:
    good = good_claude_session(isolated_home)
    odd = good.parent / os.fsdecode(b"notes-\xe9t\xe9.jsonl")
    odd.write_bytes(
        cc.lines(
            cc.complete(
                [cc.user("the odd name holds the rollback plan")],
                session_id="odd",
                cwd="/w/acme",
                first=0,
                sidechain=False,
            )
        )
    )
    rollout = cx.write_rollout(isolated_home / ".codex", "/w/acme", [cx.prompt("codex kiwi note")])
    rollout.rename(rollout.parent / os.fsdecode(b"rollout-\xff.jsonl"))
    log = dsh.write_session(isolated_home / ".dsh", "/w/acme", [[dsh.user(1, "dsh mango note")]])
    log.parent.rename(log.parent.parent / os.fsdecode(b"\xff\xfe"))

    result = run("index")

    assert result.exit_code == 0, result.output
    assert found("retry") and found("rollback") and found("kiwi") and found("mango")
    with Huiyi() as hy:
        ids = {s.id for s in hy.sessions(workspace="/w/acme")}
    assert "notes-\\xe9t\\xe9" in ids  # the name's bytes, shown, not lost
    assert run("index").exit_code == 0  # a second run finds them unchanged
    assert "indexed 0 new events" in run("index").output


# -- files that are not regular ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link", "socket"])
def test_a_log_name_that_is_no_regular_file_is_skipped_and_named(
    isolated_home: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = good_claude_session(isolated_home)
    odd = good.parent / "x.jsonl"
    dsh_log = isolated_home / ".dsh" / "sessions" / "--w-acme--" / "s1" / "session.jsonl.zstd"
    dsh_log.parent.mkdir(parents=True)
    rollout = isolated_home / ".codex" / "sessions" / "2026" / "rollout-x.jsonl"
    rollout.parent.mkdir(parents=True)
    for path in (odd, dsh_log, rollout):
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev-zero-link":
            path.symlink_to("/dev/zero")
        else:
            monkeypatch.chdir(path.parent)  # a socket's path is short: bind it by its name
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(path.name)

    done, _ = index_in_child()

    assert done.returncode == 0, done.stderr
    assert found("retry")
    doctor = run("doctor").output
    report = json.loads(run("doctor", "--json").output)
    for source in ("claude", "dsh", "codex"):
        named = report["sources"][source]["unreadable"]
        assert [entry["why"] for entry in named] == [f"not a regular file ({_kind_words(kind)})"]
    assert f"{odd}: not a regular file ({_kind_words(kind)})" in doctor


def _kind_words(kind: str) -> str:
    return {"fifo": "a FIFO", "dev-zero-link": "a character device", "socket": "a socket"}[kind]


def test_a_file_swapped_for_a_fifo_after_discovery_is_refused_at_open(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(base.NotRegularFile, match="a FIFO"):
        base.open_log(fifo)  # returns at once: no writer is waited for


def test_the_index_counts_a_fifo_it_was_handed(isolated_home: Path) -> None:
    fifo = isolated_home / "x.jsonl"
    os.mkfifo(fifo)
    with Huiyi() as hy:
        report = hy.index(jsonl=[fifo])
    assert report.sources["jsonl"].skipped[NOT_REGULAR] == 1


# -- zstd bombs ----------------------------------------------------------------------------


def _bomb_frame(total: int, piece: bytes) -> bytes:
    """One zstd frame of `total` bytes made of `piece` repeated, compressed as it streams (the
    text is never whole in memory)."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    block = piece * ((1 << 20) // len(piece))
    out = bytearray()
    for _ in range(total // len(block)):
        out += compressor.compress(block)
    out += compressor.flush()
    return bytes(out)


@pytest.mark.parametrize(
    "piece", [b'{"type":"x"}\n', b"a" * 1024], ids=["short-lines", "one-long-line"]
)
def test_a_zstd_bomb_is_skipped_and_memory_stays_bounded(isolated_home: Path, piece: bytes) -> None:
    home = isolated_home / ".dsh"
    dsh.write_session(home, "/w/acme", [[dsh.user(1, "the plain session about bananas")]])
    _, baseline = index_in_child()
    log = dsh.write_session(
        home, "/w/acme", [[dsh.user(1, "before the bomb: apricots")]], session_id="bomb"
    )
    bomb = _bomb_frame(1 << 30, piece)  # 1 GiB of text
    with log.open("ab") as file:
        file.write(bomb)
        file.write(dsh.frame([dsh.user(2, "after the bomb: cherries")]))
    assert log.stat().st_size < 200_000  # small on disk

    done, peak = index_in_child()

    assert done.returncode == 0, done.stderr
    assert peak - baseline < BOMB_ALLOWANCE, (peak, baseline)
    assert found("apricots") and found("cherries") and found("bananas")
    report = json.loads(run("doctor", "--json").output)
    assert report["sources"]["dsh"]["bad_lines"][FRAME_TOO_LARGE] == 1
    assert f"{FRAME_TOO_LARGE} 1" in run("doctor").output


def test_a_frame_inflating_past_the_cap_is_skipped_by_its_block_headers(tmp_path: Path) -> None:
    frame = _bomb_frame(MAX_FRAME_BYTES + (8 << 20), b"z" * 64 + b"\n")
    log = tmp_path / "s1" / "session.jsonl.zstd"
    log.parent.mkdir()
    log.write_bytes(dsh.frame([dsh.header("s1")]) + frame + dsh.frame([dsh.user(1, "still read")]))
    result = dsh_reader.DshReader(tmp_path).read(log, Cursor())
    assert result.skipped[FRAME_TOO_LARGE] == 1
    assert [e.text for c in result.chunks for e in c.events] == ["still read"]
    assert result.offset == log.stat().st_size


# -- logs larger than one read -------------------------------------------------------------


def test_a_transcript_larger_than_a_read_is_read_in_bounded_parts(isolated_home: Path) -> None:
    line = "x" * 100_000
    path = good_claude_session(isolated_home)
    cc.write_transcript(
        isolated_home / ".claude",
        "/w/acme",
        [cc.user(f"part {n} {line}") for n in range(400)],  # 40 MB
        append=True,
    )
    result = ClaudeReader([isolated_home / ".claude"]).read(path, Cursor())
    assert result.more
    assert READ_BYTES <= result.offset < READ_BYTES + 200_000
    assert len([e for c in result.chunks for e in c.events]) < 200


@pytest.mark.parametrize("source", ["claude", "codex", "dsh-frame", "dsh-plain"])
def test_a_log_read_in_many_parts_is_indexed_whole_and_once(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    monkeypatch.setattr(fold, "READ_RECORDS", 7)
    monkeypatch.setattr(dsh_reader, "READ_RECORDS", 7)
    words = [f"word{n:03d}" for n in range(120)]
    if source == "claude":
        cc.write_transcript(isolated_home / ".claude", "/w/acme", [cc.user(w) for w in words])
    elif source == "codex":
        cx.write_rollout(isolated_home / ".codex", "/w/acme", [cx.prompt(w) for w in words])
    else:
        # one frame of 120 user messages padded past the size kept whole: read as it streams
        pad = "p" * 40_000 if source == "dsh-frame" else ""
        batch = [dsh.user(n + 1, f"{w} {pad}") for n, w in enumerate(words)]
        dsh.write_session(
            isolated_home / ".dsh", "/w/acme", [batch], compress=source == "dsh-frame"
        )

    with Huiyi() as hy:
        first = hy.index()
        again = hy.index()
        sessions = hy.sessions(workspace="/w/acme")
    assert first.events == 120
    assert again.events == 0
    assert [s.event_count for s in sessions] == [120]
    assert found("word000") and found("word119") and found("word063")
