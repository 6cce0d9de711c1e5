"""The four recall tools, exactly as agents call them, behind the one safety exit.

`Recall` is built per call with the caller's context. Each method validates its arguments
(limits as the MCP schemas declare them), reads through `Scope` (which re-checks every session
it opens), builds text from redacted fields, and returns `Delivered` from `safety.exit`:
envelope, final redaction and mask count included. Arguments out of range raise `UsageError`
with a message that says what to pass.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from huiyi.errors import NotFoundError, UsageError
from huiyi.model import Event, Hit, Surface, kinds_to_read
from huiyi.recall import skeleton
from huiyi.recall.render import clean, event_label, one_line, plural, when
from huiyi.recall.scope import CallerContext, Scope
from huiyi.recall.team import fuse
from huiyi.safety.budget import EXPAND_MAX_CHARS, TOOL_SECONDS, Budget
from huiyi.safety.exit import Delivered, deliver
from huiyi.search.engine import search, session_title
from huiyi.store import queries
from huiyi.store.index import Index
from huiyi.toolspec import (
    EXPAND_MAX,
    HISTORY_MAX,
    INJECT_MAX,
    INJECT_MIN,
    LIST_MAX,
    QUERY_MAX,  # noqa: F401 (the tools' limits are read from here, this one too)
    READ_LAST_MAX,
    READ_MAX_CHARS,
    READ_MIN_CHARS,
    RECALL_TOOLS,
    query_too_long,
)

if TYPE_CHECKING:
    from huiyi.recall.team import TeamAsk
    from huiyi.search.semantic import Semantic

#: session_read pages forward at most this many events at a time
READ_PAGE_EVENTS = 500
#: hits at most this many text events apart in one session fold into one range
FOLD_GAP = 5
RANGES_PER_SESSION = 3
_TEXT_KINDS = kinds_to_read(include_tools=True)


def _check(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high} (got {value})")
    return value


@dataclass(slots=True)
class Range:
    session_id: str
    title: str
    start: int
    end: int
    best: Hit
    score: float


class Recall:
    """Recall tools for one caller (workspace + current session)."""

    def __init__(
        self,
        conn: Index,
        ctx: CallerContext,
        *,
        max_inject_chars: int = 3_000,
        seconds: float = TOOL_SECONDS,
        semantic: Semantic | None = None,
        team: TeamAsk | None = None,
    ) -> None:
        self.conn = conn
        self.semantic = semantic
        #: the team server, asked beside the local search (`recall.team`), when joined
        self.team = team
        self.ctx = ctx
        self.max_inject_chars = _check("maxInjectChars", max_inject_chars, INJECT_MIN, INJECT_MAX)
        self.budget = Budget(seconds)

    # -- recall_history ------------------------------------------------------------------

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Delivered:
        """One recall tool by its published name (`toolspec.RECALL_TOOLS`), with arguments
        already checked against its schema (defaults filled in)."""
        a = arguments
        if tool == "recall_history":
            return self.history(a["query"], a["limit"])
        if tool == "recall_expand":
            return self.expand(a["seq"], a["sessionId"], a["before"], a["after"])
        if tool == "session_list":
            return self.session_list(a["limit"], a["includeSubagents"])
        if tool == "session_read":
            return self.session_read(
                a["sessionId"], a["last"], a["fromSeq"], a["includeTools"], a["maxChars"]
            )
        raise UsageError(f"no recall tool {tool!r}; huiyi has {', '.join(RECALL_TOOLS)}")

    def consent_question(self, tool: str, arguments: Mapping[str, Any]) -> str | None:
        """What to ask the user before `tool` runs with `arguments` (ask-before-recall), or
        None when its answer shows only the caller's own session (`recall.consent`)."""
        from huiyi.recall.consent import question

        return question(self.conn, self.ctx, tool, arguments)

    def history(self, query: str | None = None, limit: int = 5) -> Delivered:
        """Search this workspace's other sessions; with no query, what compaction removed."""
        _check("limit", limit, 1, HISTORY_MAX)
        if query is not None and (too_long := query_too_long(query)):
            raise UsageError(too_long)
        scope = Scope(self.conn, self.ctx)
        if query is None or not query.strip():
            return self._compacted_skeleton(scope)
        team = self.team if not scope.narrowed else None
        if team is not None:
            team.start(query, limit)
        result = search(
            self.conn,
            query,
            scope.search_filter(),
            limit=min(limit * 4, 80),
            semantic=self.semantic,
            seconds=max(self.budget.left / 2, 0.5),
        )
        ranges = self._fold(result.hits)[:limit]
        team_notes: list[str] = []
        if team is not None:
            team_hits, note = team.result()
            team_notes = [note] if note else []
            ranges = fuse(ranges, _team_ranges(team_hits))[:limit]
        where = (
            "the current session only (workspace unknown)"
            if scope.narrowed
            else f"workspace {scope.workspace}"
        )
        asked = one_line(clean(query)[0], 80)  # masked before the cut, like every field
        lines = [
            f'recall_history: {plural(len(ranges), "result")} for "{asked}" in {where}',
            f"search path: {', '.join(result.layers) or 'none'}",
        ]
        lines += [f"note: {n}" for n in (*result.notes, *team_notes, *self.budget.notes)]
        masks = sum(r.best.masks for r in ranges)
        if not ranges:
            history = "the current session" if scope.narrowed else "this workspace's history"
            why = result.why_empty()
            if why is not None and result.size == 0:
                lines.append(f"{result.no_match(asked, history)}: {why}")
            else:
                lines.append(
                    f"{result.no_match(asked, history)}; try other words, or call without a "
                    "query to recover what compaction removed from this session"
                )
                if why is not None:
                    lines.append(f"({why})")
        for n, r in enumerate(ranges, 1):
            span = f"seq {r.start}" if r.start == r.end else f"seq {r.start}..{r.end}"
            origin = f" · from {r.best.origin} (team)" if r.best.origin else ""
            lines.append(
                f"\n[{n}] {r.title} · {when(r.best.time)} · session {r.session_id} · {span}{origin}"
            )
            lines.append(f"    {r.best.kind} #{r.best.seq}: {r.best.snippet}")
        if ranges:
            lines.append(
                "\nexpand a result with recall_expand(sessionId=..., seq=...) for the exact text"
            )
        return deliver("\n".join(lines), masks=masks)

    def _fold(self, hits: list[Hit]) -> list[Range]:
        """Hits close together in one session as one range, at most `RANGES_PER_SESSION` a
        session, best first."""
        by_session: dict[str, list[Hit]] = defaultdict(list)
        for hit in hits:
            by_session[hit.session_id].append(hit)
        ranges: list[Range] = []
        for session_id, group in by_session.items():
            row = self.conn.session_by_id(session_id)
            if row is None:
                continue
            group.sort(key=lambda h: h.seq)
            ordinals = self.conn.text_ordinals(row.sid, [h.seq for h in group], _TEXT_KINDS)
            current: list[Hit] = [group[0]]
            folded: list[list[Hit]] = []
            for hit in group[1:]:
                if ordinals[hit.seq] - ordinals[current[-1].seq] <= FOLD_GAP + 1:
                    current.append(hit)
                else:
                    folded.append(current)
                    current = [hit]
            folded.append(current)
            session_ranges = []
            for members in folded:
                best = max(members, key=lambda h: h.score)
                session_ranges.append(
                    Range(
                        session_id,
                        best.title,
                        members[0].seq,
                        members[-1].seq,
                        best,
                        max(h.score for h in members),
                    )
                )
            session_ranges.sort(key=lambda r: r.score, reverse=True)
            ranges.extend(session_ranges[:RANGES_PER_SESSION])
        ranges.sort(key=lambda r: r.score, reverse=True)
        return ranges

    def _compacted_skeleton(self, scope: Scope) -> Delivered:
        current = self._current_or_fail(scope)
        compacted = skeleton.read_compacted(self.conn, current.sid, current.session.id, self.budget)
        title, title_masks = clean(session_title(current))
        if not compacted.events:
            return deliver(
                f"recall_history: nothing has been compacted away in the current session "
                f"({title}); pass a query to search this workspace's earlier sessions",
                masks=title_masks,
            )
        lines, masks = skeleton.skeleton_lines(compacted.events)
        head = [
            f"recall_history: what compaction removed from the current session ({title}), "
            f"{plural(compacted.total, 'compacted event')}",
        ]
        budget = self.max_inject_chars - sum(len(h) + 1 for h in head) - 200
        kept, how = skeleton.fit(lines, max(budget, 100), complete=compacted.complete)
        head.append(f"shown: {how}")
        head += [f"note: {n}" for n in compacted.notes]
        tail = "expand any line with recall_expand(seq=N) for the exact original text"
        return deliver("\n".join([*head, "", *kept, "", tail]), masks=masks + title_masks)

    def _current_or_fail(self, scope: Scope) -> queries.SessionRow:
        current = scope.current()
        if current is None and self.ctx.how == "cli" and self.ctx.session_id is not None:
            # a person named a session: say which, not that none is known
            raise NotFoundError(
                f"no session {self.ctx.session_id!r} in workspace {self.ctx.workspace}"
            )
        if current is None:
            raise UsageError(
                "no current session is known, so there is no compacted part to recover; "
                "pass a query to search this workspace's history"
            )
        return current

    # -- recall_expand -------------------------------------------------------------------

    def expand(
        self,
        seq: int | None = None,
        session_id: str | None = None,
        before: int = 3,
        after: int = 3,
    ) -> Delivered:
        """The exact original events around `seq` (default session: the current one)."""
        _check("before", before, 0, EXPAND_MAX)
        _check("after", after, 0, EXPAND_MAX)
        scope = Scope(self.conn, self.ctx)
        row = scope.open(session_id) if session_id else self._current_or_fail(scope)
        title, title_masks = clean(session_title(row))
        if seq is None:
            total = self.conn.count_events(row.sid, surface=Surface.SHADOWED)
            events = list(
                self.conn.events(
                    row.sid, row.session.id, surface=Surface.SHADOWED, kinds=_TEXT_KINDS
                )
            )
            what = f"the compacted part ({plural(total, 'event')})"
        else:
            events = self.conn.events_around(
                row.sid,
                row.session.id,
                seq,
                before=before,
                after=after,
                kinds=_TEXT_KINDS,
            )
            total = len(events)
            what = f"events around seq {seq}"
        shown: list[Event] = []
        chars, masks = 0, title_masks
        cut = ""
        for event in events:
            if chars + len(event.text) > EXPAND_MAX_CHARS and shown:
                cut = "source character cap"
                break
            if self.budget.expired:
                cut = "time budget"
                break
            shown.append(event)
            chars += len(event.text)
        lines = [f"recall_expand: session {row.session.id} ({title}), {what}"]
        if cut:
            lines.append(f"note: expanded {len(shown):,} of {total:,} events: {cut}")
        if not shown:
            lines.append("no events there")
        for event in shown:
            text, n = clean(event.text)
            masks += n
            lines.append(f"\n--- #{event.seq} {event_label(event)} · {when(event.time)} ---")
            lines.append(text)
        return deliver("\n".join(lines), masks=masks)

    # -- session_list and session_read ---------------------------------------------------

    def session_list(self, limit: int = 20, include_subagents: bool = False) -> Delivered:
        _check("limit", limit, 1, LIST_MAX)
        scope = Scope(self.conn, self.ctx)
        rows = scope.sessions(include_subagents=include_subagents, limit=None)
        shown = rows[:limit]
        masks = 0
        where = "the current session" if scope.narrowed else f"workspace {scope.workspace}"
        lines = [f"session_list: {plural(len(shown), 'session')} of {where}, most recent first"]
        if len(rows) > len(shown):
            lines.append(
                f"note: showing {len(shown)} of {len(rows)} sessions; raise limit "
                f"(max {LIST_MAX}) to see more"
            )
        for row in shown:
            title, n = clean(session_title(row))
            masks += n
            s = row.session
            marks = " · current" if s.id == self.ctx.session_id else ""
            marks += " · subagent" if s.is_subagent else ""
            lines.append(
                f"- {s.id} · {title} · {plural(s.event_count, 'event')}, "
                f"{plural(s.user_count, 'user message')} · last active {when(s.updated)}"
                f" · {s.source}{marks}"
            )
        return deliver("\n".join(lines), masks=masks)

    def session_read(
        self,
        session_id: str,
        last: int = 30,
        from_seq: int | None = None,
        include_tools: bool = False,
        max_chars: int = 12_000,
    ) -> Delivered:
        _check("last", last, 1, READ_LAST_MAX)
        _check("maxChars", max_chars, READ_MIN_CHARS, READ_MAX_CHARS)
        scope = Scope(self.conn, self.ctx)
        row = scope.open(session_id)
        kinds = kinds_to_read(include_tools=include_tools)
        title, masks = clean(session_title(row))
        if from_seq is None:
            newest = self.conn.events(
                row.sid, row.session.id, kinds=kinds, limit=last, newest_first=True
            )
            events = list(newest)[::-1]
            # keep the tail: drop from the front until it fits
            rendered = [self._render(e) for e in events]
            while len(rendered) > 1 and sum(len(r[0]) for r in rendered) > max_chars:
                rendered.pop(0)
                events.pop(0)
            masks += sum(r[1] for r in rendered)
            tail_note = f"the last {plural(len(events), 'event')}"
            lines = [f"session_read: session {row.session.id} ({title}), {tail_note}"]
            lines += [r[0] for r in rendered] or ["no events"]
            return deliver("\n".join(lines), masks=masks)
        events = list(
            self.conn.events(
                row.sid,
                row.session.id,
                from_seq=from_seq,
                kinds=kinds,
                limit=READ_PAGE_EVENTS,
            )
        )
        body: list[str] = []
        used = 0
        next_seq: int | None = None
        for event in events:
            text, n = self._render(event)
            if used + len(text) > max_chars:
                if not body:  # one event larger than the whole budget: show its head
                    body.append(
                        text[:max_chars] + f"\n[cut: {len(text) - max_chars:,} more characters]"
                    )
                    masks += n
                    next_seq = event.seq + 1
                else:
                    next_seq = event.seq
                break
            body.append(text)
            masks += n
            used += len(text)
        else:
            if len(events) == READ_PAGE_EVENTS:
                next_seq = events[-1].seq + 1
        lines = [f"session_read: session {row.session.id} ({title}), from seq {from_seq}"]
        lines += body if body else ["no events from there"]
        lines.append(
            f"\nnext: session_read(sessionId={row.session.id}, fromSeq={next_seq})"
            if next_seq is not None
            else "\n(end of session)"
        )
        return deliver("\n".join(lines), masks=masks)

    @staticmethod
    def _render(event: Event) -> tuple[str, int]:
        text, n = clean(event.text)
        return f"--- #{event.seq} {event_label(event)} · {when(event.time)} ---\n{text}\n", n


def _team_ranges(hits: list[Hit]) -> list[Range]:
    """Team hits as ranges of one event each (their sessions are not in this index to fold by),
    at most `RANGES_PER_SESSION` a session, in the server's order."""
    per_session: dict[str, int] = defaultdict(int)
    ranges = []
    for hit in hits:
        per_session[hit.session_id] += 1
        if per_session[hit.session_id] <= RANGES_PER_SESSION:
            title, _masks = clean(hit.title)
            ranges.append(Range(hit.session_id, title, hit.seq, hit.seq, hit, hit.score))
    return ranges
