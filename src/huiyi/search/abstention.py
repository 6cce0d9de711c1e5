"""Abstention: whether a search's best evidence is strong enough to show anything at all.

Every layer ranks something for any query, so without a floor a question about a topic the
workspace never discussed still gets confident-looking hits, and an agent handed unrelated
history as "recalled" is worse off than one told there is none. Each layer's best evidence is
put on a scale of its own:

* lexical: the share of the query's words (CJK bigrams, words, compounds) that the best of
  the lexical layer's and the result's first passages holds, each word weighted by its rarity
  in the searched workspace, among the words the workspace uses at all; the weighted share it
  never uses (a name from another project, a tool never mentioned) is `absent`;
* fuzzy: the best trigram containment the fuzzy layer found (1 + containment when the whole
  query occurs verbatim);
* semantic: the best cosine between the query and a passage. Cosines mean something only for
  the model that made them, so its floor is looked up by the embedder's `model_id`; an
  embedder with no calibrated floor (the fake one, an unknown model) cannot vouch for a
  result, and the search answers on lexical evidence alone;
* fused: the cosine plus scaled lexical evidence minus scaled `absent` (`Evidence.fused`).

A search answers when one of them reaches its floor (a floor of `None` never does). The floors
live in `floors.json` next to this module, fitted on the dev sets and the golden set by
`huiyi.eval.calibrate`; docs/eval.md has the command and what they cost. e5 cosines are no
relevance score: a paraphrase of something said and a question about something never said
both sit around 0.8-0.9, so the floor that keeps hit@5 within 0.02 declines little.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.search.lexical import Rows, holding
from huiyi.store.index import Index
from huiyi.text.tokenize import Query
from huiyi.workspace import scope_token

__all__ = ["Evidence", "Floors", "floors_for", "lexical_evidence", "passage_shares"]

#: the lexical layer's first passages read for evidence (its re-rank already orders them)
TOP_PASSAGES = 3
#: rows read per query word to learn how rare it is: one in more counts as common
DF_CAP = 500
#: the package file holding the calibrated floors
FLOORS_FILE = "floors.json"


class Evidence(NamedTuple):
    """The best evidence each layer found (`None`: the layer did not run)."""

    lexical: float | None = None
    fuzzy: float | None = None
    semantic: float | None = None
    #: the rarity-weighted share of the query's words the searched workspace never uses
    absent: float | None = None

    def fused(self, lexical_scale: float, absent_scale: float) -> float | None:
        """The semantic cosine, plus the lexical share scaled by `lexical_scale`, minus the
        share of words the workspace never uses scaled by `absent_scale` (`None` without
        semantic evidence)."""
        if self.semantic is None:
            return None
        return (
            self.semantic
            + lexical_scale * (self.lexical or 0.0)
            - absent_scale * (self.absent or 0.0)
        )

    def as_dict(self) -> dict[str, float | None]:
        return {
            "lexical": self.lexical,
            "fuzzy": self.fuzzy,
            "semantic": self.semantic,
            "absent": self.absent,
        }


class Floors(NamedTuple):
    """The floors one embedder's searches answer above (see the module doc)."""

    #: `None`: this evidence never vouches for a result on its own
    lexical: float | None = None
    fuzzy: float | None = None
    #: `None` as well when the embedder is not calibrated: its cosines vouch for nothing
    semantic: float | None = None
    #: the floor of `Evidence.fused(lexical_scale, absent_scale)`
    fused: float | None = None
    lexical_scale: float = 0.0
    absent_scale: float = 0.0

    def _pairs(self, evidence: Evidence) -> list[tuple[str, float | None, float | None]]:
        fused = evidence.fused(self.lexical_scale, self.absent_scale)
        return [
            ("lexical", evidence.lexical, self.lexical),
            ("fuzzy", evidence.fuzzy, self.fuzzy),
            ("semantic", evidence.semantic, self.semantic),
            ("fused", fused, self.fused),
        ]

    def passes(self, evidence: Evidence) -> bool:
        """Whether any layer's evidence, or the fused evidence, reaches its floor."""
        return any(
            value is not None and floor is not None and value >= floor
            for _, value, floor in self._pairs(evidence)
        )

    def weak(self, evidence: Evidence) -> str:
        """Why a search declined, in words (a search note)."""
        parts = [
            f"{name} {value:.2f} < {floor:.2f}"
            for name, value, floor in self._pairs(evidence)
            if value is not None and floor is not None
        ]
        return ", ".join(parts) or "no layer found anything"


def _floors(raw: Mapping[str, Any]) -> Floors:
    def number(key: str) -> float | None:
        value = raw.get(key)
        return float(value) if isinstance(value, int | float) else None

    return Floors(
        lexical=number("lexical"),
        fuzzy=number("fuzzy"),
        semantic=number("semantic"),
        fused=number("fused"),
        lexical_scale=number("lexical_scale") or 0.0,
        absent_scale=number("absent_scale") or 0.0,
    )


@cache
def _calibration() -> dict[str, Any]:
    # beside this module, read without importlib.resources (it imports tempfile and zipfile)
    text = Path(__file__).with_name(FLOORS_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{FLOORS_FILE} must hold a JSON object")
    return data


def floors_for(model_id: str | None) -> Floors:
    """The floors for searches with this embedder (`None`: no semantic layer). An embedder
    the calibration does not know keeps the lexical floors and gets no semantic ones."""
    data = _calibration()
    lexical_only = _floors(data["lexical_only"])
    models = data.get("models", {})
    if model_id is None or model_id not in models:
        return lexical_only
    return _floors({**data["lexical_only"], **models[model_id]})


def _units(query: Query) -> list[tuple[str, ...]]:
    """What lexical evidence counts: each CJK bigram, each word or compound (all its parts),
    each quoted phrase."""
    units: list[tuple[str, ...]] = []
    for term in query.terms:
        if term.cjk:
            units.extend((p,) for p in term.parts)
        else:
            units.append(term.parts)
    units.extend(query.phrases)
    return list(dict.fromkeys(u for u in units if u))


def _phrase(unit: tuple[str, ...]) -> str:
    return 'body:"' + " ".join(unit).replace('"', '""') + '"'


def passage_shares(
    conn: Index,
    query: Query,
    workspace: str | None,
    rowids: Sequence[int],
    read: Rows | None = None,
) -> tuple[dict[int, float], float]:
    """Per passage of `rowids`, the rarity-weighted share of the query's words it holds,
    among the words the workspace uses (0 when there are none); and the share it never uses.

    A word's weight is its inverse document frequency in the searched workspace,
    `log(1 + N / (1 + n))`, with `n` read from the full-text index up to `DF_CAP` rows (through
    `read`, the rows the lexical layer already read answer for most words)."""
    units = _units(query)
    if not units:
        return dict.fromkeys(rowids, 0.0), 0.0
    scope = "" if workspace is None else f' AND scope:"{scope_token(workspace)}"'
    matches = [f"({_phrase(u)}){scope}" for u in units]
    rows = (read or Rows()).newest(conn, matches, DF_CAP)
    size = max(conn.workspace_size(workspace), 1)
    weights = [math.log1p(size / (1 + len(found))) for found in rows]
    total = sum(weights)
    missing = sum(w for w, found in zip(weights, rows, strict=True) if not found)
    absent = missing / total if total else 0.0
    # a word the workspace never uses is in no passage: coverage counts the others (a Chinese
    # question's bigrams across word boundaries, `校毕` in `学校毕业`, are mostly such words)
    known = total - missing
    held = holding(conn, matches, rows, DF_CAP, list(rowids))
    shares = {
        rowid: sum(weights[n] for n in held[rowid]) / known if known else 0.0 for rowid in rowids
    }
    return shares, absent


def lexical_evidence(
    conn: Index,
    query: Query,
    workspace: str | None,
    rowids: Sequence[int],
    read: Rows | None = None,
) -> tuple[float, float]:
    """The best `passage_shares` of `rowids` (0 for none), and the share of the query's words
    the workspace never uses."""
    shares, absent = passage_shares(conn, query, workspace, rowids, read)
    return max(shares.values(), default=0.0), absent
