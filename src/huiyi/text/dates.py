"""How huiyi writes a time for people: `2026-12-01 20:13`, in the machine's local time zone.

Times are epoch milliseconds everywhere in the index; this is the one place that turns them
into text, so the CLI, the recall tools and the web page all show the same form.
"""

from __future__ import annotations

from datetime import datetime

__all__ = ["when"]


def when(ms: int) -> str:
    """`ms` (epoch milliseconds) as `YYYY-MM-DD HH:MM` local time; `-` for none (0)."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M") if ms else "-"
