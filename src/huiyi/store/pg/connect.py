"""Opening the PostgreSQL store: a connection pool (psycopg 3), migrated on open.

A database URL may carry a password: it never appears in an error or a log (`safe_url`).
A server that cannot be reached, or a database written by a newer huiyi, is a `StoreError`
that says what to do.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from huiyi.errors import StoreError
from huiyi.store.pg import migrations

#: how long opening waits for the server
CONNECT_SECONDS = 10.0


def safe_url(url: str) -> str:
    """`url` without a password (in `user:password@` form or as a `password=` parameter)."""
    url = re.sub(r"(://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1***", url)


def migrate(url: str) -> list[str]:
    """Apply the migrations the database at `url` lacks; their names."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_SECONDS)) as conn:
            newer = migrations.unknown(conn)
            if newer:
                raise StoreError(
                    f"the database at {safe_url(url)} was written by a newer huiyi (it records "
                    f"{', '.join(newer)}); upgrade huiyi"
                )
            return migrations.apply(conn)
    except psycopg.OperationalError as exc:
        raise StoreError(
            f"cannot reach the PostgreSQL database at {safe_url(url)} "
            f"({_reason(exc)}); check that the server runs and the URL is right"
        ) from None


def _reason(exc: psycopg.Error) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return safe_url(text)


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Each connection reads without parallel workers: a search is many short statements
    from many clients at once, and the windows of newest rows (`sql.WINDOWS`) rely on an
    Append reading its parts in order, which a parallel one does not."""
    conn.execute("SET max_parallel_workers_per_gather = 0")


def open_pool(url: str, *, min_size: int = 1, max_size: int = 8) -> ConnectionPool[Any]:
    """A pool of connections to the migrated database at `url`."""
    migrate(url)
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True},
        configure=_configure,
        timeout=CONNECT_SECONDS,
    )
    try:
        pool.open(wait=True, timeout=CONNECT_SECONDS)
    except Exception as exc:  # psycopg_pool.PoolTimeout: the server went away meanwhile
        pool.close()
        raise StoreError(f"cannot open connections to {safe_url(url)}: {exc}") from None
    return pool
