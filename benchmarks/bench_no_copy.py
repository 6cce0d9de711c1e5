"""What no-copy mode costs: index size, first index time, search and expand latency, both modes.

    python benchmarks/bench_no_copy.py                     # 100,000 events (1,000 sessions)
    python benchmarks/bench_no_copy.py --size 4000 --json

Writes one history in the real DSH format (`bench_index.generate`: one workspace, 1,000
sessions of 100 events, zstd frames) and indexes it twice from scratch, once keeping the text
(`keepText = true`, the default) and once keeping none (`keepText = false`), without vectors
(no-copy mode keeps the vectors as they are, so they cost both modes the same). For each it
reports the index file's size after a checkpoint, the first index's time, and, warm in this
process, lexical search p50/p95 over bench_index's query mix (each search builds its snippets,
which in no-copy mode reads the hits' logs again), and `recall_expand` p50/p95 around the first
hit of each query. "Cold": with no log's texts in memory (each search or expand reads its logs
again: a fresh process, or logs that changed); otherwise warm, as in the service, which keeps
up to `readthrough.CACHED_CHARS` characters of recently read logs in memory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_index import QUERIES, generate
from report import print_numbers


def _p50_p95(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[max(0, int(len(values) * 0.95) - 1)]


def _index_bytes(home: Path) -> int:
    return sum(
        p.stat().st_size for p in home.iterdir() if p.name.startswith("index.db") and p.is_file()
    )


def measure(root: Path, keep: bool, rounds: int) -> dict[str, Any]:
    """Index the history under `root` in one mode and time what the modes differ in."""
    home = root / f"huiyi-{'keep' if keep else 'nocopy'}"
    os.environ.update(
        HOME=str(root),
        HUIYI_HOME=str(home),
        DSH_HOME=str(root / "dsh"),
        CODEX_HOME=str(root / "codex"),
        HUIYI_EMBEDDER="none",
        HUIYI_KEEP_TEXT="true" if keep else "false",
    )
    os.environ.pop("CLAUDE_CONFIG_DIR", None)
    from huiyi import CallerContext, Huiyi
    from huiyi.store import textpack

    out: dict[str, Any] = {}
    with Huiyi() as hy:
        started = time.perf_counter()
        hy.index()
        out["first_index_s"] = round(time.perf_counter() - started, 1)
        assert hy.keeps_text is keep
        hy.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        out["index_mb"] = round(_index_bytes(home) / 1e6, 1)
        through = textpack.codec(hy.conn).through
        for q in QUERIES:  # warm up
            hy.search(q, workspace="/bench/ws0", limit=10, layers=("lexical",))
        times: list[float] = []
        firsts: dict[str, tuple[str, int]] = {}
        for _ in range(rounds):
            for q in QUERIES:
                t = time.perf_counter()
                result = hy.search(q, workspace="/bench/ws0", limit=10, layers=("lexical",))
                times.append((time.perf_counter() - t) * 1000)
                if result.hits:
                    firsts[q] = (result.hits[-1].session_id, result.hits[-1].seq)
        out["search_p50_ms"], out["search_p95_ms"] = (round(v, 2) for v in _p50_p95(times))
        cold_search: list[float] = []
        for q in QUERIES:
            through.forget()
            t = time.perf_counter()
            hy.search(q, workspace="/bench/ws0", limit=10, layers=("lexical",))
            cold_search.append((time.perf_counter() - t) * 1000)
        out["search_cold_p50_ms"], out["search_cold_p95_ms"] = (
            round(v, 2) for v in _p50_p95(cold_search)
        )
        recall = hy.recall(CallerContext("/bench/ws0", None))
        cold: list[float] = []
        warm: list[float] = []
        for session_id, seq in firsts.values():
            through.forget()
            t = time.perf_counter()
            recall.expand(seq, session_id=session_id)
            cold.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            recall.expand(seq, session_id=session_id)
            warm.append((time.perf_counter() - t) * 1000)
        out["expand_cold_p50_ms"], out["expand_cold_p95_ms"] = (round(v, 2) for v in _p50_p95(cold))
        out["expand_warm_p50_ms"], out["expand_warm_p95_ms"] = (round(v, 2) for v in _p50_p95(warm))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="events (100 per session)")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        events = generate(root / "dsh", args.size // 100, 100, 1)
        results: dict[str, Any] = {"events": events}
        for keep in (True, False):
            for name, value in measure(root, keep, args.rounds).items():
                results[f"{'keep' if keep else 'nocopy'}_{name}"] = value
    print_numbers(results, as_json=args.json)


if __name__ == "__main__":
    main()
