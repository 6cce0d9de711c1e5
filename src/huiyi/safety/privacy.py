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

A **marker** is one of the words `私密`, `no-recall` or `不参与回忆` between brackets. Before
matching, text is NFKC-folded (full-width `［］（）` become `[]()`) and case-folded, and
invisible characters (Unicode format characters such as zero-width spaces and joiners, soft
hyphens and byte-order marks; combining marks) are removed. The brackets may be `[]`, `()`,
`{}`, `【】`, `〔〕`, `〖〗`, `〘〙`, `〚〛`, `「」`, `『』`, in any
pairing; spaces may stand inside them; `no` and `recall` may be joined by a hyphen or dash, an
underscore, spaces, or nothing. So `[私密]`, `【私密】`, `（私密）`, `[私密 ]`,
`[No Recall]`, `[NO_RECALL]`, and `[no-recall]` with a zero-width space or a soft hyphen inside
all mark a session; `私密` without brackets does not.

This module only recognises markers; the index applies the rule (`huiyi.store.ingest`) and
every reader of it keeps private sessions out (`sessions.is_private`).
"""

from __future__ import annotations

import re
import unicodedata

#: The words, as they appear between brackets after folding (see the module docstring).
PRIVATE_WORDS = ("私密", "no-recall", "不参与回忆")

_OPEN = "[({【〔〖〘〚「『"
_CLOSE = "])}】〕〗〙〛」』"
_MARKER = re.compile(
    rf"[{re.escape(_OPEN)}]\s*(?:私密|no[\s\-_‐‑‒–—―]*recall|不参与回忆)\s*[{re.escape(_CLOSE)}]"
)
#: Removed before matching: format characters (zero-width, soft hyphen, BOM, bidi marks) and
#: combining marks, which a person cannot see and which would otherwise split a marker.
_INVISIBLE = frozenset({"Cf", "Mn", "Me"})


def fold(text: str) -> str:
    """`text` as markers are matched in: NFKC, case-folded, invisible characters removed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch) not in _INVISIBLE)


def has_marker(text: str | None) -> bool:
    """Whether `text` (a title, a first user message) carries a private marker."""
    if not text:
        return False
    return _MARKER.search(fold(text)) is not None


def is_private_title(title: str | None, *, unreadable: bool = False) -> bool:
    """Whether a title makes its session private: it carries a marker or could not be read."""
    return unreadable or has_marker(title)
