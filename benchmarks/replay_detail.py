"""Replay the asked detail's floor and the together test's rarity, without changing the search.

Which rarity should a word the history never uses reach before it counts as the asked detail
(`known_detail` in `floors.json`), and which used words must a question for a value find
together (`detail.TOGETHER_WEIGHT`)? This asks every query of a set through the real search
with abstention off, once per together rarity (the evidence, `abstention.apart` included, is
read as the search reads it; no padding), and scores each asked-detail floor on that
evidence with the embedder's calibrated floors otherwise: per half of the set (split by a hash
of the query id, as `eval.precision` splits), negatives answered and positives with a relevant
event in the first five hits. docs/eval.md has the numbers.

    python benchmarks/replay_detail.py golden tests/golden/huiyi-near-misses.json \\
        --index-home IDX   # an index `huiyi eval --index-home IDX` built and embedded
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from huiyi.config import Settings
from huiyi.eval.datasets import event_id, load
from huiyi.eval.harness import _embed, indexed
from huiyi.eval.precision import held_out
from huiyi.search import detail
from huiyi.search.abstention import Evidence, floors_for

#: asked-detail floors to score (`None`: off)
KNOWN = (None, 0.25, 0.3, 0.31, 0.35, 0.4)
#: together rarities to ask with (`None`: the together test off)
TOGETHER = (None, 0.1, 0.15, 0.2, 0.3)
K = 5


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/replay_detail.py")
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path, required=True)
    args = parser.parse_args(argv)
    evalset = load(args.kind, args.path)
    with indexed(
        evalset, Settings.from_env(), index_home=args.index_home, embedder=None, progress=print
    ) as hy:
        _embed(hy, {}, print)
        base = floors_for(hy.semantic.model if hy.semantic is not None else None)
        default = detail.TOGETHER_WEIGHT
        for weight in TOGETHER:
            detail.TOGETHER_WEIGHT = default if weight is None else weight
            asked: list[tuple[bool, bool, bool, Evidence | None, bool]] = []
            for query in evalset.queries:
                result = hy.search(
                    query.query,
                    workspace=query.workspace,
                    all_workspaces=query.workspace is None,
                    limit=K,
                    abstain=False,
                )
                ids = [event_id(h.session_id, h.seq) for h in result.hits]
                found = any(i in set(query.relevant) for i in ids[:K])
                asked.append(
                    (held_out(query.id), query.negative, bool(ids), result.evidence, found)
                )
            for known in KNOWN:
                floors = base._replace(known_detail=known, together=weight is not None)
                parts = []
                for label, held in (("tuning", False), ("held", True)):
                    rows = [r for r in asked if r[0] == held]
                    shown = [r for r in rows if r[2] and r[3] is not None and floors.passes(r[3])]
                    negatives = sum(r[1] for r in rows)
                    positives = len(rows) - negatives
                    answered = sum(r[1] for r in shown)
                    hits = sum(not r[1] and r[4] for r in shown)
                    part = f"{label}: negatives answered {answered}/{negatives}"
                    if positives:
                        part += f", hit@5 {hits / positives:.3f} ({positives})"
                    parts.append(part)
                print(f"together {weight}, known_detail {known}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
