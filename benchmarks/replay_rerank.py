"""Replay the re-rank of the fused candidates and the expansion weight, without re-searching.

Asks every positive query of a set once through the real hybrid search (abstention off) and
keeps what the fusion and the re-rank were given: each layer's ranking (the `expanded` one
included), the cosines the semantic layer computed and every candidate's coverage
(`abstention.passage_shares`). It then fuses and re-ranks those for each setting below, with the
real `fusion.fuse` and `rerank.rescore`, and prints hit@5 / recall@5 / MRR per setting, and
recall@5 per category. docs/eval.md has the numbers and the commands.

    python benchmarks/replay_rerank.py locomo ../shared/data/locomo/locomo-dev.json \\
        --index-home IDX   # an index `huiyi eval --index-home IDX` built and embedded
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from report import print_numbers

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.eval.datasets import event_id, load
from huiyi.eval.metrics import hit_at, recall_at, reciprocal_rank
from huiyi.search import abstention, fusion, rerank
from huiyi.store import queries
from huiyi.text.tokenize import parse_query

#: (name, POOL, COVERAGE, AGREEMENT, weight of `expanded`); a pool of 0 keeps the fused order
SETTINGS = (
    ("no re-rank, no expansion", 0, 0.0, 0.0, 0.0),
    ("agreement 12 alone", 10, 0.0, 12.0, 0.0),
    ("coverage 0.5 alone", 10, 0.5, 0.0, 0.0),
    ("coverage 0.5, agreement 12 (kept)", 10, 0.5, 12.0, 0.0),
    ("coverage 0.5, agreement 8", 10, 0.5, 8.0, 0.0),
    ("coverage 1.0, agreement 12", 10, 1.0, 12.0, 0.0),
    ("coverage 0.5, agreement 12, pool 30", 30, 0.5, 12.0, 0.0),
    ("kept, expansion 0.3", 10, 0.5, 12.0, 0.3),
    ("kept, expansion 0.5 (kept)", 10, 0.5, 12.0, 0.5),
    ("kept, expansion 0.75", 10, 0.5, 12.0, 0.75),
    ("kept, expansion 1.0", 10, 0.5, 12.0, 1.0),
)


@dataclass(frozen=True, slots=True)
class Asked:
    category: str
    relevant: tuple[str, ...]
    rankings: dict[str, list[int]]
    cosines: dict[int, float]
    shares: dict[int, float]
    ids: dict[int, str]


@contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    """Module constants set for the duration (the replay varies what the search holds fixed)."""
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def ask(hy: Huiyi, kind: str, path: Path) -> list[Asked]:
    """Every positive query asked once; what its fusion and re-rank were given."""
    seen: dict[str, Any] = {}
    fuse, rescore = fusion.fuse, rerank.rescore

    def spy_fuse(rankings: Mapping[str, Sequence[int]]) -> list[tuple[int, float]]:
        seen["rankings"] = {name: list(r) for name, r in rankings.items()}
        return fuse(rankings)

    def spy_rescore(
        order: Sequence[tuple[int, float]],
        shares: Mapping[int, float],
        cosines: Mapping[int, float],
    ) -> list[tuple[int, float]]:
        seen["cosines"] = dict(cosines)
        return rescore(order, shares, cosines)

    asked = []
    with patched(fusion, fuse=spy_fuse), patched(rerank, rescore=spy_rescore):
        for query in load(kind, path).queries:
            if query.negative:
                continue
            seen.clear()
            hy.search(query.query, workspace=query.workspace, limit=10, abstain=False)
            rankings: dict[str, list[int]] = seen.get("rankings", {})
            candidates = sorted({rowid for r in rankings.values() for rowid in r})
            workspace = hy.resolve_workspace(query.workspace) if query.workspace else None
            shares, _ = abstention.passage_shares(
                hy.conn, parse_query(query.query), workspace, candidates
            )
            found = queries.events_by_rowid(hy.conn, candidates)
            sessions = queries.sessions_by_sid(hy.conn, [sid for sid, _ in found.values()])
            ids = {
                rowid: event_id(sessions[sid].session.id, event.seq)
                for rowid, (sid, event) in found.items()
            }
            asked.append(
                Asked(
                    query.category, query.relevant, rankings, seen.get("cosines", {}), shares, ids
                )
            )
    return asked


def replay(
    asked: list[Asked], pool: int, coverage: float, agreement: float, expanded: float
) -> str:
    weights = {**fusion.WEIGHTS, "expanded": expanded}
    hit5 = recall5 = mrr = 0.0
    by_category: dict[str, list[float]] = defaultdict(list)
    with (
        patched(fusion, WEIGHTS=weights),
        patched(rerank, POOL=pool, COVERAGE=coverage, AGREEMENT=agreement),
    ):
        for one in asked:
            order = rerank.rescore(fusion.fuse(one.rankings), one.shares, one.cosines)
            ranking = [one.ids[rowid] for rowid, _ in order[:10] if rowid in one.ids]
            hit5 += hit_at(ranking, one.relevant, 5)
            recall5 += recall_at(ranking, one.relevant, 5)
            mrr += reciprocal_rank(ranking, one.relevant)
            by_category[one.category].append(recall_at(ranking, one.relevant, 5))
    n = max(len(asked), 1)
    categories = "  ".join(f"{c} {sum(v) / len(v):.3f}" for c, v in sorted(by_category.items()))
    return f"{hit5 / n:.3f} / {recall5 / n:.3f} / {mrr / n:.3f}   recall@5: {categories}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = replace(Settings.from_env(), home=args.index_home / "huiyi")
    with Huiyi(settings=settings) as hy:
        asked = ask(hy, args.kind, args.path)
    numbers: dict[str, object] = {"positives": len(asked), "setting": "hit@5 / recall@5 / MRR"}
    for name, pool, coverage, agreement, expanded in SETTINGS:
        numbers[name] = replay(asked, pool, coverage, agreement, expanded)
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
