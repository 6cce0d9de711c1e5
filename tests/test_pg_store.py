"""The PostgreSQL store against a real server (`tests/pgcluster.py`): it ranks the golden set
as the local index does, its migrations run once under a lock, its counts never drift from
its rows, and a URL's password never shows in an error."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from huiyi import Huiyi
from huiyi.config import Settings
from huiyi.errors import StoreError
from huiyi.eval.datasets import load_golden
from huiyi.eval.harness import indexed
from huiyi.store.batch import Batch, EventRecord, SessionRecord
from huiyi.store.pg import migrations
from huiyi.store.pg.connect import migrate, open_pool
from huiyi.store.pg.copy import bulk_load, copy_index, with_lexemes
from huiyi.store.pg.reads import PgIndex
from huiyi.store.pg.writes import Writer
from huiyi.workspace import scope_token
from tests.backends import on_postgres
from tests.builders.lines import LineReader, write
from tests.pgcluster import Cluster

GOLDEN = Path(__file__).parent / "golden" / "huiyi-golden.json"


def ranking(hy: Huiyi, query: str, workspace: str | None, layers: Sequence[str] | None) -> list:
    """The hits as groups of equal score, best first: the order within a tie is not ranking."""
    result = hy.search(
        query,
        workspace=workspace,
        all_workspaces=workspace is None,
        limit=10,
        layers=layers,
        abstain=False,
    )
    groups: list[tuple[float, set[tuple[str, int]]]] = []
    for hit in result.hits:
        if groups and groups[-1][0] == hit.score:
            groups[-1][1].add((hit.session_id, hit.seq))
        else:
            groups.append((hit.score, {(hit.session_id, hit.seq)}))
    return [(result.layers, len(result.hits)), *groups]


def test_the_golden_set_ranks_alike_on_both_stores(pg_url: str) -> None:
    evalset = load_golden(GOLDEN)
    with indexed(
        evalset, Settings.from_env(), index_home=None, embedder="fake", progress=None
    ) as local:
        assert local.embed() > 0
        with on_postgres(local, pg_url) as pg:
            differ = []
            for q in evalset.queries:
                for layers in (("lexical",), ("fuzzy",), ("semantic",), None):
                    mine = ranking(local, q.query, q.workspace, layers)
                    theirs = ranking(pg, q.query, q.workspace, layers)
                    if mine != theirs:
                        differ.append((q.id, layers, mine, theirs))
    assert differ == []


def test_migrations_run_once_however_many_start_at_once(pg_url: str) -> None:
    applied: list[list[str]] = []
    starts = [threading.Thread(target=lambda: applied.append(migrate(pg_url))) for _ in range(4)]
    for thread in starts:
        thread.start()
    for thread in starts:
        thread.join()
    assert sorted(len(names) for names in applied) == [0, 0, 0, len(migrations.MIGRATIONS)]
    assert migrate(pg_url) == []


def test_a_database_of_a_newer_huiyi_is_refused(pg_url: str) -> None:
    migrate(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO huiyi_migrations (name, applied) VALUES ('m999_future', 0)")
    with pytest.raises(StoreError, match=r"newer huiyi.*m999_future"):
        migrate(pg_url)


def test_a_password_in_the_url_never_shows_in_the_error() -> None:
    url = "postgresql://ana:hunter2-very-secret@127.0.0.1:1/huiyi?connect_timeout=1"
    with pytest.raises(StoreError) as caught:
        migrate(url)
    assert "hunter2-very-secret" not in str(caught.value)
    assert "cannot reach the PostgreSQL database" in str(caught.value)


def _counts(conn: psycopg.Connection) -> tuple[object, ...]:
    """The derived tables, and what they would hold if counted from the rows again."""
    kept = conn.execute(
        "SELECT (SELECT rows FROM lex_totals), (SELECT tokens FROM lex_totals), "
        "(SELECT array_agg(term || '=' || n ORDER BY term) FROM term_df WHERE n > 0)"
    ).fetchone()
    counted = conn.execute(
        "SELECT count(*), coalesce(sum(lex_tokens), 0), (SELECT array_agg(t ORDER BY t) FROM ("
        "SELECT term || '=' || count(*) AS t FROM ("
        "SELECT 'b:' || x AS term FROM events, unnest(tsvector_to_array(ts_filter(lex, '{d}'))) x "
        "UNION ALL SELECT 'w:' || x FROM events, "
        "unnest(tsvector_to_array(ts_filter(lex, '{a}'))) x) AS terms GROUP BY term) AS c) "
        "FROM events WHERE lex IS NOT NULL"
    ).fetchone()
    return kept, counted


def test_the_rarity_counts_follow_every_write_and_removal(tmp_path: Path, pg_url: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write(
        logs / "a.log",
        *({"s": "s1", "q": i, "t": f"deploy the cache shard {i} with make ship"} for i in range(5)),
        *({"s": "s2", "q": i, "t": f"回滚 the migration of shard {i}"} for i in range(5)),
    )
    with Huiyi() as local:
        local.index(readers=[LineReader(logs)])
        pool = open_pool(pg_url, max_size=2)
        try:
            copy_index(local.conn, pool)
            with pool.connection() as conn:
                kept, counted = _counts(conn)
                assert kept == counted and kept[0] == 10
                with conn.transaction():
                    assert Writer(conn).remove("s2", tombstone=True)
                kept, counted = _counts(conn)
                assert kept == counted and kept[0] == 5
                with conn.transaction():
                    assert Writer(conn).tombstoned(["s1", "s2"]) == {"s2"}
        finally:
            pool.close()


def _history() -> list[Batch]:
    """Sessions in two workspaces, a private one with a child below it, one with no events."""
    texts = [
        ("user", "deploy the cache shard with make ship"),
        ("assistant", "回滚 the migration first, then deploy the cache"),
        ("tool_call", 'Bash {"command": "make ship --shard 3"}'),
        ("tool_result", "shard 3 deployed; cache warm"),
        ("user", "数据库 迁移 失败 了"),
    ]

    def session(sid: str, workspace: str, n: int, **extra: object) -> Batch:
        fields: dict[str, object] = {"parent": None, "is_subagent": False, "is_private": False}
        fields.update(extra)
        record = SessionRecord(
            sid, "test", workspace, workspace, f"{sid} title", None, 1_000, None,
            fields["parent"], fields["is_subagent"], fields["is_private"],
        )  # fmt: skip
        events = [
            EventRecord(q, 1_000 + q, kind, "user" if kind == "user" else "assistant",
                        f"{text} ({sid} {q})", "current", False,
                        "Bash" if kind.startswith("tool") else None)
            for q, (kind, text) in enumerate(texts[:n] * 2)
        ]  # fmt: skip
        return Batch(record, events)

    return [
        session("s1", "/w/a", 5),
        session("s2", "/w/b", 4),
        session("s3", "/w/a", 3, is_private=True),
        session("s4", "/w/a", 2, parent="s3", is_subagent=True),
        session("s5", "/w/b", 0),
    ]


def _derived(pool: ConnectionPool) -> list[object]:
    with pool.connection() as conn:
        return [
            conn.execute(query).fetchall()
            for query in (
                "SELECT term, n FROM term_df WHERE n > 0 ORDER BY term",
                "SELECT rows, tokens FROM lex_totals",
                "SELECT id, event_count, user_count, updated, is_private FROM sessions ORDER BY id",
                "SELECT workspace, model, n FROM embed_coverage WHERE n > 0 ORDER BY 1, 2",
            )
        ]


def test_a_bulk_load_fills_the_store_as_pushes_do(pg_cluster: Cluster) -> None:
    history = _history()
    pushed, loaded = (open_pool(pg_cluster.new_database(), max_size=2) for _ in range(2))
    try:
        with pushed.connection() as conn, conn.transaction():
            Writer(conn).apply(history)
        assert bulk_load(loaded, map(with_lexemes, history)) == 28
        with loaded.connection() as conn:
            kept, counted = _counts(conn)
        assert kept == counted and kept[0] > 0
        # the child of the private session is private on both paths, whichever came first
        assert [row[4] for row in _derived(pushed)[2]] == [False, False, True, True, False]
        assert _derived(loaded) == _derived(pushed)
        with Huiyi(store=PgIndex(pushed)) as a, Huiyi(store=PgIndex(loaded)) as b:
            for query in ("deploy cache", "回滚 迁移", "shrad deploy", "数据库"):
                for layers in (("lexical",), ("fuzzy",), None):
                    theirs = ranking(b, query, None, layers)
                    assert ranking(a, query, None, layers) == theirs
                    assert theirs[0][1] > 0
        with pytest.raises(ValueError, match="empty store"):
            bulk_load(loaded, map(with_lexemes, history))
        assert _derived(loaded) == _derived(pushed)
    finally:
        pushed.close()
        loaded.close()


def _trigram_asks(index: PgIndex) -> list[str]:
    """The fuzzy layer's lookups of a few words' trigrams, unscoped and in workspace /w/a."""
    from huiyi.search.fuzzy import _quote, grams
    from huiyi.workspace import fuzzy_scope_token

    scope = f" AND {_quote(fuzzy_scope_token('/w/a'))}"
    asks = [_quote(g) for g in grams("deploy the cache shard 回滚 数据库")]
    return [*asks, *(a + scope for a in asks)]


_WORDS = [
    'body:"deploy"',
    'body:"cache"',
    'body:"回滚"',
    'body:"deploy" AND scope:"' + scope_token("/w/a") + '"',
    'body:"the cache"',
]


def _gin(pool: ConnectionPool) -> PgIndex:
    """An index that reads every newest-rows lookup from the GIN indexes (no kept lists)."""
    index = PgIndex(pool)
    index.use_lists = False
    return index


def _small_lists(pool: ConnectionPool, words: int, grams: int, head: int = 2) -> None:
    """Lists of a few ids each in this test's database, with a head of `head`, so that a small
    history trims them and fills their heads."""
    with pool.connection() as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION huiyi_newest_cap(term text) RETURNS integer "
            "LANGUAGE sql IMMUTABLE STRICT AS "
            f"$$ SELECT CASE WHEN starts_with(term, 'g:') THEN {grams} ELSE {words} END $$"
        )
        conn.execute(
            "CREATE OR REPLACE FUNCTION huiyi_newest_head() RETURNS integer "
            f"LANGUAGE sql IMMUTABLE AS $$ SELECT {head} $$"
        )
        conn.commit()


@pytest.mark.parametrize("use_lists", [False, True], ids=["in-process", "lists"])
def test_the_kept_newest_rows_follow_every_write(pg_url: str, use_lists: bool) -> None:
    """A server keeps each trigram's and word's newest rows between searches, in its process
    (`store.pg.newest`) and in the database (`store.pg.lists`, here trimmed to 5 ids of a word
    and 4 of a trigram); after pushes, a removal, a workspace move and a re-push, a warm index
    answers what a fresh one reads from the GIN indexes."""
    history = _history()
    pool = open_pool(pg_url, max_size=4)
    try:
        _small_lists(pool, 5, 4)
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply(history[:2])
        warm = PgIndex(pool)
        warm.use_lists = use_lists
        asks = _trigram_asks(warm)

        def same(cap: int) -> list[tuple[int, int]]:
            words = warm.fts_postings(_WORDS, cap=cap)
            assert words == _gin(pool).fts_postings(_WORDS, cap=cap)
            assert len({n for n, _ in words}) == len(_WORDS)
            mine = warm.fuzzy_postings(asks, cap=cap)
            assert mine == _gin(pool).fuzzy_postings(asks, cap=cap)
            return mine + words

        first = same(3)
        assert first and same(50)
        more = [
            Batch(b.session._replace(id=f"{b.session.id}-{n}"), b.events)
            for n in range(3)
            for b in history
        ]
        for batch in more:  # new rows come after the kept ones: read from the tail
            with pool.connection() as conn, conn.transaction():
                Writer(conn).apply([batch])
            same(3)
        after = same(50)
        assert len(after) > len(first) and max(r for _, r in after) > max(r for _, r in first)
        with pool.connection() as conn, conn.transaction():
            assert Writer(conn).remove("s1-2", tombstone=True)
        assert same(50) != after
        moved = more[3]._replace(session=more[3].session._replace(workspace="/w/b"))
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply([moved])  # the same session in another workspace
        same(50)
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply([more[0]])  # the same events again: old rows out, new ones in
        same(3)
        same(50)
    finally:
        pool.close()


def _held(pool: ConnectionPool, asks: list) -> dict:
    from huiyi.store.pg import lists

    statement = lists.read(asks)
    assert statement is not None
    with pool.connection() as conn:
        return lists.held(conn.execute(*statement).fetchall())


def _lists(pool: ConnectionPool) -> list[tuple[object, ...]]:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT term, workspace, head || ids, floor FROM newest_ids ORDER BY term, workspace"
        ).fetchall()


def test_the_newest_ids_answer_first_lookups_as_the_gin_index_does(pg_url: str) -> None:
    """A word's or trigram's first lookup is answered from its kept list when the list holds
    enough ids above its floor, and from the GIN index when it does not (a cap above the
    list's length, a list thinned by a removal): the same rows either way."""
    history = _history()
    pool = open_pool(pg_url, max_size=4)
    try:
        _small_lists(pool, 5, 4)
        more = [
            Batch(b.session._replace(id=f"{b.session.id}-{n}"), b.events)
            for n in range(3)
            for b in history
        ]
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply([*history, *more])
        index = PgIndex(pool)
        asks = _trigram_asks(index)
        words = [*_WORDS, 'whole:"make_ship"', '(body:"shard" OR whole:"shard")']
        lists_answer = 0
        for cap in (1, 3, 4, 5, 6, 50):
            for read in range(2):
                fresh = index if read else PgIndex(pool)
                assert fresh.fts_postings(words, cap=cap) == _gin(pool).fts_postings(words, cap=cap)
                assert fresh.fuzzy_postings(asks, cap=cap) == _gin(pool).fuzzy_postings(
                    asks, cap=cap
                )
            from huiyi.store.pg import lists

            held = _held(pool, [(["b:deploy"], "/w/a"), (["g:dep"], None)])
            lists_answer += lists.answer(held, (["b:deploy"], "/w/a"), cap) is not None
            lists_answer += lists.answer(held, (["g:dep"], None), cap) is not None
        # the lists answered the small caps and sent the large ones to the GIN index
        assert 0 < lists_answer < 12
        floors = {row[3] for row in _lists(pool)}
        assert 0 in floors and len(floors) > 1  # some lists were trimmed, some hold every row
        with pool.connection() as conn:
            heads = conn.execute("SELECT count(*) FROM newest_ids WHERE head <> '{}'").fetchone()
        assert heads and heads[0] > 0  # and some hold their newest ids in their heads
        with pool.connection() as conn, conn.transaction():
            assert Writer(conn).remove("s1-1", tombstone=True)
        for cap in (1, 3, 5, 50):
            assert PgIndex(pool).fts_postings(words, cap=cap) == _gin(pool).fts_postings(
                words, cap=cap
            )
            assert PgIndex(pool).fuzzy_postings(asks, cap=cap) == _gin(pool).fuzzy_postings(
                asks, cap=cap
            )
    finally:
        pool.close()


def test_the_migration_lists_the_newest_ids_of_an_existing_store(pg_url: str) -> None:
    """A store written before the lists existed gets them from its rows when it migrates: the
    lists the pushes kept, trimmed and all."""
    pool = open_pool(pg_url, max_size=2)
    try:
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply(_history())
        kept = _lists(pool)
        assert len(kept) > 100
        with pool.connection() as conn, conn.transaction():
            conn.execute("DROP TABLE newest_ids")
            conn.execute("DROP FUNCTION huiyi_newest_cap, huiyi_newest_head, huiyi_merge_ids")
            conn.execute("DROP INDEX sessions_by_device")
            conn.execute("DELETE FROM huiyi_migrations WHERE name = 'm003_newest_ids'")
        assert migrate(pg_url) == ["m003_newest_ids"]
        assert _lists(pool) == kept
    finally:
        pool.close()


def test_a_tail_past_its_bound_drops_its_oldest_half_not_what_was_read_lately(
    pg_url: str,
) -> None:
    """The in-process newest rows of each trigram (`newest.NewestGrams`) hold the rows
    written since they were read in a tail of bounded length. Past the bound its oldest half
    goes: what was read before that half is read again, what was read since is still answered
    from memory, and every answer is what the GIN index gives."""
    from huiyi.search.fuzzy import _quote
    from huiyi.store.pg.match import compile_trigrams
    from huiyi.store.pg.newest import NewestGrams

    history = _history()
    pool = open_pool(pg_url, max_size=4)
    try:
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply(history[:2])
            row = conn.execute(
                "SELECT count(*) FROM events e JOIN sessions s ON s.sid = e.sid "
                "WHERE s.id = 's1' AND e.grams IS NOT NULL"
            ).fetchone()
        per_push = int(row[0]) if row else 0
        assert per_push > 2
        index = _gin(pool)
        kept = NewestGrams(tail_rows=3 * per_push)
        reads: list[int] = []

        def read(asked: Sequence[tuple[list[str], str | None]], cap: int) -> object:
            reads.append(len(asked))
            return index._read_newest_grams(asked, cap)

        def ask(*words: str) -> None:
            asked = [(compile_trigrams(_quote(w), frozenset())[0], None) for w in words]
            with pool.connection() as conn:
                kept.sync(conn)
            found = kept.newest(asked, 3, read)  # type: ignore[arg-type]
            assert found == index.fuzzy_postings([_quote(w) for w in words], cap=3)
            assert len({n for n, _ in found}) == len(words)

        def push(n: int) -> None:
            again = Batch(history[0].session._replace(id=f"p{n}"), history[0].events)
            with pool.connection() as conn, conn.transaction():
                Writer(conn).apply([again])

        ask("dep", "cac")
        push(1)
        push(2)
        ask("sha")  # read as of the second push
        push(3)
        ask("dep")  # the tail holds three pushes: from memory
        assert reads == [2, 1]
        push(4)  # four: the oldest one and a half go
        ask("sha", "dep", "cac")
        assert reads == [2, 1, 2]  # "sha" was read after the rows dropped, the others before
    finally:
        pool.close()


def test_team_repair_lists_again_what_removals_thinned(pg_url: str) -> None:
    """After removals a trimmed list holds fewer ids than a lookup asks for and sends it to
    the GIN index; `huiyi team repair` makes the lists again from the rows, and they answer
    it (the same rows)."""
    from click.testing import CliRunner

    from huiyi.cli.root import main
    from huiyi.store.pg import lists

    history = _history()
    pool = open_pool(pg_url, max_size=2)
    try:
        _small_lists(pool, 5, 4)
        more = [
            Batch(history[0].session._replace(id=f"s1-{n}"), history[0].events) for n in range(4)
        ]
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply(more)
        with pool.connection() as conn, conn.transaction():
            assert Writer(conn).remove("s1-3", tombstone=True)
        ask = (["b:deploy"], "/w/a")
        assert lists.answer(_held(pool, [ask]), ask, 5) is None
        result = CliRunner().invoke(
            main, ["team", "repair", "--database", pg_url], catch_exceptions=False
        )
        assert result.exit_code == 0 and "rebuilt" in result.output
        ids = lists.answer(_held(pool, [ask]), ask, 5)
        assert ids is not None and len(ids) == 5
        match = 'body:"deploy" AND scope:"' + scope_token("/w/a") + '"'
        assert PgIndex(pool).fts_postings([match], cap=5) == [(0, rowid) for rowid in ids]
        assert _gin(pool).fts_postings([match], cap=5) == [(0, rowid) for rowid in ids]
    finally:
        pool.close()


def test_a_time_limit_cancels_the_statement_and_leaves_the_connection_without_one(
    pg_url: str,
) -> None:
    """A statement under a time limit is sent with its `statement_timeout` in one round trip;
    cancelled or not, the connection goes back to the pool with no limit left on it."""
    pool = open_pool(pg_url, min_size=1, max_size=1)
    try:
        index = PgIndex(pool)
        with index.time_limit(5.0):
            assert index._all("SELECT 1") == [(1,)]
        assert index._all("SHOW statement_timeout") == [("0",)]
        with pytest.raises(psycopg.errors.QueryCanceled), index.time_limit(0.05):
            index._all("SELECT pg_sleep(5)")
        assert index._all("SHOW statement_timeout") == [("0",)]
        assert index._all("SELECT 2") == [(2,)]
    finally:
        pool.close()
