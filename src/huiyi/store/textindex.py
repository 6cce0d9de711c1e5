"""The two text indexes: what each event puts into them, and the only code that writes them.

Both FTS5 tables (`event_fts`, `event_fuzzy`; see `store.migrations`) are contentless: a row can
only be deleted by handing FTS5 the very values it was inserted with, so those values are always
recomputed from the stored text by the functions here and nowhere else. `index_texts` does the
expensive part, the tokenising, once per event; a first index runs it in worker processes
(`store.reading`). `add_rows` and `remove_rows` are the one INSERT and the one delete of both
tables; ingestion, `rebuild` (after a migration, and `huiyi doctor --repair`) and the salvage of
a broken index all go through them.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Callable, Iterable

from huiyi.model import CONVERSATION_KINDS, TEXT_KINDS, Event, Kind
from huiyi.store.readthrough import leave_stale
from huiyi.text.tokenize import index_streams, normalize
from huiyi.workspace import fuzzy_scope_token, scope_token

#: How much of one event's text goes into the full-text index (the whole text is stored).
FTS_CHARS = 32_000
INDEXABLE_KINDS = frozenset(k.value for k in TEXT_KINDS)
#: Kinds whose compounds get no `whole` form: tool traffic (file listings, logs, grep hits,
#: the paths and commands of calls) is full of paths and identifiers, and their whole forms
#: were most of the `whole` tokens of a Claude Code history. They are still found by their
#: parts as an adjacent phrase; only the double weight of an exact identifier is kept for what
#: was said (the golden set's rankings did not move).
NO_COMPOUNDS_KINDS = frozenset({Kind.TOOL_CALL.value, Kind.TOOL_RESULT.value})


#: what an event puts in the text indexes: `body`, `whole`, and its fuzzy text (or None)
Streams = tuple[str, str, str | None]


def fts_streams(text: str, kind: str) -> tuple[str, str]:
    """The `body` and `whole` FTS5 values for the text of one event of this kind."""
    return index_streams(text[:FTS_CHARS], compounds=kind not in NO_COMPOUNDS_KINDS)


def index_texts(event: Event) -> Streams:
    """Everything an indexed event needs tokenised (done in worker processes when parallel)."""
    return stored_streams(event.text, event.kind.value, event.injected)


def is_indexed(event: Event) -> bool:
    """Human and model text, tool traffic and summaries; not host-injected boilerplate, and
    not huiyi's own tool calls and results (huiyi never recalls itself). An event left out is
    still stored (`indexed = 0`), so reading a session shows it where it happened."""
    kind = event.kind.value
    return (
        kind in INDEXABLE_KINDS
        and (not event.injected or kind == Kind.SUMMARY.value)
        and bool(event.text.strip())
        and not _own_traffic(event)
    )


def _load_own_traffic(event: Event) -> bool:
    """`sources.base.is_own_traffic`, imported on the first call and bound in its place: the
    readers' module (its patterns, dataclasses, the envelope) is slow to import for a search
    that only tokenises passages, while ingest, which calls this per event, pays no extra
    step."""
    global _own_traffic
    from huiyi.sources.base import is_own_traffic

    _own_traffic = is_own_traffic
    return is_own_traffic(event)


_own_traffic: Callable[[Event], bool] = _load_own_traffic


#: Kinds in the fuzzy and semantic layers: what people half-remember is what was said.
FUZZY_KINDS = frozenset(k.value for k in CONVERSATION_KINDS)
#: How much of one message goes into the trigram index.
FUZZY_CHARS = 2_000


def in_fuzzy(kind: str, injected: bool) -> bool:
    """Whether an indexed event of this kind is in the trigram index."""
    return kind in FUZZY_KINDS and (not injected or kind == Kind.SUMMARY.value)


def fuzzy_text(kind: str, injected: bool, text: str) -> str | None:
    """The `event_fuzzy` text of one indexed event, or None when it is not in that index."""
    return normalize(text[:FUZZY_CHARS]) if in_fuzzy(kind, injected) else None


#: (rowid, text, kind, injected) of an event in the text indexes
Indexed = tuple[int, str, str, int]


def stored_streams(text: str, kind: str, injected: bool) -> Streams:
    """What a stored event put into the text indexes (the same as `index_texts` gave).

    The same values as `fts_streams` and `fuzzy_text`, with the text NFKC-folded once for both
    (folding was a fifth of the tokenising; `index_streams` is told the text is folded), and
    no `whole` for the kinds in `NO_COMPOUNDS_KINDS`.
    """
    head = unicodedata.normalize("NFKC", text[:FTS_CHARS])
    body, whole = index_streams(head, folded=True, compounds=kind not in NO_COMPOUNDS_KINDS)
    if not in_fuzzy(kind, injected):
        return body, whole, None
    if len(text) <= FUZZY_CHARS:  # then `head` is the folded text itself
        return body, whole, head.lower()
    return body, whole, fuzzy_text(kind, injected, text)


def add_rows(conn: sqlite3.Connection, workspace: str, rows: Iterable[tuple[int, Streams]]) -> None:
    """Write events of one workspace into both text indexes: `(rowid, streams)` each."""
    scope = scope_token(workspace)
    fts: list[tuple[int, str, str, str]] = []
    fuzzy: list[tuple[int, str]] = []
    for rowid, (body, whole, folded) in rows:
        fts.append((rowid, body, whole, scope))
        if folded is not None:
            fuzzy.append((rowid, folded))
    conn.executemany("INSERT INTO event_fts (rowid, body, whole, scope) VALUES (?, ?, ?, ?)", fts)
    add_fuzzy(conn, workspace, fuzzy)


def add_fuzzy(conn: sqlite3.Connection, workspace: str, rows: Iterable[tuple[int, str]]) -> None:
    """Write events of one workspace into the trigram index: `(rowid, fuzzy text)` each."""
    scope = fuzzy_scope_token(workspace)
    conn.executemany(
        "INSERT INTO event_fuzzy (rowid, text, scope) VALUES (?, ?, ?)",
        [(rowid, text, scope) for rowid, text in rows],
    )


def remove_rows(conn: sqlite3.Connection, workspace: str, rows: Iterable[Indexed]) -> None:
    """Remove events of one workspace from both text indexes (their values are recomputed)."""
    scope, fuzzy_scope = scope_token(workspace), fuzzy_scope_token(workspace)
    fts: list[tuple[int, str, str, str]] = []
    fuzzy: list[tuple[int, str, str]] = []
    stale = 0
    for rowid, text, kind, injected in rows:
        if not text:
            # no-copy mode, and its log is gone or changed: what it put in cannot be recomputed,
            # so its rows stay, pointing at an event no longer there, whose id no event gets
            # again (`store.readthrough.leave_stale`)
            stale = max(stale, rowid)
            continue
        body, whole, folded = stored_streams(text, kind, bool(injected))
        fts.append((rowid, body, whole, scope))
        if folded is not None:
            fuzzy.append((rowid, folded, fuzzy_scope))
    conn.executemany(
        "INSERT INTO event_fts (event_fts, rowid, body, whole, scope) "
        "VALUES ('delete', ?, ?, ?, ?)",
        fts,
    )
    conn.executemany(
        "INSERT INTO event_fuzzy (event_fuzzy, rowid, text, scope) VALUES ('delete', ?, ?, ?)",
        fuzzy,
    )
    if stale:
        leave_stale(conn, stale)


#: events re-tokenised per `add_rows` call during a rebuild
REBUILD_BATCH = 5_000


def rebuild(conn: sqlite3.Connection, *, only_fuzzy: bool = False) -> int:
    """Empty both text indexes (or only the trigram index) and fill them again from the kept
    text; returns events written.

    Runs in the caller's transaction. FTS5's `delete-all` resets a table whatever state its
    segments are in, so this also mends a damaged full-text or trigram index. The trigram
    index alone costs a fraction: its text is only folded, not tokenised.
    """
    tables = ("event_fuzzy",) if only_fuzzy else ("event_fts", "event_fuzzy")
    for table in tables:
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
    rows = conn.execute(
        "SELECT e.id, event_text(e.text), e.kind, e.injected, s.workspace FROM events e "
        "JOIN sessions s ON s.sid = e.sid WHERE e.indexed = 1 ORDER BY e.sid, e.seq"
    )
    count = 0
    batch: list[tuple[int, Streams]] = []
    current: str | None = None
    for rowid, text, kind, injected, workspace in rows:
        if workspace != current or len(batch) >= REBUILD_BATCH:
            if current is not None:
                _write_batch(conn, current, batch, only_fuzzy)
            count += len(batch)
            batch, current = [], workspace
        if only_fuzzy:
            batch.append((rowid, ("", "", fuzzy_text(kind, bool(injected), text))))
        else:
            batch.append((rowid, stored_streams(text, kind, bool(injected))))
    if current is not None:
        _write_batch(conn, current, batch, only_fuzzy)
    return count + len(batch)


def _write_batch(
    conn: sqlite3.Connection, workspace: str, batch: list[tuple[int, Streams]], only_fuzzy: bool
) -> None:
    if only_fuzzy:
        add_fuzzy(conn, workspace, ((r, text) for r, (_, _, text) in batch if text is not None))
    else:
        add_rows(conn, workspace, batch)
