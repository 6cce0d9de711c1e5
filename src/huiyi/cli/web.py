"""`huiyi web`: the local page (memory panel, history search, sessions, status) on loopback.

Parse, start, print the address (it carries this start's key), serve until Ctrl-C. Everything
else is in `huiyi.web`.
"""

from __future__ import annotations

import signal

import click

from huiyi.cli.common import CliState, clean_errors
from huiyi.errors import UsageError
from huiyi.loopback import is_loopback

__all__ = ["web"]


@click.command()
@click.option(
    "--port", default=8765, show_default=True, help="The port to listen on (0: any free one)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="A loopback address to listen on (127.0.0.1, ::1 or localhost); never another.",
)
@click.option("--open", "open_", is_flag=True, help="Open the page in the default browser.")
@click.pass_obj
def web(state: CliState, port: int, host: str, open_: bool) -> None:
    """Serve the local web page: memory, search, sessions and status."""
    with clean_errors():
        if not is_loopback(host):
            raise UsageError(f"--host must be a loopback address, not {host}")
        if not 0 <= port <= 65535:
            raise UsageError("--port must be between 0 and 65535")
        from huiyi.web.app import WebServer

        state.settings.ensure_home()  # a home that cannot be made: one line now, not at exit
        try:
            server = WebServer(state.settings, host=host, port=port)
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port} ({exc.strerror}); try --port 0"
            ) from None
        click.echo(f"huiyi web: {server.url}", nl=True)
        click.echo("(the address carries this start's key; Ctrl-C stops the page)", err=True)
        # uvicorn passes SIGTERM on once it has shut down: end as Ctrl-C does, so that what
        # this start made (the file `--open` hands the browser) goes with it
        signal.signal(signal.SIGTERM, _terminated)
        try:
            if open_:
                import webbrowser

                # the browser gets an owner-only file that leads on to the address: its
                # command line, which every local user can read, never holds the key
                webbrowser.open(server.launcher().as_uri())
            server.run()
        finally:
            server.close()


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)
