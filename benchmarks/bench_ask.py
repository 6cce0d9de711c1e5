"""What ask-before-recall adds to a recall call, besides the person's own time to answer.

    python benchmarks/bench_ask.py                  # 30 calls of each kind
    python benchmarks/bench_ask.py --calls 100 --json

Against a temporary HUIYI_HOME and a generated DSH history (20 sessions of 100 events in one
workspace, from bench_index.py, indexed once first), times `recall_history` through
`Calls.handle`, the code every server runs, in three ways:

- `off`: the setting off (what every call costs without it);
- `asked`: the setting on and a new reply each call (a Codex turn id), so every call works out
  its question and asks; the answer ("accept") comes back at once, so what is timed is
  huiyi's part: the index check, the question, the bookkeeping;
- `same reply`: the setting on and one turn id for all calls: answered from memory.

Prints the median, min and max per kind in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_index import generate  # the same generated DSH history as the index benchmark

#: this checkout's huiyi, whatever the venv has installed
SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from huiyi.api import Huiyi  # noqa: E402
from huiyi.config import Settings  # noqa: E402
from huiyi.policy.caller import CallerFinder  # noqa: E402
from huiyi.policy.protocol import ToolCall  # noqa: E402
from huiyi.policy.tools import McpTools  # noqa: E402


class _Accepts:
    """A client whose user allows every question."""

    def roots(self) -> list[str]:
        return []

    def ask(self, question: str) -> str:
        return "accept"


def measure(calls: McpTools, finder: CallerFinder, n: int, turn: str | None) -> list[float]:
    """Milliseconds per `recall_history` call; `turn`: one turn id for all, None: a new one
    each call."""
    took = []
    for i in range(n):
        meta = {"x-codex-turn-metadata": {"turn_id": turn or f"turn-{i}"}}
        call = ToolCall(
            "recall_history", {"query": "deploy migration"}, meta, client="bench", can_elicit=True
        )
        started = time.perf_counter()
        result = calls.handle(call, finder, _Accepts())
        took.append((time.perf_counter() - started) * 1000)
        if result["isError"]:
            raise SystemExit(result["content"][0]["text"])
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    numbers: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-") as tmp:
        root = Path(tmp)
        generate(root / "dsh", sessions=20, events=100, workspaces=1, workspace_root=str(root))
        workspace = root / "ws0"
        workspace.mkdir()
        env = {"HOME": str(root), "DSH_HOME": str(root / "dsh"), "HUIYI_EMBEDDER": "none"}
        base = Settings.from_env(env, home=root / "huiyi")
        for kind, on, turn in (
            ("off", False, "t"),
            ("asked", True, None),
            ("same reply", True, "t"),
        ):
            settings = base._replace(ask_before_recall=on)
            calls = McpTools(Huiyi(settings=settings))
            try:
                finder = CallerFinder.for_settings(settings, cwd=str(workspace))
                measure(calls, finder, 3, turn)  # warm: the index is read once
                took = measure(calls, finder, args.calls, turn)
            finally:
                calls.close()
            numbers[kind] = {
                "median_ms": statistics.median(took),
                "min_ms": min(took),
                "max_ms": max(took),
            }
    if args.json:
        print(json.dumps(numbers, indent=2))
        return
    print(f"recall_history through McpTools.handle, {args.calls} calls each (ms)")
    for kind, row in numbers.items():
        print(
            f"  {kind:<11} median {row['median_ms']:6.1f}  "
            f"min {row['min_ms']:6.1f}  max {row['max_ms']:6.1f}"
        )


if __name__ == "__main__":
    main()
