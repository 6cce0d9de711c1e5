"""`huiyi install`: connect huiyi to a harness with one command (see docs/install.md).

    changes = plan("codex", settings, Launch.current(settings))
    print(diff(changes))           # --dry-run
    written = apply(changes)       # backups first, then atomic writes
    statuses(settings)             # what `huiyi doctor` shows

One module per harness (`claude`, `codex`, `dsh`) knows where that harness reads its MCP
servers and hooks; `common` holds the diff, backup and write steps and the hook-list merge
they share, `blocks` the marked block the TOML and YAML files keep huiyi's lines in.
"""

from __future__ import annotations

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.harnesses.claude_code import install as claude
from huiyi.harnesses.codex import install as codex
from huiyi.harnesses.dsh import install as dsh
from huiyi.install.common import (
    BACKUP_INFIX,
    Change,
    Launch,
    Status,
    Written,
    apply,
    diff,
)

__all__ = [
    "BACKUP_INFIX",
    "HARNESSES",
    "Change",
    "Launch",
    "Status",
    "Written",
    "apply",
    "diff",
    "plan",
    "statuses",
]

#: the harness names `huiyi install` takes, in the order doctor lists them
HARNESSES = ("dsh", "claude-code", "codex")


def plan(
    harness: str,
    settings: Settings,
    launch: Launch,
    *,
    uninstall: bool = False,
    profile: str | None = None,
) -> list[Change]:
    """The file changes that install (or uninstall) huiyi for `harness`; nothing is written."""
    if profile is not None and harness != "dsh":
        raise UsageError("--profile is a DSH profile; it goes with `huiyi install dsh` only")
    if harness == "dsh":
        return dsh.plan(settings, launch, uninstall=uninstall, profile=profile)
    if harness == "claude-code":
        return claude.plan(settings, launch, uninstall=uninstall)
    if harness == "codex":
        return codex.plan(settings, launch, uninstall=uninstall)
    raise UsageError(f"unknown harness {harness!r}; choose one of {', '.join(HARNESSES)}")


def statuses(settings: Settings) -> dict[str, Status]:
    """Per harness: is huiyi's MCP entry there, which of its hooks, and in which files."""
    return {
        "dsh": dsh.status(settings),
        "claude-code": claude.status(settings),
        "codex": codex.status(settings),
    }
