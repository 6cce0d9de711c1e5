"""Replay plain BM25 over jieba words fused into the hybrid ranking, without changing the search.

Would Chinese words from a segmenter help beside the lexical layer's bigrams? This asks every
positive query of a set once through the real hybrid search (abstention and padding off, the
first 30 hits) and once through the plain BM25 baseline over jieba words (`eval.baseline`),
then fuses the two by reciprocal rank, the jieba ranking at each weight. It prints hit@5 per
half of the set (split by a hash of the query id, as `eval.precision` splits); docs/eval.md has
the numbers and why the change was not kept.

    python benchmarks/replay_jieba_fusion.py memdaily ../shared/data/memdaily \\
        --index-home IDX   # an index `huiyi eval --index-home IDX` built and embedded
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from huiyi.config import Settings
from huiyi.eval.baseline import Bm25Baseline
from huiyi.eval.datasets import event_id, load
from huiyi.eval.harness import indexed
from huiyi.eval.precision import held_out
from huiyi.search.fusion import RRF_K

WEIGHTS = (0.25, 0.5, 1.0)
POOL = 30
K = 5


def fused(ours: Sequence[str], theirs: Sequence[str], weight: float) -> list[str]:
    """The two rankings by reciprocal rank, `theirs` at `weight`."""
    scores: dict[str, float] = {}
    for ranking, w in ((ours, 1.0), (theirs, weight)):
        for rank, doc in enumerate(ranking, 1):
            scores[doc] = scores.get(doc, 0.0) + w / (RRF_K + rank)
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: -item[1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path, required=True)
    args = parser.parse_args()
    evalset = load(args.kind, args.path)
    baseline = Bm25Baseline(evalset)
    asked: dict[str, tuple[set[str], list[str], list[str]]] = {}
    with indexed(
        evalset, Settings.from_env(), index_home=args.index_home, embedder=None, progress=None
    ) as hy:
        for query in evalset.queries:
            if query.negative:
                continue
            result = hy.search(
                query.query,
                workspace=query.workspace,
                all_workspaces=query.workspace is None,
                limit=POOL,
                abstain=False,
                padding=0,
            )
            ours = [event_id(h.session_id, h.seq) for h in result.hits]
            theirs = baseline.search(query.query, query.workspace, k=POOL)
            asked[query.id] = (set(query.relevant), ours, theirs)
    for held in (False, True):
        part = [row for qid, row in asked.items() if held_out(qid) == held]

        def hit(rank: Sequence[str], relevant: set[str]) -> bool:
            return bool(relevant & set(rank[:K]))

        n = max(1, len(part))
        cells = [
            f"hybrid {sum(hit(o, r) for r, o, _ in part) / n:.3f}",
            f"jieba BM25 {sum(hit(t, r) for r, _, t in part) / n:.3f}",
            *(
                f"fused W={w} {sum(hit(fused(o, t, w), r) for r, o, t in part) / n:.3f}"
                for w in WEIGHTS
            ),
        ]
        half = "held" if held else "tuning"
        print(f"{evalset.name} {half} half ({len(part)} positives): " + ", ".join(cells))


if __name__ == "__main__":
    main()
