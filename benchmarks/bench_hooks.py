"""How fast `huiyi hook` answers a harness, process start included.

    python benchmarks/bench_hooks.py                       # 40 calls of each event
    python benchmarks/bench_hooks.py --calls 100 --sessions 200 --json

A harness waits for its hooks (Claude Code runs UserPromptSubmit before it sends the prompt), so
each call is timed from spawning `python -m huiyi hook claude-code <Event>` with the hook's JSON
on stdin to the process's exit, against a temporary HUIYI_HOME with a warm index: a generated
DSH history in the project's workspace (from bench_index.py; `--sessions` of `--events` each),
both memory stores filled, and the calling session's own Claude Code transcript (it grows by a
line before every UserPromptSubmit and Stop, as in a live session, so each call has new lines
to read). The calls:

- `SessionStart`: the memory block (no compaction);
- `UserPromptSubmit, ordinary`: a prompt the gate lets pass (nothing is injected);
- `UserPromptSubmit, trigger`: `DJYHFS <words>`, answered with recalled history;
- `UserPromptSubmit, 继续`: a process command in a new session after a restart, answered with
  the previous topic (the end of the workspace's latest session);
- `Stop`: the transcript's new line indexed.

Two ways: through the warm service (started by a first call that is not timed), and
`HUIYI_SERVICE=off` (each call opens the index itself). `--burn N` keeps N processes busy
meanwhile. Prints p50 / p95 / max in milliseconds, next to what starting Python alone costs on
the machine at that moment (the floor); the targets are p50 <= 150 ms and
p95 <= 300 ms through the warm service. The test suite never asserts a time: this is where it
is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_index import generate  # the same generated DSH history as the index benchmark
from bench_startup import burning, scratch_env  # as in the start-up benchmark
from report import print_numbers

#: this checkout's huiyi (and its tests' helpers), whatever the venv has installed
REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
sys.path[:0] = [str(SRC), str(REPO)]

from tests.services import stop_services  # noqa: E402

from huiyi import Huiyi  # noqa: E402
from huiyi.config import Settings  # noqa: E402
from huiyi.safety.exit import NOTES_HEADING  # noqa: E402

SESSION = "5f0c2d1e-1111-4222-8333-444455556666"
CALLS = {
    "SessionStart": ("SessionStart", {"source": "startup"}),
    "UserPromptSubmit, ordinary": ("UserPromptSubmit", {"prompt": "add a test for the parser"}),
    "UserPromptSubmit, trigger": ("UserPromptSubmit", {"prompt": "DJYHFS 数据库 迁移 回滚"}),
    # the first prompt of a session started after a restart: no transcript yet
    "UserPromptSubmit, 继续": (
        "UserPromptSubmit",
        {"prompt": "继续", "session_id": "restarted-session", "transcript_path": None},
    ),
    "Stop": ("Stop", {"stop_hook_active": False}),
}
#: what each call must print (None: nothing), so a broken hook cannot pass for a fast one
EXPECT = {
    "SessionStart": NOTES_HEADING,
    "UserPromptSubmit, ordinary": None,
    "UserPromptSubmit, trigger": "The following is recalled history",
    "UserPromptSubmit, 继续": "previous topic",
    "Stop": None,
}


def spawn(
    env: dict[str, str], cwd: Path, event: str, payload: dict[str, Any]
) -> subprocess.CompletedProcess[bytes]:
    """`huiyi hook claude-code EVENT` as the harness runs it, the payload on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "huiyi", "hook", "claude-code", event],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=cwd,
        capture_output=True,
        check=True,
    )


def one_call(env: dict[str, str], cwd: Path, event: str, payload: dict[str, Any]) -> float:
    started = time.perf_counter()
    spawn(env, cwd, event, payload)
    return time.perf_counter() - started


def transcript_path(claude_dir: Path, cwd: str) -> Path:
    """Where Claude Code keeps the session's transcript (its project folder encodes the cwd)."""
    folder = claude_dir / "projects" / cwd.replace("/", "-").replace(".", "-")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{SESSION}.jsonl"


def grow(path: Path, cwd: str, n: int) -> None:
    """One more user line in the transcript, as Claude Code writes it."""
    record = {
        "type": "user",
        "message": {"role": "user", "content": f"step {n}: rerun the migration check"},
        "uuid": f"bench-{n}-{time.monotonic_ns()}",
        "parentUuid": None,
        "sessionId": SESSION,
        "cwd": cwd,
        "isSidechain": False,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
    }
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record, ensure_ascii=False) + "\n")


def check(env: dict[str, str], cwd: Path, name: str, payload: dict[str, Any]) -> None:
    """The call prints what it should, so a broken hook cannot pass for a fast one."""
    printed = spawn(env, cwd, CALLS[name][0], payload).stdout.decode()
    expected = EXPECT[name]
    if (expected is None) != (printed == "") or (expected and expected not in printed):
        log = Path(env["HUIYI_HOME"]) / "hooks.log"
        raise SystemExit(
            f"{name}: unexpected output {printed[:300]!r}\n"
            f"{log.read_text() if log.exists() else ''}"
        )


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="timed calls per event and way")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--burn", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    numbers: dict[str, Any] = {
        "calls": args.calls,
        "history events": args.sessions * args.events,
        "burn": args.burn,
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-") as tmp:
        root = Path(tmp)
        project = root / "ws0"
        (project / ".git").mkdir(parents=True)
        generate(
            root / "dsh",
            sessions=args.sessions,
            events=args.events,
            workspaces=1,
            workspace_root=str(root),
        )
        env = scratch_env(root)
        settings = Settings.from_env(env)
        transcript = transcript_path(root / ".claude", str(project))
        grow(transcript, str(project), -1)
        with Huiyi(settings=settings) as hy:
            hy.index()
            memory = hy.workspace_memory(project)
            memory.add("memory", "Deploys go through make ship; never by hand.")
            memory.add("memory", "数据库迁移先在 staging 跑一遍再上生产。")
            memory.add("user", "Prefers short answers, in Chinese when the question is.")
        base = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(project)}
        try:
            with burning(args.burn):
                floor = []
                for _ in range(args.calls):
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "-c", "pass"], check=True)
                    floor.append(time.perf_counter() - started)
                numbers["python start alone (the floor)"] = stats(floor)
                for way, service in (("warm service", "on"), ("in-process", "off")):
                    way_env = {**env, "HUIYI_SERVICE": service}
                    for name, (event, extra) in CALLS.items():
                        payload = {**base, "hook_event_name": event, **extra}
                        check(way_env, project, name, payload)  # also starts the service
                        times = []
                        for n in range(args.calls):
                            if event != "SessionStart":
                                grow(transcript, str(project), n)
                            times.append(one_call(way_env, project, event, payload))
                        numbers[f"{way}: {name}"] = stats(times)
        finally:
            stop_services(root / "huiyi")
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
