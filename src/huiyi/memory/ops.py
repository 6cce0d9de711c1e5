"""The `memory` operation: add, replace, remove and all-or-nothing batches, with their replies.

Rules (docs/memory.md has the user-facing version):

* `old_text` names an entry by a substring that must match exactly one entry. Identical
  duplicate entries count as one (a replace keeps one copy, a remove drops them all). When an
  exact substring matches nothing, a whitespace- and case-insensitive match is tried. None or
  several: refused, with short previews of the candidates.
* The budget is checked on the final state only, so a batch can remove and add in one go. A
  change that would leave a store over its limit is refused whole unless it makes the store
  smaller (so an over-budget store, e.g. after a hand edit, can always be consolidated).
* An exact duplicate add is a successful no-op; adding the exact text of an archived entry
  brings that entry back.
* A damaged store (see `store`) is backed up and not rewritten.
* The budget is checked before the threat scan (on a plain read, and again under the lock), so
  a write that cannot fit is refused without scanning it. Model writes then pass the threat
  scan, entry by entry and, for a batch, all new entries together (an attack split across
  them); a person's writes (web page) may skip it but are budgeted the same way.

Replies are short and final on success ("saved; memory at 62% — 1,364/2,200 chars") and never
echo the entries; refusals say what to do next, and an overflow refusal lists the entries so the
model can consolidate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from huiyi.memory.config import Target
from huiyi.memory.store import (
    SEPARATOR,
    AfterRead,
    Change,
    HitRecord,
    Plan,
    Snapshot,
    Store,
    entry_key,
    transact,
    usage_of,
)
from huiyi.safety import threats
from huiyi.safety.redact import redact

if TYPE_CHECKING:
    from huiyi.safety.meaning import Meaning

ACTIONS = ("add", "replace", "remove")
#: the refusal of an exact edit whose entry changed since the editor saw it
CHANGED = (
    "refused: this entry was changed or removed meanwhile (by the model, another window or "
    "an editor); nothing was saved. Look at its current text and edit that"
)
PREVIEW_CHARS = 70
MAX_CANDIDATES = 6


@dataclass(frozen=True, slots=True)
class Operation:
    """One change to one store."""

    action: str
    target: Target
    content: str | None = None
    old_text: str | None = None


@dataclass(slots=True)
class Outcome:
    """What an operation did, as a reply for the model plus facts for `--json` and the web."""

    ok: bool
    message: str
    changed: bool = False
    #: why it was refused: bad_argument, no_match, ambiguous, overflow, threat, damaged,
    #: changed
    reason: str | None = None
    rule: str | None = None
    usage: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "changed": self.changed,
            "message": self.message,
            "reason": self.reason,
            "rule": self.rule,
            "usage": self.usage,
        }


class OperationError(Exception):
    """A refused operation inside a plan (internal; becomes a refusal Outcome)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def percent(usage: int, limit: int) -> int:
    return usage * 100 // limit if limit > 0 else 0


def usage_phrase(target: Target, usage: int, limit: int) -> str:
    """`memory at 62% — 1,364/2,200 chars`."""
    return f"{target.value} at {percent(usage, limit)}% — {usage:,}/{limit:,} chars"


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def preview(entry: str, needle: str | None = None, width: int = PREVIEW_CHARS) -> str:
    """One line of at most `width` characters, centred on `needle` when it occurs; secrets
    are masked before the cut, so a cut never keeps part of one."""
    flat = re.sub(r"\s+", " ", redact(entry).text).strip()
    if len(flat) <= width:
        return flat
    at = flat.find(re.sub(r"\s+", " ", needle).strip()) if needle else -1
    start = max(0, min(at - width // 3, len(flat) - width)) if at > 0 else 0
    text = flat[start : start + width]
    return ("…" if start > 0 else "") + text + ("…" if start + width < len(flat) else "")


def find_matches(entries: Sequence[str], old_text: str) -> list[int]:
    """Indexes of entries containing `old_text` (exact first, then folded)."""
    exact = [i for i, entry in enumerate(entries) if old_text in entry]
    if exact:
        return exact
    folded = _fold(old_text)
    if not folded:
        return []
    return [i for i, entry in enumerate(entries) if folded in _fold(entry)]


def one_entry(entries: Sequence[str], old_text: str, target: Target, where: str) -> str:
    matches = find_matches(entries, old_text)
    distinct = list(dict.fromkeys(entries[i] for i in matches))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        shown = "\n".join(f"- {preview(e)}" for e in entries[:MAX_CANDIDATES]) or "(it is empty)"
        more = (
            f"\n(and {len(entries) - MAX_CANDIDATES} more)" if len(entries) > MAX_CANDIDATES else ""
        )
        raise OperationError(
            "no_match",
            f"old_text {old_text!r} matches no entry in {target.value}{where}; "
            f"quote a short exact piece of one of these:\n{shown}{more}",
        )
    shown = "\n".join(f"- {preview(e, old_text)}" for e in distinct[:MAX_CANDIDATES])
    raise OperationError(
        "ambiguous",
        f"old_text {old_text!r} matches {len(distinct)} entries in {target.value}{where}; "
        f"use a longer piece that names exactly one:\n{shown}",
    )


_SEPARATOR_LINE = re.compile(rf"^[ \t]*{SEPARATOR}[ \t]*$", re.MULTILINE)


def clean_content(content: str | None, action: str) -> str:
    """The entry text to store, or an OperationError saying what is wrong with it."""
    if content is None or not content.strip():
        raise OperationError("bad_argument", f"{action} needs non-empty content")
    text = content.replace("\r\n", "\n").replace("\r", "\n").strip()
    if _SEPARATOR_LINE.search(text):
        raise OperationError(
            "bad_argument",
            f"content must not contain a line holding only {SEPARATOR} (it separates entries); "
            "save separate facts as separate operations",
        )
    return text


def validate(operations: Sequence[Operation]) -> list[Operation]:
    """Check arguments before any file is touched (the threat scan comes later, see
    `run_operations`)."""
    checked: list[Operation] = []
    many = len(operations) > 1
    for index, op in enumerate(operations, 1):
        label = f"operation {index} ({op.action}): " if many else ""
        try:
            if op.action not in ACTIONS:
                raise OperationError(
                    "bad_argument", f"action must be add, replace or remove, not {op.action!r}"
                )
            content: str | None = None
            if op.action in ("add", "replace"):
                content = clean_content(op.content, op.action)
            if op.action in ("replace", "remove") and not (op.old_text or "").strip():
                raise OperationError(
                    "bad_argument", f"{op.action} needs old_text: a short piece of the entry"
                )
        except OperationError as exc:
            raise OperationError(exc.reason, label + exc.message) from None
        checked.append(Operation(op.action, op.target, content, op.old_text))
    return checked


def scan_operations(operations: Sequence[Operation], meaning: Meaning | None = None) -> None:
    """Run the threat scan on every new entry, then on a batch's new entries together (an
    attack split across them); raise `ThreatRefused` on the first hit. `meaning` adds the
    embedding model's intent detector to the rules (`huiyi.safety.meaning`)."""
    many = len(operations) > 1
    for index, op in enumerate(operations, 1):
        if op.content is None:
            continue
        rules = threats.scan(op.content, meaning=meaning)
        if rules:
            label = f"operation {index} ({op.action}): " if many else ""
            raise ThreatRefused(rules[0], label)
    indexes = [i for i, op in enumerate(operations, 1) if op.content is not None]
    together = threats.scan_together(
        [op.content for op in operations if op.content is not None], meaning=meaning
    )
    if together:
        named = ", ".join(str(i) for i in indexes)
        raise ThreatRefused(together[0], f"operations {named} together: ")


class ThreatRefused(OperationError):
    """The threat scan refused a write; `label` says which operation(s) of a batch."""

    def __init__(self, rule: str, label: str = "") -> None:
        super().__init__(
            "threat",
            f"{label}refused by the threat scan, rule {rule}: the content "
            f"{threats.describe(rule)}. Memory is shown to the model in every future "
            "session, so it cannot hold this; nothing was saved.",
        )
        self.rule = rule


@dataclass(slots=True)
class _State:
    entries: list[str]
    archived: list[str]
    #: keys whose record gets a hit now, and new key -> key whose record it inherits
    used: set[str] = field(default_factory=set)
    inherit: dict[str, str] = field(default_factory=dict)
    changed: bool = False


def _apply_one(state: _State, op: Operation, where: str) -> str:
    """Apply `op` to `state`; return the verb for the reply."""
    if op.action == "add":
        assert op.content is not None
        if op.content in state.entries:
            state.used.add(entry_key(op.content))
            return "already saved"
        if op.content in state.archived:
            state.archived = [e for e in state.archived if e != op.content]
            state.used.add(entry_key(op.content))
        state.entries.append(op.content)
        state.changed = True
        return "saved"
    assert op.old_text is not None
    old = one_entry(state.entries, op.old_text, op.target, where)
    if op.action == "remove":
        state.entries = [e for e in state.entries if e != old]
        state.changed = True
        return "removed"
    assert op.content is not None
    if op.content == old:
        state.used.add(entry_key(old))
        return "already saved"
    replaced: list[str] = []
    for entry in state.entries:
        if entry == old:
            if op.content not in replaced:
                replaced.append(op.content)
        elif entry != op.content or op.content not in replaced:
            replaced.append(entry)
    state.entries = replaced
    state.inherit[entry_key(op.content)] = entry_key(old)
    state.used.add(entry_key(op.content))
    state.changed = True
    return "replaced"


def new_hits(
    old: dict[str, HitRecord],
    entries: Sequence[str],
    archived: Sequence[str],
    now: int,
    used: set[str] | None = None,
    inherit: dict[str, str] | None = None,
) -> dict[str, HitRecord]:
    """Hit records for the new state: kept, inherited, started or bumped; stale ones dropped."""
    used = used or set()
    inherit = inherit or {}
    records: dict[str, HitRecord] = {}
    for entry in [*entries, *archived]:
        key = entry_key(entry)
        if key in records:
            continue
        base = old.get(key) or old.get(inherit.get(key, ""))
        rec = HitRecord(base.hits, base.last, base.first) if base else HitRecord(first=now)
        if key in used:
            rec.hits += 1
            rec.last = now
        records[key] = rec
    return records


def overflow_message(target: Target, entries: Sequence[str], after: int, limit: int) -> str:
    before = usage_of(entries)
    lines = [
        f"refused: this would put {target.value} at {after:,}/{limit:,} chars "
        f"({percent(after, limit)}%), over its limit; nothing was changed. Consolidate: "
        "replace or remove entries (one operations[] batch can remove and add at once), "
        "then try again.",
        f"Current {target.value} entries ({before:,}/{limit:,} chars, {percent(before, limit)}%):",
    ]
    lines.extend(f"{i}. {entry}" for i, entry in enumerate(entries, 1))
    return "\n".join(lines)


def damaged_message(store: Store, snapshot: Snapshot) -> str:
    backup = store.backup(snapshot)
    kept = f"; a copy was saved to {backup}" if backup else ""
    return (
        f"refused: the {store.target.value} file no longer parses ({snapshot.damage}){kept}. "
        f"Nothing was changed. Ask the user to fix {store.paths.main} by hand "
        f"(entries are separated by a line holding only {SEPARATOR})."
    )


def plan_operations(
    stores: dict[Target, Store],
    operations: Sequence[Operation],
    now: int,
    *,
    exact: bool = False,
) -> Callable[[dict[Target, Snapshot]], Plan[Outcome]]:
    """The transaction plan for already-validated operations. `exact`: each `old_text` is a
    whole entry as the caller last saw it, and an operation whose entry is no longer there
    word for word is refused (`changed`) rather than matched as a piece of another one."""
    many = len(operations) > 1

    def plan(snapshots: dict[Target, Snapshot]) -> Plan[Outcome]:
        states: dict[Target, _State] = {}
        verbs: list[str] = []
        for index, op in enumerate(operations, 1):
            snap = snapshots[op.target]
            if snap.damage:
                return Plan(_refusal("damaged", damaged_message(stores[op.target], snap)))
            state = states.setdefault(op.target, _State(list(snap.entries), list(snap.archived)))
            if exact and op.old_text is not None and op.old_text not in state.entries:
                return Plan(_refusal("changed", CHANGED, snapshots))
            try:
                verbs.append(_apply_one(state, op, ""))
            except OperationError as exc:
                label = f"operation {index} ({op.action}): " if many else ""
                return Plan(_refusal(exc.reason, f"refused: {label}{exc.message}"))
        for target, state in states.items():
            snap = snapshots[target]
            after = usage_of(state.entries)
            if after > snap.limit and after > snap.usage:
                message = overflow_message(target, snap.entries, after, snap.limit)
                return Plan(_refusal("overflow", message, snapshots))
        changes: dict[Target, Change] = {}
        for target, state in states.items():
            snap = snapshots[target]
            hits = new_hits(
                snap.hits, state.entries, state.archived, now, state.used, state.inherit
            )
            changes[target] = Change(
                entries=state.entries if state.changed else None,
                archived=state.archived if state.archived != snap.archived else None,
                hits=hits,
            )
        changed = any(state.changed for state in states.values())
        usage = {
            t.value: {"usage": usage_of(s.entries), "limit": snapshots[t].limit}
            for t, s in states.items()
        }
        phrases = "; ".join(
            usage_phrase(t, usage_of(s.entries), snapshots[t].limit) for t, s in states.items()
        )
        if many:
            head = f"applied {len(operations)} operations" if changed else "no change"
        else:
            head = verbs[0] if changed else "already saved; no change"
        return Plan(Outcome(True, f"{head}; {phrases}", changed, usage=usage), changes)

    return plan


def _refusal(reason: str, message: str, snapshots: dict[Target, Snapshot] | None = None) -> Outcome:
    usage = {t.value: {"usage": s.usage, "limit": s.limit} for t, s in (snapshots or {}).items()}
    return Outcome(False, message, reason=reason, usage=usage)


def budget_refusal(stores: dict[Target, Store], operations: Sequence[Operation]) -> Outcome | None:
    """The overflow refusal for operations that cannot fit, decided from a plain read before
    anything is scanned, or None when they may fit.

    The threat scan costs time in proportion to the text; an entry that can never be saved
    (a 30,000-character add into a 2,200-character store) is refused before it is scanned,
    so an oversized write cannot hold up the caller. Anything else this read finds wrong (no
    match, a damaged file) is left to the transaction, which re-reads the files under the
    lock and decides for good.
    """
    snapshots = {t: stores[t].read() for t in dict.fromkeys(op.target for op in operations)}
    if any(snap.damage for snap in snapshots.values()):
        return None
    states: dict[Target, _State] = {}
    for op in operations:
        snap = snapshots[op.target]
        state = states.setdefault(op.target, _State(list(snap.entries), list(snap.archived)))
        try:
            _apply_one(state, op, "")
        except OperationError:
            return None
    for target, state in states.items():
        snap = snapshots[target]
        after = usage_of(state.entries)
        if after > snap.limit and after > snap.usage:
            message = overflow_message(target, snap.entries, after, snap.limit)
            return _refusal("overflow", message, snapshots)
    return None


def run_operations(
    stores: dict[Target, Store],
    operations: Sequence[Operation],
    *,
    scan: bool,
    now: int,
    after_read: AfterRead | None = None,
    exact: bool = False,
    meaning: Meaning | None = None,
) -> Outcome:
    """Check arguments, then the budget, then scan (with `meaning` when given), then apply
    `operations` as one all-or-nothing transaction. The budget comes before the scan: a write
    that cannot fit is refused without paying for a scan of its text."""
    if not operations:
        return Outcome(False, "refused: operations is empty", reason="bad_argument")
    try:
        checked = validate(operations)
    except OperationError as exc:
        return Outcome(False, f"refused: {exc.message}", reason=exc.reason)
    overflow = budget_refusal(stores, checked)
    if overflow is not None:
        return overflow
    if scan:
        try:
            scan_operations(checked, meaning)
        except ThreatRefused as exc:
            return Outcome(False, exc.message, reason="threat", rule=exc.rule)
    involved = [stores[t] for t in dict.fromkeys(op.target for op in checked)]
    plan = plan_operations(stores, checked, now, exact=exact)
    return transact(involved, plan, after_read=after_read)
