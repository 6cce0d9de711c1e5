"""Run a labelled set through any search function and report, layer by layer.

The runner knows nothing about indexes: a layer is a `SearchFn` that takes an `EvalQuery`
and returns ranked event ids (`"<session id>:<seq>"`). `huiyi eval` builds one per layer
(lexical, fuzzy, semantic, hybrid over a temporary index loaded through the real ingestion path,
plus the BM25 baseline) and hands them to `run`; tests hand it a lambda. `Report` puts the
layers side by side as a text table or as the `--json` shape
`{"metrics": {...}, "queries": [{"id", "layer", "ranking"}]}`.

A search that raises `HuiyiError` (a layer that is unavailable) scores as an empty ranking and is
counted in `failures`; anything else is a bug and propagates.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from huiyi.errors import HuiyiError
from huiyi.eval.datasets import EvalQuery, EvalSet
from huiyi.eval.metrics import METRICS, Scores, evaluate

__all__ = ["LayerRun", "Report", "SearchFn", "run"]

SearchFn = Callable[[EvalQuery], Sequence[str]]

#: How many ids of each ranking are kept and scored.
DEPTH = 10


@dataclass(slots=True)
class LayerRun:
    layer: str
    scores: Scores
    rankings: dict[str, list[str]]
    latency_ms_p50: float
    latency_ms_p95: float
    failures: int = 0


def run(evalset: EvalSet, search_fn: SearchFn, *, layer: str = "search") -> LayerRun:
    """Ask every query of `evalset` through `search_fn` and score the top `DEPTH` results."""
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    failures = 0
    for query in evalset.queries:
        started = time.perf_counter()
        try:
            ranking = list(dict.fromkeys(search_fn(query)))[:DEPTH]
        except HuiyiError:
            ranking = []
            failures += 1
        latencies.append((time.perf_counter() - started) * 1000)
        rankings[query.id] = ranking
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 2 else sum(latencies)
    return LayerRun(
        layer=layer,
        scores=evaluate(evalset.queries, rankings),
        rankings=rankings,
        latency_ms_p50=statistics.median(latencies) if latencies else 0.0,
        latency_ms_p95=p95,
        failures=failures,
    )


@dataclass(slots=True)
class Report:
    name: str
    layers: list[LayerRun]
    skipped: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        metrics: dict[str, object] = {
            run.layer: {
                **run.scores.as_dict(),
                "failures": run.failures,
                "latency_ms_p50": round(run.latency_ms_p50, 3),
                "latency_ms_p95": round(run.latency_ms_p95, 3),
            }
            for run in self.layers
        }
        queries = [
            {"id": qid, "layer": run.layer, "ranking": ranking}
            for run in self.layers
            for qid, ranking in run.rankings.items()
        ]
        return {"name": self.name, "skipped": self.skipped, "metrics": metrics, "queries": queries}

    def format_table(self) -> str:
        """Overall metrics per layer, then hit@5 per category and layer, as aligned text."""
        if not self.layers:
            return f"{self.name}: no layers were run"
        first = self.layers[0].scores
        lines = [
            f"{self.name}: {first.queries} queries, {first.negatives} negatives",
            "",
            _row(["layer", *METRICS, "neg>0", "p50 ms"]),
        ]
        for run in self.layers:
            s = run.scores
            cells = [f"{s.overall[m]:.3f}" for m in METRICS]
            lines.append(
                _row(
                    [
                        run.layer,
                        *cells,
                        f"{s.negatives_answered}/{s.negatives}",
                        f"{run.latency_ms_p50:.1f}",
                    ]
                )
            )
        categories = list(first.per_category)
        if len(categories) > 1:
            lines += ["", _row(["hit@5 by category", *(r.layer for r in self.layers), "n"])]
            for category in categories:
                cells = [
                    f"{r.scores.per_category.get(category, {}).get('hit@5', 0.0):.3f}"
                    for r in self.layers
                ]
                lines.append(_row([category, *cells, str(first.category_counts[category])]))
        if self.skipped:
            dropped = ", ".join(f"{k} {v}" for k, v in self.skipped.items())
            lines += ["", f"loader repairs and skips: {dropped}"]
        return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    head, *rest = cells
    return f"{head:<24}" + "".join(f"{c:>10}" for c in rest)
