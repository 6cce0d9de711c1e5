"""`huiyi sessions`: list the indexed sessions, most recently active first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import (
    clean_errors,
    emit_json,
    pass_huiyi,
    safe,
    when,
    workspace_options,
)

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["sessions"]


@click.command()
@workspace_options("List the sessions of")
@click.option("--limit", default=50, show_default=True, help="How many sessions to list.")
@click.option("--json", "as_json", is_flag=True, help="Print sessions as a JSON list.")
@pass_huiyi
def sessions(hy: Huiyi, workspace: Path | None, all_: bool, limit: int, as_json: bool) -> None:
    """List sessions, most recently active first."""
    with clean_errors():
        found = hy.sessions(workspace=workspace, all_workspaces=all_, limit=limit)
        if as_json:
            emit_json(
                [
                    {
                        "id": s.id,
                        "source": s.source,
                        "workspace": s.workspace,
                        "cwd": s.cwd,
                        "title": safe(s.title),
                        "created": s.created,
                        "updated": s.updated,
                        "events": s.event_count,
                        "user_messages": s.user_count,
                        "subagent": s.is_subagent,
                        "parent": s.parent,
                    }
                    for s in found
                ]
            )
            return
        if not found:
            click.echo("no sessions here; try --all, or run `huiyi index` first")
        for s in found:
            title = safe(s.title) or "(untitled)"
            sub = " [subagent]" if s.is_subagent else ""
            click.echo(
                f"{when(s.updated)}  {s.source:<6} {s.id}  {s.event_count:>5} events  {title}{sub}"
            )
            if all_:
                click.echo(f"    {s.workspace}")
