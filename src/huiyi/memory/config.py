"""Where the memory files live, how big they may grow, and which workspace a directory is.

Both stores sit under `HUIYI_HOME/memory/` as plain text so a person can open them in an
editor:

    memory/user.md                          the user store (all workspaces)
    memory/user.archive.md                  its archived entries
    memory/workspaces/<name>-<hash>/memory.md          one workspace's store
    memory/workspaces/<name>-<hash>/memory.archive.md  its archived entries
    memory/workspaces/<name>-<hash>/WORKSPACE          the workspace path, for people

Next to each store: `<store>.hits.json` (hit counts and last use, for search and archiving),
`<store>.lock` (the cross-process write lock) and `backups/` (copies of files that stopped
parsing). The workspace directory name carries a readable basename and a hash of the full path,
so two checkouts called `app` never share notes.

The limits are `Settings.memory`, a `MemoryConfig` (defined in `huiyi.config` and read once
from `HUIYI_MEMORY_USER_LIMIT` (1,375), `HUIYI_MEMORY_LIMIT` (2,200) and
`HUIYI_MEMORY_ARCHIVE_DAYS` (30; 0 never archives)); it is re-exported here.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from huiyi.config import MemoryConfig as MemoryConfig
from huiyi.errors import UsageError


class Target(StrEnum):
    """The two stores."""

    USER = "user"
    MEMORY = "memory"


def parse_target(value: str | None) -> Target:
    """`user` or `memory`, else a UsageError that says so."""
    if value is not None and not isinstance(value, str):
        raise UsageError("target must be 'user' or 'memory'")
    try:
        return Target((value or "").strip().lower())
    except ValueError:
        raise UsageError(f"target must be 'user' or 'memory', not {value!r}") from None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def workspace_dirname(workspace: str) -> str:
    """A stable, readable directory name for one workspace path."""
    base = _UNSAFE.sub("-", os.path.basename(workspace.rstrip("/\\")) or "root").strip("-.")
    digest = hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:12]
    return f"{base[:40] or 'root'}-{digest}"


@dataclass(frozen=True, slots=True)
class StorePaths:
    """Every file that belongs to one store."""

    main: Path
    archive: Path
    hits: Path
    lock: Path
    backups: Path

    @classmethod
    def at(cls, directory: Path, stem: str) -> StorePaths:
        return cls(
            main=directory / f"{stem}.md",
            archive=directory / f"{stem}.archive.md",
            hits=directory / f"{stem}.hits.json",
            lock=directory / f"{stem}.lock",
            backups=directory / "backups",
        )


def memory_root(home: Path) -> Path:
    return home / "memory"


def store_paths(home: Path, target: Target, workspace: str | None) -> StorePaths:
    """Paths of the user store, or of the memory store of `workspace`."""
    root = memory_root(home)
    if target is Target.USER:
        return StorePaths.at(root, "user")
    if not workspace:
        raise UsageError(
            "no workspace is known, so there is no workspace memory; run inside a project "
            "directory or pass --workspace DIR"
        )
    return StorePaths.at(root / "workspaces" / workspace_dirname(workspace), "memory")
