"""Approximate nearest-neighbour libraries compared on this machine, at the semantic layer's shape.

    pip install -e '.[ann-bench]'                       (usearch and hnswlib; faiss is huiyi's)
    python benchmarks/bench_ann_libs.py --sizes 100000 1000000 --json

For each library and size, in a process of its own (so its resident memory is its own): `n`
random unit vectors of 384 dimensions (the default model's), the index built from them with
two threads (this machine's cores), then 5,000 more added one batch at a time, then `--queries`
random unit queries searched one at a time on one thread. Reported: build time, add time per
vector, resident memory the index holds (the process's RSS after building, less before, the
vectors themselves excluded), its size on disk, recall@10 against exact scoring, and query
latency p50 / p95 at the parameters named in the row.

faiss IVF-PQ is huiyi's own (`search.ann.AnnIndex`: its lists, codes and probes): its row
takes `ann.CANDIDATES` candidates from the codes and scores them exactly with the float16
vectors, as a search does (the vectors come from the index there, from memory here), and its
"codes" row is the codes' own top 10. Random vectors have no clusters, the hardest case for
every index here; `bench_ann.py` gives faiss's recall on the eval sets' real vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DIM = 384
ADDED = 5_000
LIBS = ("faiss-ivfpq", "usearch-i8", "usearch-f16", "hnswlib-f32")
#: HNSW parameters of every graph row: links per node, breadth while adding and searching
CONNECTIVITY, EXPANSION_ADD, EXPANSION_SEARCH = 16, 128, 64


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _unit(rng: Any, n: int) -> Any:
    import numpy as np

    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def one(lib: str, n: int, queries: int) -> dict[str, Any]:
    """Build, add to and search one library's index in this process."""
    import numpy as np

    rng = np.random.default_rng(7)
    data = _unit(rng, n + ADDED)
    base, extra = data[:n], data[n:]
    asked = _unit(rng, queries)
    truth = _exact(asked, data)
    ids = np.arange(n + ADDED, dtype=np.int64)
    half = data.astype(np.float16) if lib == "faiss-ivfpq" else None
    before = _rss()
    started = time.perf_counter()
    index, search, save = _build(lib, base, ids[:n], half)
    built = time.perf_counter() - started
    held = _rss() - before
    started = time.perf_counter()
    for at in range(0, ADDED, 500):
        index.add(ids[n + at : n + at + 500], extra[at : at + 500])
    added = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index"
        save(path)
        disk = path.stat().st_size
    took, hits = [], 0
    for q, query in enumerate(asked):
        started = time.perf_counter()
        found = search(query)
        took.append(time.perf_counter() - started)
        hits += len(set(found[:10]) & set(truth[q].tolist()))
    took.sort()
    return {
        "lib": lib,
        "n": n,
        "build_s": round(built, 1),
        "add_us_per_vector": round(added / ADDED * 1e6, 1),
        "resident_mb": round(held / 1e6, 1),
        "disk_mb": round(disk / 1e6, 1),
        "recall@10": round(hits / (10 * queries), 3),
        "p50_ms": round(took[len(took) // 2] * 1000, 2),
        "p95_ms": round(took[int(len(took) * 0.95)] * 1000, 2),
        "params": _params(lib),
    }


def _exact(asked: Any, data: Any) -> Any:
    """Each query's exact top 10 over every vector, 20 queries at a time."""
    import numpy as np

    rows = []
    for at in range(0, len(asked), 20):
        scores = asked[at : at + 20] @ data.T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        rows.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(rows)


def _params(lib: str) -> str:
    if lib == "faiss-ivfpq":
        return "huiyi's: ~2 sqrt(n) lists, 48 codes, 1/8 probed, 400 candidates re-scored"
    return f"M {CONNECTIVITY}, ef_add {EXPANSION_ADD}, ef_search {EXPANSION_SEARCH}"


class _Adder:
    def __init__(self, add: Any) -> None:
        self.add = add


def _build(lib: str, base: Any, ids: Any, half: Any) -> tuple[_Adder, Any, Any]:
    import numpy as np

    n = len(base)
    if lib == "faiss-ivfpq":
        from huiyi.search import ann

        stride = max(1, -(-n // ann.TRAIN_SAMPLE))
        index = ann.AnnIndex.train("m", "w", base[::stride].copy(), count=n, added=0)
        index.add(ids, base)

        def search(query: Any) -> list[int]:
            found = np.array(index.search(query, 10), dtype=np.int64)
            scores = half[found].astype(np.float32) @ query
            return found[np.argsort(-scores)[:10]].tolist()

        return _Adder(index.add), search, index.save
    if lib.startswith("usearch"):
        from usearch.index import Index

        graph = Index(
            ndim=DIM,
            metric="ip",
            dtype=lib.split("-")[1],
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        graph.add(ids, base, threads=2)

        def usearch(query: Any) -> list[int]:
            return [int(k) for k in graph.search(query, 10, threads=1).keys]

        return (
            _Adder(lambda i, m: graph.add(i, m, threads=1)),
            usearch,
            lambda p: graph.save(str(p)),
        )
    import hnswlib

    hnsw = hnswlib.Index(space="ip", dim=DIM)
    hnsw.init_index(max_elements=n + ADDED, ef_construction=EXPANSION_ADD, M=CONNECTIVITY)
    hnsw.set_num_threads(2)
    hnsw.add_items(base, ids)
    hnsw.set_ef(EXPANSION_SEARCH)
    hnsw.set_num_threads(1)

    def hnswlib_search(query: Any) -> list[int]:
        labels, _ = hnsw.knn_query(query, k=10)
        return [int(k) for k in labels[0]]

    return (
        _Adder(lambda i, m: hnsw.add_items(m, i)),
        hnswlib_search,
        lambda p: hnsw.save_index(str(p)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--libs", nargs="+", default=list(LIBS), choices=LIBS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("LIB", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.queries)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "2", "ORT_DISABLE_TELEMETRY": "1"}
    for n in args.sizes:
        for lib in args.libs:
            done = subprocess.run(
                [sys.executable, __file__, "--one", lib, str(n), "--queries", str(args.queries)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if done.returncode != 0:
                print(f"{lib} at {n:,}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            if args.json:
                print(json.dumps(row))
            else:
                print(
                    f"{row['lib']:<12} {n:>9,}  build {row['build_s']:>7.1f} s  "
                    f"add {row['add_us_per_vector']:>7.1f} us/vector  "
                    f"resident {row['resident_mb']:>6.1f} MB  disk {row['disk_mb']:>6.1f} MB  "
                    f"recall@10 {row['recall@10']:.3f}  p50/p95 "
                    f"{row['p50_ms']:.2f}/{row['p95_ms']:.2f} ms"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
