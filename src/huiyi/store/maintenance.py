"""Looking after the index, as `Huiyi` calls it: health, contents, repair and forgetting.

One name for the calls above the store that look after the index; the work is in the modules
named for each job: `health` (checks that change nothing, and the counts `huiyi doctor`
shows), `repair` (mending a damaged index, salvaging what only the damaged copy holds) and
`forget` (removing sessions and workspaces and keeping them out).
"""

from __future__ import annotations

from huiyi.store.forget import forget_session, forget_workspace
from huiyi.store.health import (
    Health,
    check,
    has_sessions,
    last_indexed,
    newer_message,
    per_source,
    quick_check,
    totals,
)
from huiyi.store.repair import RepairReport, move_aside, repair

__all__ = [
    "Health",
    "RepairReport",
    "check",
    "forget_session",
    "forget_workspace",
    "has_sessions",
    "last_indexed",
    "move_aside",
    "newer_message",
    "per_source",
    "quick_check",
    "repair",
    "totals",
]
