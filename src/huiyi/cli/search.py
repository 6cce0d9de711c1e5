"""`huiyi search`: search this workspace's history (or every one) in Chinese or English.

The search goes along the one route (`huiyi.transports.cli_client`): to the warm service when
one is running for these settings (it keeps the index open and the embedding model loaded),
else it is served in this process by the same code, so the output is the same either way. A
search the service answers imports neither the core nor the model here; one served here while
the history is embedded starts the service for the next. Its common forms are served without
click by `cli.quick_search`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import (
    CliState,
    clean_errors,
    workspace_options,
)
from huiyi.cli.output import search_text
from huiyi.transports import cli_client

if TYPE_CHECKING:
    pass

__all__ = ["search_cmd"]


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
@click.option(
    "--verbose", is_flag=True, help="Also print the evidence's numbers when nothing is shown."
)
@click.pass_obj
def search_cmd(
    state: CliState,
    query: tuple[str, ...],
    workspace: Path | None,
    all_: bool,
    limit: int,
    layer: str,
    as_json: bool,
    verbose: bool,
) -> None:
    """Search history in Chinese or English; quote a phrase for an exact match."""
    with clean_errors():
        request = cli_client.search_request(
            state.settings,
            " ".join(query),
            workspace=workspace,
            all_workspaces=all_,
            limit=limit,
            layer=layer,
        )
        result = cli_client.reply(state.settings, request, state.huiyi)
        click.echo(search_text(result, as_json=as_json, verbose=verbose))
