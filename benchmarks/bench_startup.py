"""How fast `huiyi mcp` answers a harness that has just started it.

    python benchmarks/bench_startup.py              # 10 spawns of each way
    python benchmarks/bench_startup.py --spawns 30 --burn 2 --json

Each spawn starts a stdio MCP server the way DSH, Claude Code and Codex do, against a temporary
HUIYI_HOME and a generated DSH history (20 sessions of 100 events in one workspace, from
bench_index.py, indexed once before the measured spawns), and times, from the spawn: the
`initialize` answer, the `tools/list` answer, and the answer to a first `session_list` call
(which finds the caller, checks the logs for new lines and reads the index). Four ways:

- `front, service warm`: `python -m huiyi mcp` (the stdio front) with the warm service for this
  home already running, as for every session after the first;
- `front, service cold`: the same, with the service stopped before each spawn, so the first
  call starts it (and waits for it to load the core);
- `front, in-process`: `HUIYI_SERVICE=off`, the front serves the call itself;
- `SDK server`: the official MCP SDK server over stdio (what `huiyi mcp` was before the front,
  minus click), for comparison.

`--burn N` runs N busy processes during the measurement (a machine busy with other work).
Prints median, min and max over the spawns. The test suite checks what the server answers,
never how fast: this script is where the speed is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from bench_index import generate  # the same generated DSH history as the index benchmark
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

#: this checkout's huiyi, whatever the venv has installed
SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from huiyi.config import Settings  # noqa: E402
from huiyi.integrations.published import published  # noqa: E402
from huiyi.integrations.service import socket_path  # noqa: E402

MEASURES = ("initialize", "tools/list", "first call")
SDK_SERVER = (
    "import os; from huiyi.api import Huiyi; "
    "from huiyi.integrations.context import CallerFinder; "
    "from huiyi.integrations.mcp_server import serve; "
    "hy = Huiyi(); serve(hy, CallerFinder.for_settings(hy.settings, cwd=os.getcwd()))"
)
WAYS = {
    "front, service warm": ["-m", "huiyi", "mcp"],
    "front, service cold": ["-m", "huiyi", "mcp"],
    "front, in-process": ["-m", "huiyi", "mcp"],
    "SDK server": ["-c", SDK_SERVER],
}


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


def stop_service(env: dict[str, str]) -> None:
    """Stop the warm service of this home, if one runs, and wait until it is gone."""
    path = socket_path(Settings.from_env(env), published()["serverInfo"]["version"])
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(path))
        except OSError:
            return
        pid, _uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        )
    os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)  # not our child: returns at once
    while path.exists():  # the service removes its socket as it exits
        time.sleep(0.01)


@contextlib.contextmanager
def burning(count: int) -> Iterator[None]:
    """`count` processes spinning on a core each, for the duration."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for measure in MEASURES:
        values = [run[measure] for run in runs]
        out[measure] = {
            "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3),
            "max_s": round(max(values), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--burn", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--ways", default=";".join(WAYS), help="a subset, separated by ;")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ways = [way.strip() for way in args.ways.split(";")]
    numbers: dict[str, Any] = {"spawns": args.spawns, "burn": args.burn, "cpus": os.cpu_count()}
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
        # index once, so every way's first call reads the same up-to-date index
        subprocess.run(
            [sys.executable, "-m", "huiyi", "index"], env=env, check=True, capture_output=True
        )
        try:
            with burning(args.burn):
                for way in ways:
                    way_env = {
                        **env,
                        "HUIYI_SERVICE": "off" if way.endswith("in-process") else "on",
                    }
                    params = StdioServerParameters(
                        command=sys.executable, args=WAYS[way], env=way_env, cwd=str(workspace)
                    )
                    if way == "front, service warm":
                        anyio.run(one_spawn, params, errlog)  # starts the service
                    runs = []
                    for _ in range(args.spawns):
                        if way == "front, service cold":
                            stop_service(way_env)
                        try:
                            runs.append(anyio.run(one_spawn, params, errlog))
                        except BaseException:
                            print(errlog.read_text(), file=sys.stderr)
                            raise
                    numbers[way] = summary(runs)
        finally:
            stop_service(env)
    if args.json:
        print(json.dumps(numbers))
        return
    load = f", {args.burn} busy processes" if args.burn else ""
    print(
        f"huiyi mcp over stdio, {args.spawns} spawns each, {os.cpu_count()} CPUs{load}; "
        "seconds from spawn, median (min-max)"
    )
    print(f"{'':<22}" + "".join(f"{m:>20}" for m in MEASURES))
    for way in ways:
        row = numbers[way]
        cells = [
            f"{row[m]['median_s']:.3f} ({row[m]['min_s']:.2f}-{row[m]['max_s']:.2f})"
            for m in MEASURES
        ]
        print(f"{way:<22}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
