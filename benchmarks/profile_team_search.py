"""Where a team search's time goes: the load benchmark's queries asked of a `Hub` on a store
`bench_team.py` loaded, in this process, each asked twice (the server keeps rows between
searches, so the second time is what a warm server pays), with the statements counted.

    python benchmarks/profile_team_search.py --database URL --queries 20
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

from bench_team import MAIN, queries  # noqa: E402

from huiyi.hub import Hub  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="a store bench_team.py loaded")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    hub = Hub(args.database, pool_size=4)
    _, token = hub.add_device("profile", f"profile-{time.time_ns()}", reads=(MAIN,), pushes=())
    device = hub.device(token)
    assert device is not None
    spent: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    index: Any = hub.index
    for name in ("_all", "_windowed", "_windowed_with_header"):
        run = getattr(index, name)

        def timed(query: str, params: Any = (), run: Any = run, name: str = name) -> Any:
            began = time.perf_counter()
            try:
                return run(query, params)
            finally:
                kind = spent[f"{name}: {' '.join(query.split())[:70]}"]
                kind[0] += 1
                kind[1] += time.perf_counter() - began

        setattr(index, name, timed)
    asked = queries(5_000)[: args.queries]
    for label in ("first time", "second time"):
        spent.clear()
        took = []
        for query in asked:
            began = time.perf_counter()
            hub.search(device, MAIN, query, limit=10)
            took.append(time.perf_counter() - began)
        took.sort()
        n = len(asked)
        print(
            f"{label}: {sum(took) / n * 1000:.0f} ms a search (p50 {took[n // 2] * 1000:.0f}, "
            f"max {took[-1] * 1000:.0f}), {sum(c for c, _ in spent.values()) / n:.1f} statements"
        )
        for key, (count, seconds) in sorted(spent.items(), key=lambda kv: -kv[1][1])[:10]:
            print(f"  {seconds * 1000 / n:8.1f} ms {count / n:4.1f}x  {key}")
    hub.close()


if __name__ == "__main__":
    main()
