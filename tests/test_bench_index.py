"""The ingest benchmark's split mode (`benchmarks/bench_index.py --split`) times a first index's
reading and its writing apart by putting its own reading in the writer's place. It must keep up
with what the writer asks of its readers, or the numbers that say where ingest time goes are
gone: the readers' `share` of a trained dictionary broke it once, unnoticed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_index import SRC, generate, split_cpu

from huiyi import Huiyi
from huiyi.store import textpack


def test_split_mode_times_reading_writing_and_the_writers_sql(isolated_home: Path) -> None:
    # 40 sessions: the writer's bulk path (many changed files), and enough texts to train a
    # dictionary midway, after which the writer offers it to its readers
    assert generate(Path(os.environ["DSH_HOME"]), 40, 60, 2) > textpack.TRAIN_AFTER
    with Huiyi() as hy:
        indexed = hy.index().events
        rows = hy.conn.execute("SELECT count(*) FROM events").fetchone()

    numbers = split_cpu(dict(os.environ), SRC)  # removes that index, then makes its own

    assert numbers["events"] == indexed
    assert numbers["reader_cpu_s"] > 0
    assert 0 < numbers["writer_sql_cpu_s"] < numbers["writer_cpu_s"]
    with Huiyi() as hy:  # what it wrote: every event, and the texts packed once trained
        conn = hy.conn
        assert conn.execute("SELECT count(*) FROM events").fetchone() == rows
        assert conn.execute("SELECT count(*) FROM text_dicts").fetchone() == (1,)
        (packed,) = conn.execute("SELECT count(*) FROM events WHERE typeof(text) = 'blob'")
        assert packed[0] > rows[0] // 2
