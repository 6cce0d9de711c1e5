# ruff: noqa: E501 (a corpus: one case per line reads best)
"""Private-session markers as people type them, and titles that only look like one.

`markers()` generates titles and first messages that carry a marker: every bracket pair of
every script around every spelling of the marker words (simplified and traditional Chinese,
`no-recall` with any separator or none, any case), at the start, in the middle or at the end,
a bracket left open at the title's start, and the whole thing passed through the disguises a
pasted or generated title picks up (full width, look-alike letters, invisible characters,
line breaks, entities, percent-escapes). `non_markers()` generates near misses that must stay
visible: the words without brackets, brackets around other words or around more than a
marker. `subagent_cases()` names the parent links of every harness, in both indexing orders.
"""

from __future__ import annotations

import html
import random
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from tests.corpora import half
from tests.corpora.secrets import DISGUISES

__all__ = ["Marked", "markers", "non_markers", "subagent_cases"]

#: Bracket pairs a person may type around a marker, in every script that has them.
PAIRS = [
    "[]", "()", "{}", "<>", "［］", "（）", "｛｝", "＜＞", "【】", "《》", "〈〉", "「」",
    "『』", "〔〕", "〖〗", "〘〙", "〚〛", "︻︼", "﹝﹞", "⟦⟧", "⦅⦆", "❨❩", "⟨⟩", "«»", "‹›",
    "⁅⁆", "﹙﹚", "⸢⸣", "｢｣", "⦗⦘",
]  # fmt: skip

_NO_RECALL = ["no-recall", "no recall", "no_recall", "norecall", "no.recall", "no–recall",
              "no—recall", "no · recall", "no/recall", "no  -  recall", "no‐recall", "no~recall"]  # fmt: skip
WORDS = ["私密", "不参与回忆", "不參與回憶", "不参与回憶", *_NO_RECALL]

_TITLES = [
    "工资表整理",
    "deploy plans for Q3",
    "体检报告",
    "reset the family router",
    "面试复盘",
    "API refactor",
    "租房合同",
    "salary review",
    "病历摘要",
    "tax return 2025",
]


def _case(word: str, rng: random.Random) -> str:
    if not word.isascii():
        return word
    style = rng.randrange(4)
    return [
        word,
        word.upper(),
        word.title(),
        "".join(c.upper() if rng.random() < 0.5 else c for c in word),
    ][style]


def _pad(rng: random.Random) -> str:
    return rng.choice(["", "", " ", "  ", "\u3000", "\t"])


@dataclass(frozen=True)
class Marked:
    text: str
    how: str

    @property
    def half(self) -> str:
        return half(self.text)


def _entities(text: str, rng: random.Random) -> str:
    return "".join(f"&#{ord(c)};" if not c.isspace() and rng.random() < 0.5 else c for c in text)


def _percent(text: str, rng: random.Random) -> str:
    return "".join(urllib.parse.quote(c) if rng.random() < 0.6 else c for c in text)


_TRICKS: dict[str, Callable[[str, random.Random], str]] = {
    "plain": lambda t, r: t,
    "full-width": DISGUISES["full-width"],
    "cyrillic": DISGUISES["cyrillic"],
    "greek": DISGUISES["greek"],
    "math-bold": DISGUISES["math-bold"],
    "zero-width": lambda t, r: "".join(
        c + (r.choice("\u200b\u200c\u200d\u2060") if r.random() < 0.4 else "") for c in t
    ),
    "soft-hyphen": lambda t, r: "".join(c + ("\u00ad" if r.random() < 0.3 else "") for c in t),
    "combining": lambda t, r: "".join(
        c + ("\u0301" if c.isalpha() and r.random() < 0.3 else "") for c in t
    ),
    "bidi": lambda t, r: "\u202e" + t + "\u202c",
    "variation": lambda t, r: "".join(c + ("\ufe0f" if r.random() < 0.3 else "") for c in t),
    "newline": lambda t, r: (
        t[: max(1, len(t) // 2)] + r.choice(["\n", "\r\n"]) + t[max(1, len(t) // 2) :]
    ),
    "entities": _entities,
    "named-entities": lambda t, r: html.escape(t),
    "percent": _percent,
}


def _marker(rng: random.Random, pair: str, word: str) -> str:
    return f"{pair[0]}{_pad(rng)}{_case(word, rng)}{_pad(rng)}{pair[1]}"


def markers() -> list[Marked]:
    """At least 150 generated texts that carry a marker."""
    rng = random.Random(4242)
    out: list[Marked] = []
    for pair in PAIRS:
        for word in rng.sample(WORDS, 5):
            trick = rng.choice(list(_TRICKS))
            mark = _TRICKS[trick](_marker(rng, pair, word), rng)
            title = rng.choice(_TITLES)
            where = rng.randrange(3)
            text = [f"{mark}{_pad(rng)}{title}", f"{title} {mark} notes", f"{title} {mark}"][where]
            out.append(Marked(text, f"{trick}/{pair}"))
    for word in WORDS:  # left open at the start of a title
        pair = rng.choice(PAIRS)
        title = rng.choice(_TITLES)
        out.append(Marked(f"{pair[0]}{_case(word, rng)} {title}", "open-at-start"))
        out.append(Marked(f"{pair[0]}{_case(word, rng)}", "open-alone"))
    return out


_NOT = [
    "私密", "no-recall", "no recall needed", "[私人]", "[no-recalls]", "[no recall please]",
    "[private]", "[private API] refactor", "(no recall of the bug)", "【私密性设计】", "「回忆录」",
    "【不参与】讨论", "[recall] notes", "[no] recall", "(norecall.py)", "私密聊天功能设计",
    "记忆回忆功能", "[私]", "[密]", "[no-recall-test] fixtures", "noreCALLback()", "recall_no",
    "《回忆》读后感", "不参与回忆录编写的同事", "talk about no-recall mode",
]  # fmt: skip


def non_markers() -> list[str]:
    """Titles that name the words without marking the session (a marker in brackets inside a
    longer bracketed phrase, the words alone, other bracketed words)."""
    rng = random.Random(99)
    out = []
    for text in _NOT:
        out.append(f"{rng.choice(_TITLES)} {text}")
    return out


@dataclass(frozen=True)
class Subagent:
    harness: str  # dsh, claude-sidechain, claude-agent-file, codex
    parent_first: bool
    marker: str
    depth: int

    @property
    def half(self) -> str:
        return half(f"{self.harness}/{self.parent_first}/{self.marker}/{self.depth}")


def subagent_cases() -> list[Subagent]:
    rng = random.Random(5)
    marks = [
        "[私密] payroll",
        "【no-recall】 payroll",
        "payroll (不参与回忆)",
        "[No Recall] payroll",
    ]
    out = []
    for harness in ("dsh", "claude-sidechain", "claude-agent-file", "codex"):
        for parent_first in (True, False):
            for depth in (1, 2):
                out.append(Subagent(harness, parent_first, rng.choice(marks), depth))
    return out
