"""The store interface the core reads through: one protocol, one implementation per backend.

Search and the recall tools never hold a database connection: they hold an `Index`, whose
methods are the read queries they need (sessions, events, the full-text and trigram lookups,
the coverage counters, the vectors). `SqliteIndex` answers them from the local SQLite index
(`store.queries`, `store.vectors`); `store.pg.reads.PgIndex` answers the same calls from
PostgreSQL (the team server's store). Full-text lookups take FTS5 match expressions, huiyi's
query language for its own tokens (built by `search.lexical` and `search.fuzzy`; a backend
other than SQLite compiles the subset huiyi writes: phrases with a column, prefixes, AND, OR).

Errors a backend's queries raise are in `errors` (SQLite's, or psycopg's), so a search layer
that fails drops out whatever the backend.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
import weakref
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from huiyi.model import Event
from huiyi.store import db, queries, vectors
from huiyi.store.queries import SessionRow

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Index(Protocol):
    """What the core reads from a store (see the module docstring)."""

    #: exceptions a query of this backend raises for a fault of the store (not a bug)
    errors: tuple[type[BaseException], ...]

    def time_limit(self, seconds: float) -> contextlib.AbstractContextManager[None]: ...

    def reader(self) -> Index | None: ...

    def forget_reader(self) -> None: ...

    def stamp(self) -> tuple[int, int]: ...

    def session_by_id(self, session_id: str) -> SessionRow | None: ...

    def sessions_by_sid(self, sids: Sequence[int]) -> dict[int, SessionRow]: ...

    def list_sessions(
        self,
        *,
        workspace: str | None,
        include_private: bool = False,
        include_subagents: bool = True,
        limit: int | None = None,
    ) -> list[SessionRow]: ...

    def workspaces(self) -> list[str]: ...

    def events(
        self,
        sid: int,
        session_id: str,
        *,
        from_seq: int | None = None,
        to_seq: int | None = None,
        kinds: Sequence[str] | None = None,
        surface: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[Event]: ...

    def events_around(
        self,
        sid: int,
        session_id: str,
        seq: int,
        *,
        before: int,
        after: int,
        kinds: Sequence[str],
    ) -> list[Event]: ...

    def count_events(self, sid: int, *, surface: str | None = None) -> int: ...

    def text_ordinals(
        self, sid: int, seqs: Sequence[int], kinds: Sequence[str]
    ) -> dict[int, int]: ...

    def events_by_rowid(self, rowids: Sequence[int]) -> dict[int, tuple[int, Event]]: ...

    def recent_turns(self, workspace: str, *, limit: int) -> list[tuple[str, str]]: ...

    def fts_match(
        self, match: str, *, limit: int, offset: int = 0, min_rowid: int | None = None
    ) -> list[tuple[int, float]]: ...

    def fts_scores(
        self, match: str, lowest: int, highest: int, among: Collection[int] | None = None
    ) -> dict[int, float]:
        """rowid -> BM25 of the rows from `lowest` to `highest` matching `match` (`among`: of
        those rows only, the ones a caller keeps, which a store may then score alone)."""
        ...

    def fts_rows(self, asked: Sequence[tuple[str, int, int]]) -> list[tuple[int, int]]: ...

    def fts_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]: ...

    def fuzzy_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]: ...

    def in_workspace(self, rowids: Sequence[int], workspace: str) -> set[int]: ...

    def workspace_share(self, workspace: str) -> float: ...

    def workspace_size(self, workspace: str | None) -> int: ...

    def texts_by_rowid(self, rowids: Sequence[int]) -> dict[int, str]: ...

    def sids_by_rowid(self, rowids: Sequence[int]) -> dict[int, int]: ...

    def has_word(self, word: str) -> bool: ...

    def words_from(self, prefix: str, *, limit: int) -> list[str]: ...

    def vector_coverage(self, model: str, workspace: str | None) -> tuple[int, int]: ...

    def vector_signature(self, model: str) -> tuple[int, int]: ...

    def load_vectors(
        self, model: str, workspace: str | None, dim: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...


#: each connection's reader (`SqliteIndex.reader`), closed when the connection is collected
_READERS: weakref.WeakKeyDictionary[sqlite3.Connection, SqliteIndex] = weakref.WeakKeyDictionary()


class SqliteIndex:
    """`Index` over a connection to the local SQLite index."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @contextlib.contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Interrupt SQLite work that runs past `seconds` (raises sqlite3.OperationalError)."""
        deadline = time.monotonic() + seconds
        self.conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            yield
        finally:
            self.conn.set_progress_handler(None, 0)

    def reader(self) -> Index | None:
        """Another `Index` over the same file, for a search layer run on a thread beside this
        one while this one reads (SQLite lets go of the GIL as it reads), used by one thread at
        a time; kept beside the connection (its page cache stays warm) until it is closed or
        `forget_reader`. None for an index in memory, or inside a transaction of this
        connection, whose rows another connection would not see."""
        if self.conn.in_transaction or not isinstance(self.conn, db.Connection):
            return None
        if (kept := _READERS.get(self.conn)) is not None:
            return kept
        [name] = [d[2] for d in self.conn.execute("PRAGMA database_list") if d[1] == "main"]
        if not name:
            return None
        kept = SqliteIndex(db.connect(Path(name), readonly=True, shared=True))
        _READERS[self.conn] = kept
        return kept

    def forget_reader(self) -> None:
        """Open a new reader next time (the last one may still be busy on its thread)."""
        _READERS.pop(self.conn, None)

    def stamp(self) -> tuple[int, int]:
        """Moves whenever the index may have changed: `data_version` when another connection
        commits, `total_changes` when this one writes."""
        version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        return version, self.conn.total_changes

    def session_by_id(self, session_id: str) -> SessionRow | None:
        return queries.session_by_id(self.conn, session_id)

    def sessions_by_sid(self, sids: Sequence[int]) -> dict[int, SessionRow]:
        return queries.sessions_by_sid(self.conn, sids)

    def list_sessions(
        self,
        *,
        workspace: str | None,
        include_private: bool = False,
        include_subagents: bool = True,
        limit: int | None = None,
    ) -> list[SessionRow]:
        return queries.list_sessions(
            self.conn,
            workspace=workspace,
            include_private=include_private,
            include_subagents=include_subagents,
            limit=limit,
        )

    def workspaces(self) -> list[str]:
        return queries.workspaces(self.conn)

    def events(
        self,
        sid: int,
        session_id: str,
        *,
        from_seq: int | None = None,
        to_seq: int | None = None,
        kinds: Sequence[str] | None = None,
        surface: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[Event]:
        return queries.events(
            self.conn,
            sid,
            session_id,
            from_seq=from_seq,
            to_seq=to_seq,
            kinds=kinds,
            surface=surface,
            limit=limit,
            newest_first=newest_first,
        )

    def events_around(
        self,
        sid: int,
        session_id: str,
        seq: int,
        *,
        before: int,
        after: int,
        kinds: Sequence[str],
    ) -> list[Event]:
        return queries.events_around(
            self.conn, sid, session_id, seq, before=before, after=after, kinds=kinds
        )

    def count_events(self, sid: int, *, surface: str | None = None) -> int:
        return queries.count_events(self.conn, sid, surface=surface)

    def text_ordinals(self, sid: int, seqs: Sequence[int], kinds: Sequence[str]) -> dict[int, int]:
        return queries.text_ordinals(self.conn, sid, seqs, kinds)

    def events_by_rowid(self, rowids: Sequence[int]) -> dict[int, tuple[int, Event]]:
        return queries.events_by_rowid(self.conn, rowids)

    def recent_turns(self, workspace: str, *, limit: int) -> list[tuple[str, str]]:
        return queries.recent_turns(self.conn, workspace, limit=limit)

    def fts_match(
        self, match: str, *, limit: int, offset: int = 0, min_rowid: int | None = None
    ) -> list[tuple[int, float]]:
        return queries.fts_match(self.conn, match, limit=limit, offset=offset, min_rowid=min_rowid)

    def fts_scores(
        self, match: str, lowest: int, highest: int, among: Collection[int] | None = None
    ) -> dict[int, float]:
        # FTS5 reads the range's doclists either way: the rows not asked for are dropped
        scores = queries.fts_scores(self.conn, match, lowest, highest)
        if among is None:
            return scores
        return {rowid: score for rowid, score in scores.items() if rowid in among}

    def fts_rows(self, asked: Sequence[tuple[str, int, int]]) -> list[tuple[int, int]]:
        return queries.fts_rows(self.conn, asked)

    def fts_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]:
        return queries.fts_postings(self.conn, matches, cap=cap)

    def fuzzy_postings(self, matches: Sequence[str], *, cap: int) -> list[tuple[int, int]]:
        return queries.fuzzy_postings(self.conn, matches, cap=cap)

    def in_workspace(self, rowids: Sequence[int], workspace: str) -> set[int]:
        return queries.in_workspace(self.conn, rowids, workspace)

    def workspace_share(self, workspace: str) -> float:
        return queries.workspace_share(self.conn, workspace)

    def workspace_size(self, workspace: str | None) -> int:
        return queries.workspace_size(self.conn, workspace)

    def texts_by_rowid(self, rowids: Sequence[int]) -> dict[int, str]:
        return queries.texts_by_rowid(self.conn, rowids)

    def sids_by_rowid(self, rowids: Sequence[int]) -> dict[int, int]:
        return queries.sids_by_rowid(self.conn, rowids)

    def has_word(self, word: str) -> bool:
        return queries.has_word(self.conn, word)

    def words_from(self, prefix: str, *, limit: int) -> list[str]:
        return queries.words_from(self.conn, prefix, limit=limit)

    def vector_coverage(self, model: str, workspace: str | None) -> tuple[int, int]:
        return vectors.coverage(self.conn, model, workspace)

    def vector_signature(self, model: str) -> tuple[int, int]:
        return vectors.signature(self.conn, model)

    def load_vectors(
        self, model: str, workspace: str | None, dim: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        return vectors.load(self.conn, model, workspace, dim)
