"""Tokens for Chinese, English and code, the same on the index side and the query side.

SQLite's own tokenizers cannot find a two-character Chinese word inside a long sentence
(`unicode61` keeps a whole run of Han characters as one token), and Python's `sqlite3` cannot
register a custom tokenizer. So we tokenise in Python and hand FTS5 text that is already split:

* CJK runs become overlapping character bigrams (`回滚操作` -> `回滚 滚操 操作`); a lone CJK
  character stays a unigram. Any two-character word is then one token.
* Latin words and code are NFKC-folded and lower-cased, then split into parts at `_ . / : -`,
  camelCase humps and letter/digit boundaries (`src/app/main.py` -> `src app main py`,
  `getUserName` -> `get user name`, `E1234` -> `e 1234`).
* A compound's whole form (parts joined by `_`) goes to a second stream, so an exact identifier
  scores higher than its scattered parts, while a phrase of parts still finds `main.py` inside
  `src/app/main.py` (tool traffic gets no second stream: `store.textindex`).

`index_streams` gives the two streams for one text; `parse_query` gives the structure from
which search builds an FTS5 query.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import NamedTuple

from huiyi.text.lazyre import lazy

#: The CJK blocks: kana, CJK extension A, unified ideographs, compatibility ideographs, Hangul.
CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xAC00, 0xD7AF),
)
CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
_CJK_RUN = f"[{CJK_CLASS}]+"
_WORD_CHAR = rf"[^\W_{CJK_CLASS}]"
# `re` sets a class's ranges code point by code point: each copy of the CJK class is slow to
# compile. The query side (`terms`) finds CJK runs without one (`cjk_runs`); the
# ingestion pattern below holds six copies and is compiled on first use (`lazy`).
_WORD = re.compile(r"[^\W_]+(?:[_./:\\-]+[^\W_]+)*")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_SEPARATORS = re.compile(r"[_./:\\-]+")
_ASCII_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SIMPLE = re.compile(r"[a-z]+|[0-9]+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]+")

#: Longest whole-compound token we index (its parts are indexed in full).
MAX_TOKEN = 64

#: Dropped from queries (never from the index) unless nothing else is left.
STOPWORDS = frozenset(
    "a an and are as at be but by do does did for from had has have how i if in is it its "
    "me my of on or our so that the their them then there these this to was we were what when "
    "where which who why will with you your".split()
)


def nfkc(text: str) -> str:
    """The NFKC form of `text` (full-width to ASCII, compatibility forms).

    Most text is already in that form, and `unicodedata.is_normalized` says so much faster than
    `unicodedata.normalize` returns it unchanged: the fuzzy layer folds `fuzzy.CANDIDATES`
    candidate texts per search.
    """
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def normalize(text: str) -> str:
    """NFKC-fold (full-width to ASCII, compatibility forms) and lower-case."""
    return nfkc(text).lower()


def cjk_bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def word_parts(compound: str) -> list[str]:
    """Split one code-ish compound (not yet lower-cased) into lower-case parts."""
    parts: list[str] = []
    for piece in _SEPARATORS.split(compound):
        if not piece:
            continue
        if _SIMPLE.fullmatch(piece):
            parts.append(piece)
        elif _ASCII_ALNUM.fullmatch(piece):
            parts.extend(p.lower() for p in _ASCII_PIECES.findall(piece))
        else:
            parts.append(piece.lower())
    return parts


class Term(NamedTuple):
    """One query unit: a single token, a CJK run (as bigrams) or a compound (parts + whole).

    Named tuples rather than dataclasses, here and for `Query`: a dataclass costs about a
    millisecond to create at import, in every process that searches.
    """

    parts: tuple[str, ...]
    whole: str | None = None
    cjk: bool = False


def is_cjk(char: str) -> bool:
    """Whether one character is in `CJK_RANGES` (spelt out: this runs per character)."""
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3040 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
    )


def cjk_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every maximal run of CJK characters in `text`, in order.

    The same runs as `[CJK_CLASS]+` finds, without compiling that class: only the non-ASCII
    stretches of the text are looked at, a character at a time (queries and prompts are short;
    the ingestion path, which tokenises whole histories, uses its compiled pattern).
    """
    if text.isascii():
        return
    for stretch in _NON_ASCII.finditer(text):
        start = None
        for at, char in enumerate(stretch.group(), stretch.start()):
            if is_cjk(char):
                if start is None:
                    start = at
            elif start is not None:
                yield start, at
                start = None
        if start is not None:
            yield start, stretch.end()


def _word_terms(text: str, start: int, end: int, out: list[Term]) -> None:
    """The word and compound terms of `text[start:end]`, a stretch without CJK characters."""
    for m in _WORD.finditer(text, start, end):
        parts = word_parts(m.group())
        if not parts:
            continue
        whole = "_".join(parts)[:MAX_TOKEN] if len(parts) > 1 else None
        out.append(Term(tuple(parts), whole))


def terms(text: str) -> list[Term]:
    """Scan text into terms in order of appearance: a word never spans a CJK character, so
    the text is cut at its CJK runs and words are read from the stretches between them."""
    text = nfkc(text)
    out: list[Term] = []
    done = 0
    for start, end in cjk_runs(text):
        _word_terms(text, done, start, out)
        out.append(Term(tuple(cjk_bigrams(text[start:end])), cjk=True))
        done = end
    _word_terms(text, done, len(text), out)
    return out


# Ingestion hot path: only what FTS5's `unicode61` would get wrong is rewritten in Python.
# CJK runs become bigrams; words with separators, upper case or digits are split into parts;
# stray underscores become spaces. Plain lower-case words pass through untouched and unicode61
# splits them at the very same places `terms` does. Possessive quantifiers and a word-start
# look-behind keep every alternative linear on pathological input.
_W = _WORD_CHAR
_REWRITE = lazy(
    rf"({_CJK_RUN})"
    rf"|(?<!{_W})({_W}++(?:[_./:\\-]++{_W}++)+|(?={_W}*?[A-Z0-9]){_W}++)"
    r"|_+"
)
#: the same pattern for ASCII text (most of an English or code history), where a word
#: character is one of 62 and no CJK run can start: its class tests cost less time
_A = "[A-Za-z0-9]"
_REWRITE_ASCII = lazy(
    r"(?!)()"  # group 1 (a CJK run) never matches
    rf"|(?<!{_A})({_A}++(?:[_./:\\-]++{_A}++)+|(?={_A}*?[A-Z0-9]){_A}++)"
    r"|_+"
)
#: CJK runs repeat (words, names): their bigram text is cached, within a bound. Larger bounds
#: held many megabytes in each reader process of a first index for no speed measured on either
#: benchmark history; without a cache tokenising is slower.
_BIGRAM_CACHE: dict[str, str] = {}
_BIGRAM_CACHE_MAX = 2_000


def _bigram_text(run: str) -> str:
    got = _BIGRAM_CACHE.get(run)
    if got is None:
        got = f" {run} " if len(run) == 1 else " " + " ".join(map(str.__add__, run, run[1:])) + " "
        if len(_BIGRAM_CACHE) < _BIGRAM_CACHE_MAX and len(run) <= 16:
            _BIGRAM_CACHE[run] = got
    return got


#: Code words repeat even more (paths, identifiers, commands in tool output): what `body` and
#: `whole` get for each is cached the same way: tokenising the side-by-side benchmark's history
#: is much faster with it, and no faster with a larger bound.
_WORD_CACHE: dict[str, tuple[str, str]] = {}
_WORD_CACHE_MAX = 2_000


def _word_text(word: str) -> tuple[str, str]:
    """A code-ish word's `body` text and its `whole` compound ("" when it has one part)."""
    if word.isdigit():
        return word, ""
    parts = word_parts(word)
    whole = "_".join(parts)[:MAX_TOKEN] if len(parts) > 1 else ""
    return " " + " ".join(parts) + " ", whole


def index_streams(text: str, *, folded: bool = False, compounds: bool = True) -> tuple[str, str]:
    """The `body` (parts and bigrams, in order) and `whole` (compounds) texts for FTS5.

    `body` is meant for the `unicode61` tokenizer: it may still hold punctuation and plain
    words, which that tokenizer splits and lower-cases exactly as `terms` would. `folded` says
    the caller NFKC-folded `text` already (folding is idempotent, so the streams are the same;
    folding again took a twelfth of a reader's time). Without `compounds`, `whole` is empty:
    the compounds are still in `body`, as adjacent parts.
    """
    whole: list[str] = []

    def rewrite(m: re.Match[str]) -> str:
        run = m.group(1)
        if run is not None:
            return _bigram_text(run)
        word = m.group(2)
        if word is None:
            return " "
        got = _WORD_CACHE.get(word)
        if got is None:
            got = _word_text(word)
            if len(_WORD_CACHE) < _WORD_CACHE_MAX:
                _WORD_CACHE[word] = got
        if got[1] and compounds:
            whole.append(got[1])
        return got[0]

    text = text if folded else nfkc(text)
    body = (_REWRITE_ASCII if text.isascii() else _REWRITE)().sub(rewrite, text)
    return body, " ".join(whole)


def tokens(text: str) -> list[str]:
    """A flat token list (parts, bigrams and compound wholes), for in-memory BM25."""
    out: list[str] = []
    for term in terms(text):
        out.extend(term.parts)
        if term.whole:
            out.append(term.whole)
    return out


class Query(NamedTuple):
    """A parsed search query: free terms (ranked, any may match) and exact phrases (all must)."""

    terms: tuple[Term, ...]
    phrases: tuple[tuple[str, ...], ...]

    @property
    def empty(self) -> bool:
        return not self.terms and not self.phrases

    def surface_words(self) -> list[str]:
        """Strings to look for in original text when placing a snippet, longest first."""
        words: set[str] = set()
        for term in self.terms:
            if term.cjk:
                words.update(term.parts)
            else:
                words.update(term.parts)
        for phrase in self.phrases:
            words.update(phrase)
        return sorted(words, key=len, reverse=True)


# Only ASCII double quotes mark an exact phrase: “…”, 「…」 and 《…》 are ordinary punctuation
# in Chinese questions ("我在《三体》里读到的那句话") and must not switch off fuzzy and semantic.
_QUOTED = re.compile(r'"([^"]+)"')

#: Chinese function characters: a query bigram made of two of them (`我们`, `是不`, `了吗`)
#: matches everywhere and ranks nothing, so it is dropped from queries (never from the index).
#: Dropping every bigram that merely holds a particle (`姐是`) was tried and cost MemDaily's
#: simple_events file much of its lexical hit@5; pairs alone lift the whole set.
_FUNCTION = frozenset("的了是吗呢吧啊么着过地得我你他她它们这那个和也都就还又在有")


def _content_bigram(bigram: str) -> bool:
    return len(bigram) < 2 or not (bigram[0] in _FUNCTION and bigram[1] in _FUNCTION)


def parse_query(query: str) -> Query:
    """Split a user query into free terms and quoted exact phrases."""
    phrases: list[tuple[str, ...]] = []

    def take_phrase(m: re.Match[str]) -> str:
        # the phrase's tokens in order, as the index's `body` holds them (`terms` makes the
        # same ones as ingestion; the ingestion pattern would be slow for a search to compile)
        inner = next(g for g in m.groups() if g is not None)
        parts = tuple(part for term in terms(inner) for part in term.parts)
        if parts:
            phrases.append(parts)
        return " "

    rest = _QUOTED.sub(take_phrase, query)
    free = []
    for term in terms(rest):
        if term.cjk and len(term.parts) > 1:
            kept = tuple(p for p in term.parts if _content_bigram(p))
            term = Term(kept or term.parts, cjk=True)
        free.append(term)
    meaningful = [t for t in free if t.cjk or t.whole or t.parts[0] not in STOPWORDS]
    if meaningful or phrases:
        free = meaningful
    return Query(tuple(free), tuple(phrases))
