"""The no-query recall: what compaction pushed out of the current session, as a skeleton.

One line per event: a user message cut to 80 characters, a tool call as name + target +
result summary, an assistant message by its first line and the calls it made (their results
folded in); host-injected messages are left out. The "shown:" header line says how the lines
add up to the compacted events: what was folded into them and what was left out.
Over budget, the skeleton first folds each user message with what followed it into one line,
then keeps only user messages sampled evenly. The first and last user message stay as anchors,
labelled honestly: of the compacted range when it was read whole, else of what was read.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from huiyi.model import Event, Kind, Surface
from huiyi.recall.render import clean, first_line, one_line, plural
from huiyi.safety.budget import (
    SKELETON_MAX_CHARS,
    SKELETON_MAX_EVENTS,
    SKELETON_TAIL_EVENTS,
    Budget,
)
from huiyi.sources.base import is_own_tool, is_own_traffic
from huiyi.store.index import Index
from huiyi.text.toolcalls import split_tool_calls

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
    conn: Index,
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
    total = conn.count_events(sid, surface=Surface.SHADOWED)
    if not total:
        return Compacted([], 0, True)
    out: list[Event] = []
    chars = 0
    cut = ""
    for event in conn.events(sid, session_id, surface=Surface.SHADOWED):
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
            conn.events(
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


def _target(arguments: str) -> str:
    """What a call works on: the first of the usual argument keys, from its JSON arguments."""
    arguments = arguments.strip()
    if not arguments:
        return ""
    try:
        args = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read
        return one_line(arguments, 60)
    if not isinstance(args, dict):
        return ""
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            return one_line(value, 60)
    return ""


def _logged_calls(text: str) -> list[tuple[str, str]]:
    """The `(name, arguments)` calls of a tool-call event's text: `NAME ARGUMENTS` per call,
    ARGUMENTS a JSON value that may itself span lines."""
    decoder = json.JSONDecoder()
    calls: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        name_end = i
        while name_end < len(text) and not text[name_end].isspace():
            name_end += 1
        name = text[i:name_end]
        j = name_end
        while j < len(text) and text[j] in " \t":
            j += 1
        try:
            _, end = decoder.raw_decode(text, j)
        except (ValueError, RecursionError):
            end = text.find("\n", j)
            end = len(text) if end < 0 else end
        calls.append((name, text[j:end].strip()))
        i = end
    return calls


def _result_summary(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "(empty)"
    head = one_line(lines[0], 60)
    return head if len(lines) == 1 else f"{head} (+{plural(len(lines) - 1, 'line')})"


@dataclass(slots=True)
class _Call:
    name: str
    target: str
    result: str | None = None

    def render(self) -> str:
        call = f"{self.name} {self.target}".rstrip()
        return call if self.result is None else f"{call} → {self.result}"


_INJECTED = "host-injected message"
_OTHER = "other event"
_OWN = "huiyi tool call"


@dataclass(slots=True)
class Line:
    """One skeleton line, or (`left_out` set) a compacted event the skeleton does not show."""

    seq: int
    kind: Kind
    head: str
    #: tool calls the line carries, each with its result once that is folded in
    calls: list[_Call] = field(default_factory=list)
    #: compacted events this line stands for: its own, plus the tool results folded into it
    events: int = 1
    #: why this event is not shown ("host-injected message", "other event"); "" when shown
    left_out: str = ""

    @property
    def shown(self) -> bool:
        return not self.left_out

    @property
    def text(self) -> str:
        if not self.calls:
            return self.head
        calls = "; ".join(call.render() for call in self.calls)
        if self.kind is Kind.ASSISTANT:  # the message's first line, then what it called
            return f"{self.head} [{calls}]"
        return f"{self.head} {calls}"


def skeleton_lines(events: list[Event]) -> tuple[list[Line], int]:
    """One line per event, tool results folded into their calls; returns lines and masks.

    An assistant message shows its first line and the calls it made (a DSH message with text
    keeps its calls in the text, see `split_tool_calls`); a message with calls only is a `T#`
    line. Each tool result is folded into the earliest open call of its name, or gets an `R#`
    line of its own. Host-injected messages are left out: kept as lines with `left_out`
    set, so that the header can count them."""
    lines: list[Line] = []
    masks = 0
    open_calls: list[tuple[Line, _Call]] = []  # calls still waiting for their result
    for event in events:
        if event.injected and event.kind is not Kind.SUMMARY:
            lines.append(Line(event.seq, event.kind, "", left_out=_INJECTED))
            continue
        if is_own_traffic(event):  # an earlier recall is not what the session was about
            lines.append(Line(event.seq, event.kind, "", left_out=_OWN))
            continue
        text, n = clean(event.text)
        masks += n
        seq = event.seq
        if event.kind is Kind.USER:
            lines.append(Line(seq, event.kind, f"U#{seq} {one_line(text, 80)}"))
            open_calls = []
        elif event.kind in (Kind.ASSISTANT, Kind.TOOL_CALL):
            if event.kind is Kind.ASSISTANT:
                body, calls = split_tool_calls(text)
                line = Line(seq, event.kind, f"A#{seq} {first_line(body, 120)}")
            else:
                calls = _logged_calls(text)
                if event.tool_name and not calls:
                    calls = [(event.tool_name, "")]
                line = Line(seq, event.kind, f"T#{seq}")
            line.calls = [
                _Call(name, _target(arguments))
                for name, arguments in calls
                if not is_own_tool(name)
            ]
            lines.append(line)
            open_calls = [(line, call) for call in line.calls]
        elif event.kind is Kind.TOOL_RESULT:
            summary = _result_summary(text)
            match = next(
                (
                    (line, call)
                    for line, call in open_calls
                    if event.tool_name is None or call.name == event.tool_name
                ),
                None,
            )
            if match is not None:
                line, call = match
                call.result = summary
                line.events += 1
                open_calls.remove(match)
            else:
                name = event.tool_name or "tool"
                lines.append(Line(seq, event.kind, f"R#{seq} {name} → {summary}"))
        elif event.kind is Kind.SUMMARY:
            lines.append(Line(seq, event.kind, f"S#{seq} {one_line(text, 160)}"))
            open_calls = []
        else:
            lines.append(Line(seq, event.kind, "", left_out=_OTHER))
    return lines, masks


def _accounting(lines: list[Line], *, complete: bool, folded_steps: int = 0) -> str:
    """How the lines add up: "for N compacted events: X folded in, Y left out"."""
    events = sum(ln.events for ln in lines)
    results = sum(ln.events - 1 for ln in lines if ln.shown)
    left_out = Counter(ln.left_out for ln in lines if ln.left_out)
    parts = []
    folded = []
    if folded_steps:
        folded.append(plural(folded_steps, "step"))
    if results:
        folded.append(plural(results, "tool result"))
    if folded:
        into = "into their user messages" if folded_steps else "into their calls"
        parts.append(f"{' and '.join(folded)} folded {into}")
    parts += [f"{plural(n, why)} left out" for why, n in sorted(left_out.items())]
    counted = f"for {plural(events, 'compacted event')}" + ("" if complete else " read")
    return counted + (f": {', '.join(parts)}" if parts else "")


def fit(lines: list[Line], max_chars: int, *, complete: bool) -> tuple[list[str], str]:
    """Lines within `max_chars`: as they are, folded by user message, or users sampled.

    Returns the lines and how they were chosen, with counts that add up: the shown lines,
    what was folded into them and what was left out make every compacted event."""
    hidden = [ln for ln in lines if not ln.shown]
    lines = [ln for ln in lines if ln.shown]
    everything = [*lines, *hidden]
    full = [ln.text for ln in lines]
    if _size(full) <= max_chars:
        counts = _accounting(everything, complete=complete)
        return full, f"{plural(len(full), 'line')} {counts}"
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
        counts = _accounting(everything, complete=complete, folded_steps=len(lines) - len(users))
        return folded, f"folded by user message: {plural(len(users), 'user message')} {counts}"
    if not users:
        kept = _sample(full, max_chars)
        counts = _accounting(everything, complete=complete)
        return kept, f"{len(kept)} of {len(full)} lines, evenly sampled, {counts}"
    user_lines = [lines[i].text for i in users]
    anchor_scope = "of the compacted range" if complete else "of what was read"
    first = f"{user_lines[0]}   ← first user message {anchor_scope}"
    last_label = f"{user_lines[-1]}   ← last user message {anchor_scope}"
    counts = _accounting(everything, complete=complete)
    if len(user_lines) == 1:
        rest = f"(the other {plural(len(full) - 1, 'line')} left out)"
        return [_cut(first, max_chars)], f"1 user message {rest} {counts}"
    middle = _sample(user_lines[1:-1], max_chars - _size([first, last_label]) - 40)
    kept = [first, *middle, last_label]
    if _size(kept) > max_chars:  # even the anchors are too long: shorten them
        kept = [_cut(first, max_chars // 2 - 2), _cut(last_label, max_chars // 2 - 2)]
    return kept, (
        f"{len(kept)} of {len(user_lines)} user messages, evenly sampled "
        f"(the other {plural(len(full) - len(kept), 'line')} left out) {counts}"
    )


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
