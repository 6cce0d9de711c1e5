"""Small text helpers shared by the recall tools: one-line cuts, labels, redacted text (times
are `huiyi.text.dates.when`, re-exported here for them)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from huiyi.safety.redact import redact
from huiyi.text.dates import when

if TYPE_CHECKING:
    from huiyi.model import Event

__all__ = ["KIND_LABEL", "clean", "event_label", "first_line", "one_line", "plural", "when"]

_SPACE = re.compile(r"\s+")


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def first_line(text: str, limit: int) -> str:
    for line in text.splitlines():
        if line.strip():
            return one_line(line, limit)
    return ""


def clean(text: str) -> tuple[str, int]:
    """Redacted text and the number of masks: always before any cut."""
    out = redact(text)
    return out.text, out.count


#: by `model.Kind`'s values (a `Kind` is its string): the CLI's printing of a search, which
#: the warm service answers, then imports no model module
KIND_LABEL = {
    "user": "user",
    "assistant": "assistant",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "summary": "summary",
}


def event_label(event: Event) -> str:
    label = KIND_LABEL.get(event.kind, str(event.kind))
    if event.tool_name and event.kind in ("tool_call", "tool_result"):
        label += f" {event.tool_name}"
    if event.injected:
        label += " [host-injected]"
    if event.surface == "shadowed":
        label += " [compacted]"
    return label


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
