"""Archiving: entries nobody used for a while leave the prompt but stay searchable.

An entry's last use is its last hit (a search that returned it, a write that touched it) or,
failing that, when huiyi first saw it. `sweep` moves every entry unused for `archive_days`
(30 by default, 0 never) from `<store>.md` to `<store>.archive.md`; `archive` moves one named
entry now; `restore` moves one archived entry back, within the store's budget like any add.
Rendering never archives (it must not change files), so entry points call `sweep` at session
start or on `huiyi memory archive`.
"""

from __future__ import annotations

from collections.abc import Callable

from huiyi.memory.config import Target
from huiyi.memory.ops import (
    OperationError,
    Outcome,
    damaged_message,
    new_hits,
    one_entry,
    overflow_message,
    usage_phrase,
)
from huiyi.memory.store import DAY_MS, Change, Plan, Snapshot, Store, entry_key, usage_of


def plan_sweep(
    store: Store, archive_days: int, now: int
) -> Callable[[dict[Target, Snapshot]], Plan[list[str]]]:
    """Move entries unused for `archive_days` to the archive; the result lists them."""

    def plan(snapshots: dict[Target, Snapshot]) -> Plan[list[str]]:
        snap = snapshots[store.target]
        if snap.damage:
            store.backup(snap)
            return Plan([])
        hits = new_hits(snap.hits, snap.entries, snap.archived, now)
        if archive_days <= 0:
            changed = hits != snap.hits
            return Plan([], {store.target: Change(hits=hits)} if changed else {})
        cutoff = now - archive_days * DAY_MS
        stale = [e for e in snap.entries if hits[entry_key(e)].last_used < cutoff]
        if not stale:
            return Plan([], {store.target: Change(hits=hits)} if hits != snap.hits else {})
        keep = [e for e in snap.entries if e not in stale]
        archived = [*snap.archived, *(e for e in stale if e not in snap.archived)]
        return Plan(stale, {store.target: Change(keep, archived, hits)})

    return plan


def plan_move(
    store: Store, old_text: str, now: int, *, restore: bool
) -> Callable[[dict[Target, Snapshot]], Plan[Outcome]]:
    """Archive one current entry, or restore one archived entry (budget checked)."""

    def plan(snapshots: dict[Target, Snapshot]) -> Plan[Outcome]:
        snap = snapshots[store.target]
        if snap.damage:
            return Plan(Outcome(False, damaged_message(store, snap), reason="damaged"))
        source = snap.archived if restore else snap.entries
        where = " (archived entries)" if restore else ""
        try:
            entry = one_entry(source, old_text, store.target, where)
        except OperationError as exc:
            return Plan(Outcome(False, f"refused: {exc.message}", reason=exc.reason))
        if restore:
            entries = [*snap.entries, entry] if entry not in snap.entries else list(snap.entries)
            archived = [e for e in snap.archived if e != entry]
            after = usage_of(entries)
            if after > snap.limit and after > snap.usage:
                message = overflow_message(store.target, snap.entries, after, snap.limit)
                return Plan(Outcome(False, message, reason="overflow"))
            used = {entry_key(entry)}
            verb = "restored"
        else:
            entries = [e for e in snap.entries if e != entry]
            archived = [*snap.archived, entry] if entry not in snap.archived else snap.archived
            used = set()
            verb = "archived"
        hits = new_hits(snap.hits, entries, archived, now, used)
        usage = {store.target.value: {"usage": usage_of(entries), "limit": snap.limit}}
        message = f"{verb}; {usage_phrase(store.target, usage_of(entries), snap.limit)}"
        return Plan(
            Outcome(True, message, changed=True, usage=usage),
            {store.target: Change(entries, archived, hits)},
        )

    return plan
