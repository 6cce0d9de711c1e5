"""Run a labelled set through any search function and report, layer by layer.

The runner knows nothing about indexes: a layer is a `SearchFn` that takes an `EvalQuery`
and returns ranked event ids (`"<session id>:<seq>"`). `huiyi eval` builds one per layer
(lexical, fuzzy, semantic, hybrid over a temporary index loaded through the real ingestion path,
plus the BM25 baseline) and hands them to `run`; tests hand it a lambda. `Report` puts the
layers side by side as a text table or as the `--json` shape
`{"metrics": {...}, "queries": [{"id", "layer", "ranking"}]}`.

A search that raises `HuiyiError` (a layer that is unavailable) scores as an empty ranking and is
counted in `failures`, with its message counted in `errors`; anything else is a bug and
propagates.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from huiyi.errors import HuiyiError
from huiyi.eval.evalset import EvalQuery, EvalSet
from huiyi.eval.metrics import METRICS, Scores, evaluate

__all__ = ["LayerRun", "Report", "SearchFn", "run"]

SearchFn = Callable[[EvalQuery], Sequence[str]]

#: How many ids of each ranking are kept and scored.
DEPTH = 10
#: Error messages longer than this are cut in reports (they are counted, not read in full).
ERROR_CHARS = 160


@dataclass(slots=True)
class LayerRun:
    layer: str
    scores: Scores
    rankings: dict[str, list[str]]
    latency_ms_p50: float
    latency_ms_p95: float
    failures: int = 0
    #: failure messages and how many queries each one failed
    errors: dict[str, int] = field(default_factory=dict)
    #: which layers answered, e.g. {"lexical+fuzzy+semantic": 70, "lexical+fuzzy": 3}
    ran: dict[str, int] = field(default_factory=dict)


def run(evalset: EvalSet, search_fn: SearchFn, *, layer: str = "search") -> LayerRun:
    """Ask every query of `evalset` through `search_fn` and score the top `DEPTH` results."""
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    for query in evalset.queries:
        started = time.perf_counter()
        try:
            ranking = list(dict.fromkeys(search_fn(query)))[:DEPTH]
        except HuiyiError as exc:
            ranking = []
            errors[_first_line(str(exc)) or type(exc).__name__] += 1
        latencies.append((time.perf_counter() - started) * 1000)
        rankings[query.id] = ranking
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 2 else sum(latencies)
    return LayerRun(
        layer=layer,
        scores=evaluate(evalset.queries, rankings),
        rankings=rankings,
        latency_ms_p50=statistics.median(latencies) if latencies else 0.0,
        latency_ms_p95=p95,
        failures=sum(errors.values()),
        errors=dict(errors.most_common()),
    )


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"


@dataclass(slots=True)
class Report:
    """Layers side by side, with what the loader repaired and facts about the run (`info`)."""

    name: str
    layers: list[LayerRun]
    skipped: dict[str, int] = field(default_factory=dict)
    #: setup facts worth printing with the numbers (events, embedder, coverage, timings)
    info: dict[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        metrics: dict[str, object] = {
            run.layer: {
                **run.scores.as_dict(),
                "failures": run.failures,
                "errors": run.errors,
                "ran": run.ran,
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
        return {
            "name": self.name,
            "info": self.info,
            "skipped": self.skipped,
            "metrics": metrics,
            "queries": queries,
        }

    def format_table(self) -> str:
        """Overall metrics per layer, then hit@5 and recall@5 per category, as aligned text."""
        if not self.layers:
            return f"{self.name}: no layers were run"
        first = self.layers[0].scores
        categories = list(first.per_category) if len(first.per_category) > 1 else []
        width = max([24, *(len(c) + 2 for c in categories)])
        head = f"{self.name}: {first.queries} positive queries, {first.negatives} negatives"
        facts = ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in self.info.items() if k != "embedding_error"
        )
        lines = [head + (f" ({facts})" if facts else ""), ""]
        lines.append(_row(["layer", *METRICS, "neg>0", "failed", "p50 ms"], width))
        for run in self.layers:
            s = run.scores
            cells = [f"{s.overall[m]:.3f}" for m in METRICS]
            lines.append(
                _row(
                    [
                        run.layer,
                        *cells,
                        f"{s.negatives_answered}/{s.negatives}",
                        str(run.failures),
                        f"{run.latency_ms_p50:.1f}",
                    ],
                    width,
                )
            )
        for metric in ("hit@5", "recall@5") if categories else ():
            lines += [
                "",
                _row([f"{metric} by category", *(r.layer for r in self.layers), "n"], width),
            ]
            for category in categories:
                cells = [
                    f"{r.scores.per_category.get(category, {}).get(metric, 0.0):.3f}"
                    for r in self.layers
                ]
                lines.append(_row([category, *cells, str(first.category_counts[category])], width))
        if first.negatives:
            answered = ", ".join(
                f"{r.layer} {r.scores.negatives_answered}/{r.scores.negatives} "
                f"({r.scores.negatives_answered / r.scores.negatives:.0%})"
                for r in self.layers
            )
            lines += ["", f"negatives answered (anything in the top 5): {answered}"]
        notes = self._notes()
        if notes:
            lines += ["", *notes]
        return "\n".join(lines)

    def _notes(self) -> list[str]:
        notes: list[str] = []
        error = self.info.get("embedding_error")
        if error:
            notes.append(f"embedding failed: {error}")
        for run in self.layers:
            if len(run.ran) > 1 or (run.layer == "hybrid" and run.ran):
                mix = ", ".join(f"{layers} {n}" for layers, n in run.ran.items())
                notes.append(f"{run.layer} ran: {mix}")
            for message, count in run.errors.items():
                notes.append(f"{run.layer} failed {count} queries: {message}")
        if self.skipped:
            dropped = ", ".join(f"{k} {v}" for k, v in self.skipped.items())
            notes.append(f"loader repairs and skips: {dropped}")
        return notes


def _row(cells: Sequence[str], width: int = 24) -> str:
    head, *rest = cells
    return f"{head:<{width}}" + "".join(f"{c:>10}" for c in rest)
