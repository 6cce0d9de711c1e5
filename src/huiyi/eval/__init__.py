"""Evaluation: labelled retrieval sets, metrics, the BM25 baseline and the runner.

Every ranking decision in huiyi is judged by numbers from these modules. `datasets` loads our
golden format, LoCoMo and MemDaily into one `EvalSet` shape (`evalset`), with negatives asked
where they do not belong (`negatives`); `metrics` scores rankings of `"<session id>:<seq>"`
ids; `baseline` is the plain BM25 yardstick; `runner` runs any search function over a set and
reports per layer and per category; `harness` is `huiyi eval` without the command line (a
temporary index, every layer, the baseline alongside).
"""

from __future__ import annotations

from huiyi.eval.datasets import load, load_golden, load_locomo, load_memdaily, to_generic_jsonl
from huiyi.eval.evalset import EvalEvent, EvalQuery, EvalSession, EvalSet
from huiyi.eval.harness import LAYERS, EvalError, evaluate_set, limit_queries
from huiyi.eval.metrics import METRICS, Scores, evaluate
from huiyi.eval.runner import LayerRun, Report, SearchFn, run

__all__ = [
    "LAYERS",
    "METRICS",
    "EvalError",
    "EvalEvent",
    "EvalQuery",
    "EvalSession",
    "EvalSet",
    "LayerRun",
    "Report",
    "Scores",
    "SearchFn",
    "evaluate",
    "evaluate_set",
    "limit_queries",
    "load",
    "load_golden",
    "load_locomo",
    "load_memdaily",
    "run",
    "to_generic_jsonl",
]
