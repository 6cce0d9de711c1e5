"""Reciprocal rank fusion of the lexical, fuzzy and semantic layers, and its tuning constants.

RRF adds, for every layer that ranked an event, `weight / (RRF_K + rank)`: it needs no score
calibration between BM25, trigram containment and cosine similarity (e5 cosines sit in a narrow
band, so no absolute threshold is used anywhere). The constants below are tuned on the golden set
and the dev sets with `huiyi eval`; docs/eval.md records the numbers behind them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# -- tuning constants ----------------------------------------------------------------------
RRF_K = 60
WEIGHTS: Mapping[str, float] = {"lexical": 1.0, "fuzzy": 0.6, "semantic": 1.0}
#: the semantic layer joins a hybrid search only when at least this share of the searched
#: workspace's conversation is embedded
COVERAGE_GATE = 0.5
#: how many candidates each layer contributes to the fusion
DEPTH = 60
# ------------------------------------------------------------------------------------------


def fuse(rankings: Mapping[str, Sequence[int]]) -> list[tuple[int, float]]:
    """Event rowids by fused score, best first (ties: the order they were first seen)."""
    scores: dict[int, float] = {}
    for layer, ranking in rankings.items():
        weight = WEIGHTS.get(layer, 1.0)
        for rank, rowid in enumerate(ranking, 1):
            scores[rowid] = scores.get(rowid, 0.0) + weight / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)
