"""The fuzzy layer: character trigram containment, for typos and half-remembered phrases.

Two steps, each bounded whatever the size of the history. First candidates: for each of the
query's trigrams the trigram index gives its newest `POSTINGS` rows; a trigram with fewer is
rare, and a passage scores the rarity (`log(1 + POSTINGS / rows)`) of every query trigram it
holds, so a passage holding the query's rare trigrams comes first even when it is among the
oldest of many thousands of passages sharing a common trigram with the query (the index keeps
no counts or positions, so FTS5's own BM25 is 0 for every row and ranked them oldest first).
Then the best `CANDIDATES` are re-scored by how many of the query's grams the passage contains,
plus a bonus when the whole normalised query occurs in it, so an exact match always ranks above
a near one.
Works the same for Chinese and English (a typo changes at most three trigrams of a word).
A query word the history never uses also brings the passages holding the words it may be a
misspelling of (`respelled`), for the typo whose trigrams are all common ones.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from huiyi.search.lexical import Rows
from huiyi.store.index import Index
from huiyi.text.tokenize import cjk_bigrams, cjk_runs, normalize
from huiyi.workspace import fuzzy_scope_token, scope_token

_SIGNAL = re.compile(r"\w")
#: at most this many trigrams are looked up (evenly sampled); containment uses them all
MAX_MATCH_GRAMS = 24
#: rows read per query trigram: a trigram in more rows than this counts as common
POSTINGS = 400
#: At this share of the index or more, a workspace's trigrams are looked up without its scope
#: trigram and the other workspaces' candidates dropped afterwards: FTS5 reads the scope's
#: doclist (every row of the workspace) backwards once per trigram for the newest rows, which
#: made the lookups several times slower.
#: Below it, the rows of other workspaces would fill too much of each trigram's `POSTINGS`.
UNSCOPED_SHARE = 0.5
#: every this many rows of a capped unscoped lookup are checked for the workspace's share
CROWD_SAMPLE_STEP = 10
#: candidates re-scored by containment (reading and folding their text is the costly part)
CANDIDATES = 200
#: a passage must hold at least this share of the query's grams to count as a fuzzy match;
#: on the golden set a higher share loses typos and a lower one lets noise through (negatives
#: answered); this one keeps typos and gives the best hybrid MRR
MIN_CONTAINMENT = 0.35
#: A query word of at least this many letters that no passage holds is looked up again as the
#: words of the index within `_edits_allowed` of it that share its first `RESPELL_PREFIX`
#: letters (see `respelled`)
RESPELL_MIN = 5
RESPELL_PREFIX = 3
#: words of the vocabulary read per misspelled word, and newest rows read per word it may mean
RESPELL_WORDS = 2000
RESPELL_ROWS = 100
#: what a passage holding a word the query misspelled gains: less than one gram's share of
#: any query, so it orders passages of equal containment and changes no floor
RESPELL_BONUS = 0.01
_LATIN_WORD = re.compile(r"[a-z0-9_]+")


def _squeeze(text: str) -> str:
    """`text` with each run of whitespace made one space, as `re.sub(r"\\s+", " ", text)` makes
    it at three times the cost (`str.split` knows the same whitespace as `\\s`)."""
    words = text.split()
    if not words:
        return " " if text else ""
    lead = " " if text[0].isspace() else ""
    return lead + " ".join(words) + (" " if text[-1].isspace() else "")


def _folded(text: str) -> str:
    """The query folded as its grams are read: NFKC, lower case, one space between words."""
    return " ".join(normalize(text).split())


def grams(text: str) -> list[str]:
    """Distinct character trigrams of the folded text that carry a word character."""
    folded = _folded(text)
    seen: dict[str, None] = {}
    for i in range(len(folded) - 2):
        gram = folded[i : i + 3]
        if _SIGNAL.search(gram) and gram.count(" ") < 2:
            seen.setdefault(gram, None)
    return list(seen)


def score_grams(text: str) -> list[str]:
    """What containment is measured on: CJK bigrams (a one-character typo in Chinese breaks
    every trigram around it but only two bigrams) and trigrams of everything else."""
    folded = _folded(text)
    out: dict[str, None] = {}
    done = 0
    for start, end in [*cjk_runs(folded), (len(folded), len(folded))]:
        # the text before a CJK run by trigrams, the run by bigrams (`cjk_runs` compiles no
        # CJK class: a query's process never pays for one)
        for gram in [*grams(folded[done:start]), *cjk_bigrams(folded[start:end])]:
            out.setdefault(gram, None)
        done = end
    return [g for g in out if g]


def _quote(gram: str) -> str:
    return '"' + gram.replace('"', '""') + '"'


def candidates(conn: Index, chosen: list[str], workspace: str | None, *, limit: int) -> list[int]:
    """Event rowids by the summed rarity of the query trigrams they hold, best first (ties:
    newest first); at most `POSTINGS` rows are read per trigram."""
    share = 1.0 if workspace is None else conn.workspace_share(workspace)
    scoped = workspace is not None and share < UNSCOPED_SHARE
    scope = f" AND {_quote(fuzzy_scope_token(workspace))}" if scoped and workspace else ""
    postings = conn.fuzzy_postings([_quote(g) + scope for g in chosen], cap=POSTINGS)
    if workspace is not None and not scoped and share < 1.0:
        # (a workspace holding all the history is crowded by no other)
        postings = _rescoped_where_crowded(conn, chosen, postings, workspace)
    rows = Counter(n for n, _ in postings)
    weight = {n: math.log1p(POSTINGS / count) for n, count in rows.items()}
    score: dict[int, float] = {}
    for n, rowid in postings:
        score[rowid] = score.get(rowid, 0.0) + weight[n]
    best = [r for r, _ in sorted(score.items(), key=lambda item: (item[1], item[0]), reverse=True)]
    if workspace is None or scoped:
        return best[:limit]
    kept: list[int] = []
    for start in range(0, len(best), limit * 2):
        part = best[start : start + limit * 2]
        inside = conn.in_workspace(part, workspace)
        kept.extend(rowid for rowid in part if rowid in inside)
        if len(kept) >= limit:
            break
    return kept[:limit]


def _rescoped_where_crowded(
    conn: Index, chosen: list[str], postings: list[tuple[int, int]], workspace: str
) -> list[tuple[int, int]]:
    """Postings in which the workspace's own rows of a capped trigram are not crowded out.

    An unscoped lookup reads a trigram's newest `POSTINGS` rows of every workspace. This
    workspace holds at least `UNSCOPED_SHARE` of the index, so it normally holds about that
    share of them; when a smaller workspace used the word more recently, its rows fill the
    slots and this workspace's passages would never become candidates. A sample of each capped
    trigram's rows tells which trigrams that happened to, and only those are looked up again
    with the scope token (the slow form)."""
    by_gram: dict[int, list[int]] = {}
    for n, rowid in postings:
        by_gram.setdefault(n, []).append(rowid)
    capped = {
        n: found[::CROWD_SAMPLE_STEP] for n, found in by_gram.items() if len(found) >= POSTINGS
    }
    if not capped:
        return postings
    inside = conn.in_workspace([r for s in capped.values() for r in s], workspace)
    crowded = [
        n
        for n, sample in capped.items()
        if sum(r in inside for r in sample) < len(sample) * UNSCOPED_SHARE / 2
    ]
    if not crowded:
        return postings
    scope = f" AND {_quote(fuzzy_scope_token(workspace))}"
    again = conn.fuzzy_postings([_quote(chosen[n]) + scope for n in crowded], cap=POSTINGS)
    replaced = set(crowded)
    kept = [(n, rowid) for n, rowid in postings if n not in replaced]
    return kept + [(crowded[i], rowid) for i, rowid in again]


def ranked(
    conn: Index,
    text: str,
    workspace: str | None,
    *,
    depth: int,
    respelt: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """(event rowid, score) by trigram containment, best first. `respelt`: the query's
    `meant_words`, when the caller has them already."""
    all_grams = grams(text)
    if not all_grams:
        return []
    step = max(1, len(all_grams) // MAX_MATCH_GRAMS)
    chosen = all_grams[::step][:MAX_MATCH_GRAMS]
    whole = _folded(text)
    words = respelled(conn, whole) if respelt is None else respelt
    meant = respelled_rows(conn, words, workspace)
    rowids = candidates(conn, chosen, workspace, limit=max(CANDIDATES, depth))
    rowids = list(dict.fromkeys([*meant, *rowids]))
    texts = conn.texts_by_rowid(rowids)
    measured = score_grams(text) or all_grams
    scored: list[tuple[int, float]] = []
    for order, rowid in enumerate(rowids):
        doc = _squeeze(normalize(texts.get(rowid, "")[:4000]))
        contained = sum(1 for g in measured if g in doc) / len(measured)
        if contained < MIN_CONTAINMENT:
            continue
        exact = 1.0 if whole and whole in doc else 0.0
        bonus = RESPELL_BONUS if rowid in meant else 0.0
        scored.append((rowid, exact + contained + bonus - order * 1e-6))
    scored.sort(key=lambda item: item[1], reverse=True)
    return scored[:depth]


def respelled(conn: Index, whole: str, read: Rows | None = None) -> list[str]:
    """The words of the history a misspelled query word may mean: for each word of `whole`
    (folded) of `RESPELL_MIN` letters or more that the full-text index does not hold, the
    indexed words sharing its first `RESPELL_PREFIX` letters within `_edits_allowed` of it.

    Trigram rarity finds a typo by the trigrams only the typo's word holds; a typo whose word
    holds nothing but common trigrams ("subseting" for "subsetting", in a history that says
    "subset" and "settings" in a thousand messages) leaves the word's passage among thousands
    of older ones sharing them. The vocabulary knows the word itself. `read`: what this search
    has read of the index already (the words of a prefix, asked again by the floor's evidence)."""
    read = read or Rows()
    meant: list[str] = []
    for word in dict.fromkeys(_LATIN_WORD.findall(whole)):
        if len(word) < RESPELL_MIN or conn.has_word(word):
            continue
        allowed = _edits_allowed(word)
        near = read.words_from(conn, word[:RESPELL_PREFIX], limit=RESPELL_WORDS)
        meant.extend(
            w for w in near if abs(len(w) - len(word)) <= allowed and edits(word, w) <= allowed
        )
    return meant


#: the evidence test's typo look-up (`typo_of`): from four letters, and from two of the prefix
TYPO_MIN = 4
TYPO_PREFIX = 2


def typo_of(conn: Index, whole: str) -> list[str]:
    """The words of the history a word of `whole` (folded) may be a typo of, looked for more
    widely than `respelled` does: the evidence test only asks whether the history uses the
    word in some form, so a slip in the first letters (`cahce`, `ngnix`, `dmup` for `dump`)
    counts too. Each word of `TYPO_MIN` letters or more that the index does not hold is
    compared, by `edits`, with the indexed words sharing its first `TYPO_PREFIX` letters or
    its first three with two neighbours swapped. A word shorter than `RESPELL_MIN` may only
    have two neighbours swapped (`dmup`): one other letter makes another word (`helm`,
    `held`)."""
    meant: list[str] = []
    for word in dict.fromkeys(_LATIN_WORD.findall(whole)):
        if len(word) < TYPO_MIN or conn.has_word(word):
            continue
        allowed = _edits_allowed(word)
        short = len(word) < RESPELL_MIN
        prefixes = {word[:TYPO_PREFIX], word[1] + word[0] + word[2], word[0] + word[2] + word[1]}
        for prefix in sorted(prefixes):
            near = conn.words_from(prefix, limit=RESPELL_WORDS)
            meant.extend(
                w
                for w in near
                if abs(len(w) - len(word)) <= allowed
                and edits(word, w) <= allowed
                and (not short or sorted(w) == sorted(word))
            )
    return list(dict.fromkeys(meant))


def meant_words(conn: Index, text: str, read: Rows | None = None) -> list[str]:
    """The words of the history the query's misspelled words may mean (`respelled`)."""
    return respelled(conn, _folded(text), read)


def respelled_rows(conn: Index, words: Sequence[str], workspace: str | None) -> set[int]:
    """The newest `RESPELL_ROWS` passages of the workspace holding each of `words`."""
    if not words:
        return set()
    scope = "" if workspace is None else f' AND scope:"{scope_token(workspace)}"'
    matches = [f'body:"{word}"{scope}' for word in words]
    return {rowid for _, rowid in conn.fts_postings(matches, cap=RESPELL_ROWS)}


def _edits_allowed(word: str) -> int:
    """One edit in a word of up to seven letters, two in a longer one."""
    return 1 if len(word) <= 7 else 2


def edits(a: str, b: str) -> int:
    """Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two
    neighbouring letters (the optimal-string-alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row, above = [i] + [0] * len(b), rows[-1]
        for j in range(1, len(b) + 1):
            row[j] = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]
