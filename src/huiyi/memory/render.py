"""The memory block put in front of the model.

For each non-empty store: a rule line of `═`, a header with the store's purpose and usage
(`MEMORY (your notes about this workspace) [62% — 1,364/2,200 chars]`, percent floored,
thousands separators, `⚠ OVER BUDGET` after it when over), the rule again, then the entries
joined by `§` lines. Every entry is scanned again here, because a person's hand edit is not
scanned when saved: a poisoned entry is shown as `[BLOCKED: <rule>]` and never reaches the
model.

The output depends on the files only (no clock, no hit counts, no dict ordering), so the same
files render to the same bytes and the harness's prompt cache stays warm.
"""

from __future__ import annotations

from collections.abc import Sequence

from huiyi.memory.config import Target
from huiyi.memory.ops import percent
from huiyi.memory.store import JOINER, Snapshot
from huiyi.safety import threats

RULE = "═" * 46

TITLES = {
    Target.USER: "USER PROFILE (who the user is)",
    Target.MEMORY: "MEMORY (your notes about this workspace)",
}


def header(target: Target, usage: int, limit: int) -> str:
    line = f"{TITLES[target]} [{percent(usage, limit)}% — {usage:,}/{limit:,} chars]"
    return line + " ⚠ OVER BUDGET" if usage > limit else line


def shown_entry(entry: str) -> str:
    """The entry, or `[BLOCKED: <rule>]` when the threat scan refuses it."""
    rules = threats.scan(entry)
    return f"[BLOCKED: {rules[0]}]" if rules else entry


def render_store(snapshot: Snapshot) -> str:
    """One store's block, or "" when it has no entries."""
    if snapshot.damage:
        body = (
            f"[UNREADABLE: {snapshot.damage}; ask the user to fix it with `huiyi memory show "
            f"--target {snapshot.target.value}`]"
        )
        return "\n".join([RULE, header(snapshot.target, 0, snapshot.limit), RULE, body])
    if not snapshot.entries:
        return ""
    body = JOINER.join(shown_entry(e) for e in snapshot.entries)
    return "\n".join([RULE, header(snapshot.target, snapshot.usage, snapshot.limit), RULE, body])


def render(snapshots: Sequence[Snapshot]) -> str:
    """All non-empty stores, user first, separated by a blank line."""
    order = {Target.USER: 0, Target.MEMORY: 1}
    blocks = [render_store(s) for s in sorted(snapshots, key=lambda s: order[s.target])]
    return "\n\n".join(b for b in blocks if b)
