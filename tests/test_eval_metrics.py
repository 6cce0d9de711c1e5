"""Metrics match hand-computed values; negatives are counted apart; the runner scores layers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pytest

from huiyi.errors import HuiyiError
from huiyi.eval.datasets import EvalQuery, EvalSet
from huiyi.eval.metrics import evaluate, hit_at, ndcg_at, query_scores, recall_at, reciprocal_rank
from huiyi.eval.runner import Report, run


def test_metrics_for_one_ranking_match_hand_computation() -> None:
    ranking = ["x", "a", "y", "b"]
    relevant = ["a", "b", "c"]
    assert hit_at(ranking, relevant, 1) == 0.0
    assert hit_at(ranking, relevant, 2) == 1.0
    assert recall_at(ranking, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at(ranking, relevant, 5) == pytest.approx(2 / 3)
    assert reciprocal_rank(ranking, relevant) == pytest.approx(1 / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranking, relevant, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at(["a"], ["a"], 10) == 1.0


def test_duplicates_count_once_and_depth_limits_mrr() -> None:
    assert recall_at(["a", "a", "a"], ["a", "b"], 5) == 0.5
    assert hit_at(["x", "x", "x", "x", "x", "a"], ["a"], 5) == 1.0  # five x's are one result
    assert reciprocal_rank([f"n{i}" for i in range(10)] + ["a"], ["a"]) == 0.0
    assert query_scores([], ["a"]) == dict.fromkeys(query_scores([], ["a"]), 0.0)


def test_evaluate_averages_per_category_and_counts_negatives_apart() -> None:
    queries = [
        EvalQuery("q1", "...", ("a",), category="exact"),
        EvalQuery("q2", "...", ("b",), category="exact"),
        EvalQuery("q3", "...", ("c", "d"), category="paraphrase"),
        EvalQuery("n1", "...", (), category="negative"),
        EvalQuery("n2", "...", (), category="negative"),
    ]
    rankings = {"q1": ["a"], "q2": ["x", "y", "b"], "q3": ["c"], "n1": [], "n2": ["z"]}
    scores = evaluate(queries, rankings)
    assert scores.queries == 3
    assert scores.category_counts == {"exact": 2, "paraphrase": 1}
    assert scores.per_category["exact"]["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert scores.per_category["exact"]["hit@1"] == 0.5
    assert scores.per_category["paraphrase"]["recall@5"] == 0.5
    assert scores.overall["hit@5"] == 1.0
    assert scores.overall["recall@5"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert "negative" not in scores.per_category
    assert (scores.negatives, scores.negatives_answered) == (2, 1)


def test_a_query_without_ranking_scores_zero() -> None:
    scores = evaluate([EvalQuery("q1", "...", ("a",))], {})
    assert scores.overall["hit@10"] == 0.0
    assert scores.per_category == {"-": scores.overall}


def test_runner_scores_a_search_function_and_counts_failing_layers() -> None:
    evalset = EvalSet(
        "t",
        [],
        [EvalQuery("q1", "one", ("s:1",), category="c"), EvalQuery("q2", "two", ("s:2",))],
    )

    def search(query: EvalQuery) -> Sequence[str]:
        if query.query == "two":
            raise HuiyiError("layer unavailable")
        return ["s:9", "s:1", "s:1"] + [f"s:{n}" for n in range(10, 30)]

    result = run(evalset, search, layer="lexical")
    assert result.failures == 1
    assert result.rankings["q1"][:2] == ["s:9", "s:1"] and len(result.rankings["q1"]) == 10
    assert result.rankings["q2"] == []
    assert result.scores.per_query["q1"]["mrr"] == 0.5
    assert result.scores.overall["hit@5"] == 0.5
    report = Report("t", [result])
    data = json.loads(json.dumps(report.as_json()))
    assert data["metrics"]["lexical"]["overall"]["hit@5"] == 0.5
    assert data["metrics"]["lexical"]["failures"] == 1
    assert {"id": "q2", "layer": "lexical", "ranking": []} in data["queries"]
    table = report.format_table()
    assert "lexical" in table and "0.500" in table


def test_runner_lets_bugs_in_a_layer_propagate() -> None:
    evalset = EvalSet("t", [], [EvalQuery("q1", "one", ("s:1",))])

    def broken(query: EvalQuery) -> Sequence[str]:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run(evalset, broken)
