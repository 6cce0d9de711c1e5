"""A table, index or trigger of the schema that is gone is found by `huiyi doctor`, made again by
`--repair` (in place when it is derived from the kept text, else by the rebuild that loses
nothing), and a search over such an index says which layer is broken and what to run.

The damage is real: `DROP TABLE`, `DROP INDEX`, `DROP TRIGGER` on the index file of a history
the tests of `test_repair.py` build (one session whose transcript is gone, a dozen others).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from tests.test_repair import db_path, doctor_says_repair, history, run, snapshot

__all__ = ["history"]  # the fixture, shared with test_repair.py


def drop(*statements: str) -> None:
    with contextlib.closing(sqlite3.connect(db_path())) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()


#: what is dropped, what doctor names, and whether it is made again in place
CASES = [
    (["DROP TABLE event_fts", "DROP TABLE event_fuzzy"], "table event_fts", True),
    (["DROP TABLE event_fts"], "table event_fts", True),
    (["DROP TABLE event_fuzzy"], "table event_fuzzy", True),
    (["DROP TABLE event_fts_data"], "table event_fts_data", True),
    (["DROP INDEX sessions_by_workspace"], "index sessions_by_workspace", True),
    (["DROP TABLE vectors"], "table vectors", False),
    (["DROP TABLE text_dicts"], "table text_dicts", False),
    (["DROP TRIGGER embed_coverage_event_out"], "trigger embed_coverage_event_out", False),
]


@pytest.mark.parametrize(
    ("statements", "named", "in_place"), CASES, ids=[c[1].replace(" ", "-") for c in CASES]
)
def test_a_missing_part_of_the_schema_is_found_and_made_again(
    history: Path, statements: list[str], named: str, in_place: bool
) -> None:
    before = snapshot()
    drop(*statements)

    said = doctor_says_repair()
    assert named in said
    report, _ = json.JSONDecoder().raw_decode(run("doctor", "--json").output)  # then Error: ...
    assert not report["healthy"] and named in report["schema"]

    out = run("doctor", "--repair").output
    assert "schema ok" in run("doctor").output
    assert json.loads(run("doctor", "--json").output)["healthy"]
    assert snapshot() == before
    moved = list(db_path().parent.glob(f"{db_path().name}.broken-*[0-9]"))  # not -wal, -shm
    if in_place:
        assert "rebuilt the full-text and fuzzy indexes from the kept text" in out
        assert moved == []
    else:
        assert "moved the damaged file aside" in out and len(moved) == 1


def test_a_search_without_its_full_text_table_names_the_broken_layer_and_the_repair(
    history: Path,
) -> None:
    drop("DROP TABLE event_fts")
    out = run("search", "zanzibar", "--all").output
    assert "lexical layer dropped out: no such table: event_fts" in out
    assert "run `huiyi doctor --repair`" in out


def test_a_healthy_index_has_the_whole_schema(history: Path) -> None:
    report = json.loads(run("doctor", "--json").output)
    assert report["healthy"] and report["schema"] == "ok"
    assert "integrity  ok; full-text ok; schema ok" in run("doctor").output
