"""The one in-memory shape of a labelled retrieval set, whatever file it came from.

An `EvalSet` holds sessions of events (each session in one workspace, its `cwd`) and queries
whose `relevant` list names events as `"<session id>:<seq>"` (`event_id`), the same string a
ranking is made of; a query with no relevant events is a negative. The loaders
(`eval.datasets`), the negatives drawn from other workspaces (`eval.negatives`), the metrics,
the runner and the baseline all speak this shape and nothing else, so it sits below all of
them: none of them imports a loader to name a query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["EvalEvent", "EvalQuery", "EvalSession", "EvalSet", "event_id", "split_event_id"]


def event_id(session_id: str, seq: int) -> str:
    """The string that names one event in rankings and labels."""
    return f"{session_id}:{seq}"


def split_event_id(value: str) -> tuple[str, int]:
    """Inverse of `event_id`; session ids may themselves contain colons."""
    session_id, sep, seq = value.rpartition(":")
    if not sep or not session_id or not seq.isdigit():
        raise ValueError(f"not an event id ('<session id>:<seq>'): {value!r}")
    return session_id, int(seq)


@dataclass(frozen=True, slots=True)
class EvalEvent:
    seq: int
    role: str
    time: int
    text: str


@dataclass(frozen=True, slots=True)
class EvalSession:
    id: str
    cwd: str
    title: str
    created: int
    events: tuple[EvalEvent, ...]


@dataclass(frozen=True, slots=True)
class EvalQuery:
    id: str
    query: str
    relevant: tuple[str, ...]
    #: the workspace (a session `cwd`) to search; `None` searches every session of the set
    workspace: str | None = None
    category: str | None = None

    @property
    def negative(self) -> bool:
        return not self.relevant


@dataclass(slots=True)
class EvalSet:
    name: str
    sessions: list[EvalSession]
    queries: list[EvalQuery]
    #: what the loader dropped or repaired, by reason (e.g. "evidence-unknown-turn": 3)
    skipped: dict[str, int] = field(default_factory=dict)

    def events(self) -> Iterator[tuple[EvalSession, EvalEvent]]:
        for session in self.sessions:
            for event in session.events:
                yield session, event

    def event_ids(self) -> set[str]:
        return {event_id(s.id, e.seq) for s, e in self.events()}

    def workspaces(self) -> list[str]:
        return sorted({s.cwd for s in self.sessions})

    def categories(self) -> list[str]:
        return sorted({q.category for q in self.queries if q.category is not None})
