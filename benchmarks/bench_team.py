"""The team server under load: a large history on PostgreSQL, many clients searching, two
pushing, for a fixed time.

    python benchmarks/bench_team.py                                  # 1,000,000 events, 60 s
    python benchmarks/bench_team.py --events 300000 --seconds 30 --json
    python benchmarks/bench_team.py --events 1000000 --think 0       # closed loop: saturation
    python benchmarks/bench_team.py --database URL --seconds 30      # a store loaded earlier

Starts its own PostgreSQL cluster (Debian's binaries, default fsync and commit settings,
`--shared-buffers`), fills it with `--events` events of chat about backend work in Chinese
and English (`chat_filler`: sessions of a person's prompts, an agent's answers, tool calls and
their output; 70% in one workspace, the rest in four others) through the store's bulk load,
then starts `huiyi serve` in its own process on a loopback port and runs, for `--seconds`:

- `--clients` searching clients (threads of this process), each with its own device token
  reading the main workspace, asking a query drawn from the history's own words (one to three
  words, Chinese bigrams and English), then waiting `--think` seconds (an agent searches now
  and then; `--think 0` asks as fast as the server answers);
- `--pushers` pushing clients, each sending new sessions of `--push-events` events to the main
  workspace as fast as the server takes them.

Prints errors (any non-200 answer or failed request), search p50/p95/p99 and searches per
second, push throughput in events per second, the server process's peak memory (VmHWM) and the
PostgreSQL processes' resident memory at the end, the database size, and how long the load
took. The searches run the server's hybrid search, which without vectors is lexical and fuzzy.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "src"
sys.path[:0] = [str(SRC), str(REPO)]

from chat_filler import Writer  # noqa: E402
from report import print_numbers  # noqa: E402
from tests.pgcluster import cluster  # noqa: E402

from huiyi.hub import Hub  # noqa: E402
from huiyi.store.batch import Batch, EventRecord, SessionRecord  # noqa: E402
from huiyi.store.pg.copy import bulk_load, with_lexemes  # noqa: E402

MAIN = "github.com/acme/shop"
OTHERS = [f"github.com/acme/svc-{n}" for n in range(4)]
EVENTS_PER_SESSION = 50
_WORD = re.compile(r"[a-z]{4,}|[\u4e00-\u9fff]{2}")


def sessions(total: int, seed: int = 7) -> Iterator[Batch]:
    """`total` events in sessions of `EVENTS_PER_SESSION`, each a person and an agent at work."""
    rng = random.Random(seed)
    writer = Writer(rng)
    start = 1_700_000_000_000
    made = 0
    n = 0
    while made < total:
        n += 1
        writer.start_session()
        workspace = MAIN if rng.random() < 0.7 else rng.choice(OTHERS)
        events: list[EventRecord] = []
        at = start + n * 600_000
        seq = 0
        while len(events) < min(EVENTS_PER_SESSION, total - made):
            seq += 1
            roll = len(events) % 5
            if roll == 0:
                kind, role, text = "user", "user", writer.prompt()
            elif roll == 1:
                kind, role, text = "assistant", "assistant", writer.preface()
            elif roll == 2:
                name, args, result = writer.tool_call("/work/shop")
                kind, role, text = "tool_call", "assistant", f"{name} {json.dumps(args)}"
                events.append(
                    EventRecord(seq, at + seq * 1000, kind, role, text, "current", False, name)
                )
                seq += 1
                kind, role, text = "tool_result", "tool", result()
            else:
                kind, role, text = "assistant", "assistant", writer.answer()
            events.append(
                EventRecord(seq, at + seq * 1000, kind, role, text, "current", False, None)
            )
        events = events[: total - made]
        made += len(events)
        yield Batch(
            SessionRecord(
                f"bench-{n}",
                "claude",
                "",
                workspace,
                writer.title(),
                None,
                at,
                at + seq * 1000,
                None,
                False,
                False,
            ),
            events,
        )


#: sessions handed to the tokenising workers at a time: `Pool.imap` reads its whole input at
#: once, which held every generated session of a 1M load in memory (3.7 GB)
AHEAD = 2_000


def lexed(pool: Any, batches: Iterator[Batch]) -> Iterator[Any]:
    """`with_lexemes` of each batch in `pool`'s workers, in order, `AHEAD` batches at a time."""
    while part := list(itertools.islice(batches, AHEAD)):
        yield from pool.imap(with_lexemes, part, 16)


def queries(count: int, seed: int = 11) -> list[str]:
    """Queries made of the history's own words: one to three of them."""
    rng = random.Random(seed)
    writer = Writer(rng)
    words: list[str] = []
    while len(words) < 2000:
        writer.start_session()
        words.extend(_WORD.findall(writer.prompt().lower() + " " + writer.answer().lower()))
    return [" ".join(rng.sample(words, rng.choice((1, 2, 2, 3)))) for _ in range(count)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(url: str, token: str, body: dict[str, Any], timeout: float = 30.0) -> int:
    data = json.dumps(body, ensure_ascii=False).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def postgres_rss_kib(postmaster: int | None) -> int:
    """Resident memory of this cluster's postmaster and its children (not other clusters')."""
    if postmaster is None:
        return 0
    total = rss_kib(postmaster)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            parent = re.search(r"^PPid:\s+(\d+)", status, re.M)
            if parent and int(parent.group(1)) == postmaster:
                total += rss_kib(int(entry.name))
    return total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="history size")
    parser.add_argument("--clients", type=int, default=20, help="searching clients")
    parser.add_argument("--pushers", type=int, default=2, help="pushing clients")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the load runs")
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="seconds a searching client waits between searches (0: none)",
    )
    parser.add_argument("--push-events", type=int, default=200, help="events per push")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL's shared_buffers")
    parser.add_argument(
        "--database",
        help="a store already loaded with this script's history (its conninfo): skip the "
        "cluster and the load, and measure the load against it",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        help="make the cluster under DIR and leave it running with the loaded store after the "
        "run (its conninfo and postmaster pid are printed, for `--database` later)",
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    numbers: dict[str, Any] = {
        "events": args.events,
        "clients": args.clients,
        "pushers": args.pushers,
        "seconds": args.seconds,
        "think": args.think,
    }
    with contextlib.ExitStack() as stack:
        running = None
        if args.database:
            url = args.database
            hub = Hub(url, pool_size=2)
        else:
            running = stack.enter_context(
                cluster(
                    durable=True,
                    shared_buffers=args.shared_buffers,
                    root=args.keep,
                    keep=args.keep is not None,
                )
            )
            url = running.new_database()
            if args.keep is not None:
                numbers["kept"] = {"database": url, "postmaster": running.pid()}
                print(f"kept: {url} (postmaster {running.pid()})", file=sys.stderr, flush=True)
            hub = Hub(url, pool_size=2)
            started = time.perf_counter()
            with multiprocessing.Pool(2) as pool:
                loaded = bulk_load(hub.pool, lexed(pool, sessions(args.events)))
            numbers["load_seconds"] = round(time.perf_counter() - started, 1)
            assert loaded == args.events
        run = uuid.uuid4().hex[:8]  # devices of this run (a --database may hold earlier ones)
        readers = [
            hub.add_device(f"reader{n}", f"laptop-{run}", reads=(MAIN,), pushes=())[1]
            for n in range(args.clients)
        ]
        pushers = [
            hub.add_device(f"pusher{n}", f"desktop-{run}", reads=(MAIN,), pushes=(MAIN,))[1]
            for n in range(args.pushers)
        ]
        with hub.pool.connection() as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            numbers["database_mb"] = round(int(row[0]) / 1e6) if row else None
            if args.database:
                row = conn.execute("SELECT count(*) FROM events").fetchone()
                numbers["events"] = int(row[0]) if row else 0
        hub.close()

        port = free_port()
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="huiyi-bench-"))
        env = {**os.environ, "PYTHONPATH": str(SRC), "HUIYI_HOME": home}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "huiyi",
                "serve",
                "--database",
                url,
                "--listen",
                f"127.0.0.1:{port}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60  # the store was migrated above, by `Hub`
            while True:
                try:
                    with urllib.request.urlopen(base + "/v1/health", timeout=2):
                        break
                except (urllib.error.URLError, OSError):
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)
            asked = queries(5_000)
            latencies: list[float] = []
            errors = [0]
            statuses: dict[int, int] = {}  # of the errors (0: no answer within the timeout)
            pushed = [0]
            lock = threading.Lock()
            stop = time.monotonic() + args.seconds

            def search_loop(n: int) -> None:
                rng = random.Random(n)
                while time.monotonic() < stop:
                    began = time.perf_counter()
                    status = post(
                        base + "/v1/search",
                        readers[n],
                        {"workspace": MAIN, "query": rng.choice(asked), "limit": 10},
                    )
                    took = time.perf_counter() - began
                    with lock:
                        latencies.append(took)
                        if status != 200:
                            errors[0] += 1
                            statuses[status] = statuses.get(status, 0) + 1
                    if args.think:
                        time.sleep(rng.uniform(0.5, 1.5) * args.think)

            def push_loop(n: int) -> None:
                rng = random.Random(1000 + n)
                writer = Writer(rng)
                count = 0
                while time.monotonic() < stop:
                    count += 1
                    writer.start_session()
                    events = [
                        {
                            "seq": i,
                            "time": 1_800_000_000_000 + i,
                            "kind": kind,
                            "role": kind,
                            "text": writer.prompt() if kind == "user" else writer.answer(),
                            "surface": "current",
                        }
                        for i, kind in enumerate(
                            ("user" if i % 2 == 0 else "assistant") for i in range(args.push_events)
                        )
                    ]
                    body = {
                        "push": uuid.uuid4().hex,
                        "tombstones": [],
                        "sessions": [
                            {
                                "id": f"push-{run}-{n}-{count}",
                                "source": "claude",
                                "workspace": MAIN,
                                "title": writer.title(),
                                "events": events,
                            }
                        ],
                    }
                    status = post(base + "/v1/push", pushers[n], body, timeout=120)
                    with lock:
                        if status == 200:
                            pushed[0] += len(events)
                        else:
                            errors[0] += 1
                            statuses[status] = statuses.get(status, 0) + 1

            threads = [threading.Thread(target=search_loop, args=(n,)) for n in range(args.clients)]
            threads += [threading.Thread(target=push_loop, args=(n,)) for n in range(args.pushers)]
            began = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - began
            numbers.update(
                errors=errors[0],
                error_statuses=dict(sorted(statuses.items())),
                searches=len(latencies),
                searches_per_second=round(len(latencies) / elapsed, 1),
                search_p50_ms=round(statistics.median(latencies) * 1000, 1),
                search_p95_ms=round(percentile(latencies, 0.95) * 1000, 1),
                search_p99_ms=round(percentile(latencies, 0.99) * 1000, 1),
                push_events_per_second=round(pushed[0] / elapsed, 1),
                server_peak_mb=round(rss_kib(server.pid, "VmHWM") / 1024),
                postgres_rss_mb=round(postgres_rss_kib(running.pid() if running else None) / 1024),
            )
        finally:
            server.terminate()
            server.wait(30)
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
