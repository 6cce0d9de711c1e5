"""Ingestion into the SQLite index: incremental, idempotent, resets, de-duplication, removal."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from huiyi import Huiyi, NotFoundError
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.store.ingest import Ingestor, SourceReport
from tests.builders import dsh
from tests.builders.lines import LineReader, write


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    return root


@pytest.fixture
def hy() -> Iterable[Huiyi]:
    with Huiyi() as h:
        yield h


def count_events(hy: Huiyi) -> int:
    return int(hy.conn.execute("SELECT count(*) FROM events").fetchone()[0])


def search_ids(hy: Huiyi, query: str, workspace: str = "/w/a") -> list[tuple[str, int]]:
    return [(h.session_id, h.seq) for h in hy.search(query, workspace=workspace).hits]


def test_indexing_twice_adds_nothing_and_appends_are_incremental(hy: Huiyi, logs: Path) -> None:
    log = logs / "a.log"
    write(log, {"s": "s1", "q": 1, "t": "alpha deploy"}, {"s": "s1", "q": 2, "t": "beta rollback"})
    reader = LineReader(logs)
    assert hy.index(readers=[reader]).events == 2
    assert hy.index(readers=[reader]).events == 0
    write(log, {"s": "s1", "q": 3, "t": "gamma release"})
    report = hy.index(readers=[reader])
    assert report.events == 1
    assert count_events(hy) == 3
    assert search_ids(hy, "gamma") == [("s1", 3)]
    state = hy.conn.execute("SELECT state FROM files").fetchone()[0]
    assert json.loads(state) == {"reads": 2}  # the reader's state came back on the second read


def test_shrunk_or_replaced_file_is_reread_without_duplicates(hy: Huiyi, logs: Path) -> None:
    log = logs / "a.log"
    write(log, *({"s": "s1", "q": i, "t": f"word{i} apple"} for i in range(5)))
    reader = LineReader(logs)
    hy.index(readers=[reader])
    write(log, {"s": "s1", "q": 0, "t": "word0 pear"}, mode="w")  # shrank: re-read from the start
    hy.index(readers=[reader])
    assert count_events(hy) == 1
    assert search_ids(hy, "apple") == []
    assert search_ids(hy, "pear") == [("s1", 0)]
    replacement = logs / "b.tmp"
    write(replacement, {"s": "s1", "q": 0, "t": "word0 plum"}, {"s": "s1", "q": 1, "t": "x"})
    os.replace(replacement, log)  # new inode, same path
    hy.index(readers=[reader])
    assert count_events(hy) == 2
    assert search_ids(hy, "pear") == []
    assert search_ids(hy, "plum") == [("s1", 0)]


def test_changed_head_with_same_size_growth_is_reread(hy: Huiyi, logs: Path) -> None:
    log = logs / "a.log"
    write(log, {"s": "s1", "q": 0, "t": "orange"})
    reader = LineReader(logs)
    hy.index(readers=[reader])
    with log.open("r+b") as fh:  # rewrite in place (same inode), then grow
        fh.write(json.dumps({"s": "s1", "q": 0, "t": "lemon!"}).encode() + b"\n")
    write(log, {"s": "s1", "q": 1, "t": "lime"})
    hy.index(readers=[reader])
    assert search_ids(hy, "orange") == []
    assert search_ids(hy, "lemon") == [("s1", 0)]


def test_sessions_stay_searchable_after_their_file_is_deleted(hy: Huiyi, logs: Path) -> None:
    log = logs / "a.log"
    write(log, {"s": "s1", "q": 1, "t": "transcript that claude will delete"})
    reader = LineReader(logs)
    hy.index(readers=[reader])
    log.unlink()
    hy.index(readers=[reader])
    assert search_ids(hy, "transcript") == [("s1", 1)]
    assert hy.conn.execute("SELECT missing FROM files").fetchone()[0] == 1


def test_a_record_copied_into_a_resumed_session_is_indexed_once(hy: Huiyi, logs: Path) -> None:
    write(logs / "a.log", {"s": "s1", "q": 0, "t": "original question", "uid": "u1"})
    write(
        logs / "b.log",
        {"s": "s2", "q": 0, "t": "original question", "uid": "u1"},
        {"s": "s2", "q": 1, "t": "new follow up", "uid": "u2"},
    )
    hy.index(readers=[LineReader(logs)])
    assert search_ids(hy, "original") == [("s1", 0)]
    assert search_ids(hy, "follow") == [("s2", 1)]


def test_compaction_shadows_events_from_earlier_reads(hy: Huiyi, logs: Path) -> None:
    log = logs / "a.log"
    write(log, {"s": "s1", "q": 0, "t": "before one"}, {"s": "s1", "q": 1, "t": "before two"})
    reader = LineReader(logs)
    hy.index(readers=[reader])
    write(log, {"s": "s1", "shadow_before": 2}, {"s": "s1", "q": 2, "t": "after"})
    hy.index(readers=[reader])
    surfaces = dict(hy.conn.execute("SELECT seq, surface FROM events ORDER BY seq").fetchall())
    assert surfaces == {0: "shadowed", 1: "shadowed", 2: "current"}


def test_search_is_scoped_to_a_workspace_and_private_sessions_never_show(
    hy: Huiyi, logs: Path
) -> None:
    write(logs / "a.log", {"s": "s1", "q": 0, "t": "shared word alpha", "cwd": "/w/a"})
    write(logs / "b.log", {"s": "s2", "q": 0, "t": "shared word beta", "cwd": "/w/b"})
    write(
        logs / "c.log",
        {"s": "s3", "q": 0, "t": "shared word secret", "cwd": "/w/a", "title": "plans [NO-RECALL]"},
    )
    hy.index(readers=[LineReader(logs)])
    assert search_ids(hy, "shared") == [("s1", 0)]
    assert search_ids(hy, "shared", workspace="/w/b") == [("s2", 0)]
    everywhere = {h.session_id for h in hy.search("shared", all_workspaces=True).hits}
    assert everywhere == {"s1", "s2"}
    assert [s.id for s in hy.sessions(all_workspaces=True)] in (["s2", "s1"], ["s1", "s2"])
    with pytest.raises(NotFoundError):
        hy.read("s3")


def test_forget_removes_a_session_and_keeps_it_out(hy: Huiyi, logs: Path) -> None:
    write(logs / "a.log", {"s": "s1", "q": 0, "t": "keep me"})
    write(logs / "b.log", {"s": "s2", "q": 0, "t": "drop me", "cwd": "/w/b"})
    reader = LineReader(logs)
    hy.index(readers=[reader])
    assert hy.forget(session_id="s1") == 1
    assert hy.forget(workspace="/w/b") == 1
    write(logs / "a.log", {"s": "s1", "q": 1, "t": "keep me more"})
    hy.index(readers=[reader])
    assert count_events(hy) == 0
    assert hy.search("keep me", all_workspaces=True).hits == []
    assert (
        hy.conn.execute(
            "INSERT INTO event_fts(event_fts, rank) VALUES ('integrity-check', 0)"
        ).fetchall()
        == []
    )


def test_index_home_is_owner_only(hy: Huiyi, logs: Path) -> None:
    hy.index(readers=[LineReader(logs)])
    assert hy.settings.home.stat().st_mode & 0o777 == 0o700
    assert hy.settings.db_path.stat().st_mode & 0o777 == 0o600


def test_reading_in_worker_processes_indexes_exactly_what_one_process_does(
    isolated_home: Path, tmp_path: Path
) -> None:
    for n in range(6):
        dsh.write_session(
            isolated_home / ".dsh",
            f"/w/p{n % 2}",
            [[dsh.user(1, f"问题 {n} rollback_plan"), dsh.assistant(2, f"answer {n} 回滚")]],
            session_id=f"session-{n}0000000-1111-4222-8333-444455556666",
        )
    snapshots = []
    for workers in (0, 2):
        home = tmp_path / f"index-{workers}"
        with Huiyi(home) as hy:
            ingestor = Ingestor(hy.conn)
            report = SourceReport("dsh")
            ingestor.index_reader(DshReader(isolated_home / ".dsh"), report, workers=workers)
            rows = hy.conn.execute(
                "SELECT s.id, e.seq, e.kind, e.text, e.surface FROM events e "
                "JOIN sessions s USING (sid) ORDER BY s.id, e.seq"
            ).fetchall()
            hits = [
                (h.session_id, h.seq)
                for h in hy.search("回滚 rollback_plan", all_workspaces=True).hits
            ]
            snapshots.append((report.events, rows, sorted(hits)))
    assert snapshots[0] == snapshots[1]
    assert snapshots[0][0] == 12


def test_many_openers_of_a_new_index_all_get_in(tmp_path: Path) -> None:
    # the hook, the MCP server and the CLI may all open a new index at once; SQLite refuses to
    # wait for one of two connections switching a new file to WAL, and that one must retry
    import threading

    from huiyi.store import db

    failures: list[BaseException] = []

    def open_index(path: Path, start: threading.Barrier) -> None:
        start.wait()
        try:
            db.connect(path).close()
        except BaseException as exc:  # collected for the assertion
            failures.append(exc)

    for n in range(30):
        path = tmp_path / f"{n}" / "index.db"
        start = threading.Barrier(6)
        threads = [threading.Thread(target=open_index, args=(path, start)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_two_processes_indexing_at_once_wait_for_each_other(isolated_home: Path) -> None:
    import subprocess
    import sys

    for n in range(40):
        dsh.write_session(
            isolated_home / ".dsh",
            "/w/a",
            [[dsh.user(1, f"question {n}"), dsh.assistant(2, f"answer {n}")]],
            session_id=f"session-{n:08d}-1111-4222-8333-444455556666",
        )
    code = "from huiyi import Huiyi; print(Huiyi().index().events)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = sorted(int(p.communicate(timeout=120)[0]) for p in procs)
    assert all(p.returncode == 0 for p in procs)
    assert outputs == [0, 80]  # one wrote everything, the other waited and found nothing new
    with Huiyi() as hy:
        assert hy.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 80
