"""What each event puts into the two text indexes, computed the same way on insert and delete.

Both FTS5 tables are contentless: a row can only be deleted by handing FTS5 the very values it
was inserted with, so those values are always recomputed from the stored text by the functions
here (`fts_row`, `fuzzy_row`) and nowhere else. `index_texts` does the expensive part, the
tokenising, once per event; a first index runs it in worker processes (`store.reading`).
"""

from __future__ import annotations

from collections.abc import Iterable

from huiyi.model import TEXT_KINDS, Event, Kind
from huiyi.text.tokenize import index_streams, normalize
from huiyi.workspace import fuzzy_scope_token, scope_token

#: How much of one event's text goes into the full-text index (the whole text is stored).
FTS_CHARS = 32_000
INDEXABLE_KINDS = frozenset(k.value for k in TEXT_KINDS)


#: what an event puts in the text indexes: `body`, `whole`, and its fuzzy text (or None)
Streams = tuple[str, str, str | None]


def fts_streams(text: str) -> tuple[str, str]:
    """The `body` and `whole` FTS5 values for one event's text."""
    return index_streams(text[:FTS_CHARS])


def fts_row(text: str, workspace: str) -> tuple[str, str, str]:
    """The exact FTS5 values for one event; deletes must recompute the very same values."""
    return (*fts_streams(text), scope_token(workspace))


def index_texts(event: Event) -> Streams:
    """Everything an indexed event needs tokenised (done in worker processes when parallel)."""
    return (
        *fts_streams(event.text),
        fuzzy_text(event.kind.value, event.injected, event.text),
    )


def is_indexed(event: Event) -> bool:
    """Human and model text, tool traffic and summaries; not host-injected boilerplate."""
    kind = event.kind.value
    return (
        kind in INDEXABLE_KINDS
        and (not event.injected or kind == Kind.SUMMARY.value)
        and bool(event.text.strip())
    )


#: Kinds in the fuzzy and semantic layers: what people half-remember is what was said.
CONVERSATION_KINDS = frozenset({"user", "assistant", "summary"})
#: How much of one message goes into the trigram index.
FUZZY_CHARS = 2_000


def fuzzy_text(kind: str, injected: bool, text: str) -> str | None:
    """The `event_fuzzy` text of one indexed event, or None when it is not in that index."""
    if kind not in CONVERSATION_KINDS or (injected and kind != "summary"):
        return None
    return normalize(text[:FUZZY_CHARS])


def fuzzy_row(kind: str, injected: bool, text: str, workspace: str) -> tuple[str, str] | None:
    """The exact `event_fuzzy` values for one indexed event, or None when it is not in it."""
    folded = fuzzy_text(kind, injected, text)
    return None if folded is None else (folded, fuzzy_scope_token(workspace))


#: (rowid, text, kind, injected) of an event in the text indexes
Indexed = tuple[int, str, str, int]


def fuzzy_rows(rows: Iterable[Indexed], workspace: str) -> list[tuple[int, str, str]]:
    out = []
    for rowid, text, kind, injected in rows:
        row = fuzzy_row(kind, bool(injected), text, workspace)
        if row is not None:
            out.append((rowid, *row))
    return out
