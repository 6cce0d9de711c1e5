"""The same history on both stores: a `Huiyi` that reads the local SQLite index, or one that
reads a copy of it in PostgreSQL (`store.pg.copy`), so that a test of what a search, a recall
tool or a listing shows runs on both backends unchanged."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from huiyi import Huiyi
from huiyi.store.pg.connect import open_pool
from huiyi.store.pg.copy import copy_index
from huiyi.store.pg.reads import PgIndex

BACKENDS = ("sqlite", "postgresql")


@contextlib.contextmanager
def on_postgres(local: Huiyi, url: str) -> Iterator[Huiyi]:
    """A `Huiyi` over the same home whose reads go to a copy of `local`'s index at `url`."""
    pool = open_pool(url, max_size=4)
    try:
        copy_index(local.conn, pool)
        with Huiyi(settings=local.settings, store=PgIndex(pool)) as hy:
            yield hy
    finally:
        pool.close()
