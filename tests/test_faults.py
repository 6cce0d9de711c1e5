"""Faults of the machine through the real CLI: a damaged index and a full disk give one clean
line that says what happened and what to do, and never cost what was indexed or remembered
before.

A full disk is made real without root: SQLite's `PRAGMA max_page_count` caps the index file,
so SQLite itself fails the write with "database or disk is full", and the memory files' atomic
write meets `ENOSPC` from `os.write` or `os.fsync`.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi, StoreError
from huiyi.cli.root import main
from huiyi.errors import EXIT_CODES, DiskFullError, HuiyiError, exit_code
from huiyi.store import db, ingest
from tests.builders import damage, dsh

FILLERS = 12


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_clean(result: Result, code: int, *words: str) -> None:
    """One `Error:` line with the kind's exit status, the given words, and no traceback."""
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    for word in words:
        assert word in errors[0]


def db_path() -> Path:
    return Huiyi().settings.db_path


def filler(home: Path, cwd: str, n: int, *, words: int = 300) -> None:
    text = " ".join(f"filler{n}x{i}" for i in range(words))
    dsh.write_session(
        home / ".dsh",
        cwd,
        [[dsh.user(1, f"zanzibar {text}"), dsh.assistant(2, text)]],
        session_id=f"session-{n:08d}-1111-4222-8333-444455556666",
    )


@pytest.fixture
def indexed(isolated_home: Path) -> str:
    """A workspace with a dozen sessions, indexed (and embedded) through the CLI."""
    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    for n in range(FILLERS):
        filler(isolated_home, str(cwd), n)
    assert run("index").exit_code == 0
    return str(cwd)


def event_counts() -> dict[str, int]:
    with Huiyi() as hy:
        return dict(hy.conn.execute("SELECT id, event_count FROM sessions").fetchall())


def found(query: str) -> set[str]:
    result = run("search", query, "--all", "--json", "--layer", "lexical", "--limit", "100")
    assert result.exit_code == 0, result.output
    return {hit["session_id"] for hit in json.loads(result.stdout)}


# -- the error kinds -------------------------------------------------------------------------


def test_a_full_disk_is_its_own_kind_with_its_own_exit_status() -> None:
    assert exit_code(DiskFullError("full")) == 8
    assert sorted(EXIT_CODES.values()).count(8) == 1
    assert issubclass(DiskFullError, HuiyiError) and not issubclass(DiskFullError, StoreError)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (sqlite3.OperationalError("database or disk is full"), None),  # no code: not guessed
        (OSError(errno.ENOSPC, "No space left on device"), DiskFullError),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), DiskFullError),
        (OSError(errno.EACCES, "Permission denied"), None),
        (sqlite3.DatabaseError("database disk image is malformed"), StoreError),
        (sqlite3.OperationalError("no such table: events"), None),  # a bug keeps its traceback
    ],
)
def test_only_faults_of_the_machine_are_mapped(
    exc: BaseException, kind: type[HuiyiError] | None
) -> None:
    error = db.fault(exc, Path("/x/index.db"))
    assert (type(error) if error is not None else None) is kind


# -- a damaged index -------------------------------------------------------------------------


def test_doctor_on_a_file_that_is_no_database_names_the_repair(indexed: str) -> None:
    db_path().write_bytes(os.urandom(8192))
    result = run("doctor")
    assert_clean(result, 5, "file is not a database", "run `huiyi doctor --repair`")
    assert "integrity  it cannot be opened: file is not a database" in result.output


def test_index_over_a_damaged_index_warns_once_and_names_the_repair(
    indexed: str, isolated_home: Path
) -> None:
    page = damage.flip_cell_pointers(db_path(), "event_fts_data")
    filler(isolated_home, indexed, 99, words=5)

    result = run("index", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # the warning stays off stdout
    [warning] = report["warnings"]
    assert f"is damaged (On tree page {page} cell " in warning
    assert "run `huiyi doctor --repair`" in warning
    assert result.stderr.count("warning: ") == 1
    assert "run `huiyi doctor --repair`" in result.stderr

    plain = run("index")
    assert plain.exit_code == 0
    assert "warning: the index at" in plain.stderr


def test_search_over_a_damaged_full_text_index_names_the_repair(indexed: str) -> None:
    damage.flip_cell_pointers(db_path(), "event_fts_data")
    # a word of every session: whichever leaf of the full-text index was damaged, one is on it
    words = " ".join(f"filler{n}x5" for n in range(FILLERS))
    result = run("search", words, "--all", "--layer", "lexical")
    assert result.exit_code == 0
    assert "lexical layer dropped out: database disk image is malformed" in result.output
    assert "is damaged (database disk image is malformed); run `huiyi doctor --repair`" in (
        result.output
    )


def test_commands_over_a_damaged_table_work_or_say_run_the_repair(indexed: str) -> None:
    damage.flip_cell_pointers(db_path(), "events")
    shown = [run("show", session_id) for session_id in sorted(event_counts())]
    failed = [r for r in shown if r.exit_code != 0]
    assert failed  # the damaged page held some session's events
    for result in failed:
        assert_clean(result, 5, "database disk image is malformed", "huiyi doctor --repair")

    # everything is embedded (the coverage counters say so), so `huiyi index` reads no event
    # to embed: it works, and its integrity check names the repair
    result = run("index")
    assert result.exit_code == 0, result.output
    assert "is damaged" in result.stderr and "run `huiyi doctor --repair`" in result.stderr


# -- a full disk: the index ------------------------------------------------------------------


def cap_the_index(monkeypatch: pytest.MonkeyPatch, spare_pages: int) -> None:
    """Every connection the CLI opens may grow the file by `spare_pages` pages at most."""
    real = db.connect

    def capped(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
        conn = real(path, readonly=readonly)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + spare_pages}")
        return conn

    monkeypatch.setattr(db, "connect", capped)


@pytest.mark.parametrize("spare_pages", [0, 40], ids=["no-room", "room-for-some-files"])
def test_index_on_a_full_disk_fails_cleanly_and_loses_nothing(
    indexed: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, spare_pages: int
) -> None:
    before = event_counts()
    new = range(100, 106)
    for n in new:
        filler(isolated_home, indexed, n, words=1500)
    with monkeypatch.context() as patched:
        patched.setattr(ingest, "COMMIT_EVERY", 1)  # each file commits alone: some may fit
        cap_the_index(patched, spare_pages)
        result = run("index")
    assert_clean(
        result,
        8,
        f"the disk holding {db_path()} is full (database or disk is full)",
        "nothing written before was lost",
        "free some space and run `huiyi index` again",
    )

    after = event_counts()
    assert {k: v for k, v in after.items() if k in before} == before
    assert all(after[k] == 2 for k in after.keys() - before.keys())  # whole sessions or none
    assert "integrity  ok; full-text ok" in run("doctor").output
    assert found("zanzibar") >= set(before)

    assert run("index").exit_code == 0  # room again: what did not fit is read now, once
    final = event_counts()
    assert len(final) == FILLERS + len(new)
    assert set(final.values()) == {2}
    assert found("filler105x1499") == {"session-00000105-1111-4222-8333-444455556666"}


# -- a full disk: the memory files -----------------------------------------------------------


def no_space(*_args: object) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("call", ["write", "fsync"])
def test_memory_add_on_a_full_disk_fails_cleanly_and_leaves_the_file(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    ws = ["--workspace", str(cwd)]
    assert run("memory", "add", "Use pnpm, never npm.", *ws).exit_code == 0
    path = Path(json.loads(run("memory", "show", "--json", *ws).stdout)["stores"]["memory"]["path"])
    kept = path.read_bytes()
    neighbours = sorted(p.name for p in path.parent.iterdir())

    with monkeypatch.context() as patched:
        fail: Callable[..., int] = no_space
        patched.setattr(os, call, fail)
        result = run("memory", "add", "The API listens on port 8321.", *ws)
    assert_clean(
        result,
        8,
        f"the disk holding {path} is full (No space left on device)",
        "memory.md was left as it was",
        "free some space and try again",
    )
    assert path.read_bytes() == kept
    assert sorted(p.name for p in path.parent.iterdir()) == neighbours  # no temp file left

    assert run("memory", "add", "The API listens on port 8321.", *ws).exit_code == 0
    assert "port 8321" in path.read_text()


def test_the_python_api_raises_the_kind_too(
    indexed: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler(isolated_home, indexed, 100, words=1500)
    cap_the_index(monkeypatch, 0)
    with Huiyi() as hy, pytest.raises(DiskFullError, match="run `huiyi index` again"):
        hy.index()
