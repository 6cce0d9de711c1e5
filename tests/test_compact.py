"""A run that wrote most of the index compacts it: one segment per text index, no free pages,
a smaller file that finds the same; an index made by an earlier huiyi keeps its layout."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.store import compact, db, ingest, migrations
from tests.builders.lines import LineReader, write

WORDS = "alpha beta gamma delta rollback 数据库 迁移 回滚 subset settings deploy cache".split()


def write_logs(root: Path, files: int, events: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        write(
            root / f"{f:03d}.log",
            *(
                {"s": f"s{f}", "q": q, "t": f"{WORDS[q % 12]} {WORDS[(f + q) % 12]} note_{f}_{q}"}
                for q in range(events)
            ),
        )


def index_size(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob("index.db*"))


def hits(hy: Huiyi, query: str, layer: str) -> list[tuple[str, int]]:
    found = hy.search(query, all_workspaces=True, limit=50, layers=(layer,)).hits
    return sorted((h.session_id, h.seq) for h in found)


QUERIES = (("rollback 回滚", "lexical"), ("note_7_3", "lexical"), ("setings", "fuzzy"))


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test-sized history compacts, and commits often enough to leave many segments."""
    monkeypatch.setattr(compact, "COMPACT_MIN_EVENTS", 100)
    monkeypatch.setattr(ingest, "COMMIT_EVERY", 60)


def test_a_first_index_is_compacted_smaller_and_finds_the_same(
    tmp_path: Path, small_runs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, 40, 30)
    found = []
    for name, threshold in (("compacted", 100), ("left", 10**9)):
        monkeypatch.setattr(compact, "COMPACT_MIN_EVENTS", threshold)
        with Huiyi(tmp_path / name) as hy:
            assert hy.index(readers=[LineReader(logs)]).events == 1200
            assert hy.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
            found.append([hits(hy, q, layer) for q, layer in QUERIES])
        assert all(found[-1]), name
    assert found[0] == found[1]
    assert index_size(tmp_path / "compacted") < index_size(tmp_path / "left")


def test_a_run_that_adds_less_than_the_index_holds_is_not_compacted(
    tmp_path: Path, small_runs: None
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, 40, 30)
    merges: list[str] = []
    with Huiyi(tmp_path / "new") as hy:
        hy.conn.set_trace_callback(lambda sql: merges.extend(["merge"] * ("optimize" in sql)))
        hy.index(readers=[LineReader(logs)])
        assert len(merges) == 2  # both text indexes, after the first index
        write(logs / "new.log", *({"s": "new", "q": q, "t": f"late_{q}"} for q in range(200)))
        assert hy.index(readers=[LineReader(logs)]).events == 200
        assert len(merges) == 2  # 200 new events in an index of 1,200: not again
        assert hits(hy, "late_150", "lexical") == [("new", 150)]
    assert compact.worth_compacting(0, compact.COMPACT_MIN_EVENTS)
    assert not compact.worth_compacting(0, compact.COMPACT_MIN_EVENTS - 1)
    assert not compact.worth_compacting(5_000, 4_999)


def test_an_index_made_before_keeps_its_layout_does_not_grow_and_finds_everything(
    tmp_path: Path, small_runs: None
) -> None:
    home = tmp_path / "old"
    home.mkdir()
    old = sqlite3.connect(home / "index.db", isolation_level=None)
    old.execute("PRAGMA page_size = 4096")  # the layout of an index made before this release
    old.execute("PRAGMA journal_mode = WAL")
    migrations.apply(old)
    old.close()
    logs = tmp_path / "logs"
    write_logs(logs, 40, 30)
    with Huiyi(home) as hy:
        assert hy.index(readers=[LineReader(logs)]).events == 1200
        assert hy.conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        # no merge whose freed pages the file could not give back
        assert hy.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert not compact.compact(hy.conn)
        assert all(hits(hy, q, layer) for q, layer in QUERIES)
        assert hits(hy, "note_7_3", "lexical") == [("s7", 3)]


def test_a_new_index_has_the_compact_layout(tmp_path: Path) -> None:
    with Huiyi(tmp_path / "new") as hy:
        hy.index(readers=[])
        assert hy.conn.execute("PRAGMA page_size").fetchone()[0] == db.PAGE_SIZE
        assert hy.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == compact.INCREMENTAL
