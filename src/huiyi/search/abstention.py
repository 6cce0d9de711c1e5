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
* fused: the cosine plus scaled lexical evidence minus scaled `absent` and `unseen`
  (`Evidence.fused`);
* unseen (the evidence test): the share of the query's specific words, weighted by their
  rarity in general language (`search.rarity`), that occur nowhere in the workspace, neither as
  written, nor as a typo of a word it uses (`fuzzy.typo_of`), nor as their equivalent in the
  other language (`text.expand`). When none occurs (`unseen` 1: gibberish, a question about
  things this workspace never named), the semantic layer alone may answer only above the
  calibrated `unseen` floor, far above its usual one, and not at all when one of the words is
  unknown to general language too (`gibberish`: the embedder has nothing to go on) or when the
  query names nothing of software work either (`off_topic`: `明天北京天气怎么样` in a history
  of code; no term of the terms table, no identifier, no number). "None occurs" is read as a
  share: the workspace uses at most `1 - blind` of those words by weight (`Floors.blind`), so
  a question sharing only a word such as `多少` with it counts as naming nothing it uses;
* missing (the missing detail): the highest rarity among the query's words outside Chinese
  that the workspace uses in no form (`missing_detail`: a version, a number, an identifier, a
  word no general list holds; no date, no piece of a word). At the `detail` floor the history
  cannot hold what is asked, and only the lexical and fuzzy floors may answer;
* asked (the asked detail): in a focused question that names its topic by a word of its own
  the workspace uses (an identifier, a name, a number), the highest rarity among the words
  general language knows that the workspace uses in no form, question words and the answer's
  units left out (`asked_detail`: `省份` in `导出 CSV 能不能按省份筛选`, `sync` in `notekit sync
  怎么配置`). At the `known_detail` floor the detail was never said either; under a missing or
  asked detail the fuzzy layer vouches only at `detail_fuzzy` (the query's trigrams found
  verbatim), since its containment then counts the topic's words, not a typo's;
* apart (the words of a value apart): a focused question for a value or a choice on a named
  topic (`WORKER_CONCURRENCY 在 staging 上设的多少`) whose specific words none of the result's
  first passages holds together, even with its neighbours and across a short turn (`apart`:
  the setting said of production in one place, `staging` in another). With `together` it is
  held as a missing detail.

A search answers when one of them reaches its floor (a floor of `None` never does). The floors
live in `floors.json` next to this module, fitted on the dev sets and the golden set by
`huiyi.eval.calibrate` (`detail`, `blind` and `padding` were chosen on the tuning halves'
per-query measurements and are kept by it); docs/eval.md has the commands and what they cost.
e5 cosines are no relevance score: a paraphrase of something said and a question about
something never said both sit around 0.8-0.9, so the floor that keeps hit@5 within 0.02
declines little.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from huiyi.search import fuzzy, rarity
from huiyi.search.detail import asked_detail, missing_detail, together
from huiyi.search.lexical import Rows, holding
from huiyi.store.index import Index
from huiyi.text.expand import enclosing, equivalents, expansion
from huiyi.text.tokenize import Query, cjk_bigrams, cjk_runs, normalize, parse_query, terms
from huiyi.workspace import scope_token

__all__ = [
    "Evidence",
    "Floors",
    "apart",
    "asked_detail",
    "content_units",
    "floors_for",
    "gibberish",
    "lexical_evidence",
    "missing_detail",
    "off_topic",
    "passage_shares",
    "unseen_of",
    "unseen_share",
    "word_evidence",
]

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
    #: the evidence test: the general-rarity-weighted share of the query's specific words
    #: that occur nowhere in the workspace, in any form (`None`: the query has none)
    unseen: float | None = None
    #: none of the query's words is used (`nothing_seen`) and one of them is unknown to
    #: general language as well (`gibberish`)
    gibberish: bool = False
    #: none of the query's words is used (`nothing_seen`) and it names nothing of software
    #: work either (`off_topic`)
    off_topic: bool = False
    #: the missing detail: the highest general-language rarity among the query's words outside
    #: Chinese that the workspace uses in no form (1: an identifier, a number, a version, a
    #: word no list holds; `None`: the evidence test did not run, 0: every word is used)
    missing: float | None = None
    #: the asked detail: the highest rarity among the words general language knows that the
    #: workspace uses in no form, in a focused question naming its topic by a word of its own
    #: (`asked_detail`; `None`: the evidence test did not run, 0: no such word or shape)
    asked: float | None = None
    #: a question for a value names words (`detail.together`) that none of the result's first
    #: passages holds together, even with a neighbour on each side (`apart`)
    apart: bool = False

    def fused(
        self, lexical_scale: float, absent_scale: float, unseen_scale: float = 0.0
    ) -> float | None:
        """The semantic cosine, plus the lexical share scaled by `lexical_scale`, minus the
        share of words the workspace never uses scaled by `absent_scale` and the share of
        specific words it never uses scaled by `unseen_scale` (`None` without semantic
        evidence)."""
        if self.semantic is None:
            return None
        return (
            self.semantic
            + lexical_scale * (self.lexical or 0.0)
            - absent_scale * (self.absent or 0.0)
            - unseen_scale * (self.unseen or 0.0)
        )

    @property
    def nothing_seen(self) -> bool:
        """The query names specific things and the workspace uses none of them."""
        return self.unseen is not None and self.unseen >= 1.0 - 1e-9

    def blind(self, share: float = 1.0) -> bool:
        """The workspace uses at most `1 - share` of the query's specific words (weighted by
        their rarity, `unseen`): what it does use are words such as `多少` or `配置`."""
        return self.unseen is not None and self.unseen >= share - 1e-9

    def as_dict(self) -> dict[str, float | None]:
        return {
            "lexical": self.lexical,
            "fuzzy": self.fuzzy,
            "semantic": self.semantic,
            "absent": self.absent,
            "unseen": self.unseen,
            "gibberish": float(self.gibberish),
            "off_topic": float(self.off_topic),
            "missing": self.missing,
            "asked": self.asked,
            "apart": float(self.apart),
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
    #: the floor of the cosine when none of the query's specific words occurs in the
    #: workspace (`Evidence.nothing_seen`); the semantic and fused floors do not apply then
    #: (`None`: the embedder's floors were fitted without the evidence test, which is off)
    unseen: float | None = None
    unseen_scale: float = 0.0
    #: no padding: after the first hit, a hit whose fused score is below this share of the
    #: first's and that holds none of the query's words is dropped (0: every hit is kept)
    padding: float = 0.0
    #: the missing detail: when a word of the query this rare in general language
    #: (`Evidence.missing`) occurs nowhere in the workspace, the history cannot hold the
    #: detail asked for, and the semantic and fused evidence may not vouch for an answer
    #: (`None`: off; the lexical and fuzzy floors still apply)
    detail: float | None = None
    #: the share of the query's specific words the workspace must not use (`Evidence.unseen`)
    #: for the query to count as naming nothing it uses (1: none of them; `Evidence.blind`)
    blind: float = 1.0
    #: the asked detail: when a word general language knows, this rare, is asked about in a
    #: focused question on a named topic and occurs nowhere in the workspace
    #: (`Evidence.asked`), the semantic and fused evidence may not vouch either (`None`: off)
    known_detail: float | None = None
    #: the fuzzy floor under a missing or asked detail (`None`: the usual one)
    detail_fuzzy: float | None = None
    #: a question for a value whose words occur together in no first passage
    #: (`Evidence.apart`) is held as one asking a missing detail (False: off)
    together: bool = False

    def detail_missing(self, evidence: Evidence) -> bool:
        """Whether the query names or asks a specific thing the workspace never mentions."""
        return (
            _reaches(evidence.missing, self.detail)
            or _reaches(evidence.asked, self.known_detail)
            or (self.together and evidence.apart)
        )

    def _pairs(self, evidence: Evidence) -> list[tuple[str, float | None, float | None]]:
        fused = evidence.fused(self.lexical_scale, self.absent_scale, self.unseen_scale)
        if self.detail_missing(evidence):
            fuzzy_floor = self.fuzzy
            if fuzzy_floor is not None and self.detail_fuzzy is not None:
                fuzzy_floor = max(fuzzy_floor, self.detail_fuzzy)
            return [
                ("lexical", evidence.lexical, self.lexical),
                ("fuzzy", evidence.fuzzy, fuzzy_floor),
            ]
        if evidence.blind(self.blind) and self.unseen is not None:
            return [
                ("lexical", evidence.lexical, self.lexical),
                ("fuzzy", evidence.fuzzy, self.fuzzy),
                (
                    "semantic",
                    evidence.semantic,
                    None if evidence.gibberish or evidence.off_topic else self.unseen,
                ),
            ]
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


def _reaches(value: float | None, floor: float | None) -> bool:
    return value is not None and floor is not None and value >= floor - 1e-9


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
        unseen=number("unseen"),
        unseen_scale=number("unseen_scale") or 0.0,
        padding=number("padding") or 0.0,
        detail=number("detail"),
        blind=number("blind") or 1.0,
        known_detail=number("known_detail"),
        detail_fuzzy=number("detail_fuzzy"),
        together=raw.get("together") is True,
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


#: a word below this weight (`rarity.weight`) is not specific enough to count
MIN_WEIGHT = 0.05


def content_units(text: str) -> list[tuple[tuple[str, ...], float]]:
    """The query's content words as the index holds them (a word, an identifier's parts, a
    Chinese word's bigrams), each with its rarity in general language (`rarity.weight`); words
    below `MIN_WEIGHT` are left out. An identifier or a word with digits counts as unknown."""
    folded = normalize(text)
    units: dict[tuple[str, ...], float] = {}
    for term in parse_query(folded).terms:
        if term.cjk:
            continue
        if term.whole is not None:
            units[term.parts] = 1.0
        else:
            units[term.parts] = rarity.weight(term.parts[0], "en")
    for start, end in cjk_runs(folded):
        for word in rarity.cjk_words(folded[start:end]):
            units[tuple(cjk_bigrams(word))] = rarity.weight(word, "zh")
    return [(unit, w) for unit, w in units.items() if w >= MIN_WEIGHT]


def word_evidence(
    conn: Index, text: str, workspace: str | None, read: Rows | None = None
) -> list[tuple[str, float, bool]]:
    """The query's content words (`content_units`), each as written, with its rarity in
    general language and whether the workspace uses it in some form: as written, as the words
    a typo of it may mean (`fuzzy.typo_of`), without an English ending, or as its equivalent
    in the other language (`text.expand`)."""
    units = content_units(text)
    if not units:
        return []
    scope = "" if workspace is None else f' AND scope:"{scope_token(workspace)}"'
    read = read or Rows()

    def used(parts_list: Sequence[tuple[str, ...]]) -> list[bool]:
        matches = [f"({_phrase(u)}){scope}" for u in parts_list]
        return [bool(rows) for rows in read.newest(conn, matches, 1)]

    out: list[tuple[str, float, bool]] = []
    for (unit, w), found in zip(units, used([u for u, _ in units]), strict=True):
        surface = _surface(unit)
        if not found:
            other = [
                *_stems(surface),
                *fuzzy.typo_of(conn, surface),
                *equivalents(surface),
                *enclosing(text, surface),
            ]
            forms = [parts for word in other if (parts := _parts(word))]
            found = bool(forms) and any(used(forms))
        out.append((surface, w, found))
    return out


#: the result's first passages a question for a value must find its words together in
TOGETHER_PASSAGES = 3
#: a turn of at most this many characters (spaces aside: `加个重试吧`, `ok, do it`) between a
#: passage and the event beyond it does not part them: the thread runs across it
SHORT_TURN = 12


def apart(
    conn: Index, text: str, words: Sequence[tuple[str, float, bool]], rowids: Sequence[int]
) -> bool:
    """Whether the words a question for a value must find together (`detail.together`) are
    held together by none of the passages `rowids` (the result's first), each read with the
    event before and after it in its session; a word counts in any of its forms
    (`word_evidence`'s). False when the question is not of that shape, or when the text of one
    of those passages cannot be read (no-copy mode, its log gone).

    Only a few passages are read, and only for questions of that shape, so their text is
    tokenised here rather than asked of the full-text index word by word."""
    named = together(text, words)
    if not named or not rowids:
        return False
    forms = {
        word: [
            parts
            for form in (word, *_stems(word), *equivalents(word), *enclosing(text, word))
            if (parts := _parts(form))
        ]
        for word in named
    }
    first = list(rowids[:TOGETHER_PASSAGES])
    around = sorted({r + d for r in first for d in (-2, -1, 0, 1, 2) if r + d > 0})
    sids = conn.sids_by_rowid(around)
    texts = conn.texts_by_rowid(around)
    if any(rowid not in texts for rowid in first):  # no-copy mode, a log gone: nothing to read
        return False
    tokens = {
        r: {p for term in terms(normalize(texts.get(r, ""))) for p in term.parts} for r in around
    }
    everywhere = set().union(*tokens.values())
    for word in named:  # a typo's word (`gunicron`) only when no form as written is there
        if not any(set(parts) <= everywhere for parts in forms[word]):
            forms[word] += [parts for form in fuzzy.typo_of(conn, word) if (parts := _parts(form))]
    for rowid in first:
        held: set[str] = set()
        for near in _thread(rowid, texts):
            if near in tokens and sids.get(near) == sids.get(rowid):
                held |= tokens[near]
        if all(any(set(parts) <= held for parts in forms[word]) for word in named):
            return False
    return True


def _thread(rowid: int, texts: Mapping[int, str]) -> list[int]:
    """The passage `rowid` and the events read with it: the one before and the one after,
    and the one beyond either when it is a short turn (`SHORT_TURN`: an answer to the event
    before that turn reads on from it, `E4012 是 ... 并发请求`, `加个重试吧`, then the retry
    and the rate limiter said)."""
    out = [rowid]
    for step in (-1, 1):
        near = rowid + step
        out.append(near)
        if len("".join(texts.get(near, "x" * (SHORT_TURN + 1)).split())) <= SHORT_TURN:
            out.append(near + step)
    return out


def unseen_share(
    conn: Index, text: str, workspace: str | None, read: Rows | None = None
) -> float | None:
    """The evidence test: the rarity-weighted share of the query's content words
    (`word_evidence`) that the workspace uses in no form. `None` when the query has no
    content word."""
    return unseen_of(word_evidence(conn, text, workspace, read))


def unseen_of(words: Sequence[tuple[str, float, bool]]) -> float | None:
    """`unseen_share` of words already looked up (`word_evidence`)."""
    total = sum(w for _, w, _ in words)
    if not words or total <= 0:
        return None
    return sum(w for _, w, seen in words if not seen) / total


def gibberish(text: str) -> bool:
    """Whether the query holds a content word no general-language list knows that is no
    identifier and no number (`qzxvbnmkw`, `靐齉爩`, a product name). Together with
    `Evidence.nothing_seen` (the workspace uses none of the query's words in any form either)
    the semantic layer may not vouch at all: the embedder cuts such a word into pieces that
    mean nothing, so its cosine says nothing about this workspace."""
    folded = normalize(text)
    for term in parse_query(folded).terms:
        if term.cjk or term.whole is not None:
            continue
        if term.parts[0].isalpha() and rarity.weight(term.parts[0], "en") >= 1.0:
            return True
    return any(
        rarity.weight(word, "zh") >= 1.0
        for a, b in cjk_runs(folded)
        for word in rarity.cjk_words(folded[a:b])
    )


def off_topic(text: str) -> bool:
    """Whether the query names nothing of software work: no term of the terms table in either
    language (`text.expand`), no identifier or compound, no number. Together with
    `Evidence.nothing_seen` (the workspace uses none of its words in any form) it is a question
    from another part of life (`明天北京天气怎么样`, `how to learn piano as an adult`), and
    a history of coding sessions holds no answer to it however near its cosine comes: e5
    places any question near any chat at 0.85."""
    folded = normalize(text)
    if any(ch.isdigit() for ch in folded):
        return False
    if any(term.whole is not None for term in parse_query(folded).terms):
        return False
    return not expansion(text) and not any(equivalents(word) for word in _words(folded))


def _words(folded: str) -> list[str]:
    """The query's words as written and its Chinese runs' words (`rarity.cjk_words`)."""
    words = [t.parts[0] for t in parse_query(folded).terms if not t.cjk and t.parts]
    for start, end in cjk_runs(folded):
        words.extend(rarity.cjk_words(folded[start:end]))
    return words


#: English endings a question's word may carry that its passage does not (`dumps`, `dump`)
_ENDINGS = ("ies", "ied", "es", "s", "ing", "ed", "er", "ly")


def _stems(word: str) -> list[str]:
    """The word without a common English ending (both forms for `-ies`, `-ied`, `-es`), or
    none."""
    if " " in word or not word.isascii() or not word.isalpha():
        return []
    out: list[str] = []
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            stem = word[: -len(ending)]
            out.append(stem)
            if ending in ("ies", "ied"):
                out.append(stem + "y")
            elif ending in ("es", "ing", "ed", "er"):
                out.append(stem + "e")
    return out


def _surface(unit: tuple[str, ...]) -> str:
    """The word a unit was made of: a Chinese word from its bigrams, else the parts joined."""
    if any(cjk_runs(unit[0])):
        return unit[0] + "".join(bigram[1:] for bigram in unit[1:])
    return " ".join(unit)


def _parts(word: str) -> tuple[str, ...]:
    """A word or phrase as the index's tokens, in order (a phrase to match)."""
    return tuple(part for term in terms(normalize(word)) for part in term.parts)
