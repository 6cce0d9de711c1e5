"""Which messages are embedded first: the newest sessions, in a session its user messages before
the rest and newer before older, tool output never; a walk that stops resumes in a new process,
reads each session about once, and a session with new messages meanwhile comes first again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from huiyi import Huiyi
from huiyi.cli.index import embed_progress
from huiyi.store import vectors
from tests.builders.lines import LineReader, write


def history(root: Path, sessions: int, per_session: int = 4) -> None:
    """Session n is active at minute n: the last session is the newest."""
    for n in range(sessions):
        records = []
        for q in range(per_session):
            kind = ("assistant", "user", "tool_result", "assistant")[q % 4]
            records.append(
                {"s": f"s{n}", "q": q, "k": kind, "t": f"s{n} {kind} {q}", "ms": n * 60_000 + q}
            )
        write(root / f"{n:03d}.log", *records)


def embedded_texts(hy: Huiyi) -> set[str]:
    rows = hy.conn.execute("SELECT e.text FROM vectors v JOIN events e ON e.id = v.event_id")
    return {r[0] for r in rows}


def embed_in_order(hy: Huiyi, count: int | None = None) -> list[str]:
    """Texts in the order they get vectors, one batch of one at a time."""
    order: list[str] = []
    while count is None or len(order) < count:
        before = embedded_texts(hy)
        if not hy.embed(batch=1, max_seconds=0):
            break
        (new,) = embedded_texts(hy) - before
        order.append(new)
    return order


def index(root: Path) -> Huiyi:
    hy = Huiyi(embedder="fake")
    hy.index(readers=[LineReader(root)])
    return hy


def test_newest_sessions_and_their_user_messages_are_embedded_first(tmp_path: Path) -> None:
    history(tmp_path, 5)
    with index(tmp_path) as hy:
        order = embed_in_order(hy)
    assert order[:4] == ["s4 user 1", "s4 assistant 3", "s4 assistant 0", "s3 user 1"]
    assert len(order) == 15  # 3 conversation messages in each of 5 sessions
    assert not any("tool_result" in t for t in order)
    assert [t.split()[0] for t in order[::3]] == ["s4", "s3", "s2", "s1", "s0"]


def test_a_walk_resumes_in_a_new_process_and_new_messages_come_first(tmp_path: Path) -> None:
    history(tmp_path, 6)
    with index(tmp_path) as hy:
        assert hy.embed(batch=6, max_seconds=0) == 6
        assert {t.split()[0] for t in embedded_texts(hy)} == {"s5", "s4"}
    with index(tmp_path) as hy:  # a new process: nothing embedded twice, the walk goes on
        assert embed_in_order(hy, 3) == ["s3 user 1", "s3 assistant 3", "s3 assistant 0"]
        write(tmp_path / "000.log", {"s": "s0", "q": 9, "t": "s0 late user", "ms": 10**9})
        hy.index(readers=[LineReader(tmp_path)])
        assert embed_in_order(hy, 1) == ["s0 late user"]  # s0 is now the newest session
        assert embed_in_order(hy, 1) == ["s0 user 1"]
        hy.embed()
        assert hy.coverage(all_workspaces=True) == (19, 19)
        assert hy.embed() == 0


def _session_reads(root: Path, sessions: int) -> int:
    root.mkdir()
    history(root, sessions)
    with index(root) as hy:
        reads = 0

        def count(statement: str) -> None:
            nonlocal reads
            reads += "FROM events e LEFT JOIN vectors" in statement

        hy.conn.set_trace_callback(count)
        while hy.embed(batch=2, max_seconds=0):
            pass
        hy.conn.set_trace_callback(None)
        assert hy.coverage(all_workspaces=True)[0] == 3 * sessions
        return reads


def test_a_whole_walk_reads_each_session_about_once(tmp_path: Path) -> None:
    small = _session_reads(tmp_path / "small", 20)
    large = _session_reads(tmp_path / "large", 80)
    # batches of 2 over 3 messages per session: a batch ends inside a session at most once
    # or twice, and the next batch reads that session again, never the finished ones
    assert large <= 3 * 80
    assert large / small < 4.5  # linear in the sessions, not quadratic


def test_private_sessions_are_never_queued(tmp_path: Path) -> None:
    history(tmp_path, 2)
    write(
        tmp_path / "p.log", {"s": "p", "q": 0, "t": "secret plan", "title": "[私密] x", "ms": 10**9}
    )
    with index(tmp_path) as hy:
        hy.embed()
        assert "secret plan" not in embedded_texts(hy)
        assert isinstance(hy.conn, sqlite3.Connection)
        assert vectors.EmbedQueue().next(hy.conn, hy.semantic.model, limit=5) == []  # type: ignore[union-attr]


def test_the_progress_line_gives_the_rate_and_the_time_left() -> None:
    assert embed_progress(1_200, 9_000, 30.0) == "1,200/9,000 messages  40/s  about 3m15s left"
    assert embed_progress(50, 100, 5.0) == "50/100 messages  10/s  about 5s left"
    assert embed_progress(10, 100_000, 1.0) == "10/100,000 messages  10/s  about 2h46m left"
    assert embed_progress(0, 100, 0.0) == "0/100 messages"  # no rate yet: no guess
