"""How long the automatic-recall gate takes per prompt, on a warm index.

    python benchmarks/bench_gate.py                    # the bundled gate set's history alone
    python benchmarks/bench_gate.py --sessions 1000    # plus 100,000 generated events
    python benchmarks/bench_gate.py --json

Every message of the bundled gate set (`src/huiyi/eval/data/gate.json`) is asked, in this
process with the index open (what the warm service holds), through `recall.gate.decide` with
the index probe, and through `recall.auto.prompt_recall`, the whole UserPromptSubmit answer
(search, render, safety exit; no embedding). With `--sessions N`, N generated sessions in the
real DSH format (`bench_index.generate`) are indexed into the same workspace as the set's
history, so each probe searches a large workspace. Prints p50 / p95 / max in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench_index import generate
from report import print_numbers

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.eval.datasets import to_generic_jsonl
from huiyi.eval.gate import load_gate
from huiyi.recall.auto import HistoryProbe, prompt_recall
from huiyi.recall.gate import decide
from huiyi.recall.scope import CallerContext
from huiyi.recall.tools import Recall

GATE_SET = Path(__file__).resolve().parents[1] / "src" / "huiyi" / "eval" / "data" / "gate.json"
#: the workspace generated sessions land in (`bench_index.generate` names it `<root>/ws0`)
BENCH_WS = "/bench/ws0"


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.2f} / {p95:.2f} / {ordered[-1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=0, help="generated sessions to add")
    parser.add_argument("--events", type=int, default=100, help="events per generated session")
    parser.add_argument("--rounds", type=int, default=3, help="times each message is asked")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    gateset = load_gate(GATE_SET)
    history = gateset.history
    if args.sessions:  # the set's history joins the generated workspace
        history = replace(
            history,
            sessions=[replace(s, cwd=BENCH_WS) for s in history.sessions],
        )
        gateset.cases = [replace(c, workspace=BENCH_WS) for c in gateset.cases]
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-gate-") as tmp:
        root = Path(tmp)
        settings = Settings.from_env(
            {"HOME": str(root), "DSH_HOME": str(root / ".dsh")}, home=root / "huiyi"
        )
        if args.sessions:
            generate(root / ".dsh", args.sessions, args.events, 1, workspace_root="/bench")
        to_generic_jsonl(history, root / "export")
        with Huiyi(settings=settings, embedder="none") as hy:
            hy.index()
            hy.index(jsonl=[root / "export"])
            events = sum(s.event_count for s in hy.sessions(all_workspaces=True))
            decide_ms: list[float] = []
            answer_ms: list[float] = []
            injected = 0
            for _ in range(args.rounds):
                for case in gateset.cases:
                    ctx = CallerContext(hy.resolve_workspace(case.workspace), f"bench-{case.id}")
                    start = time.perf_counter()
                    decide(case.text, gateset.triggers, HistoryProbe(hy.store, ctx))
                    decide_ms.append((time.perf_counter() - start) * 1000)
                    recall = Recall(hy.store, ctx, max_inject_chars=settings.max_inject_chars)
                    start = time.perf_counter()
                    injected += prompt_recall(recall, case.text, gateset.triggers) is not None
                    answer_ms.append((time.perf_counter() - start) * 1000)
    print_numbers(
        {
            "indexed events": events,
            "messages asked": len(decide_ms),
            "decide p50 / p95 / max ms": percentiles(decide_ms),
            "prompt_recall p50 / p95 / max ms": percentiles(answer_ms),
            "answers injected": injected,
        },
        as_json=args.json,
    )


if __name__ == "__main__":
    main()
