"""A second look at the fused ranking's first candidates: lexical coverage and semantic agreement.

Reciprocal rank fusion (`search.fusion`) sees only ranks: a passage two layers place 8th and
12th can beat one the semantic layer is sure of, and a passage that holds one rare word of a
long question ranks like one that holds all of it. The first `POOL` fused candidates (the first
page) are therefore scored again, each by

    2 / (1 + its fused rank) + COVERAGE x share + AGREEMENT x (cosine - best cosine)

where `share` is the rarity-weighted share of the query's words the passage holds, read from
the full-text index (`abstention.passage_shares`, the scale the abstention floor uses), and the
cosine is the one the semantic layer already computed for it (the pool's best is the
reference: what counts is how far below it a candidate sits). The rest of the ranking keeps
its order below them. The constants were chosen by replaying the three sets' candidates
through the re-rank, and measured with `huiyi eval` (docs/eval.md, "Ranking: re-rank of the
fused candidates"): LoCoMo and MemDaily gain hit@5 and no golden metric drops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from huiyi.search import abstention
from huiyi.search.lexical import Rows
from huiyi.store.index import Index
from huiyi.text.tokenize import Query

__all__ = ["AGREEMENT", "COVERAGE", "POOL", "rerank", "rescore"]

#: how many of the fused candidates are scored again: the first page. A larger pool gained as
#: much on the dev sets but let candidates from below the tenth push out exact and typo matches
#: on the golden set; within the first ten, hit@10 cannot move.
POOL = 10
#: weight of the rarity-weighted share of the query's words a passage holds: a candidate holding
#: all of them gains what separates fused rank 2 from rank 10 (of the weights measured, this
#: one lifted golden recall@5 most and lowers no golden category)
COVERAGE = 0.5
#: weight of a passage's cosine below the best cosine of the pool. e5 cosines of a workspace's
#: candidates sit within about 0.1 of each other, so a candidate 0.05 below the best loses what
#: separates fused rank 1 from rank 4 (a lower weight gained less hit@5 on the dev sets)
AGREEMENT = 12.0


def rescore(
    order: Sequence[tuple[int, float]],
    shares: Mapping[int, float],
    cosines: Mapping[int, float],
) -> list[tuple[int, float]]:
    """The first `POOL` of `order` (rowid, fused score; best first) by the re-rank score, then
    the rest as they were. The pool's fused scores are handed out again in the new order, so
    scores still fall down the ranking and keep the fused scale callers compare.

    A candidate without a cosine (not embedded, or below the semantic layer's candidates)
    counts as the pool's lowest cosine; without any cosine only coverage moves candidates."""
    head, tail = list(order[:POOL]), list(order[POOL:])
    known = [cosines[rowid] for rowid, _ in head if rowid in cosines]
    best, lowest = (max(known), min(known)) if known else (0.0, 0.0)
    scored = [
        (
            rowid,
            2 / (1 + rank)
            + COVERAGE * shares.get(rowid, 0.0)
            + AGREEMENT * (cosines.get(rowid, lowest) - best),
        )
        for rank, (rowid, _) in enumerate(head, 1)
    ]
    scored.sort(key=lambda item: item[1], reverse=True)  # stable: ties keep the fused order
    fused_scores = [score for _, score in head]
    return [(rowid, score) for (rowid, _), score in zip(scored, fused_scores, strict=True)] + tail


def rerank(
    conn: Index,
    query: Query,
    workspace: str | None,
    order: Sequence[tuple[int, float]],
    cosines: Mapping[int, float],
    read: Rows | None = None,
    fuzzy: Mapping[int, float] | None = None,
) -> list[tuple[int, float]]:
    """`rescore` with each pooled candidate's share of the query's words read from the index
    of `workspace` (`read`: the rows the lexical layer and the floor already read answer for
    most words; one statement for the passages they leave out).

    Words the workspace never uses (a typo, mostly) are in no passage, so for their part of
    the query a candidate's fuzzy containment (`fuzzy`, the fuzzy layer's scores) stands in:
    without it a query of typos had no coverage at all, and the cosines of a misspelled word
    pushed the fuzzy layer's match out of the first five. (Also weighing the cosines by the
    share of the query's words the workspace uses cost golden recall@5 and MemDaily hit@5, and
    was not kept.)"""
    pool = [rowid for rowid, _ in order[:POOL]]
    shares, absent = abstention.passage_shares(conn, query, workspace, pool, read)
    if absent and fuzzy:
        shares = {
            rowid: share * (1 - absent) + absent * min(1.0, fuzzy.get(rowid, 0.0))
            for rowid, share in shares.items()
        }
    return rescore(order, shares, cosines)
