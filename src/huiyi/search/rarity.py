"""How specific a query's words are: their rarity in general language, not in the workspace.

The abstention's evidence test (`abstention.unseen_share`) asks whether a query's specific
words (names, identifiers, technical nouns) occur in the workspace before the semantic layer
may answer it alone. Rarity in the workspace cannot tell which words are specific: a small
workspace never says `the weather` or `GPG` alike, and a paraphrase's ordinary words are as
unknown there as a name from another project. A general-language frequency list can: wordfreq's
small English and Chinese lists (about 30,000 and 39,000 words, every word used at least once
per million), read once per process.

A word's weight is how far its Zipf frequency (log10 of uses per billion words) lies below
`COMMON`, as a share of it: 0 for `the` or `怎么`, about 0.3 for `server`, 1 for a word the list
does not hold (`gunicorn`, `qzxvbnmkw`, an identifier). Chinese has no spaces, so a CJK run is
split into the list's words by longest match (`cjk_words`); characters no word of the list
covers (a name, a rare term, gibberish) count as one unknown word.
"""

from __future__ import annotations

from functools import cache

__all__ = ["COMMON", "cjk_words", "cut_both_ways", "weight"]

#: the Zipf frequency at which a word stops being specific at all (`the` is 7.7, `server` 4.5,
#: `release` 5.1, `database` 4.5 in English; `数据库` 4.4, `明天` 5.1 in Chinese)
COMMON = 6.0
#: the longest Chinese word looked for
LONGEST = 4
#: a character this frequent on its own (`的`, `时`, `给`) is a word: it ends an unknown one
COMMON_CHARACTER = 5.5


@cache
def _zipf(lang: str) -> dict[str, float]:
    import math

    import wordfreq  # loaded only when the evidence test runs

    return {
        word: math.log10(freq * 1e9)
        for word, freq in wordfreq.get_frequency_dict(lang, "small").items()
        if freq > 0
    }


def weight(word: str, lang: str) -> float:
    """How specific `word` (folded) is in `lang` (`en` or `zh`): 0 (common) to 1 (unknown)."""
    if any(ch.isdigit() for ch in word):
        return 1.0
    zipf = _zipf(lang).get(word)
    if zipf is None:
        return 1.0
    return max(0.0, (COMMON - zipf) / COMMON)


def cjk_words(run: str) -> list[str]:
    """The words of a CJK run, by longest match against the Chinese list, left to right; two
    or more characters in a row that no word of the list covers and that are no common word
    alone are one unknown word (a name, a rare term such as `回滚`, gibberish); a lone one is
    left out (`表` in `表结构`)."""
    known = _zipf("zh")
    words: list[str] = []
    unknown = ""
    at = 0
    while at < len(run):
        for size in range(min(LONGEST, len(run) - at), 1, -1):
            if run[at : at + size] in known:
                if len(unknown) >= 2:
                    words.append(unknown)
                unknown = ""
                words.append(run[at : at + size])
                at += size
                break
        else:
            if known.get(run[at], 0.0) >= COMMON_CHARACTER:  # `的`, `给`, `被`: a word alone
                if len(unknown) >= 2:
                    words.append(unknown)
                unknown = ""
            else:
                unknown += run[at]
            at += 1
    if len(unknown) >= 2:
        words.append(unknown)
    return words


def cut_both_ways(run: str) -> set[str]:
    """The words of the list that longest match finds in a CJK run both from the left
    (`cjk_words`) and from the right: a word only one direction cuts is an accident of the
    cut (`其时` in `其时间`, which from the right is `其` and `时间`)."""
    known = _zipf("zh")
    forward = {w for w in cjk_words(run) if w in known}
    backward: set[str] = set()
    end = len(run)
    while end > 0:
        for size in range(min(LONGEST, end), 1, -1):
            if run[end - size : end] in known:
                backward.add(run[end - size : end])
                end -= size
                break
        else:
            end -= 1
    return forward & backward
