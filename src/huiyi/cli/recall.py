"""`huiyi recall`: print exactly what the agent's `recall_history` tool returns (the human
`/recall`), served along the one route (`huiyi.transports.cli_client`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from huiyi.cli.common import (
    CliState,
    clean_errors,
)
from huiyi.cli.output import safe
from huiyi.errors import UsageError
from huiyi.transports import cli_client

__all__ = ["recall"]


@click.command()
@click.argument("query", nargs=-1)
@click.option(
    "--workspace",
    type=click.Path(path_type=Path),
    help="The workspace to recall from (default: HUIYI_WORKSPACE, else the current directory's).",
)
@click.option(
    "--session",
    "session_id",
    help="The current session, whose compacted part a bare `recall` returns (default: "
    "HUIYI_SESSION).",
)
@click.option("--limit", default=5, show_default=True, help="How many results (1-20).")
@click.option(
    "--stdin",
    "from_stdin",
    is_flag=True,
    help="Read the words from standard input (how a harness's /recall command passes what a "
    "person typed, never through the shell).",
)
@click.pass_obj
def recall(
    state: CliState,
    query: tuple[str, ...],
    workspace: Path | None,
    session_id: str | None,
    limit: int,
    from_stdin: bool,
) -> None:
    """Print exactly what the agent's recall_history tool returns (the human /recall)."""
    with clean_errors():
        typed = sys.stdin.read() if from_stdin else ""
        text = " ".join([*query, *typed.split()]).strip()
        if from_stdin and not text:
            raise UsageError(
                "/recall needs some words to look for, e.g. `/recall 部署脚本` "
                "(what compaction removed: ask the agent, or `huiyi recall --session ID`)"
            )
        session_id = session_id or state.settings.session
        if not text and not session_id:
            raise UsageError(
                "give some words to recall, e.g. `huiyi recall 数据库 回滚`; a bare `huiyi "
                "recall` needs --session ID (the session whose compacted part to recover)"
            )
        request = cli_client.recall_request(
            state.settings, text, workspace=workspace, session_id=session_id, limit=limit
        )
        value = cli_client.reply(state.settings, request, state.huiyi)
        if value.get("note"):
            click.echo(f"note: {safe(value['note'])}", err=True)
        click.echo(value["text"])
