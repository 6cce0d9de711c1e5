"""Automatic recall for one user prompt: what the UserPromptSubmit hook injects, if anything.

`prompt_recall` is the one function the hooks call. It asks the gate (`recall.gate.decide`)
with a `HistoryProbe` over the caller's scope, then builds the one injection for the turn:

* trigger with a query: `recall_history` for it; without one: what compaction removed from the
  current session (`Recall.history(None)`);
* process command ("继续", "where were we"): the previous topic. That is the compacted part of
  the current session when there is one; else, in a session with no earlier message of its own
  (a restart), the last exchanges of the workspace's most recent other session, each with the
  seq to expand. In a live session whose context is whole, the model already has the topic and
  nothing is injected;
* back-reference whose fragment the probe found: the exact passage where it was found (with a
  neighbour on each side when that fits), else `recall_history` for the fragment.

Every answer leaves through the safety exit and must fit the recall's `max_inject_chars`
(envelope included): a longer answer is retried with fewer results, and when nothing fits, or
nothing relevant was found, the answer is None and no history is injected. A trigger word is a
person asking for a recall, so one that recalls nothing says why instead (`prompt_outcome`,
`nothing_recalled`): nothing in the workspace matches, it has no sessions yet, nothing was
compacted away, or what was found does not fit; the words asked are not repeated. The probe reads
lexically only (no embedding: a hook must never wait on a model; no trigram layer either, see
`PROBE_LAYERS`), through the same scope as the tools, so it never looks wider than the caller's
workspace and never at private sessions; huiyi's own tool traffic is not in the index, and text
that carries huiyi's envelope (its own injections, as a harness logged them) is never evidence
nor a previous topic. A trigger word's query goes through `Recall.history`, with whatever
semantic layer the `Recall` was given: a caller that must not wait on a model passes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from huiyi.config import Trigger
from huiyi.model import CONVERSATION_KINDS, Event, Kind, Surface, kinds_to_read
from huiyi.recall.gate import Decision, Evidence, Fire, Fragment, decide, has_task, joined
from huiyi.recall.render import clean, one_line, when
from huiyi.recall.scope import CallerContext, Scope
from huiyi.recall.tools import Recall
from huiyi.safety.exit import Delivered, deliver
from huiyi.search.engine import Filter, search, session_title
from huiyi.sources.base import is_own_output
from huiyi.store.index import Index
from huiyi.store.queries import SessionRow
from huiyi.text.tokenize import tokens

__all__ = [
    "HistoryProbe",
    "Outcome",
    "decide_prompt",
    "nothing_recalled",
    "previous_topic",
    "prompt_outcome",
    "prompt_recall",
]

#: The probe reads the lexical layer only. The fuzzy layer re-scores 600 trigram candidates
#: per query, most of the gate's time on a large workspace, and the unit coverage that
#: decides afterwards wants the words anyway.
PROBE_LAYERS = ("lexical",)
#: hits the probe weighs, per place it looks
PROBE_HITS = 10
#: seconds the probe's searches may take in all
PROBE_SECONDS = 1.0
#: how many recall_history results an injection starts with (fewer when they do not fit) ...
INJECT_RESULTS = (5, 3, 2, 1)
#: ... estimated from these sizes: a result (title line and a snippet of at most 240 units),
#: and the envelope, header and footer lines around them
RESULT_CHARS = 400
ENVELOPE_CHARS = 600
#: the previous topic: this many of the last human and assistant messages ...
TOPIC_MESSAGES = 6
#: ... each cut to this many characters
TOPIC_CHARS = 280
_CONVERSATION = tuple(sorted(k.value for k in CONVERSATION_KINDS))
_TEXT_KINDS = kinds_to_read(include_tools=True)
#: the probe weighs a hit together with this many events on each side of it
WINDOW = 2


class HistoryProbe:
    """`gate.Probe` over the index: where a fragment occurs earlier in the caller's history.

    It looks in the workspace's other sessions (the scope's cross-session filter, private
    sessions never) and in the compacted part of the caller's own session, never in what the
    model sees now, so the current turn is no evidence for itself.
    """

    def __init__(self, conn: Index, ctx: CallerContext) -> None:
        self.conn = conn
        self.scope = Scope(conn, ctx)
        self.current = self.scope.current()
        #: whether the caller's session has a compacted part (else it holds no history)
        self.compacted = self.current is not None and bool(
            conn.count_events(self.current.sid, surface=Surface.SHADOWED)
        )

    def __call__(self, fragment: Fragment) -> Evidence | None:
        text = " ".join(joined(unit) for unit in fragment.units)
        places: list[tuple[Filter, bool]] = []
        if not self.scope.narrowed:
            places.append((self.scope.search_filter(), False))
        if self.current is not None and self.compacted:
            own = Filter(
                workspace=self.scope.workspace,
                only_sessions=frozenset({self.current.session.id}),
            )
            places.append((own, True))
        best: Evidence | None = None
        for flt, compacted_only in places:
            result = search(
                self.conn,
                text,
                flt,
                limit=PROBE_HITS,
                layers=PROBE_LAYERS,
                seconds=PROBE_SECONDS / len(places),
            )
            for hit in result.hits:
                window = self._window(hit.session_id, hit.seq, compacted_only=compacted_only)
                if not window:
                    continue
                share, found = fragment.coverage({t for e in window for t in tokens(e.text)})
                if best is None or share > best.coverage:
                    best = Evidence(hit.session_id, hit.seq, round(share, 3), found)
        return best

    def _window(self, session_id: str, seq: int, *, compacted_only: bool) -> list[Event]:
        """The hit's event and its neighbours: a topic spans a few messages ("the race in
        reserve_inventory" is one message's race and the previous one's function). Empty
        when the hit itself may not count (huiyi's own output, or not yet compacted)."""
        row = self.conn.session_by_id(session_id)
        if row is None:
            return []
        around = self.conn.events_around(
            row.sid,
            session_id,
            seq,
            before=WINDOW,
            after=WINDOW,
            kinds=_TEXT_KINDS,
        )
        usable = [
            e
            for e in around
            if not (e.injected and e.kind is not Kind.SUMMARY)
            and not is_own_output(e.text)
            and (not compacted_only or e.surface == Surface.SHADOWED)
        ]
        return usable if any(e.seq == seq for e in usable) else []


def decide_prompt(recall: Recall, prompt: str, triggers: Sequence[Trigger]) -> Decision:
    """The gate's decision for `prompt`, probing the index through `recall`'s scope."""
    return decide(prompt, triggers, HistoryProbe(recall.conn, recall.ctx))


class Outcome(NamedTuple):
    """What automatic recall does for one prompt."""

    #: the injection (None: no history is injected)
    delivered: Delivered | None = None
    #: why a trigger word recalled nothing, in words (None: it recalled something, or no
    #: trigger word fired)
    why: str | None = None


def prompt_recall(recall: Recall, prompt: str, triggers: Sequence[Trigger]) -> Delivered | None:
    """The one injection of history for this user prompt, or None when there is none."""
    return prompt_outcome(recall, prompt, triggers).delivered


def prompt_outcome(recall: Recall, prompt: str, triggers: Sequence[Trigger]) -> Outcome:
    """The one injection for this user prompt, and why a trigger word recalled nothing."""
    decision = decide_prompt(recall, prompt, triggers)
    if decision.kind is Fire.TRIGGER:
        if decision.query is None:
            compacted = _compacted(recall)
            if compacted is None:
                return Outcome(why=_NO_COMPACTION)
            fitting = _fits(recall, compacted)
            return Outcome(fitting, None if fitting is not None else _TOO_LONG)
        return _searched(recall, decision.query)
    if decision.kind is Fire.PROCESS:
        return Outcome(previous_topic(recall))
    if decision.kind is Fire.BACKREF and decision.evidence is not None:
        found = _passage(recall, decision.evidence) or _search(recall, decision.query or "")
        return Outcome(found)
    return Outcome()


def nothing_recalled(why: str) -> Delivered:
    """What the model gets when a trigger word recalled nothing: that, and why (through the
    safety exit like every answer)."""
    return deliver(f"a trigger word asked for a recall; nothing is recalled: {why}")


def _passage(recall: Recall, evidence: Evidence) -> Delivered | None:
    """The exact text where the probe found the fragment, with a neighbour on each side when
    that fits: the answer is already known, so no second search (on a large workspace that
    search cost more than the whole gate). The session is opened through the recall's scope."""
    session = None if evidence.session_id == recall.ctx.session_id else evidence.session_id
    for around in (1, 0):
        delivered = recall.expand(seq=evidence.seq, session_id=session, before=around, after=around)
        if len(delivered.text) <= recall.max_inject_chars:
            return delivered
    return None


def _fits(recall: Recall, delivered: Delivered | None) -> Delivered | None:
    if delivered is None or len(delivered.text) > recall.max_inject_chars:
        return None
    return delivered


#: what `Recall.history` says when it has nothing (`tools.Recall.history`)
_NO_RESULTS = "\nno match in "
_NOTHING_COMPACTED = "recall_history: nothing has been compacted away"


#: why a trigger word recalled nothing (`Outcome.why`)
_NO_MATCH = "nothing in this workspace's history matches the words after the trigger"
_NO_SESSIONS = "this workspace has no sessions yet"
_NO_COMPACTION = "nothing has been compacted away from this session"
_TOO_LONG = "what was found is longer than the injection budget (max_inject_chars)"


def _search(recall: Recall, query: str) -> Delivered | None:
    """`recall_history` for the query with as many results as fit (`_searched`)."""
    return _searched(recall, query).delivered


def _searched(recall: Recall, query: str) -> Outcome:
    """`recall_history` for the query with as many results as fit (each search costs, so the
    first try is sized to the budget: a result takes about `RESULT_CHARS`), or why none."""
    fitting = max(1, (recall.max_inject_chars - ENVELOPE_CHARS) // RESULT_CHARS)
    for limit in [n for n in INJECT_RESULTS if n <= fitting] or [1]:
        delivered = recall.history(query, limit=limit)
        if _NO_RESULTS in delivered.text:
            return Outcome(why=_why_none(recall, delivered.text))
        if len(delivered.text) <= recall.max_inject_chars:
            return Outcome(delivered)
    return Outcome(why=_TOO_LONG)


def _why_none(recall: Recall, text: str) -> str:
    """Why `recall_history` found nothing: the workspace has no sessions, a layer's reason
    (`SearchResult.why_empty`, the parenthesised line `Recall.history` adds), or no match."""
    scope = Scope(recall.conn, recall.ctx)
    if not scope.narrowed and recall.conn.workspace_size(scope.workspace) == 0:
        return _NO_SESSIONS
    reason = next(
        (line[1:-1] for line in text.splitlines() if line.startswith("(") and line.endswith(")")),
        None,
    )
    return f"{_NO_MATCH} ({reason})" if reason else _NO_MATCH


def _compacted(recall: Recall) -> Delivered | None:
    scope = Scope(recall.conn, recall.ctx)
    if scope.current() is None:
        return None
    delivered = recall.history(None)
    return None if _NOTHING_COMPACTED in delivered.text else delivered


def previous_topic(recall: Recall) -> Delivered | None:
    """What "继续" resumes: this session's compacted part, else (after a restart) the end of
    the workspace's most recent other session; None in a live session with nothing compacted."""
    scope = Scope(recall.conn, recall.ctx)
    current = scope.current()
    if current is not None:
        shadowed = recall.conn.count_events(current.sid, surface=Surface.SHADOWED)
        if shadowed:
            return _fits(recall, recall.history(None))
        if _earlier_human_message(recall.conn, current):
            return None  # the conversation is whole in the model's context
    if scope.narrowed:
        return None
    for row in scope.sessions(include_subagents=False, limit=20):
        if row.session.id == recall.ctx.session_id:
            continue
        tail = _last_exchanges(recall.conn, row)
        if tail and _task_in(recall.conn, row):
            return _render_topic(recall, row, tail)
    return None


def _task_in(conn: Index, row: SessionRow) -> bool:
    """Whether a human message of the session has task content (small talk is no topic)."""
    return any(
        has_task(e.text)
        for e in conn.events(row.sid, row.session.id, kinds=(Kind.USER.value,))
        if not e.injected and not is_own_output(e.text)
    )


def _earlier_human_message(conn: Index, row: SessionRow) -> bool:
    """Whether the session has a human message with task content (`gate.has_task`: small talk
    and process commands do not count) before the prompt being answered, which the harness
    may or may not have logged yet: two, or one that is not the last event."""
    humans = [
        e
        for e in conn.events(row.sid, row.session.id, kinds=(Kind.USER.value,))
        if not e.injected and not is_own_output(e.text)
    ]
    last = next(iter(conn.events(row.sid, row.session.id, newest_first=True, limit=1)))
    earlier = [e for e in humans if e.seq != last.seq] if humans else []
    return any(has_task(e.text) for e in earlier)


def _last_exchanges(conn: Index, row: SessionRow) -> list[Event]:
    newest = conn.events(row.sid, row.session.id, kinds=_CONVERSATION, newest_first=True, limit=60)
    picked: list[Event] = []
    for event in newest:
        if event.injected or not event.text.strip() or is_own_output(event.text):
            continue
        picked.append(event)
        if len(picked) >= TOPIC_MESSAGES:
            break
    if not any(e.kind is Kind.USER for e in picked):
        return []
    return picked[::-1]


def _render_topic(recall: Recall, row: SessionRow, events: list[Event]) -> Delivered | None:
    title, masks = clean(session_title(row))
    head = (
        f"previous topic: the end of session {row.session.id} ({title}), last active "
        f"{when(row.session.updated)}, the most recent earlier session of this workspace"
    )
    tail = f"expand with recall_expand(sessionId={row.session.id}, seq=N) for the exact text"
    lines: list[tuple[str, int]] = []
    for event in events:
        text, n = clean(event.text)
        who = "user" if event.kind is Kind.USER else str(event.kind)
        lines.append((f"#{event.seq} {who}: {one_line(text, TOPIC_CHARS)}", n))
    while lines:
        body = "\n".join([head, *(line for line, _ in lines), tail])
        delivered = deliver(body, masks=masks + sum(n for _, n in lines))
        if len(delivered.text) <= recall.max_inject_chars:
            return delivered
        lines.pop(0)  # keep the newest: that is where the work stopped
    return None
