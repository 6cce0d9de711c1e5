"""Private sessions: a marker a person typed hides a session from every list, search and read.

The rule (the README's safety section says the same):

A session is **private** when any of these holds:

1. a **title** it has had carries a marker, even if a later title replaced it, or a title of
   it could not be read (when in doubt, hide);
2. its **first user message** (the first one a person typed; text the harness injected does
   not count) carries a marker: the way to mark a session that has no title, such as Codex's;
3. its **parent** is private: a subagent (Claude's `subagents/agent-*.jsonl` and old-style
   `agent-*.jsonl` transcripts, whose `isSidechain` records name the parent in `sessionId`) or
   a child session (DSH's `parentSession`), at any depth, whichever was indexed first.

**Once private, always private**: a later title without the marker, a re-read of a rewritten
log or a repair of the index does not make it visible again. There is no command to unmark a
session on purpose (a marker is a one-way door, so no agent-facing path can ever undo it);
`huiyi forget SESSION_ID` removes it from the index altogether.

A **marker** is one of the words between brackets, by this grammar (matched on the text as
`huiyi.safety.normalise.view` reads it: HTML entities and percent-escapes decoded, NFKC and
look-alike letters of other scripts folded to Latin, case folded, invisible and format
characters and combining marks removed, a line break between two characters joined):

    marker  := open pad word pad close
             | start pad open pad word (space | end)     -- left open at a title's start
    word    := 私密
             | 不 (参|參) (与|與) (回|迴) (忆|憶)           -- simplified, traditional, mixed
             | "no" sep{0,8} "recall"                     -- any case
    sep     := any character but a letter, a digit or a bracket
    pad     := spaces (any Unicode space), none or some
    open    := any opening bracket of any script: Unicode's Ps class, `<`, `«`, `‹`
    close   := any closing bracket of any script: Unicode's Pe class, `>`, `»`, `›`

Brackets need not pair (`[私密】` counts). So `[私密]`, `【私密】`, `《不參與回憶》`, `〈私密〉`,
`「No Recall」`, `＜ｎｏ－ｒｅｃａｌｌ＞`, `[nо-recall]` with a Cyrillic `о`, `&#91;私密&#93;`,
`%5B%E7%A7%81%E5%AF%86%5D`, and `[no-recall]` with a zero-width space, a soft hyphen or a
line break inside all mark a session; `私密` without brackets, `[private]`, `[no recall
please]` and `[no-recall-test]` do not.

This module only recognises markers; the index applies the rule (`huiyi.store.ingest`) and
every reader of it keeps private sessions out (`sessions.is_private`).
"""

from __future__ import annotations

import re

from huiyi.safety.normalise import LINE_BREAKS, view

#: The words, as they appear between brackets after folding (see the module docstring).
PRIVATE_WORDS = ("私密", "no-recall", "不参与回忆")


#: Every opening and closing bracket of every script: Unicode's Ps and Pe classes (checked
#: against `unicodedata` by the tests), with `<>`, `«»` and `‹›`.
OPEN_BRACKETS = (
    "<\u00ab\u2039([{\u0f3a\u0f3c\u169b\u201a\u201e\u2045\u207d\u208d"
    "\u2308\u230a\u2329\u2768\u276a\u276c\u276e\u2770\u2772\u2774\u27c5\u27e6\u27e8\u27ea"
    "\u27ec\u27ee\u2983\u2985\u2987\u2989\u298b\u298d\u298f\u2991\u2993\u2995\u2997\u29d8"
    "\u29da\u29fc\u2e22\u2e24\u2e26\u2e28\u2e42\u2e55\u2e57\u2e59\u2e5b\u3008\u300a\u300c"
    "\u300e\u3010\u3014\u3016\u3018\u301a\u301d\ufd3f\ufe17\ufe35\ufe37\ufe39\ufe3b\ufe3d"
    "\ufe3f\ufe41\ufe43\ufe47\ufe59\ufe5b\ufe5d\uff08\uff3b\uff5b\uff5f\uff62"
)
CLOSE_BRACKETS = (
    ">\u00bb\u203a)]}\u0f3b\u0f3d\u169c\u2046\u207e\u208e\u2309\u230b"
    "\u232a\u2769\u276b\u276d\u276f\u2771\u2773\u2775\u27c6\u27e7\u27e9\u27eb\u27ed\u27ef"
    "\u2984\u2986\u2988\u298a\u298c\u298e\u2990\u2992\u2994\u2996\u2998\u29d9\u29db\u29fd"
    "\u2e23\u2e25\u2e27\u2e29\u2e56\u2e58\u2e5a\u2e5c\u3009\u300b\u300d\u300f\u3011\u3015"
    "\u3017\u3019\u301b\u301e\u301f\ufd3e\ufe18\ufe36\ufe38\ufe3a\ufe3c\ufe3e\ufe40\ufe42"
    "\ufe44\ufe48\ufe5a\ufe5c\ufe5e\uff09\uff3d\uff5d\uff60\uff63"
)
_OPEN = re.escape(OPEN_BRACKETS)
_CLOSE = re.escape(CLOSE_BRACKETS)
_WORD = rf"(?:私密|不[参參][与與][回迴][忆憶]|no(?:[^\w{_OPEN}{_CLOSE}]|_){{0,8}}+recall)"
_PAD = r"\s*+"
_MARKER = re.compile(
    rf"[{_OPEN}]{_PAD}{_WORD}{_PAD}[{_CLOSE}]|\A{_PAD}[{_OPEN}]{_PAD}{_WORD}(?=\s|\Z)"
)


def fold(text: str) -> str:
    """`text` as markers are matched in (`normalise.view`, line breaks inside words joined)."""
    return view(text, joins=LINE_BREAKS).text


def has_marker(text: str | None) -> bool:
    """Whether `text` (a title, a first user message) carries a private marker."""
    if not text:
        return False
    return _MARKER.search(fold(text)) is not None


def is_private_title(title: str | None, *, unreadable: bool = False) -> bool:
    """Whether a title makes its session private: it carries a marker or could not be read."""
    return unreadable or has_marker(title)
