"""Redaction and tokenizer throughput, and the worst adversarial line.

    python benchmarks/bench_redact.py            # 20,000 generated lines
    python benchmarks/bench_redact.py --json

Redaction runs on every exit (tool output, CLI, titles, snippets), so its speed on ordinary
session text matters; the tokenizer runs on every indexed event. Measured here, best of
`--rounds`, in this process:

- redaction of generated bilingual session lines with code tokens, one secret in every 20th
  line (lines/s and MB/s of UTF-8);
- the tokenizer (`index_streams`) on the same lines;
- single 200,000-character adversarial lines, the shapes that make a backtracking pattern slow
  (ms per line, the worst and the median). The test suite checks that these grow linearly with
  the length; this script says how fast they are.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench_index import sentence  # the bilingual lines of the index benchmark
from report import print_numbers

from huiyi.safety.redact import redact
from huiyi.text.tokenize import index_streams

SECRETS = [
    "sk-proj-4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB7cD2eF9gH4",
    "ghp_R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2p",
    "password=hunter2hunter2",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl",
    "https://user:s3cretPassw0rd@db.example.com/app",
]
#: units repeated to 200,000 characters: runs a careless pattern would backtrack over
ADVERSARIAL = [
    "a",
    "=",
    "-",
    "/",
    " ",
    "password=",
    "token: ",
    "x-api-key: ",
    '"password":"',
    "密码：",
    "eyJa.",
    "sk-",
    "ghp_",
    "AKIA",
    "a://a:",
    "?token=",
    "Bearer ",
    "authorization: ",
    "-----BEGIN ",
    "aA1",
    "https://h/a",
    base64.b64encode(hashlib.sha512(b"huiyi").digest()).decode(),
]
LINE_CHARS = 200_000


def lines(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        line = sentence(rng)
        if n % 20 == 0:
            line += " " + rng.choice(SECRETS)
        out.append(line)
    return out


def best_of(rounds: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def each(fn: Callable[[str], object], texts: Sequence[str]) -> Callable[[], None]:
    def work() -> None:
        for text in texts:
            fn(text)

    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    texts = lines(args.lines)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    redact_s = best_of(args.rounds, each(redact, texts))
    tokenize_s = best_of(args.rounds, each(index_streams, texts))
    adversarial_ms: dict[str, float] = {}
    for unit in ADVERSARIAL:
        line = (unit * (LINE_CHARS // len(unit) + 1))[:LINE_CHARS]
        adversarial_ms[unit] = best_of(args.rounds, lambda line=line: redact(line)) * 1000
    worst = max(adversarial_ms, key=adversarial_ms.__getitem__)
    numbers: dict[str, Any] = {
        "lines": args.lines,
        "mb": round(mb, 2),
        "redact_lines_per_s": round(args.lines / redact_s),
        "redact_mb_per_s": round(mb / redact_s, 2),
        "tokenize_lines_per_s": round(args.lines / tokenize_s),
        "tokenize_mb_per_s": round(mb / tokenize_s, 2),
        "adversarial_lines": len(ADVERSARIAL),
        "adversarial_200k_median_ms": round(statistics.median(adversarial_ms.values()), 1),
        "adversarial_200k_worst_ms": round(adversarial_ms[worst], 1),
        "adversarial_200k_worst_unit": worst[:20],
    }
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
