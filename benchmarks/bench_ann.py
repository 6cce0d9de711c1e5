"""The semantic layer's approximate index against exact scoring, on an eval set's real vectors.

    python benchmarks/bench_ann.py --locomo PATH --index-home DIR
    python benchmarks/bench_ann.py --memdaily PATH --index-home DIR --json

Indexes the eval set and embeds it with huiyi's default embedder (`huiyi eval`'s own path;
`--index-home` keeps the vectors, so a second run embeds nothing), then runs its queries
twice: as huiyi searches it (the eval sets' workspaces are below `ann.EXACT_BELOW`, so
exactly), and with every workspace searched through an approximate index
(`exact_below` = 1). Prints, per layer, hit@5 both ways and the change, and the semantic
layer's recall@10 against exact search: the share of each query's exact top 10 that the
approximate search also returns in its top 10, averaged over queries.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from report import print_numbers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--locomo", type=Path, help="a LoCoMo JSON file")
    group.add_argument("--memdaily", type=Path, help="a MemDaily JSON file")
    parser.add_argument("--index-home", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from huiyi.config import Settings
    from huiyi.eval.datasets import load_locomo, load_memdaily
    from huiyi.eval.harness import evaluate_set

    evalset = load_locomo(args.locomo) if args.locomo else load_memdaily(args.memdaily)
    layers = ("semantic", "hybrid")
    started = time.perf_counter()
    exact = evaluate_set(evalset, layers=layers, baseline=False, index_home=args.index_home)
    numbers: dict[str, Any] = {
        "set": evalset.name,
        "queries": len(evalset.queries),
        "coverage": exact.info.get("coverage"),
        "exact_run_s": round(time.perf_counter() - started, 1),
    }
    started = time.perf_counter()
    approximate = evaluate_set(
        evalset,
        layers=layers,
        baseline=False,
        index_home=args.index_home,
        settings=Settings.from_env()._replace(exact_below=1),
    )
    numbers["approximate_run_s"] = round(time.perf_counter() - started, 1)
    for one, other in zip(exact.layers, approximate.layers, strict=True):
        before, after = one.scores.overall["hit@5"], other.scores.overall["hit@5"]
        numbers[f"{one.layer}_hit@5_exact"] = round(before, 4)
        numbers[f"{one.layer}_hit@5_approximate"] = round(after, 4)
        numbers[f"{one.layer}_hit@5_change"] = round(after - before, 4)
        if one.layer == "semantic":
            shares = [
                len(set(truth[:10]) & set(other.rankings.get(qid, [])[:10])) / len(truth[:10])
                for qid, truth in one.rankings.items()
                if truth
            ]
            numbers["semantic_recall@10_vs_exact"] = round(sum(shares) / len(shares), 4)
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
