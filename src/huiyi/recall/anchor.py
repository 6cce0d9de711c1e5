"""The compaction anchor: what the model should hold on to right after a compaction.

A compaction replaces the start of a session with a summary, and the summary is all the model
keeps. The anchor puts a little of the original back, next to it, for the next few turns: the
summary (at most `SUMMARY_CHARS`), up to `FRAGMENTS` original fragments of the range that was
shadowed (the user's own messages first, the latest ones, then the assistant's; each at most
`FRAGMENT_CHARS`), and the seqs to expand with `recall_expand`. It is recalled history, so it
leaves through the safety exit inside the untrusted-data envelope.

Which compaction: the index already knows, whatever the harness (Claude `compact_boundary`,
Codex `compacted`, a DSH surface replace): the newest SUMMARY event of the session is the
latest compaction, and the events it shadowed are the SHADOWED ones after the compaction
before it. A DSH prune (one tool result replaced, no summary) is no compaction here.

How long: `AnchorState` counts the user's turns after a compaction; the anchor is offered while
fewer than `ANCHOR_TURNS` have passed, then it expires, and at most once a turn: an anchor that
SessionStart offered (a resumed session: Claude Code and Codex both run SessionStart, then
UserPromptSubmit, before the first turn) is that turn's, so the prompt does not repeat it. A
compaction that huiyi first sees long after it happened (`FRESH_MS`; say, a session resumed
days later) is not anchored at all. The state is a few integers per session, so it can live in
a small file under HUIYI_HOME.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from huiyi.model import Event, Kind, Surface
from huiyi.recall.render import clean, one_line, plural, when
from huiyi.safety.exit import Delivered, deliver
from huiyi.sources.base import is_own_traffic
from huiyi.store.index import Index

__all__ = [
    "ANCHOR_TURNS",
    "FRAGMENTS",
    "FRAGMENT_CHARS",
    "FRESH_MS",
    "LABEL",
    "SUMMARY_CHARS",
    "AnchorState",
    "Compaction",
    "latest_compaction",
    "render_anchor",
]

SUMMARY_CHARS = 400
#: the summary is never cut shorter than this to fit a budget (then there is no anchor)
MIN_SUMMARY_CHARS = 60
FRAGMENTS = 3
FRAGMENT_CHARS = 160
#: the anchor is offered on this many user turns after a compaction, then it expires
ANCHOR_TURNS = 3
#: a compaction first seen more than this long after it happened is not anchored (6 hours)
FRESH_MS = 6 * 3600 * 1000
#: shadowed events looked at to find the fragments (the newest first)
SCAN_EVENTS = 2_000
LABEL = "what compaction removed from this session"


@dataclass(frozen=True, slots=True)
class Compaction:
    """The latest compaction of one session, as the anchor shows it."""

    session_id: str
    #: seq of the compaction's summary: the key the turns are counted from
    seq: int
    time: int
    summary: str
    #: how many events it shadowed, and the first and last of their seqs
    shadowed: int
    first: int | None
    last: int | None
    #: the original fragments, in seq order
    fragments: tuple[Event, ...] = ()


def latest_compaction(conn: Index, sid: int, session_id: str) -> Compaction | None:
    """The newest compaction of a session (None when it never had one)."""
    summaries = list(
        conn.events(sid, session_id, kinds=(Kind.SUMMARY.value,), newest_first=True, limit=2)
    )
    if not summaries:
        return None
    latest = summaries[0]
    after = summaries[1].seq + 1 if len(summaries) > 1 else None
    shadowed = list(
        conn.events(
            sid,
            session_id,
            from_seq=after,
            to_seq=latest.seq - 1,
            surface=Surface.SHADOWED,
            newest_first=True,
            limit=SCAN_EVENTS,
        )
    )
    return Compaction(
        session_id=session_id,
        seq=latest.seq,
        time=latest.time,
        summary=latest.text,
        shadowed=len(shadowed),
        first=shadowed[-1].seq if shadowed else None,
        last=shadowed[0].seq if shadowed else None,
        fragments=_fragments(shadowed),
    )


def _fragments(newest_first: list[Event]) -> tuple[Event, ...]:
    """Up to `FRAGMENTS` of the user's own words, the latest first, then the assistant's."""
    said = [e for e in newest_first if e.text.strip() and not e.injected and not is_own_traffic(e)]
    users = [e for e in said if e.kind is Kind.USER]
    replies = [e for e in said if e.kind is Kind.ASSISTANT]
    chosen = (users + replies)[:FRAGMENTS]
    return tuple(sorted(chosen, key=lambda e: e.seq))


def render_anchor(compaction: Compaction, max_chars: int) -> Delivered | None:
    """The anchor as it goes to the model, within `max_chars` (envelope included): fragments
    are dropped from the oldest, then the summary is cut; None when even that does not fit."""
    summary, masks = clean(compaction.summary)
    pieces = []
    for event in compaction.fragments:
        text, n = clean(event.text)
        masks += n
        who = "user" if event.kind is Kind.USER else "assistant"
        pieces.append(f"- #{event.seq} {who}: {one_line(text, FRAGMENT_CHARS)}")
    limit = SUMMARY_CHARS
    while True:
        body = _body(compaction, one_line(summary, limit), pieces)
        delivered = deliver(body, masks=masks, label=LABEL)
        over = len(delivered.text) - max_chars
        if over <= 0:
            return delivered
        if pieces:
            pieces = pieces[1:]
        elif limit > MIN_SUMMARY_CHARS:
            limit = max(MIN_SUMMARY_CHARS, limit - over)
        else:
            return None


def _body(compaction: Compaction, summary: str, pieces: list[str]) -> str:
    span = ""
    if compaction.first is not None:
        span = (
            f"; {plural(compaction.shadowed, 'event')} (seq {compaction.first}.."
            f"{compaction.last}) left your context"
        )
    lines = [
        f"compaction anchor: this session was compacted at {when(compaction.time)}{span}",
        f"summary: {summary}",
    ]
    if pieces:
        lines.append("original fragments (recall_expand(seq=N) shows the exact text around one):")
        lines += pieces
    lines.append("recall_history() with no query lists everything that was compacted away")
    return "\n".join(lines)


@dataclass(slots=True)
class AnchorState:
    """One session's anchor bookkeeping: which compaction, how many user turns since, whether
    SessionStart offered the anchor for the turn to come (`offered`), and the last seq
    PreCompact saw before a compaction ran (`noted`)."""

    compaction: int | None = None
    turns: int = 0
    noted: int | None = None
    offered: bool = False
    #: when this state last changed (epoch ms), to drop the oldest sessions' states
    seen: int = 0

    @property
    def active(self) -> bool:
        """Whether the anchor is still offered."""
        return self.compaction is not None and self.turns < ANCHOR_TURNS

    def at_session_start(self) -> bool:
        """Whether SessionStart offers the anchor; when it does, it is the next turn's."""
        self.offered = self.offered or self.active
        return self.active

    def at_prompt(self) -> bool:
        """A user prompt: one turn counted; whether the prompt may offer the anchor (not when
        SessionStart already offered it for this turn)."""
        offer = self.active and not self.offered
        if self.active:
            self.turns += 1
        self.offered = False
        return offer

    def follow(self, compaction: Compaction | None, now: int, *, known: bool) -> None:
        """Take the session's latest compaction into account: a new one starts the count (an
        old one, first seen long after it happened, starts it expired). `known` says whether
        this session had a state before."""
        if compaction is None or compaction.seq == self.compaction:
            return
        fresh = known or now - compaction.time <= FRESH_MS
        self.compaction = compaction.seq
        self.turns = 0 if fresh else ANCHOR_TURNS
        self.noted = None
        self.offered = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "compaction": self.compaction,
            "turns": self.turns,
            "noted": self.noted,
            "offered": self.offered,
            "seen": self.seen,
        }

    @classmethod
    def from_dict(cls, data: object) -> AnchorState:
        """A state read back from its file; anything malformed reads as a fresh state."""
        if not isinstance(data, dict):
            return cls()

        def number(key: str) -> int | None:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            compaction=number("compaction"),
            turns=max(number("turns") or 0, 0),
            noted=number("noted"),
            offered=data.get("offered") is True,
            seen=number("seen") or 0,
        )
