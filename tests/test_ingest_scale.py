"""A first index at scale: work that grows linearly with the history, bulk-load settings that are
given back, and the text index values that deletes recompute staying exactly what was written."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.harnesses.dsh.reader import DshReader
from huiyi.model import Kind
from huiyi.sources.base import Cursor, ReadResult
from huiyi.store import textindex, transaction
from huiyi.store.ingest import Ingestor, SourceReport
from huiyi.store.reading import PARALLEL_MIN_FILES, planned_workers
from tests.builders import dsh

#: VM instructions between two calls of the progress handler
STEP = 100


def write_history(dsh_home: Path, sessions: int, *, start: int = 0) -> None:
    """`sessions` DSH logs of 12 events each, Chinese and English, in two workspaces."""
    for n in range(start, start + sessions):
        lines = []
        for seq in range(1, 13, 2):
            lines.append(dsh.user(seq, f"问题 {n}-{seq}: 数据库迁移回滚 rollback_plan_{seq}"))
            lines.append(dsh.assistant(seq + 1, f"answer {n}: run `alembic downgrade` 回滚 {seq}"))
        dsh.write_session(
            dsh_home, f"/w/p{n % 2}", [lines], session_id=f"session-{n:08d}-1111-4222-8333-4444"
        )


def first_index_work(home: Path, dsh_home: Path) -> tuple[int, int, int]:
    """(events written, SQL statements run, SQLite VM steps / STEP) of one first index, read in
    this process so that every statement is counted."""
    with Huiyi(home) as hy:
        statements = [0]
        steps = [0]

        def count_step() -> int:
            steps[0] += 1
            return 0

        hy.conn.set_trace_callback(lambda _sql: statements.__setitem__(0, statements[0] + 1))
        hy.conn.set_progress_handler(count_step, STEP)
        report = SourceReport("dsh")
        Ingestor(hy.conn).index_reader(DshReader(dsh_home), report, workers=0)
        hy.conn.set_progress_handler(None, STEP)
        hy.conn.set_trace_callback(None)
        return report.events, statements[0], steps[0]


def test_first_index_work_grows_linearly_with_the_history(
    isolated_home: Path, tmp_path: Path
) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    write_history(small, 40)
    write_history(large, 160)
    events_s, statements_s, steps_s = first_index_work(tmp_path / "index-small", small)
    events_l, statements_l, steps_l = first_index_work(tmp_path / "index-large", large)
    assert (events_s, events_l) == (40 * 12, 160 * 12)
    # four times the history costs about four times the statements and the SQLite work; a
    # per-event cost that grew with the index (a scan per insert) would show as 6x or more
    assert 3.6 <= statements_l / statements_s <= 4.4
    assert 3.6 <= steps_l / steps_s <= 4.6


def test_a_big_first_index_gives_the_search_cache_back_and_finds_everything(
    isolated_home: Path,
) -> None:
    dsh_home = isolated_home / ".dsh"
    write_history(dsh_home, PARALLEL_MIN_FILES + 8)
    with Huiyi() as hy:
        report = hy.index()
        assert report.events == (PARALLEL_MIN_FILES + 8) * 12
        (cache,) = hy.conn.execute("PRAGMA cache_size").fetchone()
        assert cache == -transaction.CACHE_KIB
        hits = hy.search("rollback_plan_5 回滚", workspace="/w/p1", limit=100).hits
        assert {h.session_id for h in hits} == {
            f"session-{n:08d}-1111-4222-8333-4444" for n in range(1, PARALLEL_MIN_FILES + 8, 2)
        }


def test_a_first_index_reads_in_at_least_one_worker_and_a_small_one_in_process() -> None:
    assert planned_workers(PARALLEL_MIN_FILES - 1, None) == 0
    assert 1 <= planned_workers(PARALLEL_MIN_FILES, None) <= 3
    assert planned_workers(1000, 0) == 0


def test_a_history_indexed_in_one_worker_is_the_one_indexed_in_process(
    isolated_home: Path, tmp_path: Path
) -> None:
    write_history(tmp_path / "logs", 6)
    snapshots = []
    for workers in (0, 1):
        with Huiyi(tmp_path / f"index-{workers}") as hy:
            Ingestor(hy.conn).index_reader(
                DshReader(tmp_path / "logs"), SourceReport("dsh"), workers=workers
            )
            rows = hy.conn.execute("SELECT sid, seq, kind, text, indexed FROM events").fetchall()
            hits = [(h.session_id, h.seq) for h in hy.search("回滚", all_workspaces=True).hits]
            snapshots.append((rows, hits))
    assert snapshots[0] == snapshots[1] and snapshots[0][1]


_TEXT = st.text(
    st.sampled_from(list("abcXYZ 09_./-\n回滚数据库ﬁﬃＡＢ①İß\u00adé\u0301")), max_size=2_100
)


@given(text=_TEXT, kind=st.sampled_from([k.value for k in Kind]), injected=st.booleans())
def test_folding_once_writes_the_values_a_delete_recomputes(
    text: str, kind: str, injected: bool
) -> None:
    """`stored_streams` folds the text once for both indexes; contentless FTS5 rows can only be
    deleted with the very values they were written with, so it must equal the two steps."""
    assert textindex.stored_streams(text, kind, injected) == (
        *textindex.fts_streams(text, kind),
        textindex.fuzzy_text(kind, injected, text),
    )


def test_a_long_message_is_folded_for_each_index_up_to_its_own_length() -> None:
    text = "ﬁ" * (textindex.FUZZY_CHARS - 1) + "ＡＢ" + "回滚" * 10
    body, _, fuzzy = textindex.stored_streams(text, Kind.USER.value, False)
    assert fuzzy == ("fi" * (textindex.FUZZY_CHARS - 1) + "a").lower()
    assert body.count("fi") == textindex.FUZZY_CHARS - 1 and "回滚" in body


class _FailingReader(DshReader):
    """Reads like `DshReader`, but raises on one log (or kills its process, `kill=True`)."""

    def __init__(self, home: Path, bad: str, *, kill: bool = False) -> None:
        super().__init__(home)
        self.bad, self.kill = bad, kill

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        if self.bad in str(path):
            if self.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError(f"cannot parse {path.name}")
        return super().read(path, cursor)


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_an_error_while_reading_a_log_stops_the_index_with_that_error(
    isolated_home: Path, tmp_path: Path, workers: int
) -> None:
    write_history(tmp_path / "logs", 6)
    reader = _FailingReader(tmp_path / "logs", "session-00000003")
    with Huiyi(tmp_path / "index") as hy, pytest.raises(ValueError, match="cannot parse"):
        Ingestor(hy.conn).index_reader(reader, SourceReport("dsh"), workers=workers)


def test_a_reader_process_that_dies_stops_the_index_instead_of_hanging(
    isolated_home: Path, tmp_path: Path
) -> None:
    write_history(tmp_path / "logs", 6)
    reader = _FailingReader(tmp_path / "logs", "session-00000003", kill=True)
    with Huiyi(tmp_path / "index") as hy, pytest.raises(RuntimeError, match="ended early"):
        Ingestor(hy.conn).index_reader(reader, SourceReport("dsh"), workers=1)
