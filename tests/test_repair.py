"""`huiyi doctor --repair` on damaged indexes: whatever broke, no session that was indexed is lost.

Every test indexes real-format logs, then deletes one session's transcript (Claude Code deletes
them after 30 days) so that only the index still has that session's text, then damages the
index, repairs it through the CLI, and checks that every session and a search for the vanished
session's words come back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.store import textpack
from huiyi.store.ingest import Ingestor, uid_key
from tests.builders import claude as cc
from tests.builders import damage, dsh

VANISHED = cc.SESSION_ID
FILLERS = 12


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def db_path() -> Path:
    return Huiyi().settings.db_path


def write_vanished(home: Path, repo: Path, tail: str = "") -> Path:
    """The Claude session whose transcript the fixture deletes (the same records every time;
    `tail` lengthens each message)."""
    return cc.write_transcript(
        home / ".claude",
        str(repo),
        [
            cc.summary("Where the deploy key lives"),
            cc.user("where did we put the zanzibar deploy key after the rotation?" + tail),
            cc.assistant("It is in the vault under ops/zanzibar; the old key was revoked." + tail),
            cc.user("and the 备用密钥 for the staging cluster?" + tail),
            cc.assistant("备用密钥 stays in the staging vault, rotated monthly." + tail),
        ],
    )


@pytest.fixture
def history(isolated_home: Path) -> Path:
    """A workspace with one Claude session whose transcript is gone and a dozen DSH sessions."""
    return make_history(isolated_home)


@pytest.fixture
def packed_history(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The same with longer messages, its kept text packed (`store.textpack`) as soon as the
    fillers are indexed."""
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 10)
    return make_history(isolated_home, tail=" (the runbook: vault path ops/zanzibar)" * 4)


def make_history(isolated_home: Path, tail: str = "") -> Path:
    repo = isolated_home / "acme"
    (repo / ".git").mkdir(parents=True)
    transcript = write_vanished(isolated_home, repo, tail)
    run("index")  # the vanished session is indexed first: it sits at the start of the file
    for n in range(FILLERS):
        words = " ".join(f"filler{n}x{i}" for i in range(150))
        dsh.write_session(
            isolated_home / ".dsh",
            str(repo),
            [
                [dsh.user(1, f"question {n}: {words}"), dsh.title(2, f"filler session {n}")],
                [dsh.assistant(3, f"answer {n}: {words}"), dsh.user(4, f"thanks {n} {words}")],
            ],
            session_id=f"session-{n:08d}-1111-4222-8333-444455556666",
        )
    run("index")
    transcript.unlink()
    run("index")
    return repo


def snapshot() -> dict[str, Any]:
    """What a person sees: every session, the vanished one's text, searches for its words."""
    sessions = json.loads(run("sessions", "--all", "--json", "--limit", "100").output)
    shown = json.loads(run("show", VANISHED, "--json").output)
    return {
        "sessions": sorted((s["id"], s["title"], s["events"]) for s in sessions),
        "vanished": [(e["seq"], e["kind"], e["text"]) for e in shown["events"]],
        "lexical": found("zanzibar", "lexical"),
        "cjk": found("备用密钥", "lexical"),
        "fuzzy": found("zanzibr deploy kye", "fuzzy"),
    }


def found(query: str, layer: str) -> list[str]:
    hits = json.loads(run("search", query, "--all", "--json", "--layer", layer).output)
    return sorted({h["session_id"] for h in hits})


def doctor_says_repair() -> str:
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code != 0
    assert "run `huiyi doctor --repair`" in result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not a crash
    return result.output


def test_the_fixture_has_a_session_only_the_index_keeps(history: Path) -> None:
    before = snapshot()
    assert len(before["sessions"]) == FILLERS + 1
    assert before["lexical"] == before["cjk"] == before["fuzzy"] == [VANISHED]
    assert len(before["vanished"]) == 4
    assert not any(db_path().parent.glob("*.broken-*"))


@pytest.mark.parametrize("damaged", [damage.truncate, damage.break_fulltext])
def test_packed_text_is_salvaged_and_indexed_again(
    packed_history: Path, damaged: Callable[[Path], object]
) -> None:
    with Huiyi() as hy:
        packed = hy.conn.execute(
            "SELECT count(*) FROM events e JOIN sessions s ON s.sid = e.sid "
            "WHERE typeof(e.text) = 'blob' AND s.id = ?",
            (VANISHED,),
        ).fetchone()[0]
    assert packed == 4  # the vanished session's text is only in the index, and packed
    before = snapshot()
    damaged(db_path())
    out = run("doctor", "--repair").output
    assert "integrity  ok; full-text ok" in out
    assert snapshot() == before


def test_a_truncated_index_is_rebuilt_from_the_logs_and_the_kept_text(history: Path) -> None:
    before = snapshot()
    damage.truncate(db_path())
    assert "it cannot be opened: database disk image is malformed" in doctor_says_repair()

    out = run("doctor", "--repair").output
    aside = next(
        p for p in db_path().parent.glob("index.db.broken-*") if p.name[-4:] not in ("-wal", "-shm")
    )
    assert f"moved the damaged file aside to {aside}" in out
    assert f"rebuilt {FILLERS} sessions from their logs" in out
    assert "salvaged 1 sessions (4 events) whose logs are gone" in out
    assert "integrity  ok; full-text ok" in out
    assert snapshot() == before


@pytest.mark.parametrize(
    ("table", "unreadable"),
    [("events", "rows that could not be read (at most): events "), ("event_fts_data", None)],
)
def test_flipped_bytes_in_the_middle_of_the_file_are_repaired(
    history: Path, table: str, unreadable: str | None
) -> None:
    before = snapshot()
    page = damage.flip_cell_pointers(db_path(), table)
    assert f"On tree page {page} cell 0: Offset" in doctor_says_repair()  # quick_check saw it

    out = run("doctor", "--repair").output
    assert "moved the damaged file aside to" in out
    assert "salvaged 1 sessions (4 events)" in out
    if unreadable is None:
        assert "could not be read" not in out  # no row huiyi reads back was on that page
    else:
        assert unreadable in out  # said, not hidden
    assert "integrity  ok; full-text ok" in out
    assert snapshot() == before  # lost rows were of sessions whose logs still exist


def test_a_broken_full_text_index_is_rebuilt_in_place(history: Path) -> None:
    before = snapshot()
    damage.break_fulltext(db_path())
    out = doctor_says_repair()
    assert "integrity  ok; full-text event_fts:" in out

    out = run("doctor", "--repair").output
    assert "rebuilt the full-text and fuzzy indexes from the kept text" in out
    assert "integrity  ok; full-text ok" in out
    assert not any(db_path().parent.glob("*.broken-*"))  # nothing needed moving
    assert snapshot() == before


def test_an_interrupted_repair_leaves_the_damaged_index_in_place_for_the_next_one(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot()
    damage.truncate(db_path())
    damaged = db_path().read_bytes()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(Ingestor, "index_reader", interrupted)
        result = CliRunner().invoke(main, ["doctor", "--repair"])
    assert result.exit_code != 0
    assert db_path().read_bytes() == damaged  # not moved aside, not half replaced
    assert not any(db_path().parent.glob("*.broken-*"))

    out = run("doctor", "--repair").output
    assert "salvaged 1 sessions (4 events)" in out
    assert snapshot() == before
    assert not any(db_path().parent.glob("*.rebuilding*"))


def test_forgotten_sessions_stay_out_of_a_rebuilt_index(history: Path) -> None:
    forgotten = "session-00000003-1111-4222-8333-444455556666"
    assert "forgot 1 session" in run("forget", forgotten).output
    before = snapshot()
    damage.truncate(db_path())

    out = run("doctor", "--repair").output
    assert "kept 1 forget rules" in out
    assert f"rebuilt {FILLERS - 1} sessions from their logs" in out  # its log is still there
    assert snapshot() == before
    assert forgotten not in {s for s, _, _ in before["sessions"]}
    assert "indexed 0 new events" in run("index").output  # and stays out


def test_repairing_a_healthy_index_changes_nothing(history: Path) -> None:
    before = snapshot()
    out = run("doctor", "--repair").output
    assert "nothing to repair: the index is healthy" in out
    assert snapshot() == before
    assert not any(db_path().parent.glob("*.broken-*"))


def test_the_messages_a_repair_salvages_count_toward_semantic_coverage(history: Path) -> None:
    damage.truncate(db_path())
    run("doctor", "--repair")
    with Huiyi() as hy:
        counters = dict(hy.conn.execute("SELECT workspace, n FROM embed_coverage WHERE model = ''"))
        counted = dict(
            hy.conn.execute(
                "SELECT s.workspace, count(*) FROM events e JOIN sessions s ON s.sid = e.sid "
                "WHERE e.indexed = 1 AND e.kind IN ('user', 'assistant', 'summary') "
                "AND (e.injected = 0 OR e.kind = 'summary') AND s.is_private = 0 "
                "GROUP BY s.workspace"
            )
        )
    # three messages in each DSH session, four in the salvaged Claude session
    assert counters == counted == {str(history): FILLERS * 3 + 4}


def test_events_salvaged_from_an_index_older_than_m007_know_their_records_again(
    history: Path, isolated_home: Path, tmp_path: Path
) -> None:
    # before m007 an index kept each record id whole ("claude:<uuid>"); when such an index is
    # damaged and its sessions salvaged, the record ids become keys as ingestion makes them,
    # so a transcript that comes back (from a backup, say) is not indexed a second time
    ids = {
        text
        for line in write_vanished(tmp_path, history).read_text().splitlines()
        for text in _strings(json.loads(line))
    }
    with Huiyi() as hy, hy.conn:
        whole = 0
        for text in ids:
            whole += hy.conn.execute(
                "UPDATE events SET uid = ? WHERE uid = ?",
                (f"claude:{text}", uid_key("claude", text)),
            ).rowcount
    assert whole == 2  # the two questions (the builder's replies carry no message id)
    before = snapshot()
    damage.truncate(db_path())
    assert "salvaged 1 sessions (4 events)" in run("doctor", "--repair").output
    with Huiyi() as hy:
        keys = {uid_key("claude", text) for text in ids}
        salvaged = [r[0] for r in hy.conn.execute("SELECT uid FROM events WHERE uid IS NOT NULL")]
        assert sum(uid in keys for uid in salvaged) == 2
        assert all(isinstance(uid, bytes) for uid in salvaged)

    write_vanished(isolated_home, history)
    run("index")
    assert snapshot() == before


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
