"""Sessions and events as one store hands them to another: a client's push to the team server,
or a copy of the local index into PostgreSQL. Plain records, no SQL: `store.export` reads them
out of the local index, `store.pg.writes` writes them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class SessionRecord(NamedTuple):
    id: str
    source: str
    cwd: str
    workspace: str
    title: str | None
    first_user: str | None
    created: int | None
    updated: int | None
    parent: str | None
    is_subagent: bool
    is_private: bool


class EventRecord(NamedTuple):
    seq: int
    time: int
    kind: str
    role: str
    text: str
    surface: str
    injected: bool
    tool_name: str | None
    #: the row id to keep (a copy of a local index keeps its ids, so ties rank alike)
    id: int | None = None


class Batch(NamedTuple):
    session: SessionRecord
    events: Sequence[EventRecord]
