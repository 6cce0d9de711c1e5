"""How fast `huiyi mcp` answers a harness that has just started it.

    python benchmarks/bench_startup.py              # 10 spawns
    python benchmarks/bench_startup.py --spawns 30 --json

Each spawn starts `python -m huiyi mcp` over stdio, the way DSH, Claude Code and Codex do,
against a temporary HUIYI_HOME and a generated DSH history (20 sessions of 100 events in one
workspace, from bench_index.py), and times, from the spawn: the `initialize` answer, the
`tools/list` answer, and the answer to a first `session_list` call (which opens the index and
checks the logs for new lines; the first spawn also indexes them all, which is what `max`
shows). Prints median, min and max over the spawns. The test suite checks what the server
answers, never how fast: this script is where the speed is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from bench_index import generate  # the same generated DSH history as the index benchmark
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

#: this checkout's huiyi, whatever the venv has installed
SRC = Path(__file__).resolve().parent.parent / "src"
MEASURES = ("initialize", "tools/list", "first call")


async def one_spawn(params: StdioServerParameters, errlog_path: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    with errlog_path.open("w") as errlog:
        start = time.perf_counter()
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            times["initialize"] = time.perf_counter() - start
            await session.list_tools()
            times["tools/list"] = time.perf_counter() - start
            result = await session.call_tool("session_list", {})
            times["first call"] = time.perf_counter() - start
            if result.is_error:
                raise SystemExit(f"session_list failed: {result.content}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-") as tmp:
        root = Path(tmp)
        generate(root / "dsh", sessions=20, events=100, workspaces=1, workspace_root=str(root))
        workspace = root / "ws0"
        workspace.mkdir()
        errlog = root / "stderr.log"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(root),
            "HUIYI_HOME": str(root / "huiyi"),
            "DSH_HOME": str(root / "dsh"),
            "CODEX_HOME": str(root / "codex"),
            "HUIYI_EMBEDDER": "none",  # the model is not part of starting up
            "PYTHONPATH": str(SRC),
        }
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "huiyi", "mcp"], env=env, cwd=str(workspace)
        )
        for _ in range(args.spawns):
            try:
                runs.append(anyio.run(one_spawn, params, errlog))
            except BaseException:
                print(errlog.read_text(), file=sys.stderr)
                raise
    numbers: dict[str, Any] = {"spawns": args.spawns}
    for measure in MEASURES:
        values = [run[measure] for run in runs]
        numbers[measure] = {
            "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3),
            "max_s": round(max(values), 3),
        }
    if args.json:
        print(json.dumps(numbers))
        return
    print(f"huiyi mcp over stdio, {args.spawns} spawns, {os.cpu_count()} CPUs; seconds from spawn")
    print(f"{'answered':<12} {'median':>7} {'min':>7} {'max':>7}")
    for measure in MEASURES:
        row = numbers[measure]
        print(f"{measure:<12} {row['median_s']:>7.3f} {row['min_s']:>7.3f} {row['max_s']:>7.3f}")


if __name__ == "__main__":
    main()
