"""Workspace scope for agent-facing reads: it only ever narrows, never widens.

An agent call knows (at best) its workspace and its own session: a `CallerContext`. Every
session id it names is opened through `Scope.open`, which answers an unknown id, a private
session and a session of another workspace with the very same error, so the error reveals
nothing. With no workspace, the scope narrows to the caller's own session; with neither, the
call fails. What a caller may see is one `search.engine.Filter`, the same rule search applies
to every hit.
"""

from __future__ import annotations

from huiyi.errors import NotFoundError, UsageError
from huiyi.model import CallerContext
from huiyi.search.engine import Filter
from huiyi.store.index import Index
from huiyi.store.queries import SessionRow

__all__ = ["NOT_FOUND", "NO_CONTEXT", "CallerContext", "Scope"]

NOT_FOUND = "no such session in this workspace"
NO_CONTEXT = (
    "cannot tell which workspace this call belongs to; set HUIYI_WORKSPACE (or pass "
    "--workspace to `huiyi mcp`) to the project directory"
)


class Scope:
    """What one agent call may see."""

    def __init__(self, conn: Index, ctx: CallerContext) -> None:
        if ctx.workspace is None and ctx.session_id is None:
            raise UsageError(NO_CONTEXT)
        self.conn = conn
        self.ctx = ctx
        self.workspace = ctx.workspace
        self.narrowed = ctx.workspace is None
        #: every session this caller may open (subagents included: they are asked for by id)
        self.readable = self._filter(include_subagents=True, exclude_self=False)

    def _filter(self, *, include_subagents: bool, exclude_self: bool) -> Filter:
        if self.narrowed:
            assert self.ctx.session_id is not None
            return Filter(
                workspace=None,
                only_sessions=frozenset({self.ctx.session_id}),
                include_subagents=True,
            )
        exclude = frozenset({self.ctx.session_id}) if exclude_self and self.ctx.session_id else None
        return Filter(
            workspace=self.workspace,
            exclude_sessions=exclude or frozenset(),
            include_subagents=include_subagents,
        )

    def allows(self, row: SessionRow | None) -> bool:
        return row is not None and self.readable.admits(row.session)

    def open(self, session_id: str) -> SessionRow:
        """The session, if this caller may read it; else the one not-found error."""
        row = self.conn.session_by_id(session_id)
        if row is None or not self.allows(row):
            raise NotFoundError(NOT_FOUND)
        return row

    def current(self) -> SessionRow | None:
        """The caller's own session, when known, indexed and visible."""
        if self.ctx.session_id is None:
            return None
        row = self.conn.session_by_id(self.ctx.session_id)
        return row if self.allows(row) else None

    def search_filter(self, *, include_subagents: bool = False) -> Filter:
        """Cross-session search: this workspace, minus the caller's own session."""
        return self._filter(include_subagents=include_subagents, exclude_self=True)

    def sessions(self, *, include_subagents: bool, limit: int | None) -> list[SessionRow]:
        if self.narrowed:
            current = self.current()
            return [current] if current else []
        return self.conn.list_sessions(
            workspace=self.workspace, include_subagents=include_subagents, limit=limit
        )
