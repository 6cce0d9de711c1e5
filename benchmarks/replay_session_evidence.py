"""Replay session-level evidence over the hybrid ranking, without changing the search.

Issue 11 asks whether several weak hits in one session should lift it (summary questions whose
answer spans a session). This asks every positive query of a set once through the real hybrid
search (abstention off, the first 30 fused hits), then re-ranks those hits for each weight:
a hit's fused score plus `weight` times the fused scores of the other hits of its session.
It prints hit@5 and recall@5 per weight; docs/eval.md has the numbers and why the change was
not kept.

    python benchmarks/replay_session_evidence.py locomo ../shared/data/locomo/locomo-dev.json \\
        --index-home IDX   # an index `huiyi eval --index-home IDX` built and embedded
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from report import print_numbers

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.eval.datasets import event_id, load
from huiyi.eval.metrics import hit_at, recall_at

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5)
POOL = 30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    evalset = load(args.kind, args.path)
    settings = replace(Settings.from_env(), home=args.index_home / "huiyi")
    asked: list[tuple[tuple[str, ...], list[tuple[str, str, float]]]] = []
    with Huiyi(settings=settings) as hy:
        for query in evalset.queries:
            if query.negative:
                continue
            result = hy.search(query.query, workspace=query.workspace, limit=POOL, abstain=False)
            hits = [(event_id(h.session_id, h.seq), h.session_id, h.score) for h in result.hits]
            asked.append((query.relevant, hits))
    numbers: dict[str, object] = {"set": evalset.name, "positives": len(asked)}
    for weight in WEIGHTS:
        hit5 = recall5 = 0.0
        for relevant, hits in asked:
            session: dict[str, float] = defaultdict(float)
            for _, sid, score in hits:
                session[sid] += score
            ranked = sorted(
                hits, key=lambda h: h[2] + weight * (session[h[1]] - h[2]), reverse=True
            )
            ids = [doc for doc, _, _ in ranked]
            hit5 += hit_at(ids, relevant, 5)
            recall5 += recall_at(ids, relevant, 5)
        n = max(len(asked), 1)
        numbers[f"weight {weight}"] = f"hit@5 {hit5 / n:.3f}  recall@5 {recall5 / n:.3f}"
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
