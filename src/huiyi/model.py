"""Plain data shared by every layer: sessions, events, hits.

No I/O lives here. Readers produce `Event`s (and `sources.base.SessionUpdate`s), the store
turns them into `Session`s with a workspace and a privacy flag, and search returns `Hit`s.
Times are epoch milliseconds (UTC) everywhere.

The records are `NamedTuple`s, immutable (`event._replace(surface=...)` makes a changed copy),
not dataclasses: every search process imports this module, and importing `dataclasses` and
declaring each dataclass is a visible part of a short process's start-up (see `huiyi.config`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Surface(StrEnum):
    """Where an event stands relative to what the model currently sees."""

    CURRENT = "current"  # on the model's context surface now
    SHADOWED = "shadowed"  # pushed out by compaction, still in the log
    LOG_ONLY = "log-only"  # never on the surface (tool calls, titles, raw summaries)


#: the words a person reads for an event's marks, in `huiyi show` and on the web page alike:
#: pushed out of the model's context by compaction; written by the harness, not the person
COMPACTED_MARK = "compacted"
INJECTED_MARK = "host-injected"


class Kind(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    SUMMARY = "summary"
    TITLE = "title"
    OTHER = "other"


#: What was said: human and assistant messages and compaction summaries. The fuzzy and
#: semantic layers, the session reader and memory extraction read only these.
CONVERSATION_KINDS = frozenset({Kind.USER, Kind.ASSISTANT, Kind.SUMMARY})
#: Tool traffic: searched lexically and shown on request, never embedded.
TOOL_KINDS = frozenset({Kind.TOOL_CALL, Kind.TOOL_RESULT})
#: Kinds whose text people and agents search and read; titles live on the session.
TEXT_KINDS = CONVERSATION_KINDS | TOOL_KINDS


def sql_kinds(kinds: frozenset[Kind]) -> str:
    """`'a', 'b'` for an SQL `IN (...)` list of constant kinds (never user input)."""
    return ", ".join(f"'{kind.value}'" for kind in sorted(kinds))


def kinds_to_read(*, include_tools: bool) -> tuple[str, ...]:
    """The kinds a reader of a session asks for: conversation, and tool traffic on request."""
    chosen = TEXT_KINDS if include_tools else CONVERSATION_KINDS
    return tuple(sorted(k.value for k in chosen))


class Event(NamedTuple):
    """One thing that happened in a session, as the harness logged it."""

    session: str
    seq: int
    time: int
    kind: Kind
    role: str
    text: str
    surface: Surface = Surface.LOG_ONLY
    injected: bool = False
    tool_name: str | None = None
    #: the harness's own record id when it has one (Claude `uuid` / `message.id`); the index
    #: keeps the first event per (source, uid), so history copied into a resumed session's file
    #: is not indexed twice
    uid: str | None = None
    #: huiyi's own tool traffic (a call to one of its tools, or the result): kept, never
    #: indexed, so huiyi never recalls itself. Readers set it when they pair a call with a
    #: result that gave it away; `sources.base.is_own_traffic` also recognises the rest.
    own: bool = False


class Session(NamedTuple):
    """One session of one harness as the index holds it: where, its title, privacy, counts."""

    id: str
    source: str
    cwd: str
    workspace: str
    title: str
    created: int
    updated: int
    parent: str | None
    is_subagent: bool
    is_private: bool
    event_count: int = 0
    user_count: int = 0


class Hit(NamedTuple):
    """One search result: where it is, what it is, and a short redacted-later snippet."""

    session_id: str
    seq: int
    source: str
    workspace: str
    title: str
    time: int
    kind: Kind
    snippet: str
    score: float
    layers: tuple[str, ...] = ()
    #: secrets masked in the title and the event text this hit was cut from
    masks: int = 0
    #: for a team server's hit, the teammate and machine it came from (`user@device`)
    origin: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "seq": self.seq,
            "source": self.source,
            "workspace": self.workspace,
            "title": self.title,
            "time": self.time,
            "kind": str(self.kind),
            "snippet": self.snippet,
            "score": self.score,
            "layers": list(self.layers),
            "masks": self.masks,
            **({"origin": self.origin} if self.origin else {}),
        }


class CallerContext(NamedTuple):
    """Who is asking an agent-facing read: the workspace and the caller's own (current)
    session, when known. The recall scope (`huiyi.recall.scope.Scope`) never widens it."""

    workspace: str | None
    session_id: str | None = None
    #: how the context was found (`policy.caller`), for `doctor` and debugging
    how: str = "unknown"
