"""What the memory threat scan's meaning detector costs a write, with the default embedder.

    python benchmarks/bench_meaning.py              # 40 notes after the cold start
    python benchmarks/bench_meaning.py --notes 100

A fresh process builds the embedder as `Huiyi.meaning` does (onnxruntime, int8, the graph
already cached), then times:

* `cold`: the first note the rules let through: the model loads and the prototype banks are
  embedded (what the first scanned memory write of a process pays);
* `warm`: each later note, one embedding call and two small matrix products (median and the
  slowest, over `--notes` honest developer notes of ordinary length).

Notes the rules refuse never reach the detector, and a write with `HUIYI_EMBEDDER=none` or
another embedder never loads it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from huiyi.safety.meaning import HONEST, Meaning
from huiyi.search.embedding.e5ort import OnnxE5Embedder

NOTES = [
    "Run the integration tests with the docker compose file in ci/.",
    "The user prefers answers that start with the command to run.",
    "发布前先在 staging 上跑一遍冒烟测试。",
    "Keep migrations reversible; every upgrade has a downgrade.",
    "The billing service reads its settings from config/billing.toml.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=40)
    args = parser.parse_args()
    embedder = OnnxE5Embedder()
    embedder.embed_passages(["warm the graph cache"])  # the graph written once, as in use
    meaning = Meaning(OnnxE5Embedder().embed_passages)  # a fresh model, as a new process
    started = time.perf_counter()
    meaning.intents(NOTES[0])
    cold = time.perf_counter() - started
    times = []
    for i in range(args.notes):
        note = f"{NOTES[i % len(NOTES)]} ({i})"
        started = time.perf_counter()
        meaning.intents(note)
        times.append(time.perf_counter() - started)
    print(f"prototypes: {sum(1 for _ in HONEST)} honest and the intents' banks")
    print(f"cold: {cold * 1000:,.0f} ms (model load and the prototype banks)")
    print(
        f"warm: median {statistics.median(times) * 1000:.1f} ms, "
        f"slowest {max(times) * 1000:.1f} ms over {len(times)} notes"
    )


if __name__ == "__main__":
    main()
