"""Retrieval metrics for one ranking and their averages over a set, overall and per category.

A ranking is a list of event ids (`"<session id>:<seq>"`), best first; relevance is binary (an
event is in the query's `relevant` list or it is not). Per positive query:

* `hit@k`     1 if any relevant event is in the top k, else 0
* `recall@k`  share of the relevant events found in the top k
* `mrr`       1 / rank of the first relevant event within the top 10, 0 if none (MRR@10: a
              layer that returns 200 results gains nothing over one that returns 10)
* `ndcg@10`   DCG of the top 10 (gain 1 / log2(rank + 1)) over the best possible DCG

Negative queries (no relevant events) are kept out of those averages and counted on their own:
how many of them return anything at all in the top 5, which is what a user would see as noise.
Duplicate ids in a ranking count once, at their first position.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from huiyi.eval.evalset import EvalQuery

__all__ = [
    "METRICS",
    "Scores",
    "answers",
    "evaluate",
    "hit_at",
    "ndcg_at",
    "query_scores",
    "recall_at",
    "reciprocal_rank",
]

#: Metric names, in report order.
METRICS = ("hit@1", "hit@5", "hit@10", "recall@5", "recall@10", "mrr", "ndcg@10")
MRR_DEPTH = 10
NEGATIVE_DEPTH = 5
UNCATEGORISED = "-"


def answers(ranking: Sequence[str]) -> bool:
    """Whether a ranking answers its query at all: anything in its first `NEGATIVE_DEPTH`
    results (the one definition of a negative "answered", for `huiyi eval` and
    `eval.precision` alike)."""
    return len(_dedupe(ranking)[:NEGATIVE_DEPTH]) > 0


def _dedupe(ranking: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def hit_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    return 1.0 if any(doc in wanted for doc in _dedupe(ranking)[:k]) else 0.0


def recall_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    if not wanted:
        return 0.0
    return len(wanted.intersection(_dedupe(ranking)[:k])) / len(wanted)


def reciprocal_rank(
    ranking: Sequence[str], relevant: Iterable[str], depth: int = MRR_DEPTH
) -> float:
    wanted = set(relevant)
    for rank, doc in enumerate(_dedupe(ranking)[:depth], start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc in enumerate(_dedupe(ranking)[:k], start=1)
        if doc in wanted
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def query_scores(ranking: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """Every metric in `METRICS` for one positive query."""
    return {
        "hit@1": hit_at(ranking, relevant, 1),
        "hit@5": hit_at(ranking, relevant, 5),
        "hit@10": hit_at(ranking, relevant, 10),
        "recall@5": recall_at(ranking, relevant, 5),
        "recall@10": recall_at(ranking, relevant, 10),
        "mrr": reciprocal_rank(ranking, relevant),
        "ndcg@10": ndcg_at(ranking, relevant, 10),
    }


@dataclass(slots=True)
class Scores:
    """Averages over a set of queries, overall and per category, plus the negatives."""

    queries: int
    overall: dict[str, float]
    per_category: dict[str, dict[str, float]]
    #: positive queries per category
    category_counts: dict[str, int]
    negatives: int = 0
    #: negatives that returned anything in the top 5
    negatives_answered: int = 0
    #: per positive query id, its metric values (for drill-down and significance checks)
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "queries": self.queries,
            "overall": self.overall,
            "per_category": self.per_category,
            "category_counts": self.category_counts,
            "negatives": self.negatives,
            "negatives_answered": self.negatives_answered,
            "negatives_answered_share": (
                round(self.negatives_answered / self.negatives, 4) if self.negatives else None
            ),
        }


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {name: 0.0 for name in METRICS}
    return {name: sum(row[name] for row in rows) / len(rows) for name in METRICS}


def evaluate(queries: Sequence[EvalQuery], rankings: Mapping[str, Sequence[str]]) -> Scores:
    """Score `rankings` (query id -> ranked event ids; a missing id counts as an empty ranking)."""
    per_query: dict[str, dict[str, float]] = {}
    by_category: dict[str, list[dict[str, float]]] = {}
    negatives = answered = 0
    for query in queries:
        ranking = rankings.get(query.id, ())
        if query.negative:
            negatives += 1
            answered += answers(ranking)
            continue
        row = query_scores(ranking, query.relevant)
        per_query[query.id] = row
        by_category.setdefault(query.category or UNCATEGORISED, []).append(row)
    rows = list(per_query.values())
    return Scores(
        queries=len(rows),
        overall=_mean(rows),
        per_category={c: _mean(r) for c, r in sorted(by_category.items())},
        category_counts={c: len(r) for c, r in sorted(by_category.items())},
        negatives=negatives,
        negatives_answered=answered,
        per_query=per_query,
    )
