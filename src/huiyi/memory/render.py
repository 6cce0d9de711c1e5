"""The memory block put in front of the model.

For each non-empty store: a rule line of `═`, a header with the store's purpose and usage
(`MEMORY (your notes about this workspace) [62% — 1,364/2,200 chars]`, percent floored,
thousands separators, `⚠ OVER BUDGET` after it when over), the rule again, then the entries
joined by `§` lines. Every entry is scanned again here, because a person's hand edit is not
scanned when saved: a poisoned entry is shown as `[BLOCKED: <rule>]` and never reaches the
model. The scan here is the rules plus the meaning detector's kept verdicts
(`huiyi.memory.verdicts`), never the detector itself: a hook renders this block and must not
load the embedding model.

The output depends on the files only (the stores and the kept verdicts; no clock, no hit
counts, no dict ordering), so the same files render to the same bytes and the harness's prompt
cache stays warm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from huiyi.memory.config import Target
from huiyi.memory.ops import percent
from huiyi.memory.store import JOINER, Snapshot
from huiyi.safety import threats

if TYPE_CHECKING:
    from huiyi.memory.verdicts import Verdicts

RULE = "═" * 46

TITLES = {
    Target.USER: "USER PROFILE (who the user is)",
    Target.MEMORY: "MEMORY (your notes about this workspace)",
}


def header(target: Target, usage: int, limit: int) -> str:
    line = f"{TITLES[target]} [{percent(usage, limit)}% — {usage:,}/{limit:,} chars]"
    return line + " ⚠ OVER BUDGET" if usage > limit else line


def blocked(entry: str, verdicts: Verdicts | None = None) -> str | None:
    """The rule that hides `entry` from the model: the rules' first, else the rule of a kept
    verdict of the meaning detector; None when it is shown."""
    rules = threats.scan(entry)
    if rules:
        return rules[0]
    return verdicts.blocked(entry) if verdicts is not None else None


def shown_entry(entry: str, verdicts: Verdicts | None = None) -> str:
    """The entry, or `[BLOCKED: <rule>]` when the threat scan (or a kept verdict) refuses it."""
    rule = blocked(entry, verdicts)
    return f"[BLOCKED: {rule}]" if rule else entry


def render_store(snapshot: Snapshot, verdicts: Verdicts | None = None) -> str:
    """One store's block, or "" when it has no entries."""
    if snapshot.damage:
        body = (
            f"[UNREADABLE: {snapshot.damage}; ask the user to fix it with `huiyi memory show "
            f"--target {snapshot.target.value}`]"
        )
        return "\n".join([RULE, header(snapshot.target, 0, snapshot.limit), RULE, body])
    if not snapshot.entries:
        return ""
    body = JOINER.join(shown_entry(e, verdicts) for e in snapshot.entries)
    return "\n".join([RULE, header(snapshot.target, snapshot.usage, snapshot.limit), RULE, body])


def render(snapshots: Sequence[Snapshot], verdicts: Verdicts | None = None) -> str:
    """All non-empty stores, user first, separated by a blank line."""
    order = {Target.USER: 0, Target.MEMORY: 1}
    blocks = [render_store(s, verdicts) for s in sorted(snapshots, key=lambda s: order[s.target])]
    return "\n\n".join(b for b in blocks if b)
