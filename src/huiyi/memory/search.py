"""`memory_search`: rank current and archived entries of both stores for a query.

The formula (also in docs/memory.md):

    score = bm25 × (1 + 0.25 · ln(1 + hits)) × (0.5 + 0.5 · 2^(−age_days / 30))

* `bm25` is Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N − n + 0.5) / (n + 0.5))) over the
  tokens of `huiyi.text.tokenize.tokens`: CJK character bigrams plus words and code parts, so
  a two-character Chinese word inside a long entry is found. N counts every searched entry
  (both stores, current and archived). Only entries with bm25 > 0 are returned.
* `hits` is how often the entry was matched by a search or used by a write; an often-used
  entry rises slowly (ln), never past a much better text match.
* `age_days` is the time since the entry was last used (or first seen); the factor halves the
  recency part every 30 days and never drops below 0.5, so an old but exact match still wins
  over a fresh weak one.

Entries returned by a search get a hit recorded (count + time), under the store's lock.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from huiyi.memory.config import Target
from huiyi.memory.store import DAY_MS, Snapshot, entry_key
from huiyi.text.tokenize import tokens

K1 = 1.2
B = 0.75
HIT_WEIGHT = 0.25
HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One ranked entry."""

    target: Target
    archived: bool
    text: str
    score: float
    bm25: float
    hits: int
    last_used: int

    def as_dict(self) -> dict[str, object]:
        return {
            "target": self.target.value,
            "archived": self.archived,
            "text": self.text,
            "score": round(self.score, 4),
            "bm25": round(self.bm25, 4),
            "hits": self.hits,
            "last_used": self.last_used,
        }


@dataclass(frozen=True, slots=True)
class _Doc:
    target: Target
    archived: bool
    text: str
    terms: Counter[str]
    length: int


def factor(hits: int, age_days: float) -> float:
    """The hit boost times the time decay."""
    boost = 1.0 + HIT_WEIGHT * math.log1p(max(hits, 0))
    decay = 0.5 + 0.5 * math.pow(2.0, -max(age_days, 0.0) / HALF_LIFE_DAYS)
    return boost * decay


def rank(
    query: str, snapshots: Sequence[Snapshot], now: int, limit: int = 5
) -> tuple[list[MemoryHit], int]:
    """The best `limit` entries for `query`, and how many entries were searched."""
    docs: list[_Doc] = []
    for snap in snapshots:
        for archived, entries in ((False, snap.entries), (True, snap.archived)):
            for text in dict.fromkeys(entries):
                terms = tokens(text)
                docs.append(_Doc(snap.target, archived, text, Counter(terms), len(terms)))
    wanted = list(dict.fromkeys(tokens(query)))
    if not docs or not wanted:
        return [], len(docs)
    n_docs = len(docs)
    avg_len = sum(d.length for d in docs) / n_docs or 1.0
    idf = {
        term: math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for term in wanted
        for df in [sum(1 for d in docs if term in d.terms)]
    }
    records = {s.target: s.hits for s in snapshots}
    ranked: list[MemoryHit] = []
    for doc in docs:
        bm25 = 0.0
        for term in wanted:
            tf = doc.terms.get(term, 0)
            if tf:
                norm = K1 * (1 - B + B * doc.length / avg_len)
                bm25 += idf[term] * tf * (K1 + 1) / (tf + norm)
        if bm25 <= 0:
            continue
        rec = records[doc.target].get(entry_key(doc.text))
        hits = rec.hits if rec else 0
        last_used = rec.last_used if rec else now
        score = bm25 * factor(hits, (now - last_used) / DAY_MS)
        ranked.append(MemoryHit(doc.target, doc.archived, doc.text, score, bm25, hits, last_used))
    order = {Target.USER: 0, Target.MEMORY: 1}
    ranked.sort(key=lambda h: (-h.score, h.archived, order[h.target], h.text))
    return ranked[: max(limit, 0)], n_docs
