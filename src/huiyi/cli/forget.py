"""`huiyi forget`: remove a session or a whole workspace from the index, and keep it out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import clean_errors, pass_huiyi

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["forget"]


@click.command()
@click.argument("session_id", required=False)
@click.option(
    "--workspace", type=click.Path(path_type=Path), help="Forget every session of this workspace."
)
@pass_huiyi
def forget(hy: Huiyi, session_id: str | None, workspace: Path | None) -> None:
    """Remove a session (or a workspace) from the index and keep it out."""
    with clean_errors():
        count = hy.forget(session_id=session_id, workspace=workspace)
        click.echo(
            f"forgot {count} session{'s' if count != 1 else ''}; they will not be indexed again"
        )
