"""`huiyi show`: the original text of one session, by default its last events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from huiyi.cli.common import (
    clean_errors,
    emit_json,
    pass_huiyi,
    safe,
    when,
)
from huiyi.errors import UsageError
from huiyi.model import COMPACTED_MARK, INJECTED_MARK, Surface

if TYPE_CHECKING:
    from huiyi.api import Huiyi
    from huiyi.model import Event

__all__ = ["show"]


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
                    f" ({COMPACTED_MARK})" if e.surface == Surface.SHADOWED else "",
                    f" ({INJECTED_MARK})" if e.injected else "",
                ]
            )
            tool = f" {e.tool_name}" if e.tool_name else ""
            click.echo(f"\n#{e.seq} {when(e.time)} {e.kind}{tool}{marks}")
            click.echo(safe(e.text))
        if from_seq is not None and events:
            click.echo(f"\n(next: --from-seq {events[-1].seq + 1})")
