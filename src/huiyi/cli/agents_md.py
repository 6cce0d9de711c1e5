"""`huiyi agents-md sync`: keep the memory digest block in AGENTS.md up to date (for DSH without
hooks); what is written where is `huiyi.harnesses.dsh.digest`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import edge, pass_huiyi
from huiyi.cli.install import write_changes
from huiyi.harnesses.dsh.digest import plan as digest_plan

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["agents_md"]


@click.group("agents-md")
def agents_md() -> None:
    """Keep a memory digest in AGENTS.md for DSH sessions without hooks."""


@agents_md.command("sync")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write this project's notes to DIR/AGENTS.local.md (default: the user profile to "
    "DSH_HOME/AGENTS.md).",
)
@click.option("--remove", is_flag=True, help="Remove the digest block; leave the rest.")
@click.option("--dry-run", is_flag=True, help="Show the change as a unified diff; write nothing.")
@pass_huiyi
@edge
def sync(hy: Huiyi, project: Path | None, remove: bool, dry_run: bool) -> None:
    """Write (or refresh) the marked memory digest block; text outside it is never touched."""
    write_changes(
        [digest_plan(hy.settings, project, remove=remove, memory=hy.workspace_memory)],
        dry_run,
        hy.settings.backups_path,
    )
