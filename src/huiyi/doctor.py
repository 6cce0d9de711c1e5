"""What `huiyi doctor` reports: where each harness's logs were looked for, what the index holds,
how healthy it is, and how much of it is embedded.

Assembly only: every count and check comes from `store.health`, which holds the SQL, and
repair lives in `store.repair`. One definition of "events" holds for the total and for each
source: the conversation events that `sessions.event_count` counts (titles and other
bookkeeping rows are not events).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huiyi.config import Settings
from huiyi.sources import default_readers
from huiyi.store.health import Health


def _size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = path.with_name(path.name + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


def sources_found(settings: Settings) -> dict[str, dict[str, Any]]:
    """Per harness, the folders its logs were looked for in and whether each exists."""
    return {
        reader.source: {"roots": [{"path": str(r), "exists": r.is_dir()} for r in reader.roots()]}
        for reader in default_readers(settings)
    }


def index_bytes(path: Path) -> int:
    """The index's size on disk, its WAL and shared-memory files included."""
    return _size(path)


def report(
    settings: Settings,
    health: Health,
    *,
    totals: Mapping[str, int] | None = None,
    per_source: Mapping[str, Mapping[str, Any]] | None = None,
    embeddings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The doctor report as plain data (`--json` prints it as is).

    `totals` and `per_source` are None when the index is too damaged to count: the report then
    says what is wrong (`problem`) and still lists where the logs were looked for.
    """
    sources = sources_found(settings)
    for name, counts in (per_source or {}).items():
        sources.setdefault(name, {"roots": []}).update(counts)
    counted = totals or {}
    return {
        "home": str(settings.home),
        "index": str(settings.db_path),
        "index_bytes": _size(settings.db_path),
        "healthy": health.ok,
        "problem": health.problem,
        "integrity": health.integrity,
        "fulltext": health.fulltext,
        "schema": health.schema,
        "sessions": counted.get("sessions"),
        "events": counted.get("events"),
        "private_sessions": counted.get("private_sessions"),
        "workspaces": counted.get("workspaces"),
        "sources": sources,
        "embeddings": dict(embeddings) if embeddings is not None else None,
    }
