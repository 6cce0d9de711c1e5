"""Trigger words: a word the user types to ask for history in this turn, without a tool call.

A trigger is configured (`huiyi.config.Trigger`, at most eight): `Memory unlocked` matches in
any case, `大记忆恢复术` and `DJYHFS` only as written. The text after the trigger, up to the end
of its line or of its first sentence (Chinese 。！？ and English . ! ? followed by a space or
the end), is the query; a trigger with nothing after it asks for what compaction removed from
the current session.

Two rules keep a trigger from firing by accident. A trigger that begins or ends with an ASCII letter
or digit must stand as a word of its own (`DJYHFSX` is no trigger), and a trigger inside code
(a backtick span or a fenced block) is being talked about, not used: "what does `DJYHFS` do?"
asks about the feature. When several triggers occur, the first one counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from huiyi.config import Trigger

__all__ = ["QUERY_MAX_CHARS", "TriggerMatch", "find_trigger", "query_after"]

#: A trigger's query is cut to this many characters (recall_history takes at most 500).
QUERY_MAX_CHARS = 500

#: Fenced blocks first (they may hold backticks), then inline spans of one or more backticks.
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|(`+)[^`\n]*?\1", re.DOTALL)
#: What may separate a trigger from its query: spaces, colons, dashes, commas, brackets.
_LEAD = re.compile(r"^[\s:：,，、;；\-—–>»|)\]）】」』]+")
#: The end of the first sentence: CJK ends anywhere, Latin ends only before a space or the end
#: (so `main.py` and `3.11` stay whole).
_SENTENCE_END = re.compile(r"[。！？!?](?=.)|[.!?…](?=\s|$)|[。！？]")
_TRAIL = re.compile(r"[\s。！？!?.…,，;；:：]+$")


@dataclass(frozen=True, slots=True)
class TriggerMatch:
    """A trigger found in a prompt: which one, where, and its query (None: no words after)."""

    trigger: Trigger
    start: int
    end: int
    query: str | None


@lru_cache(maxsize=64)
def _pattern(word: str, any_case: bool) -> re.Pattern[str]:
    body = re.escape(word)
    if word[:1].isascii() and word[:1].isalnum():
        body = r"(?<![A-Za-z0-9])" + body  # no letter or digit glued on in front
    if word[-1:].isascii() and word[-1:].isalnum():
        body += r"(?![A-Za-z0-9])"  # nor behind
    return re.compile(body, re.IGNORECASE if any_case else 0)


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CODE.finditer(text)]


def find_trigger(prompt: str, triggers: Sequence[Trigger]) -> TriggerMatch | None:
    """The first trigger used in `prompt` (not inside code), with its query, or None."""
    code = _code_spans(prompt) if "`" in prompt or "~~~" in prompt else []
    best: tuple[int, int, Trigger] | None = None
    for trigger in triggers:
        if not trigger.word.strip():
            continue
        for m in _pattern(trigger.word, trigger.any_case).finditer(prompt):
            if any(a <= m.start() < b for a, b in code):
                continue
            if best is None or m.start() < best[0]:
                best = (m.start(), m.end(), trigger)
            break
    if best is None:
        return None
    start, end, trigger = best
    return TriggerMatch(trigger, start, end, query_after(prompt[end:]))


def query_after(rest: str) -> str | None:
    """The query a trigger carries: the first line, then the first sentence, of the text that
    follows it (separators such as `:` or a line break skipped), or None when nothing does."""
    rest = _LEAD.sub("", rest)
    line = rest.split("\n", 1)[0]
    end = _SENTENCE_END.search(line)
    sentence = line[: end.start()] if end else line
    query = _TRAIL.sub("", sentence).strip()
    return query[:QUERY_MAX_CHARS] or None
