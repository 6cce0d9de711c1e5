"""Generated corpora for the safety families, each split into a tuning half and a held half.

Every corpus is built here by code (seeded, so the same cases every run), written the way an
attacker or an ordinary session would write them rather than as copies of the rules: fresh
secrets, varied wording, many generated variants of each trick. A case goes to one half by a
hash of its text (`half`), so adding cases never moves old ones. Rules are tuned on the
`tune` half only; the `held` half is measured and reported, never tuned on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TypeVar

__all__ = ["HALVES", "half", "split"]

HALVES = ("tune", "held")
T = TypeVar("T")


def half(key: str) -> str:
    """`tune` or `held`, by the first byte of the case's SHA-256."""
    return HALVES[hashlib.sha256(key.encode("utf-8")).digest()[0] & 1]


def split(cases: Iterable[T], key: object = None) -> dict[str, list[T]]:
    """The cases of each half, in their order; `key(case)` is the text that is hashed."""
    out: dict[str, list[T]] = {name: [] for name in HALVES}
    for case in cases:
        text = key(case) if callable(key) else str(case)
        out[half(text)].append(case)
    return out
