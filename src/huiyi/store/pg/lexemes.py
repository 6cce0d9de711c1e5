"""What one event puts into the PostgreSQL tables: huiyi's own tokens, not PostgreSQL's.

The streams are the very ones SQLite's full-text index receives (`textindex.stored_streams`):
`body` (parts and CJK bigrams, in order) and `whole` (compounds), split into tokens as FTS5's
`unicode61` tokenizer with `_` as a token character splits them (runs of word characters,
lower-cased), and the fuzzy text, whose character trigrams FTS5's `trigram` tokenizer indexes.

- `literal`: the tsvector literal. Body tokens keep their positions (weight D) so that a phrase
  is a tsquery `<->` chain; whole compounds follow at later positions with weight A. A
  tsvector keeps positions up to `MAX_POSITION` and at most `MAX_POSITIONS` of one lexeme:
  past them a phrase is not found and a token's frequency is counted up to that many (FTS5
  counts them all), the one place the two stores may score a passage differently.
- `tokens`: what FTS5 counts towards the average row length (body, whole, and the one
  workspace token of its `scope` column).
- `terms`: the document-frequency keys of the row, `b:` + body token, `w:` + compound.
- `grams`: the distinct trigrams of the fuzzy text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from huiyi.store.textindex import Streams

#: tsvector limits (PostgreSQL's MAXENTRYPOS - 1 and MAXNUMPOS)
MAX_POSITION = 16_383
MAX_POSITIONS = 256
_TOKEN = re.compile(r"\w+")


class Lexemes(NamedTuple):
    literal: str | None
    tokens: int
    terms: frozenset[str]
    grams: list[str] | None


def split(stream: str) -> list[str]:
    """A stream's tokens as FTS5's `unicode61` tokenizer (`tokenchars '_'`) reads them."""
    return _TOKEN.findall(stream.lower())


def quote(lexeme: str) -> str:
    """A lexeme as a tsvector or tsquery literal."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def trigrams(folded: str) -> list[str]:
    """The distinct character trigrams of a folded text, in order of first appearance."""
    return list(dict.fromkeys(folded[i : i + 3] for i in range(len(folded) - 2)))


def of_streams(streams: Streams | None) -> Lexemes:
    """The row values of one event's streams (`None`: an event not in the text indexes)."""
    if streams is None:
        return Lexemes(None, 0, frozenset(), None)
    body_text, whole_text, folded = streams
    body, whole = split(body_text), split(whole_text)
    positions: dict[str, list[str]] = {}
    for n, token in enumerate(body, 1):
        held = positions.setdefault(token, [])
        if len(held) < MAX_POSITIONS:
            held.append(str(min(n, MAX_POSITION)))
    start = len(body) + 2  # a gap: no phrase runs from the body into the compounds
    for n, token in enumerate(whole, start):
        held = positions.setdefault(token, [])
        if len(held) < MAX_POSITIONS:
            held.append(f"{min(n, MAX_POSITION)}A")
    literal = " ".join(f"{quote(lexeme)}:{','.join(at)}" for lexeme, at in positions.items())
    terms = frozenset({*(f"b:{t}" for t in body), *(f"w:{t}" for t in whole)})
    grams = trigrams(folded) if folded is not None else None
    return Lexemes(literal, len(body) + len(whole) + 1, terms, grams)
