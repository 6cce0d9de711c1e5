"""The yardstick: plain BM25 (bm25s) over whitespace words and jieba words, per workspace.

Every evaluation report shows our layers next to this baseline, so a number means "this much
better than what anyone gets from an off-the-shelf BM25", not just a number. It is kept plain
on purpose: text is NFKC-folded and lower-cased; runs of CJK characters are cut into words by
jieba; everything else is split on whitespace with punctuation trimmed from the ends of each
word (so `--port` is `port` and `main.py,` is `main.py`, but `test_sync.py` stays whole). No
bigrams, no stemming, no fuzzy matching: those are what our own layers add.

Each workspace gets its own index, because every real query is scoped to one workspace;
a query without a workspace searches every session of the set. Events with no overlapping
term are never returned, so a negative query can come back empty.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from huiyi.eval.evalset import EvalQuery, EvalSet, event_id
from huiyi.text.tokenize import CJK_CLASS

__all__ = ["Bm25Baseline", "baseline_tokens"]

_SEGMENTS = re.compile(rf"(?P<cjk>[{CJK_CLASS}]+)|(?P<other>[^{CJK_CLASS}]+)")
_jieba: Any = None


def _jieba_cut(run: str) -> list[str]:
    global _jieba
    if _jieba is None:
        import jieba  # type: ignore[import-untyped]

        jieba.setLogLevel(logging.WARNING)
        _jieba = jieba
    return [w for w in _jieba.lcut(run) if w.strip()]


def _trim(word: str) -> str:
    start, end = 0, len(word)
    while start < end and unicodedata.category(word[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(word[end - 1]).startswith("P"):
        end -= 1
    return word[start:end]


def baseline_tokens(text: str) -> list[str]:
    """The baseline's tokens: jieba words for CJK runs, trimmed whitespace words otherwise."""
    folded = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for m in _SEGMENTS.finditer(folded):
        if m.group("cjk") is not None:
            out.extend(_jieba_cut(m.group("cjk")))
        else:
            out.extend(w for w in (_trim(raw) for raw in m.group("other").split()) if w)
    return out


@dataclass(slots=True)
class _Index:
    ids: list[str]
    model: Any


class Bm25Baseline:
    """BM25 over an `EvalSet`; call it with a query to get ranked event ids (a search_fn)."""

    name = "bm25"

    def __init__(self, evalset: EvalSet, *, k1: float = 1.5, b: float = 0.75) -> None:
        self._evalset = evalset
        self._k1 = k1
        self._b = b
        self._indexes: dict[str | None, _Index] = {}

    def _index(self, workspace: str | None) -> _Index:
        index = self._indexes.get(workspace)
        if index is None:
            import bm25s  # type: ignore[import-untyped]

            ids: list[str] = []
            corpus: list[list[str]] = []
            for session, event in self._evalset.events():
                if workspace is None or session.cwd == workspace:
                    ids.append(event_id(session.id, event.seq))
                    corpus.append(baseline_tokens(event.text))
            model = bm25s.BM25(k1=self._k1, b=self._b)
            if ids:
                model.index(corpus, show_progress=False)
            index = self._indexes[workspace] = _Index(ids, model)
        return index

    def search(self, text: str, workspace: str | None = None, k: int = 10) -> list[str]:
        """Event ids of the best `k` matches in `workspace`, best first; ties keep corpus order."""
        index = self._index(workspace)
        terms = baseline_tokens(text)
        if not index.ids or not terms:
            return []
        scores = np.asarray(index.model.get_scores(terms), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:k]
        return [index.ids[i] for i in order if scores[i] > 0]

    def __call__(self, query: EvalQuery) -> Sequence[str]:
        return self.search(query.query, query.workspace)
