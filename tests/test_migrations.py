"""Schema migrations: an old index is upgraded in place, a failing migration changes nothing,
and an index written by a newer huiyi is refused untouched."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from huiyi import Huiyi, StoreError
from huiyi.cli.root import main
from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.store import codes, db, ingest, migrations, reading, textindex, vectors
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import damage
from tests.builders.lines import LineReader, write


def schema(path: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT type, name FROM sqlite_master ORDER BY type, name").fetchall()


def recorded(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name")]


def hits(hy: Huiyi, query: str, layer: str) -> list[tuple[str, int]]:
    found = hy.search(query, all_workspaces=True, layers=(layer,)).hits
    return [(h.session_id, h.seq) for h in found]


def before_(migration: migrations.Migration) -> list[migrations.Migration]:
    """The migrations an index written before `migration` was released has, and m009: this
    code's ingestion writes the coded columns m009 made (and m009 changes nothing the others
    are about; `damage.before_m009` makes an index without it)."""
    earlier = migrations.MIGRATIONS[: migrations.MIGRATIONS.index(migration)]
    coded = migrations.m009_words_as_codes
    return earlier if coded in earlier else [*earlier, coded]


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """An index of two sessions built by this huiyi; returns the index file."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write(
        logs / "a.log",
        {"s": "s1", "q": 1, "t": "we rolled back the database migration on friday"},
        {"s": "s1", "q": 2, "t": "the deploy pipeline needs an approval", "k": "assistant"},
        {"s": "s2", "q": 1, "t": "数据库迁移回滚之后要重新建索引", "cwd": "/w/b"},
    )
    with Huiyi() as hy:
        hy.index(readers=[LineReader(logs)])
        return hy.settings.db_path


def test_an_index_of_the_first_release_is_upgraded_and_fuzzy_search_finds_its_text(
    indexed: Path,
) -> None:
    with Huiyi() as hy:
        before = {
            "fuzzy": hits(hy, "rollback databse migraton", "fuzzy"),
            "lexical": hits(hy, "pipeline", "lexical"),
        }
    assert before["fuzzy"][0] == ("s1", 1) and before["lexical"] == [("s1", 2)]
    damage.first_release(indexed)
    assert recorded(indexed) == ["m001_initial"]
    assert "event_fuzzy" not in {name for _, name in schema(indexed)}

    with Huiyi() as hy:  # opening it migrates it and fills the fuzzy index from the kept text
        after = {
            "fuzzy": hits(hy, "rollback databse migraton", "fuzzy"),
            "lexical": hits(hy, "pipeline", "lexical"),
        }
        assert hits(hy, "迁移回滚", "fuzzy") == [("s2", 1)]
    assert after == before
    assert recorded(indexed) == [m.__name__ for m in migrations.MIGRATIONS]
    with contextlib.closing(sqlite3.connect(indexed)) as conn:
        assert conn.execute("SELECT count(*) FROM _rebuild").fetchone()[0] == 0
        for table in ("event_fts", "event_fuzzy"):
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)")


def test_a_migration_that_fails_halfway_leaves_the_index_as_it_was(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables_before, names_before = schema(indexed), recorded(indexed)

    def m003_half_done(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        conn.execute("INSERT INTO sessions (id, source) VALUES ('ghost', 'test')")
        raise RuntimeError("the disk filled up")

    with monkeypatch.context() as patched:
        patched.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m003_half_done])
        with pytest.raises(RuntimeError, match="the disk filled up"):
            db.connect(indexed)
    assert schema(indexed) == tables_before
    assert recorded(indexed) == names_before

    with Huiyi() as hy:  # the real migrations open it as before
        assert [s.id for s in hy.sessions(all_workspaces=True)] in (["s1", "s2"], ["s2", "s1"])
        assert hits(hy, "pipeline", "lexical") == [("s1", 2)]


def test_an_index_written_by_a_newer_huiyi_is_refused_untouched(indexed: Path) -> None:
    with contextlib.closing(sqlite3.connect(indexed)) as conn, conn:
        conn.execute("INSERT INTO _migrations (name, applied) VALUES ('m007_from_the_future', 0)")
    content = indexed.read_bytes()
    with pytest.raises(StoreError, match="written by a newer huiyi") as raised:
        db.connect(indexed)
    assert "m007_from_the_future" in str(raised.value)
    assert "upgrade huiyi, or move it aside and run `huiyi index`" in str(raised.value)

    result = CliRunner().invoke(main, ["sessions", "--all"])
    assert result.exit_code != 0 and "written by a newer huiyi" in result.output
    assert "Traceback" not in result.output
    repair = CliRunner().invoke(main, ["doctor", "--repair"])
    assert repair.exit_code != 0 and "written by a newer huiyi" in repair.output
    assert indexed.read_bytes() == content
    assert list(indexed.parent.glob("*.broken-*")) == []


def test_an_index_from_before_the_codex_171_reader_reads_its_rollouts_again(
    isolated_home: Path,
) -> None:
    """An index written while the reader dropped Codex 0.171 prompts gets them on the next
    index after the upgrade, without a duplicate."""
    project = isolated_home / "shop"
    (project / ".git").mkdir(parents=True)
    cx.write_rollout(
        isolated_home / ".codex",
        str(project),
        [cx.message("user", "为什么 quokka 部署失败了？"), *cx.assistant_message("端口冲突。")],
    )
    with Huiyi() as hy:
        hy.index()
        assert [h.kind for h in hy.search("quokka", workspace=project).hits] == ["user"]
        path = hy.settings.db_path
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        # what the old reader left: no prompt, and the file read to its end
        conn.execute("DELETE FROM events WHERE kind = 'user'")
        conn.execute("DELETE FROM _migrations WHERE name = 'm003_read_logs_again'")
    with Huiyi() as hy:
        hy.index()
        found = hy.search("quokka", workspace=project).hits
        assert [h.kind for h in found] == ["user"]
        (session,) = hy.sessions(workspace=project)
        assert session.user_count == 1


def test_codex_logs_are_read_again_so_a_compaction_summary_loses_its_preamble(
    isolated_home: Path,
) -> None:
    """An index written by a reader that kept Codex's preamble in the summary and the summary
    reply as conversation holds the summary alone, and no such reply, after the upgrade."""
    project = isolated_home / "shop"
    (project / ".git").mkdir(parents=True)
    summary = "The wombat deploy failed on a port clash; fixed with an ephemeral port."
    cx.write_rollout(
        isolated_home / ".codex",
        str(project),
        [cx.message("user", "why did the wombat deploy fail?"), *cx.compaction_171(summary)],
    )
    with Huiyi() as hy:
        hy.index()
        path = hy.settings.db_path
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        # what the old reader left is gone from the kept text; the file was read to its end
        conn.execute("DELETE FROM events WHERE kind IN ('summary', 'assistant')")
        conn.execute("DELETE FROM _migrations WHERE name = 'm004_read_codex_logs_again'")
    with Huiyi() as hy:
        hy.index()
        with contextlib.closing(sqlite3.connect(path)) as conn:
            rows = conn.execute(
                "SELECT kind, injected, text FROM events "
                "WHERE kind IN ('summary', 'assistant') ORDER BY seq"
            ).fetchall()
    # the reply is host traffic (injected), and the summary holds no preamble
    assert rows == [("assistant", 1, summary), ("summary", 1, summary)]


def test_an_index_that_counted_new_events_by_trigger_keeps_true_counts_after_the_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m006 drops m005's per-row insert trigger; from then on ingestion counts new events. An
    index counted by the trigger (as the code before m006 wrote it) stays right through
    appends, a replaced message and a new session after the upgrade."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write(logs / "a.log", *({"s": "s1", "q": i, "t": f"rollback step {i}"} for i in range(5)))

    def counters_agree(hy: Huiyi) -> int:
        (counter,) = hy.conn.execute(
            "SELECT n FROM embed_coverage WHERE workspace = '/w/a' AND model = ''"
        ).fetchone()
        (counted,) = hy.conn.execute(
            "SELECT count(*) FROM events WHERE indexed = 1 AND kind = 'user'"
        ).fetchone()
        assert counter == counted
        return int(counter)

    with monkeypatch.context() as before:  # the code before m006: the trigger counts
        before.setattr(migrations, "MIGRATIONS", before_(migrations.m006_count_new_events_in_code))
        before.setattr(vectors, "count_new_events", lambda *args: None)
        with Huiyi() as hy:
            hy.index(readers=[LineReader(logs)])
            assert counters_agree(hy) == 5
            path = hy.settings.db_path
    assert "embed_coverage_event_in" in {name for _, name in schema(path)}

    write(logs / "a.log", {"s": "s1", "q": 2, "t": "a rewritten step"})
    write(logs / "a.log", {"s": "s1", "q": 7, "t": "one more"}, {"s": "s2", "q": 1, "t": "new"})
    with Huiyi() as hy:
        hy.index(readers=[LineReader(logs)])
        assert counters_agree(hy) == 7
        assert hits(hy, "rewritten", "lexical") == [("s1", 2)]
    assert "m006_count_new_events_in_code" in recorded(path)
    assert "embed_coverage_event_in" not in {name for _, name in schema(path)}


def test_an_index_that_kept_whole_ids_finds_the_same_and_reads_each_record_once_after_m007(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m007 keeps digests instead of whole uids, file heads and Claude record uuids. An index
    the code before it wrote (text uids, raw heads, a `uuids` list in the cursor state) is
    upgraded in place: an append is read from where it stopped, a copy of a record in the
    same file or in a resumed session's file is still indexed once, and search finds the same."""
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    cwd = "/home/ana/api"
    first = [
        cc.user("why does the flaky login test fail"),
        cc.assistant("the port is taken", cc.tool_use("toolu_9", "Read", {}), message_id="m1"),
    ]
    path = cc.write_transcript(claude, cwd, first)

    def old_head(path: Path, upto: int) -> bytes:
        with path.open("rb") as fh:
            return fh.read(min(upto, reading.HEAD_BYTES)) if upto > 0 else b""

    with monkeypatch.context() as before:  # the code before m007
        before.setattr(migrations, "MIGRATIONS", before_(migrations.m007_digests_for_ids))
        before.setattr(reading, "uid_key", lambda source, uid: f"{source}:{uid}")
        before.setattr(reading, "read_head", old_head)
        before.setattr(ingest, "same_head", lambda p, upto, head: old_head(p, len(head)) == head)
        with Huiyi() as hy:
            assert hy.index(readers=[reader]).events == 3
            found = hits(hy, "flaky login", "lexical")
            uuids = [r["uuid"] for r in map(json.loads, path.read_text().splitlines())]
            state = reading.unpack_state(hy.conn.execute("SELECT state FROM files").fetchone()[0])
            state["uuids"], state["tools"] = uuids, {"toolu_9": "Read"}
            del state["seen"], state["calls"]
            with hy.conn:
                hy.conn.execute("UPDATE files SET state = ?", (json.dumps(state),))
            db_path = hy.settings.db_path
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT uid FROM events ORDER BY seq").fetchone()[0] == (
            f"claude:{uuids[0]}"
        )
        assert len(conn.execute("SELECT head FROM files").fetchone()[0]) == path.stat().st_size

    # the same file grows by a copy of its first record and a new message; a resumed session
    # copies both first records into its own file and goes on
    copy = {**json.loads(path.read_text().splitlines()[0])}
    with path.open("a") as fh:
        fh.write(json.dumps(copy) + "\n")
    cc.write_transcript(
        claude,
        cwd,
        [cc.tool_result("toolu_9", "PORT = 8080"), cc.user("and the port is 8080 now")],
        append=True,
    )
    resumed = cc.write_transcript(
        claude, cwd, [], session_id="77777777-1111-4222-8333-444455556666"
    )
    with resumed.open("w") as fh:
        for line in path.read_text().splitlines()[:2]:
            fh.write(json.dumps({**json.loads(line), "sessionId": resumed.stem}) + "\n")
    cc.write_transcript(
        claude, cwd, [cc.user("resumed: deploy it")], session_id=resumed.stem, append=True
    )

    with Huiyi() as hy:  # opening it upgrades it
        (state,) = hy.conn.execute("SELECT state FROM files").fetchone()
        assert set(json.loads(state)) & {"uuids", "tools", "seen", "calls"} == {"seen", "calls"}
        assert {len(h) for (h,) in hy.conn.execute("SELECT head FROM files")} == {16}
        report = hy.index(readers=[reader])
        # the tool's result, "8080 now" and "resumed: deploy it", nothing twice
        assert report.events == 3
        assert hits(hy, "flaky login", "lexical") == found
        assert hy.conn.execute(
            "SELECT tool_name FROM events WHERE kind = 'tool_result'"
        ).fetchall() == [("Read",)]
        assert {s for s, _ in hits(hy, "8080", "lexical")} == {path.stem}
        rows = hy.conn.execute("SELECT uid FROM events").fetchall()
        assert len(rows) == 6 and all(len(uid) == 8 for (uid,) in rows)
        assert hy.index(readers=[reader]).events == 0
    assert "m007_digests_for_ids" in recorded(db_path)


def test_ids_written_after_m007_by_a_process_started_before_it_are_taken_as_their_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huiyi process started before the upgrade may go on indexing with its old code: it
    writes text uids and a file's raw first bytes into the upgraded index. The new code reads
    such a head as the bytes it is (the file is not taken for replaced) and gives such uids
    their keys, so a copy of their records in a resumed session is still indexed once."""
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    cwd = "/home/ana/api"
    path = cc.write_transcript(claude, cwd, [cc.user("why does the flaky login test fail")])
    with Huiyi() as hy:
        assert hy.index(readers=[reader]).events == 1

    def old_head(path: Path, upto: int) -> bytes:
        with path.open("rb") as fh:
            return fh.read(min(upto, reading.HEAD_BYTES)) if upto > 0 else b""

    cc.write_transcript(claude, cwd, [cc.user("the port is taken by the proxy")], append=True)
    with monkeypatch.context() as old:  # the old code of a process that kept running
        old.setattr(reading, "uid_key", lambda source, uid: f"{source}:{uid}")
        old.setattr(ingest.Ingestor, "_key_text_uids", lambda self: None)
        old.setattr(reading, "read_head", old_head)
        old.setattr(ingest, "same_head", lambda p, upto, head: True)
        with Huiyi() as hy:
            assert hy.index(readers=[reader]).events == 1
            kinds = {type(u).__name__ for (u,) in hy.conn.execute("SELECT uid FROM events")}
            assert kinds == {"bytes", "str"}
            assert len(hy.conn.execute("SELECT head FROM files").fetchone()[0]) > 16

    # the transcript grows, and a resumed session copies its records and goes on
    cc.write_transcript(claude, cwd, [cc.user("and the port is 8080 now")], append=True)
    resumed = cc.write_transcript(
        claude, cwd, [], session_id="77777777-1111-4222-8333-444455556666"
    )
    with resumed.open("w") as fh:
        for line in path.read_text().splitlines():
            fh.write(json.dumps({**json.loads(line), "sessionId": resumed.stem}) + "\n")
    cc.write_transcript(
        claude, cwd, [cc.user("resumed: deploy it")], session_id=resumed.stem, append=True
    )
    with Huiyi() as hy:
        ids_before = [r for (r,) in hy.conn.execute("SELECT id FROM events ORDER BY id")]
        report = hy.index(readers=[reader])
        assert report.events == 2  # "8080 now" and "resumed: deploy it", nothing twice
        ids = [r for (r,) in hy.conn.execute("SELECT id FROM events ORDER BY id")]
        assert ids[:2] == ids_before  # the grown file was read on, not again from its start
        assert {s for s, _ in hits(hy, "flaky login", "lexical")} == {path.stem}
        uids = [u for (u,) in hy.conn.execute("SELECT uid FROM events")]
        assert len(uids) == 4 and all(isinstance(u, bytes) and len(u) == 8 for u in uids)
        assert {len(h) for (h,) in hy.conn.execute("SELECT head FROM files")} == {16}


def test_an_index_from_before_m008_keeps_finding_the_same_with_smaller_text_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m008 makes the trigram index again without per-row lengths and lets both text indexes
    buffer more before writing a segment. An index the code before it wrote (cursor states
    kept as JSON text) is upgraded in place: typo and word search find the same, an append to
    a transcript is read from where it stopped (a copied record is still indexed once), and
    the state then kept is packed."""
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    cwd = "/home/ana/api"
    first = [
        cc.user("why does the flaky login test fail on the staging database"),
        cc.assistant("the port is taken", cc.tool_use("toolu_9", "Read", {}), message_id="m1"),
        cc.user("数据库迁移回滚之后要重新建索引"),
    ]
    path = cc.write_transcript(claude, cwd, first)
    with monkeypatch.context() as before:  # the code before m008
        before.setattr(migrations, "MIGRATIONS", before_(migrations.m008_compact_text_indexes))
        before.setattr(reading, "pack_state", lambda state: json.dumps(state))
        with Huiyi() as hy:
            assert hy.index(readers=[reader]).events == 4
            found = {
                "fuzzy": hits(hy, "flaky logn", "fuzzy"),
                "zh": hits(hy, "迁移回滚", "fuzzy"),
                "lexical": hits(hy, "staging database", "lexical"),
            }
            db_path = hy.settings.db_path
    assert found["fuzzy"][0] == (path.stem, 0) and found["zh"] == [(path.stem, 3)]
    assert "event_fuzzy_docsize" in {name for _, name in schema(db_path)}

    copy = json.loads(path.read_text().splitlines()[0])
    with path.open("a") as fh:
        fh.write(json.dumps(copy) + "\n")
    cc.write_transcript(claude, cwd, [cc.user("the proxy holds port 8080")], append=True)
    with Huiyi() as hy:  # opening it upgrades it and fills the new trigram index
        assert {
            "fuzzy": hits(hy, "flaky logn", "fuzzy"),
            "zh": hits(hy, "迁移回滚", "fuzzy"),
            "lexical": hits(hy, "staging database", "lexical"),
        } == found
        assert isinstance(hy.conn.execute("SELECT state FROM files").fetchone()[0], str)
        assert hy.index(readers=[reader]).events == 1  # the new message, not the copy
        assert hits(hy, "proxy hods port", "fuzzy")[0] == (path.stem, 4)
        (kept,) = hy.conn.execute("SELECT state FROM files").fetchone()
        state = reading.unpack_state(kept)
        assert isinstance(kept, bytes) and len(kept) < len(json.dumps(state))
        assert state["seq"] == 5
        assert hy.index(readers=[reader]).events == 0
    assert "m008_compact_text_indexes" in recorded(db_path)
    assert "event_fuzzy_docsize" not in {name for _, name in schema(db_path)}
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT count(*) FROM _rebuild").fetchone()[0] == 0
        for table in ("event_fts", "event_fuzzy"):
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)")
            config = dict(conn.execute(f"SELECT k, v FROM {table}_config").fetchall())
            assert config["hashsize"] == migrations.M008_HASHSIZE
            assert config["automerge"] == 16


def test_an_index_from_before_m009_keeps_its_words_vectors_and_counters_in_fewer_bytes(
    tmp_path: Path,
) -> None:
    """m009 keeps kinds, roles and surfaces as codes and gives the words back through
    generated columns. An index with words (and vectors, coverage counters, a compacted
    session) is upgraded in place: every row reads the same, no vector is lost, the counters
    stay true through a later delete, and search finds the same."""
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    cwd = "/home/ana/api"
    path = cc.write_transcript(
        claude,
        cwd,
        [
            cc.user("why does the flaky login test fail on staging"),
            cc.assistant("the port is taken", cc.tool_use("toolu_9", "Read", {}), message_id="m1"),
            cc.tool_result("toolu_9", "PORT = 8080"),
            cc.compact_boundary(),
            cc.compact_summary("we found the port clash on staging"),
            cc.user("数据库迁移回滚之后要重新建索引"),
        ],
    )
    other = cc.write_transcript(
        claude,
        cwd,
        [cc.user("deploy the api on friday")],
        session_id="5" * 8 + "-1111-4222-8333-444455556666",
    )
    columns = "seq, kind, role, surface, text, injected, indexed, tool_name"

    def everything(hy: Huiyi) -> dict[str, Any]:
        return {
            "rows": hy.conn.execute(f"SELECT {columns} FROM events ORDER BY id").fetchall(),
            "vectors": hy.conn.execute("SELECT count(*) FROM vectors").fetchone()[0],
            "counters": hy.conn.execute("SELECT * FROM embed_coverage ORDER BY 1, 2").fetchall(),
            "lexical": hits(hy, "staging", "lexical"),
            "fuzzy": hits(hy, "flaky logn", "fuzzy"),
            "zh": hits(hy, "迁移回滚", "fuzzy"),
        }

    with Huiyi() as hy:
        hy.index(readers=[reader])
        hy.embed()
        before = everything(hy)
        db_path = hy.settings.db_path
    assert before["vectors"] > 0 and ("shadowed",) in {(r[3],) for r in before["rows"]}
    damage.before_m009(db_path)
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        assert (
            conn.execute(f"SELECT {columns} FROM events ORDER BY id").fetchall() == before["rows"]
        )
        (words,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
        assert "kind_code" not in words

    with Huiyi() as hy:  # opening it upgrades it
        assert everything(hy) == before
        stored = hy.conn.execute(
            "SELECT DISTINCT typeof(kind_code), typeof(role_code), typeof(surface_code) FROM events"
        ).fetchall()
        assert stored == [("integer", "integer", "integer")]
        hy.forget(session_id=other.stem)
        (counted,) = hy.conn.execute(
            "SELECT count(*) FROM events WHERE indexed = 1 AND kind IN ('user', 'assistant', "
            "'summary') AND (injected = 0 OR kind = 'summary')"
        ).fetchone()
        counters = dict(
            hy.conn.execute("SELECT model, n FROM embed_coverage WHERE workspace = ?", (cwd,))
        )
        assert counters[""] == counted and set(counters.values()) == {counted}
        assert hy.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert hits(hy, "staging", "lexical") == before["lexical"]
    assert "m009_words_as_codes" in recorded(db_path)
    assert {path.stem} == {s for s, _ in before["lexical"]}


def test_every_word_reads_back_through_the_coded_columns(indexed: Path) -> None:
    """`store.codes` and m009's generated columns spell the same numbering; a word without a
    code is kept as itself."""
    with Huiyi() as hy:
        rowid = hy.conn.execute("SELECT min(id) FROM events").fetchone()[0]
        for column, coded in (
            ("kind", codes.KIND_CODES),
            ("role", codes.ROLE_CODES),
            ("surface", codes.SURFACE_CODES),
        ):
            for word in [*coded, "narrator"]:
                code = getattr(codes, f"{column}_code")(word)
                assert isinstance(code, int) == (word != "narrator")
                with hy.conn:
                    hy.conn.execute(
                        f"UPDATE events SET {column}_code = ? WHERE id = ?", (code, rowid)
                    )
                read = hy.conn.execute(f"SELECT {column} FROM events WHERE id = ?", (rowid,))
                assert read.fetchone()[0] == word


def test_an_index_from_before_m011_drops_compounds_of_tool_traffic_and_lengths_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m011: tool calls and results keep no whole compounds, and the full-text index no
    per-row lengths. An index written before has its text indexes made and filled again on
    open, with the same merge settings: a tool result is still found by its identifiers and,
    once forgotten, leaves nothing behind (a contentless row deleted with other values than it
    was written with would stay in the index)."""
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    path = cc.write_transcript(
        claude,
        "/home/ana/api",
        [
            cc.user("the serializer in orders/serializers.py drops the currency"),
            cc.assistant(
                "let me grep",
                cc.tool_use("toolu_1", "Grep", {"path": "billing/", "glob": "*_totals.py"}),
                message_id="m1",
            ),
            cc.tool_result(
                "toolu_1", "billing/invoice_totals.py:12: currency = order.currencyCode"
            ),
        ],
    )
    tool_compounds = {"totals_py", "billing_invoice_totals_py_12", "order_currency_code"}

    def compounds(conn: sqlite3.Connection) -> set[str]:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words USING fts5vocab(main, event_fts, col)"
        )
        return {t for (t,) in conn.execute("SELECT term FROM temp.words WHERE col = 'whole'")}

    with monkeypatch.context() as before:  # the code before m011
        before.setattr(migrations, "MIGRATIONS", before_(migrations.m011_smaller_full_text_index))
        before.setattr(textindex, "NO_COMPOUNDS_KINDS", frozenset())
        with Huiyi() as hy:
            hy.index(readers=[reader])
            assert compounds(hy.conn) == {"orders_serializers_py", *tool_compounds}
            db_path = hy.settings.db_path
    assert "event_fts_docsize" in {name for _, name in schema(db_path)}
    with Huiyi() as hy:  # opening it upgrades it and fills the text indexes again
        # the pages of the text indexes written before were given back to the file
        assert hy.conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        assert compounds(hy.conn) == {"orders_serializers_py"}
        assert hits(hy, "invoice_totals.py", "lexical") == [(path.stem, 3)]
        assert hits(hy, "currencyCode", "lexical") == [(path.stem, 3)]
        hy.forget(session_id=path.stem)
        (left,) = hy.conn.execute("SELECT count(*) FROM temp.words WHERE doc > 0").fetchone()
        assert left == 0
        config = dict(hy.conn.execute("SELECT k, v FROM event_fts_config").fetchall())
        assert config["hashsize"] == migrations.M008_HASHSIZE and config["automerge"] == 16
    assert "m011_smaller_full_text_index" in recorded(db_path)
    assert "event_fts_docsize" not in {name for _, name in schema(db_path)}
