"""Opening the index: one SQLite file under HUIYI_HOME, WAL mode, owner-only permissions.

Many processes may read at once (MCP servers, hooks, the CLI); writes are serialised by
`writer_lock` (a `flock` on a lock file next to the database) on top of SQLite's own locking,
so a long ingestion never fails another writer with "database is locked": it waits its turn.

Faults of the machine are not bugs and get huiyi's own errors (`fault`, `faults`): SQLite
finding the file damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`: "database disk image is
malformed") is a `StoreError` that names `huiyi doctor --repair`; a full disk (`SQLITE_FULL`,
`ENOSPC`, `EDQUOT`) is a `DiskFullError`, raised after the open transaction was rolled back, so
that what was written before stays as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from huiyi.errors import BusyError, DiskFullError, HuiyiError, StoreError
from huiyi.lock import file_lock
from huiyi.store import migrations, textpack, transaction

BUSY_TIMEOUT_MS = 10_000
#: page size of a new index (SQLite's default is 4,096): fewer page headers and part-empty
#: pages make a smaller file, and searches are as fast
PAGE_SIZE = 8_192
#: pause before opening again after SQLite refused to wait (see `connect`)
OPEN_RETRY_SECONDS = 0.02


class Connection(sqlite3.Connection):
    """`sqlite3.Connection` that can be referred to weakly, so that `store.textpack` can keep
    the connection's codec beside it without keeping the connection alive."""


def connect(path: Path, *, readonly: bool = False, shared: bool = False) -> sqlite3.Connection:
    """Open (and for writers create and migrate) the index at `path`; `shared`, for use from
    another thread than the one that opens it (one thread at a time).

    Raises `StoreError` for a file SQLite cannot use (the message says to run `huiyi doctor
    --repair`) and for an index written by a newer huiyi (which is never touched).
    """
    if readonly and not path.exists():
        conn = sqlite3.connect(":memory:", isolation_level=None, factory=Connection)
        textpack.install(conn)
        migrations.apply(conn)
        conn.isolation_level = "DEFERRED"
        return conn
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = not path.exists()
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        conn = sqlite3.connect(
            path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            factory=Connection,
            check_same_thread=not shared,
        )
        try:
            if fresh:
                os.chmod(path, 0o600)
            _prepare(conn, path)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _busy(exc):
                # SQLite skips the busy handler where waiting could deadlock, as when two
                # processes switch a new file to WAL at once: the loser simply tries again
                if time.monotonic() < deadline:
                    time.sleep(OPEN_RETRY_SECONDS)
                    continue
                raise BusyError(
                    f"the index at {path} stayed locked by another process for "
                    f"{BUSY_TIMEOUT_MS // 1000} s; try again when it finishes"
                ) from exc
            if isinstance(full := fault(exc, path, undone=True), DiskFullError):
                raise full from exc
            raise StoreError(
                f"the index at {path} cannot be opened ({exc}); run `huiyi doctor --repair`: "
                "it keeps the damaged file aside, rebuilds the index from the logs and salvages "
                "the sessions whose logs are gone"
            ) from exc
        except BaseException:
            conn.close()
            raise


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Settings of every connection, then the migrations this index still lacks."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        # the layout of a new file (`PAGE_SIZE`; `store.compact` for auto_vacuum); asked of an
        # existing one, auto_vacuum would open a write transaction to change nothing
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    # after a checkpoint the WAL shrinks back to this, instead of keeping its largest size
    conn.execute("PRAGMA journal_size_limit = 33554432")
    conn.execute("PRAGMA foreign_keys = ON")
    # `INSERT OR REPLACE` fires delete triggers: the coverage counters need it (m005)
    conn.execute("PRAGMA recursive_triggers = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute(f"PRAGMA cache_size = -{transaction.CACHE_KIB}")
    textpack.install(conn)
    newer = migrations.unknown(conn)
    if newer:
        raise StoreError(
            f"the index at {path} was written by a newer huiyi (it records "
            f"{', '.join(newer)}); upgrade huiyi, or move it aside and run `huiyi index`"
        )
    migrations.apply(conn)
    _rebuild_stale(conn)
    conn.isolation_level = "DEFERRED"  # back to implicit transactions (`with conn:`)


def _busy(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_BUSY or one of its extended codes ("database is locked")."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


# -- faults of the machine -----------------------------------------------------------------

#: SQLite's primary result codes for a file it finds damaged
_DAMAGED_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
#: ... and the messages SQLite gives for them (what is left of an error passed on as text)
DAMAGED_MESSAGES = (
    "database disk image is malformed",
    "file is not a database",
    "malformed database schema",
)
#: what a search layer's note holds when a table of the schema was dropped: not a fault of
#: the file (in code it is a bug, and keeps its traceback), but a layer that cannot answer
#: (`health.schema_check` finds it, `repair` makes it again)
_MISSING_TABLE = "no such table"
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: what SQLite says when `event_text` failed (`store.textpack.last_failure` says why)
_FUNCTION_FAILED = "user-defined function raised exception"


def damage_in(text: str) -> str | None:
    """SQLite's complaint of a damaged file when an error text (say, a search layer's note)
    holds one, or what made a packed text unreadable; else None."""
    found = next((message for message in DAMAGED_MESSAGES if message in text), None)
    return found or _unreadable_text(text)


def layer_damage(text: str) -> str | None:
    """What broke a search layer whose note is `text`: the damage `damage_in` finds, or a
    table of the schema that is missing; else None."""
    if (found := damage_in(text)) is not None:
        return found
    start = text.find(_MISSING_TABLE)
    return text[start:] if start >= 0 else None


def _unreadable_text(text: str) -> str | None:
    failure = textpack.last_failure
    return str(failure) if failure is not None and _FUNCTION_FAILED in text else None


def damaged_message(path: Path | None, detail: str) -> str:
    where = f"the index at {path}" if path is not None else "the index"
    return (
        f"{where} is damaged ({detail}); run `huiyi doctor --repair`: it keeps the damaged "
        "file aside, rebuilds the index from the logs and salvages the sessions whose logs "
        "are gone"
    )


def fault(
    exc: BaseException, path: Path | None, *, retry: str = "", undone: bool = False
) -> HuiyiError | None:
    """The huiyi error for a fault of the machine: a `StoreError` when SQLite finds the index
    damaged, a `DiskFullError` when the disk is full; None for anything else (a bug, which keeps
    its traceback). `retry` says what to run again once there is room; `undone` (the failed
    write was rolled back, as `faults` does) lets the message say that nothing was lost."""
    if isinstance(exc, textpack.TextPackError):
        return StoreError(damaged_message(path, str(exc)))
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        if primary == sqlite3.SQLITE_FULL:
            return disk_full(path, str(exc), retry=retry, undone=undone)
        if primary in _DAMAGED_CODES or (primary is None and damage_in(str(exc))):
            return StoreError(damaged_message(path, str(exc)))
        if (unreadable := _unreadable_text(str(exc))) is not None:
            return StoreError(damaged_message(path, unreadable))
        return None
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return disk_full(path, exc.strerror or str(exc), retry=retry, undone=undone)
    return None


def disk_full(
    path: Path | None, detail: str, *, retry: str = "", undone: bool = False
) -> DiskFullError:
    """The `DiskFullError` for a write to `path` (the index, when it is the index's file)."""
    where = f"the disk holding {path}" if path is not None else "the disk"
    kept = "; nothing written before was lost and the unfinished write was undone" if undone else ""
    return DiskFullError(
        f"{where} is full ({detail}){kept}: free some space and {retry or 'run the command again'}"
    )


@contextlib.contextmanager
def faults(conn: sqlite3.Connection | None, path: Path, *, retry: str = "") -> Iterator[None]:
    """Turn a damaged index or a full disk met inside the block into huiyi's error (see
    `fault`), after rolling back `conn`'s open transaction; anything else passes unchanged."""
    try:
        yield
    except (sqlite3.DatabaseError, OSError, textpack.TextPackError) as exc:
        error = fault(exc, path, retry=retry, undone=True)
        if error is None:
            raise
        if conn is not None and conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.rollback()
        raise error from exc


def _rebuild_stale(conn: sqlite3.Connection) -> None:
    """Fill the text indexes (or the trigram index alone) again when a migration asked for it
    (see `store.migrations`)."""
    if not migrations.stale(conn):
        return
    from huiyi.store import textindex  # with the readers' helpers: not on every open

    packed = rebuilt = False
    with transaction.immediate(conn):
        stale = migrations.stale(conn)  # read again: another process may have done it
        if migrations.TEXT_INDEXES in stale:
            rebuilt = textindex.rebuild(conn) > 0
        elif migrations.FUZZY_INDEX in stale:
            textindex.rebuild(conn, only_fuzzy=True)
        if migrations.PACKED_TEXT in stale:
            packed = textpack.train(conn)  # an index too small waits for its writer to train
        for what in stale:
            migrations.rebuilt(conn, what)
    if packed:
        vacuum(conn)
    elif rebuilt:
        # the text indexes written again left their old pages free: give them back (an index
        # without incremental vacuum keeps them for later writes)
        from huiyi.store import compact

        compact.compact(conn)


def vacuum(conn: sqlite3.Connection) -> None:
    """Give back the room texts packed in place left (rows shrunk in place leave pages part
    empty, which only `VACUUM` packs again): an index made before m010, once packed, or a new
    one whose writer trained its dictionary. In the layout of a new index (incremental vacuum:
    `store.compact` keeps it small from then on). Its copy goes through a file, not memory;
    another process's open read only delays it."""
    try:
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    except sqlite3.OperationalError:
        pass  # busy: the room stays for later writes, as before the packing
    finally:
        conn.execute("PRAGMA temp_store = MEMORY")


@contextlib.contextmanager
def writer_lock(lock_path: Path, *, timeout: float = 120.0) -> Iterator[None]:
    """Hold the index's single-writer lock; wait up to `timeout` seconds for it."""
    with file_lock(lock_path, timeout=timeout, what="the index writer lock"):
        yield
