"""`huiyi serve`: the team server (`transports.team_server`) over a PostgreSQL store."""

from __future__ import annotations

import click

from huiyi.cli.common import clean_errors

__all__ = ["serve"]


@click.command()
@click.option(
    "--database",
    envvar="HUIYI_TEAM_DATABASE",
    required=True,
    help="The PostgreSQL URL of the team's store (or HUIYI_TEAM_DATABASE).",
)
@click.option("--listen", default="127.0.0.1:8470", show_default=True, help="HOST:PORT to bind.")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="TLS certificate.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="TLS private key.")
@click.option(
    "--insecure-http",
    is_flag=True,
    help="Serve plain HTTP beyond loopback (only behind a TLS proxy).",
)
def serve(
    database: str, listen: str, tls_cert: str | None, tls_key: str | None, insecure_http: bool
) -> None:
    """Serve the team's shared recall: pushes from huiyi clients, searches for teammates."""
    from huiyi.hub import Hub
    from huiyi.transports.team_server import check_listen
    from huiyi.transports.team_server import serve as run

    with clean_errors():
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise click.BadParameter("use HOST:PORT", param_hint="--listen")
        check_listen(host.strip("[]"), tls=tls_cert is not None, insecure_http=insecure_http)
        with Hub(database) as hub:
            scheme = "https" if tls_cert else "http"
            click.echo(f"huiyi serve: {scheme}://{listen}", err=True)
            run(
                hub,
                host.strip("[]"),
                int(port),
                tls_cert=tls_cert,
                tls_key=tls_key,
                insecure_http=insecure_http,
            )
