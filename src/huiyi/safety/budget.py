"""One budget per call: a clock plus deterministic caps that hold even when a step cannot be
interrupted (a single SQLite read, a large text). Whatever a cap or the clock cut is reported
in the output, never silently dropped.
"""

from __future__ import annotations

import time

TOOL_SECONDS = 20.0
AUTO_RECALL_SECONDS = 8.0

#: the no-query skeleton reads at most this many candidate events ...
SKELETON_MAX_EVENTS = 5_000
#: ... and this many characters of their source text, then tries to add the last events
SKELETON_MAX_CHARS = 1_500_000
SKELETON_TAIL_EVENTS = 64
#: recall_expand reads at most this many characters of source text
EXPAND_MAX_CHARS = 400_000


class Budget:
    """The clock of one call and what its caps cut (`notes`).

    A plain class: this module is on every hook's and tool's start-up path, where declaring a
    dataclass costs about a millisecond and importing `dataclasses` ten more."""

    __slots__ = ("notes", "seconds", "started")

    def __init__(self, seconds: float = TOOL_SECONDS) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.notes: list[str] = []

    @property
    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    @property
    def expired(self) -> bool:
        return self.left <= 0

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
