"""Private sessions: a title marker hides a session from every list, search and read.

Markers are matched on the NFKC-folded, case-folded title, so `[NO-RECALL]` and full-width
brackets count too. A session whose title could not be read is private: when in doubt, hide.
"""

from __future__ import annotations

import unicodedata

PRIVATE_MARKERS = ("[私密]", "[no-recall]", "[不参与回忆]")


def is_private_title(title: str | None, *, unreadable: bool = False) -> bool:
    if unreadable:
        return True
    if not title:
        return False
    folded = unicodedata.normalize("NFKC", title).casefold()
    return any(marker in folded for marker in PRIVATE_MARKERS)
