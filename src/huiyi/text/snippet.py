"""Snippets: a short window of original text around the best match.

Lengths are counted in UTF-16 code units (what JavaScript clients and MCP hosts count), and a
window never cuts a surrogate pair, i.e. never splits a character outside the BMP.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SNIPPET_UNITS = 240
ELLIPSIS = "…"
_SPACE = re.compile(r"\s+")


def utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _units(ch: str) -> int:
    return 2 if ord(ch) > 0xFFFF else 1


def _match_span(flat: str, words: Sequence[str]) -> tuple[int, int] | None:
    """Where the densest cluster of query words sits; falls back to the first match."""
    lowered = flat.lower()
    best: tuple[int, int] | None = None
    best_score = -1
    for word in words:
        if not word:
            continue
        start = lowered.find(word.lower())
        if start < 0:
            continue
        end = start + len(word)
        window = lowered[max(0, start - 80) : end + 80]
        score = sum(1 for w in words if w and w.lower() in window) * 100 + len(word)
        if score > best_score:
            best, best_score = (start, end), score
    return best


def snippet(text: str, words: Sequence[str] = (), limit: int = SNIPPET_UNITS) -> str:
    """At most `limit` UTF-16 units of `text` (whitespace collapsed) centred on a match."""
    flat = _SPACE.sub(" ", text).strip()
    if utf16_len(flat) <= limit:
        return flat
    span = _match_span(flat, words) or (0, 0)
    budget = limit - 2 * utf16_len(ELLIPSIS)
    start, end = span
    used = sum(_units(ch) for ch in flat[start:end])
    if used > budget:  # the match alone is too long: keep its head
        end = start
        used = 0
    # grow the window around the match, alternating sides, until the budget is spent
    left, right = start, end
    grow_left = True
    while used < budget and (left > 0 or right < len(flat)):
        if (grow_left and left > 0) or right >= len(flat):
            cost = _units(flat[left - 1])
            if used + cost > budget:
                break
            left -= 1
        else:
            cost = _units(flat[right])
            if used + cost > budget:
                break
            right += 1
        used += cost
        grow_left = not grow_left
    head = ELLIPSIS if left > 0 else ""
    tail = ELLIPSIS if right < len(flat) else ""
    return f"{head}{flat[left:right]}{tail}"
