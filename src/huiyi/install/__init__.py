"""`huiyi install`: connect huiyi to a harness with one command (see docs/install.md).

    changes = plan("codex", settings, Launch.current(settings))
    print(diff(changes))           # --dry-run
    written = apply(changes)       # backups first, then atomic writes
    statuses(settings)             # what `huiyi doctor` shows

Each harness's own package knows where that harness reads its MCP servers and hooks
(`huiyi.harnesses.<name>.install`: `plan` and `status`); `common` holds the diff, backup and
write steps and the hook-list merge they share, `blocks` the marked block the TOML and YAML
files keep huiyi's lines in (DSH's memory digest in AGENTS.md is its own package's,
`harnesses/dsh/digest.py`).
"""

from __future__ import annotations

from typing import Protocol

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.harnesses import NAMES, Adapter, adapters, by_name
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
HARNESSES = NAMES


class Installer(Protocol):
    """What a harness's `install` module offers (`huiyi.harnesses.<name>.install`)."""

    def plan(
        self, settings: Settings, launch: Launch, *, uninstall: bool, profile: str | None
    ) -> list[Change]: ...

    def status(self, settings: Settings) -> Status: ...


def installer(adapter: Adapter) -> Installer:
    """The installer rows of one harness."""
    part: Installer = adapter.part("install")
    return part


def plan(
    harness: str,
    settings: Settings,
    launch: Launch,
    *,
    uninstall: bool = False,
    profile: str | None = None,
) -> list[Change]:
    """The file changes that install (or uninstall) huiyi for `harness`; nothing is written."""
    adapter = by_name(harness)
    if profile is not None and not adapter.profiles:
        having = ", ".join(f"`huiyi install {a.name}`" for a in adapters() if a.profiles)
        raise UsageError(f"--profile is a {adapter.title} option only for {having}")
    return installer(adapter).plan(settings, launch, uninstall=uninstall, profile=profile)


def statuses(settings: Settings) -> dict[str, Status]:
    """Per harness: is huiyi's MCP entry there, which of its hooks, and in which files."""
    return {adapter.name: installer(adapter).status(settings) for adapter in adapters()}
