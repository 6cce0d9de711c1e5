"""The detail a question asks, and whether the history can hold it at all.

A near miss names a real topic of the workspace and asks a detail never said (`How many
gunicorn workers does production run?`). Its cosine is a paraphrase's and it shares the topic's
words by construction, so the share of its words the workspace uses says little; what does is
the word that carries the detail. Two shapes of it are read here, from the query's content
words and whether the workspace uses each in any form (`abstention.word_evidence`):

* the missing detail (`missing_detail`): a word no general-language list holds (a version, a
  number, an identifier, a tool) that occurs nowhere in the history;
* the asked detail (`asked_detail`): in a focused question that names its topic by a word of
  its own the history uses, a word general language knows that occurs nowhere in it.

`abstention.Floors` decides what either costs a search; this module only reads the words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from huiyi.search import rarity
from huiyi.text.tokenize import cjk_runs, normalize, terms

__all__ = ["FOCUSED", "asked_detail", "missing_detail", "together"]


def missing_detail(text: str, words: Sequence[tuple[str, float, bool]]) -> float:
    """The highest rarity among the query's words outside Chinese that the workspace uses in
    no form (`word_evidence`), leaving out what is no detail (`_no_detail`); 0 when it uses
    them all.

    A near miss asks a real topic of the workspace about a detail never said, and the detail
    is often a thing with a name: a version (`py313`, `ubuntu-22.04`), a number (`0043`,
    `503`), a tool or a setting (`webpack`, `MemoryMax`, `keepalive`). When such a word, rare
    in general language, occurs nowhere in the history, not even as a typo or in the other
    language, the history cannot hold the answer, however near the question's cosine comes
    (the topic words it shares put it at a paraphrase's 0.85-0.9). Chinese words are left out:
    split by longest match, a question's characters fall into unknown pieces (`放哪` in
    `放哪了`) and its typos (`瓶劲`) are no word either, so their absence says little."""
    skip = _no_detail(text)
    return max(
        (w for word, w, seen in words if not seen and not any(cjk_runs(word)) and word not in skip),
        default=0.0,
    )


#: a question of more content words than this is no focused question on one topic: a long
#: message's other words are its context (a person's chatter before the question), not details
FOCUSED = 10
#: words that ask or shape the answer rather than name a detail: question words, the answer's
#: units and comparisons (`多少`, `哪个`, `每秒`, `更长`); the English ones general language
#: mostly weighs at nothing already
_ASKING = frozenset(
    "多少 几个 几次 几天 几点 几号 几岁 哪个 哪些 哪家 哪里 哪儿 哪天 哪年 多久 多大 多长 多远 "
    "多重 多高 什么 什么时候 啥 啥时候 咋 怎么 怎么样 怎样 如何 为什么 有没有 是否 能不能 会不会 "
    "可以 每秒 每分钟 每小时 每天 每周 每月 分钟 小时 百分之 百分比 更长 更短 更多 更少 更大 更小 "
    "更早 更晚 更久 更快 更慢 更高 更低 更远 更近 how which what many much long when where who "
    "whom why whether second seconds minute minutes hour hours day days week weeks percent "
    "percentage longer shorter more less bigger smaller earlier later faster slower higher "
    "lower".split()
)
#: English endings of a verb's form or an adverb (`picked`, `splitting`, `quickly`): an action
#: or a manner, said in other words as often as not, never a detail with a name
_INFLECTED = ("ed", "ing", "ly")
#: the endings of a past verb and an adverb: an `-ing` word of a passage is as often a thing of
#: its own (`staging`, `logging`) that the passage must hold
_PAST = ("ed", "ly")
#: a Chinese word opening with a negation (`不上` of `连不上`, `没用`): what went wrong, no thing
_NEGATIONS = ("不", "没")


def asked_detail(text: str, words: Sequence[tuple[str, float, bool]]) -> float:
    """The highest rarity among the words general language knows (rarity below 1) that the
    workspace uses in no form (`word_evidence`), in a focused question (at most `FOCUSED`
    content words) that names its topic by a word of its own the workspace uses (rarity 1: an
    identifier, a name, a number); 0 when there is none or the question is not of that shape.

    A near miss names its topic precisely and asks a further thing: `notekit sync 命令怎么配置
    远端` (`sync`), `导出 CSV 能不能按省份筛选订单` (`省份`, `筛选`), `docker compose 里 web 服务
    用的镜像 tag` (`镜像`). When the topic's own word is found and the thing asked is a word of
    general language the history never uses, not even in the other language, the history holds
    the topic but not the answer. A paraphrase names no word of its own, so it is not asked
    about here: its ordinary words are as unused as a near miss's. Left out: what asks rather
    than names (`_ASKING`, a verb's form or an adverb, a negation), what is no detail
    (`_no_detail`) and a Chinese word only one direction of the cut finds
    (`rarity.cut_both_ways`)."""
    if len(words) > FOCUSED or not any(seen and w >= 1.0 - 1e-9 for _, w, seen in words):
        return 0.0
    skip = _no_detail(text)
    folded = normalize(text)
    cut = set().union(*(rarity.cut_both_ways(folded[a:b]) for a, b in cjk_runs(folded)))
    return max(
        (
            w
            for word, w, seen in words
            if not seen
            and w < 1.0 - 1e-9
            and word not in skip
            and not _asking(word)
            and (word in cut or not any(cjk_runs(word)))
        ),
        default=0.0,
    )


#: a question for a value or a choice: how many, how long, which one (`多少`, `几个`, `哪个`)
_ASKS_VALUE = re.compile(
    r"多少|几|多久|多大|多长|哪[个些家台张里天年]|"
    r"\bhow (?:many|much|long|big|often)\b|\bwhich\b|\bwhat (?:version|port|value|size)\b",
    re.IGNORECASE,
)
#: a word below this rarity is too common to be looked for in a passage (`run`, `set`)
TOGETHER_WEIGHT = 0.15


def together(text: str, words: Sequence[tuple[str, float, bool]]) -> list[str]:
    """The words that must occur together in one passage for a history to hold the value a
    question asks: in a focused question for a value or a choice (`WORKER_CONCURRENCY 在
    staging 上设的多少`) that names its topic by a word of its own the workspace uses, its
    used words of some rarity that do not ask and are no past verb or adverb (`worker
    concurrency`, `staging`). None (an empty list) when the question is not of that shape or
    names fewer than two.

    The value of a setting on one host is said where the setting and the host are said
    together; a history saying `WORKER_CONCURRENCY` of production in one place and `staging`
    in another holds neither the question's value nor its answer. Questions of other shapes
    (why, what happened, places where) are answered across passages and sessions, and are
    not asked about here."""
    if len(words) > FOCUSED or not any(seen and w >= 1.0 - 1e-9 for _, w, seen in words):
        return []
    if not _ASKS_VALUE.search(normalize(text)):
        return []
    named = [
        word
        for word, w, seen in words
        if seen and w >= TOGETHER_WEIGHT and not _asking(word, _PAST)
    ]
    return named if len(named) >= 2 else []


def _asking(word: str, endings: tuple[str, ...] = _INFLECTED) -> bool:
    if word in _ASKING or word.startswith(_NEGATIONS):
        return True
    return word.isascii() and word.isalpha() and word.endswith(endings)


_MONTHS = (
    "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|"
    "july|august|september|october|november|december"
)
#: a date in words (`May 3, 2023`, `1 February 2023`, `8th December`, `in 2023`) or in Chinese
#: (`2023年5月3日`, `3号`): a time, which the history holds as its events' times, not as words
_DATE = (
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|"
    r"\b(?:19|20)\d\d\b|\d{1,4}\s*[年月日号]"
)
#: a word cut by an apostrophe (`hadn't`, `Tim's`): the piece before it
_CLITIC = r"([a-z]+)['’][a-z]{1,2}\b"
#: general words joined by hyphens (`career-wise`, `Star Wars-related`)
_HYPHENED = r"[a-z]+(?:-[a-z]+)+"


def _no_detail(text: str) -> set[str]:
    """The query's words (folded) that name no detail: the numbers of a date, the piece of a
    word before an apostrophe, and a hyphenated compound of words general language knows."""
    folded = normalize(text)
    out: set[str] = set()
    for match in re.finditer(_DATE, folded):
        out.update(re.findall(r"\d+", match.group()))
        out.update(" ".join(term.parts) for term in terms(match.group()))
    out.update(re.findall(_CLITIC, folded))
    for match in re.finditer(_HYPHENED, folded):
        parts = match.group().split("-")
        if all(rarity.weight(part, "en") < 1.0 for part in parts):
            out.add(" ".join(parts))
    return out
