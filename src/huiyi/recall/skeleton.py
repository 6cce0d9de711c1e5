"""The no-query recall: what compaction pushed out of the current session, as a skeleton.

One line per event: a user message cut to 80 characters, a tool call as name + target +
result summary, an assistant message by its first line; host-injected messages are left out.
Over budget, the skeleton first folds each user message with what followed it into one line,
then keeps only user messages sampled evenly. The first and last user message stay as anchors,
labelled honestly: of the compacted range when it was read whole, else of what was read.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from huiyi.model import Event, Kind, Surface
from huiyi.recall.render import clean, first_line, one_line, plural
from huiyi.safety.budget import (
    SKELETON_MAX_CHARS,
    SKELETON_MAX_EVENTS,
    SKELETON_TAIL_EVENTS,
    Budget,
)
from huiyi.store import queries

_TARGET_KEYS = (
    "file_path",
    "path",
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "file",
    "target",
    "name",
)


@dataclass(slots=True)
class Compacted:
    events: list[Event]
    total: int  # candidate events in the compacted range
    complete: bool  # every candidate was read
    masks: int = 0
    notes: list[str] = field(default_factory=list)


def read_compacted(
    conn: sqlite3.Connection,
    sid: int,
    session_id: str,
    budget: Budget,
    *,
    max_events: int = SKELETON_MAX_EVENTS,
    max_chars: int = SKELETON_MAX_CHARS,
) -> Compacted:
    """Shadowed events in seq order, within the caps.

    Only what the model once saw: DSH also logs each call as a log-only `tool/call`, which
    would repeat the call its (shadowed) assistant message already carries.
    """
    total = queries.count_events(conn, sid, surface=Surface.SHADOWED)
    if not total:
        return Compacted([], 0, True)
    out: list[Event] = []
    chars = 0
    cut = ""
    for event in queries.events(conn, sid, session_id, surface=Surface.SHADOWED):
        if len(out) >= max_events:
            cut = "candidate event cap"
            break
        if chars + len(event.text) > max_chars:
            cut = "source character cap"
            break
        if budget.expired:
            cut = "time budget"
            break
        out.append(event)
        chars += len(event.text)
    result = Compacted(out, total, complete=not cut)
    if cut:
        seen = {e.seq for e in out}
        last = list(
            queries.events(
                conn,
                sid,
                session_id,
                surface=Surface.SHADOWED,
                newest_first=True,
                limit=SKELETON_TAIL_EVENTS,
            )
        )
        tail = [e for e in reversed(last) if e.seq not in seen]
        tail_chars = sum(min(len(e.text), 20_000) for e in tail)
        if tail and tail_chars <= max_chars // 10:
            out.extend(tail)
            result.notes.append(
                f"read {plural(len(out) - len(tail), 'event')} from the start and the last "
                f"{len(tail)} of {total:,} compacted events: {cut}"
            )
        else:
            result.notes.append(f"read {len(out):,} of {total:,} compacted events: {cut}")
    return result


def _target(call_text: str) -> str:
    start = call_text.find("{")
    if start < 0:
        return ""
    try:
        args = json.loads(call_text[start:])
    except ValueError:
        return one_line(call_text[start:], 60)
    if not isinstance(args, dict):
        return ""
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            return one_line(value, 60)
    return ""


def _result_summary(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(empty)"
    head = one_line(lines[0], 60)
    return head if len(lines) == 1 else f"{head} (+{len(lines) - 1} lines)"


@dataclass(slots=True)
class Line:
    seq: int
    kind: Kind
    text: str


def skeleton_lines(events: list[Event]) -> tuple[list[Line], int]:
    """One line per event (tool result folded into its call); returns lines and masks."""
    lines: list[Line] = []
    masks = 0
    pending_call: Line | None = None
    for event in events:
        if event.injected and event.kind is not Kind.SUMMARY:
            continue
        text, n = clean(event.text)
        masks += n
        if event.kind is Kind.USER:
            lines.append(Line(event.seq, event.kind, f"U#{event.seq} {one_line(text, 80)}"))
        elif event.kind is Kind.ASSISTANT:
            lines.append(Line(event.seq, event.kind, f"A#{event.seq} {first_line(text, 120)}"))
        elif event.kind is Kind.TOOL_CALL:
            name = event.tool_name or first_line(text, 30).split(" ")[0]
            target = _target(text)
            pending_call = Line(event.seq, event.kind, f"T#{event.seq} {name} {target}".rstrip())
            lines.append(pending_call)
            continue
        elif event.kind is Kind.TOOL_RESULT:
            summary = _result_summary(text)
            if pending_call is not None:
                pending_call.text += f" → {summary}"
            else:
                name = event.tool_name or "tool"
                lines.append(Line(event.seq, event.kind, f"R#{event.seq} {name} → {summary}"))
        elif event.kind is Kind.SUMMARY:
            lines.append(Line(event.seq, event.kind, f"S#{event.seq} {one_line(text, 160)}"))
        pending_call = None
    return lines, masks


def fit(lines: list[Line], max_chars: int, *, complete: bool) -> tuple[list[str], str]:
    """Lines within `max_chars`: as they are, folded by user message, or users sampled."""
    full = [ln.text for ln in lines]
    if _size(full) <= max_chars:
        return full, "every compacted event, one line each"
    users = [i for i, ln in enumerate(lines) if ln.kind is Kind.USER]
    folded: list[str] = []
    for n, start in enumerate(users):
        end = users[n + 1] if n + 1 < len(users) else len(lines)
        steps = end - start - 1
        extra = f"  (+{plural(steps, 'step')})" if steps else ""
        folded.append(lines[start].text + extra)
    if users and users[0] > 0:
        folded.insert(0, f"(… {plural(users[0], 'step')} before the first user message)")
    if folded and _size(folded) <= max_chars:
        return folded, f"folded by user message ({plural(len(users), 'user message')})"
    if not users:
        kept = _sample(full, max_chars)
        return kept, f"{len(kept)} of {len(full)} lines, evenly sampled"
    user_lines = [lines[i].text for i in users]
    anchor_scope = "of the compacted range" if complete else "of what was read"
    first = f"{user_lines[0]}   ← first user message {anchor_scope}"
    last_label = f"{user_lines[-1]}   ← last user message {anchor_scope}"
    if len(user_lines) == 1:
        return [_cut(first, max_chars)], "one user message"
    middle = _sample(user_lines[1:-1], max_chars - _size([first, last_label]) - 40)
    kept = [first, *middle, last_label]
    if _size(kept) > max_chars:  # even the anchors are too long: shorten them
        kept = [_cut(first, max_chars // 2 - 2), _cut(last_label, max_chars // 2 - 2)]
    return kept, f"{len(kept)} of {len(user_lines)} user messages, evenly sampled"


def _size(lines: list[str]) -> int:
    return sum(len(ln) + 1 for ln in lines)


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


def _sample(lines: list[str], budget: int) -> list[str]:
    """The most lines that fit in `budget`, spread evenly over the list."""
    if budget <= 0 or not lines:
        return []
    for count in range(len(lines), 0, -1):
        step = len(lines) / count
        picked = [lines[int(i * step)] for i in range(count)]
        if _size(picked) <= budget:
            return picked
    return []
