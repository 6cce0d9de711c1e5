"""`huiyi mcp`: the recall and memory tools for agents, over MCP (stdio, or Streamable HTTP).

Only argument parsing lives here. Over stdio the server is `huiyi.transports.stdio_mcp` (the
`huiyi` entry point reaches it without importing click, and this command runs the same server
when called through the click group); over HTTP it is the SDK server
(`huiyi.transports.http_mcp`), imported when the command runs, so the MCP SDK never slows down
other `huiyi` commands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import clean_errors, pass_huiyi
from huiyi.workspace import resolve

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["mcp", "parse_http"]


def parse_http(value: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) as a host and a port; a host that is not loopback
    only with `allow_remote`. Anything else is a UsageError."""
    from huiyi.loopback import is_loopback

    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise click.UsageError(
            f"--http takes HOST:PORT, for example 127.0.0.1:8765 (got {value!r})"
        )
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise click.UsageError(f"--http port must be between 1 and 65535 (got {port})")
    if not allow_remote and not is_loopback(host):
        raise click.UsageError(
            f"--http serves only this machine: {host} is not a loopback address. Use "
            f"127.0.0.1:{port} (or [::1]:{port}, localhost:{port}); recalled history must not "
            "be reachable from the network. To serve other machines anyway, add --allow-remote "
            "(clients still need the token)."
        )
    return host.lower(), port


@click.command("mcp")
@click.option(
    "--http",
    "http",
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback hosts only, "
    "unless --allow-remote); clients must send the bearer token of --token-file.",
)
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    help="Answer every call for this workspace (default: HUIYI_WORKSPACE, else the caller's "
    "session found in the logs, MCP roots, or the current directory).",
)
@click.option(
    "--server-name",
    default="huiyi",
    show_default=True,
    help="The name the harness registered this server under (its tools are called "
    "mcp__NAME__TOOL); used to find the calling session in DSH and Claude Code logs.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --http: the file holding the bearer token and the workspaces it may read "
    "(default: HUIYI_HOME/mcp-token.json); created owner-only on first use, with a new "
    "token shown once and the workspace of --workspace, else of the current directory.",
)
@click.option(
    "--hold-service",
    is_flag=True,
    help="Keep the warm background service up while this server runs, so that hooks a "
    "harness runs in a sandbox with a read-only HUIYI_HOME (DSH under bubblewrap) can hand "
    "their work to it (`huiyi install dsh` sets this).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="With --http: allow a host that is not loopback (the token is still required; the "
    "traffic is plain HTTP).",
)
@pass_huiyi
def mcp(
    hy: Huiyi,
    http: str | None,
    workspace: str | None,
    server_name: str,
    token_file: Path | None,
    allow_remote: bool,
    hold_service: bool,
) -> None:
    """Serve the recall and memory tools to agents over MCP (stdio by default)."""
    if http is None and (token_file is not None or allow_remote):
        raise click.UsageError("--token-file and --allow-remote go with --http HOST:PORT")
    address = parse_http(http, allow_remote=allow_remote) if http is not None else None
    how = "--workspace"
    if workspace is None:  # Settings checked that HUIYI_WORKSPACE is a directory
        workspace = hy.settings.workspace
        how = "HUIYI_WORKSPACE"

    if address is None:  # the light stdio front, as `huiyi mcp` reaches it without click
        from huiyi.transports.stdio_mcp import serve as serve_stdio

        serve_stdio(
            hy.settings,
            server=server_name,
            cwd=os.getcwd(),
            forced=workspace,
            forced_how=how,
            hold_service=hold_service,
        )
        return

    from huiyi.policy.caller import CallerFinder
    from huiyi.transports.http_auth import TOKEN_FILE_NAME, load_or_create
    from huiyi.transports.http_mcp import serve

    with clean_errors():  # a token file others may read, or that does not parse: exit 2
        if token_file is None:
            token_file = hy.settings.ensure_home() / TOKEN_FILE_NAME
        token = load_or_create(token_file, [resolve(workspace or os.getcwd())])
        finder = CallerFinder.for_settings(
            hy.settings, cwd=os.getcwd(), server=server_name, forced=workspace, forced_how=how
        )
        serve(hy, finder, http=address, token=token)
