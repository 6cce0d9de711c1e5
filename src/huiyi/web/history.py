"""History for a person: the search box with its filters, sessions grouped by workspace, and the
session reader.

Search runs the same fused layers as `huiyi search` and the agent's tool (`Huiyi.search`),
narrowed by the page's filters (workspace, harness, time range, layer); hits show their
snippet with the query's words marked and open the reader at their seq. The reader pages
forward with the exact `fromSeq` cursor of `session_read`, folds tool calls and marks what
compaction pushed out of the model's context. Private sessions never reach this module:
`Huiyi` leaves them out of every list, search and read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from urllib.parse import urlencode

from huiyi.errors import UsageError
from huiyi.model import TOOL_KINDS, Event, Hit, Kind, Session, Surface
from huiyi.text.dates import when
from huiyi.text.tokenize import parse_query
from huiyi.web.markup import Markup, h, highlight, join, safe
from huiyi.web.pages import Page

__all__ = [
    "LAYERS",
    "PAGE_EVENTS",
    "SOURCES",
    "SearchForm",
    "reader",
    "search_view",
    "sessions_view",
]

#: the harnesses a search may be narrowed to, with the badge each session shows
SOURCES = {"dsh": "DSH", "claude": "Claude Code", "codex": "Codex", "jsonl": "JSONL"}
LAYERS = ("hybrid", "lexical", "fuzzy", "semantic")
#: events on one page of the reader
PAGE_EVENTS = 60
#: longest event text shown whole; longer ones are cut (after redaction) and say so
MAX_EVENT_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class SearchForm:
    """The search box and its filters as the page sent them, checked."""

    query: str = ""
    workspace: str = ""
    source: str = ""
    since: str = ""
    until: str = ""
    layer: str = "hybrid"

    @classmethod
    def parse(cls, params: Mapping[str, str], workspaces: Sequence[str]) -> SearchForm:
        """The form from query parameters; a value the form never offers is a `UsageError`."""
        form = cls(
            query=params.get("q", "").strip(),
            workspace=params.get("ws", ""),
            source=params.get("source", ""),
            since=params.get("since", ""),
            until=params.get("until", ""),
            layer=params.get("layer", "") or "hybrid",
        )
        if form.workspace and form.workspace not in workspaces:
            raise UsageError("no such workspace in the index")
        if form.source and form.source not in SOURCES:
            raise UsageError(f"unknown source; use one of {', '.join(SOURCES)}")
        if form.layer not in LAYERS:
            raise UsageError(f"unknown layer; use one of {', '.join(LAYERS)}")
        form.window()  # checks the dates
        return form

    def window(self) -> tuple[int | None, int | None]:
        """The time range in epoch ms: from the start of `since` to the end of `until`, each a
        local date (YYYY-MM-DD) or open."""
        return _day(self.since, 0), _day(self.until, 1)

    def search_args(self) -> dict[str, object]:
        """Keyword arguments for `Huiyi.search`."""
        since, until = self.window()
        return {
            "workspace": self.workspace or None,
            "all_workspaces": not self.workspace,
            "layers": None if self.layer == "hybrid" else (self.layer,),
            "sources": (self.source,) if self.source else None,
            "since": since,
            "until": until,
        }


def _day(text: str, after: int) -> int | None:
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise UsageError(f"{text!r} is not a date (YYYY-MM-DD)") from None
    moment = datetime.combine(day.date() + timedelta(days=after), time()) - timedelta(
        milliseconds=after
    )
    return int(moment.timestamp() * 1000)


def badge(source: str) -> Markup:
    return h('<span class="badge src-{}">{}</span>', source, SOURCES.get(source, source))


def reader_link(session_id: str, seq: int | None = None) -> str:
    """The reader's address for a session, opened at `seq` (a few events before it)."""
    if seq is None:
        return f"/session/{session_id}"
    start = max(0, seq - 3)
    return f"/session/{session_id}?{urlencode({'from': start, 'at': seq})}#e{seq}"


# -- search ------------------------------------------------------------------------------------


def _select(name: str, label: str, chosen: str, options: Sequence[tuple[str, str]]) -> Markup:
    items = join(
        h(
            '<option value="{}"{}>{}</option>',
            value,
            Markup(" selected" if value == chosen else ""),
            text,
        )
        for value, text in options
    )
    return h('<label>{} <select name="{}">{}</select></label>', label, name, items)


def search_view(
    page: Page,
    form: SearchForm,
    workspaces: Sequence[str],
    hits: Sequence[Hit] | None,
    layers: Sequence[str] = (),
    notes: Sequence[str] = (),
    error: str = "",
) -> Markup:
    """The search box, its filters, and the hits (None: nothing searched yet)."""
    t = page.words
    filters = join(
        [
            _select(
                "ws",
                t("search.workspace"),
                form.workspace,
                [("", t("search.all"))] + [(w, safe(w)) for w in workspaces],
            ),
            _select(
                "source",
                t("search.source"),
                form.source,
                [("", t("search.any")), *SOURCES.items()],
            ),
            h(
                '<label>{} <input type="date" name="since" value="{}"></label>',
                t("search.since"),
                form.since,
            ),
            h(
                '<label>{} <input type="date" name="until" value="{}"></label>',
                t("search.until"),
                form.until,
            ),
            _select("layer", t("search.layer"), form.layer, [(x, t(f"layer.{x}")) for x in LAYERS]),
        ]
    )
    box = h(
        '<form class="search" method="get" action="/search" role="search">'
        '<div class="box"><label class="sr" for="q">{}</label>'
        '<input id="q" type="search" name="q" value="{}" placeholder="{}" autofocus>'
        '<button type="submit">{}</button></div><fieldset class="filters"><legend>{}</legend>{}'
        "</fieldset></form>",
        t("search.label"),
        form.query,
        t("search.placeholder"),
        t("search.go"),
        t("search.filters"),
        filters,
    )
    if error:
        return box + h('<p class="message refused" role="status">{}</p>', safe(error))
    if hits is None:
        return box
    words = parse_query(form.query).surface_words()
    items = join(_hit(page, hit, words) for hit in hits)
    ran = h(
        '<p class="ran">{} {}</p>',
        t("search.ran"),
        " + ".join(t(f"layer.{x}") for x in layers) or "-",
    )
    shown_notes = join(h('<p class="note">{}</p>', safe(n)) for n in notes)
    if not hits:
        listing = h('<p class="empty" role="status">{}</p>', t("search.nohits"))
    else:
        listing = h('<ol class="hits">{}</ol>', items)
    return box + ran + shown_notes + listing


def _hit(page: Page, hit: Hit, words: Sequence[str]) -> Markup:
    return h(
        '<li class="hit"><a class="title" href="{}">{}</a> {} <time>{}</time> '
        '<span class="ws">{}</span><p class="snippet">{}</p></li>',
        reader_link(hit.session_id, hit.seq),
        safe(hit.title),
        badge(hit.source),
        when(hit.time),
        safe(hit.workspace),
        highlight(safe(hit.snippet), words),
    )


# -- sessions ----------------------------------------------------------------------------------


def sessions_view(page: Page, sessions: Sequence[Session], more: bool) -> Markup:
    """Sessions grouped by workspace (the most recently active workspace first), most recent
    first within each, subagents folded under their parent."""
    t = page.words
    if not sessions:
        return h('<p class="empty">{}</p>', t("sessions.none"))
    known = {s.id for s in sessions}
    children: dict[str, list[Session]] = {}
    groups: dict[str, list[Session]] = {}
    for s in sessions:  # most recent first, as listed
        if s.parent and s.parent in known:
            children.setdefault(s.parent, []).append(s)
        else:
            groups.setdefault(s.workspace, []).append(s)
    blocks = join(
        h(
            '<section class="workspace"><h2>{}</h2><ul class="sessions">{}</ul></section>',
            safe(workspace),
            join(_session(page, s, children) for s in members),
        )
        for workspace, members in groups.items()
    )
    cut = h('<p class="note">{}</p>', t("sessions.more", len(sessions))) if more else ""
    return blocks + cut


def _session(page: Page, s: Session, children: Mapping[str, Sequence[Session]]) -> Markup:
    t = page.words
    kids = children.get(s.id, ())
    folded = (
        h(
            '<details class="subagents"><summary>{}</summary><ul>{}</ul></details>',
            t("sessions.subagents", len(kids)),
            join(_session(page, k, children) for k in kids),
        )
        if kids
        else ""
    )
    return h(
        '<li><a href="{}">{}</a> {}{} <span class="count">{}</span> <time>{}</time>{}</li>',
        reader_link(s.id),
        safe(s.title) or t("untitled"),
        badge(s.source),
        h(' <span class="badge">{}</span>', t("sessions.subagent")) if s.is_subagent else "",
        t("sessions.events", s.event_count),
        when(s.updated),
        folded,
    )


# -- the reader --------------------------------------------------------------------------------


def reader(
    page: Page, session: Session, events: Sequence[Event], start: int, at: int | None
) -> Markup:
    """One page of a session from seq `start`, with links to its start and the next page
    (the exact cursor: the seq after the last one shown); `at` is the hit it was opened at."""
    t = page.words
    shown = join(_event(page, e, e.seq == at) for e in events)
    nav: list[Markup] = []
    if start > 0:
        nav.append(h('<a href="{}">{}</a>', reader_link(session.id), t("reader.first")))
    if len(events) >= PAGE_EVENTS:
        following = f"/session/{session.id}?{urlencode({'from': events[-1].seq + 1})}"
        nav.append(h('<a rel="next" href="{}">{}</a>', following, t("reader.next")))
    pager = h('<nav class="pager" aria-label="{}">{}</nav>', t("reader.pages"), join(nav, " "))
    head = h(
        '<h1>{}</h1><p>{} <span class="ws">{}</span> <span class="count">{}</span></p>',
        safe(session.title) or t("untitled"),
        badge(session.source),
        safe(session.workspace),
        t("sessions.events", session.event_count),
    )
    body = shown or h('<p class="empty">{}</p>', t("reader.none"))
    return head + pager + h('<ol class="events">{}</ol>', body) + pager


def _event(page: Page, e: Event, target: bool) -> Markup:
    t = page.words
    text = safe(e.text)
    if len(text) > MAX_EVENT_CHARS:
        text = text[:MAX_EVENT_CHARS] + "\n" + t("reader.cut", len(text) - MAX_EVENT_CHARS)
    marks = join(
        [
            h(' <span class="badge compacted">{}</span>', t("reader.compacted"))
            if e.surface == Surface.SHADOWED
            else "",
            h(' <span class="badge">{}</span>', t("reader.injected")) if e.injected else "",
        ]
    )
    label = t(f"kind.{e.kind}") + (f" · {e.tool_name}" if e.tool_name else "")
    head = h(
        '<span class="seq">#{}</span> <b>{}</b>{} <time>{}</time>',
        e.seq,
        label,
        marks,
        when(e.time),
    )
    if e.kind in TOOL_KINDS:
        first = text.strip().split("\n", 1)[0][:120]
        body = h(
            '<details class="tool"><summary>{} <code>{}</code></summary><pre>{}</pre></details>',
            head,
            first,
            text,
        )
    else:
        body = h('<div class="head">{}</div><div class="text">{}</div>', head, text)
    classes = " ".join(
        c
        for c in (
            f"kind-{e.kind}",
            "shadowed" if e.surface == Surface.SHADOWED else "",
            "target" if target else "",
            "summary" if e.kind == Kind.SUMMARY else "",
        )
        if c
    )
    return h('<li id="e{}" class="{}">{}</li>', e.seq, classes, body)
