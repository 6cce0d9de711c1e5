"""`huiyi search`, `recall`, `sessions` and `show`: reading the indexed history.

`search` and `recall` go to the warm service when one is running for these settings (it keeps
the index open and the embedding model loaded; `huiyi.transports.cli_client`), else they are
served in this process by the same code, so the output is the same either way. A search the
service answers imports neither the core nor the model here; one served here while the history
is embedded starts the service for the next (`terminal.answer_here`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from huiyi.cli.common import (
    CliState,
    clean_errors,
    emit_json,
    pass_huiyi,
    safe,
    when,
    workspace_options,
)
from huiyi.cli.output import search_text
from huiyi.errors import UsageError
from huiyi.transports import cli_client as terminal

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.model import Event

__all__ = ["recall", "search_cmd", "sessions", "show"]


@click.command(name="search")
@click.argument("query", nargs=-1, required=True)
@workspace_options("Search")
@click.option("--limit", default=10, show_default=True, help="How many hits to show.")
@click.option(
    "--layer",
    type=click.Choice(["hybrid", "lexical", "fuzzy", "semantic"]),
    default="hybrid",
    show_default=True,
    help="Fuse every layer, or run one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print hits as a JSON list.")
@click.pass_obj
def search_cmd(
    state: CliState,
    query: tuple[str, ...],
    workspace: Path | None,
    all_: bool,
    limit: int,
    layer: str,
    as_json: bool,
) -> None:
    """Search history in Chinese or English; quote a phrase for an exact match."""
    with clean_errors():
        request = terminal.search_request(
            state.settings,
            " ".join(query),
            workspace=workspace,
            all_workspaces=all_,
            limit=limit,
            layer=layer,
        )
        result = terminal.reply(state.settings, request, state.huiyi)
        click.echo(search_text(result, as_json=as_json))


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
@click.pass_obj
def recall(
    state: CliState,
    query: tuple[str, ...],
    workspace: Path | None,
    session_id: str | None,
    limit: int,
) -> None:
    """Print exactly what the agent's recall_history tool returns (the human /recall)."""
    with clean_errors():
        session_id = session_id or state.settings.session
        text = " ".join(query).strip()
        if not text and not session_id:
            raise UsageError(
                "give some words to recall, e.g. `huiyi recall 数据库 回滚`; a bare `huiyi "
                "recall` needs --session ID (the session whose compacted part to recover)"
            )
        request = terminal.recall_request(
            state.settings, text, workspace=workspace, session_id=session_id, limit=limit
        )
        click.echo(terminal.reply(state.settings, request, state.huiyi)["text"])


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


def _event_json(event: Event) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "time": event.time,
        "kind": str(event.kind),
        "role": event.role,
        "surface": str(event.surface),
        "injected": event.injected,
        "tool_name": event.tool_name,
        "text": safe(event.text),
    }


@click.command()
@click.argument("session_id")
@click.option("--around", type=int, help="Show events around this seq.")
@click.option("--from-seq", type=int, help="Show events from this seq onwards.")
@click.option("--limit", default=50, show_default=True, help="How many events to show.")
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON.")
@pass_huiyi
def show(
    hy: Huiyi,
    session_id: str,
    around: int | None,
    from_seq: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """Show the original text of one session (by default its last events)."""
    with clean_errors():
        if around is not None and from_seq is not None:
            raise UsageError("use either --around SEQ or --from-seq N, not both")
        session = hy.session(session_id)
        events = hy.read(
            session_id,
            around=around,
            before=limit // 2,
            after=limit // 2,
            from_seq=from_seq,
            last=limit,
            limit=limit,
        )
        if as_json:
            emit_json(
                {
                    "session": {
                        "id": session.id,
                        "title": safe(session.title),
                        "workspace": session.workspace,
                        "source": session.source,
                    },
                    "events": [_event_json(e) for e in events],
                }
            )
            return
        click.echo(f"{safe(session.title) or '(untitled)'}  [{session.source}] {session.workspace}")
        for e in events:
            marks = "".join(
                [
                    " (shadowed)" if e.surface == "shadowed" else "",
                    " (injected)" if e.injected else "",
                ]
            )
            tool = f" {e.tool_name}" if e.tool_name else ""
            click.echo(f"\n#{e.seq} {when(e.time)} {e.kind}{tool}{marks}")
            click.echo(safe(e.text))
        if from_seq is not None and events:
            click.echo(f"\n(next: --from-seq {events[-1].seq + 1})")
