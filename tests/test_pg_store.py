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


def test_the_kept_newest_rows_follow_every_write(pg_url: str) -> None:
    """A server keeps each trigram's and word's newest rows between searches
    (`store.pg.newest`); after pushes, a removal, a workspace move and a re-push, a warm index
    answers what a fresh one reads from the database."""
    history = _history()
    pool = open_pool(pg_url, max_size=4)
    try:
        with pool.connection() as conn, conn.transaction():
            Writer(conn).apply(history[:2])
        warm = PgIndex(pool)
        asks = _trigram_asks(warm)

        def same(cap: int) -> list[tuple[int, int]]:
            words = warm.fts_postings(_WORDS, cap=cap)
            assert words == PgIndex(pool).fts_postings(_WORDS, cap=cap)
            assert len({n for n, _ in words}) == len(_WORDS)
            mine = warm.fuzzy_postings(asks, cap=cap)
            assert mine == PgIndex(pool).fuzzy_postings(asks, cap=cap)
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
