"""`huiyi team`: join a team server and share workspaces (a teammate), make and revoke
device tokens and read the audit (the server's admin, against its database)."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import clean_errors, pass_huiyi

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["team"]

DATABASE = click.option(
    "--database",
    envvar="HUIYI_TEAM_DATABASE",
    required=True,
    help="The PostgreSQL URL of the team's store (or HUIYI_TEAM_DATABASE).",
)


@click.group()
def team() -> None:
    """Share recall with a team server: join, share, push; tokens and audit for its admin."""


@team.command()
@click.argument("url")
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A file holding this device's token (else it is read from stdin).",
)
@click.option(
    "--share",
    "shares",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Share this workspace at once (repeatable).",
)
@click.option(
    "--wait-ms",
    type=click.IntRange(50, 10_000),
    default=1_000,
    show_default=True,
    help="How long a recall waits for the server (a hook waits at most 300 ms).",
)
@click.option(
    "--ca-file",
    type=click.Path(exists=True, dir_okay=False),
    help="The CA certificate of a server with its own certificate authority.",
)
@pass_huiyi
def join(
    hy: Huiyi,
    url: str,
    token_file: Path | None,
    shares: tuple[Path, ...],
    wait_ms: int,
    ca_file: str | None,
) -> None:
    """Join the team server at URL with this device's token."""
    from huiyi import teamclient

    with clean_errors():
        url = teamclient.check_url(url)
        raw = token_file.read_text(encoding="utf-8") if token_file else sys.stdin.readline()
        token = raw.strip()
        if not token:
            raise click.UsageError("no token given (pass --token-file, or the token on stdin)")
        old = teamclient.load(hy.settings.home)
        shared = tuple(
            dict.fromkeys(
                [*(old.shared if old else ()), *(hy.resolve_workspace(s) for s in shares)]
            )
        )
        config = teamclient.TeamConfig(
            url,
            token,
            shared,
            wait_ms,
            os.path.abspath(ca_file) if ca_file else None,
            old.pushed if old else {},
        )
        teamclient.save(hy.settings.home, config)
        click.echo(f"joined {url}; sharing {', '.join(shared) or 'no workspace yet'}")


@team.command()
@click.argument("workspace", type=click.Path(path_type=Path), required=False)
@pass_huiyi
def share(hy: Huiyi, workspace: Path | None) -> None:
    """Share a workspace (default: the current directory's) with the team."""
    from huiyi import teamclient
    from huiyi.teamname import workspace_name

    with clean_errors():
        config = teamclient.load(hy.settings.home)
        if config is None:
            raise click.UsageError("join a team first: huiyi team join URL")
        chosen = hy.resolve_workspace(workspace)
        teamclient.save(
            hy.settings.home, config.with_(shared=tuple(dict.fromkeys([*config.shared, chosen])))
        )
        click.echo(f"sharing {chosen} as {workspace_name(chosen)}; `huiyi index` pushes it")


@team.command()
@pass_huiyi
def push(hy: Huiyi) -> None:
    """Push what is new in the shared workspaces now (redacted, never a private session)."""
    with clean_errors():
        sent = hy.push()
        click.echo(
            f"pushed {sent['events']} events of {sent['sessions']} sessions, "
            f"{sent['tombstones']} withdrawn"
        )


@team.group()
def token() -> None:
    """Device tokens (the server's admin; run against its database)."""


@token.command("add")
@DATABASE
@click.option("--user", required=True, help="Who the device belongs to.")
@click.option("--device", required=True, help="The device's name (laptop, ci, ...).")
@click.option("--read", "reads", multiple=True, help="A workspace it may read (repeatable).")
@click.option("--push", "pushes", multiple=True, help="A workspace it may push (repeatable).")
def token_add(
    database: str, user: str, device: str, reads: tuple[str, ...], pushes: tuple[str, ...]
) -> None:
    """Make a device token; it is shown once, here, and kept only hashed."""
    from huiyi.hub import Hub

    with clean_errors(), Hub(database, pool_size=1) as hub:
        device_id, secret = hub.add_device(user, device, reads=reads, pushes=pushes)
        click.echo(f"device {device_id} ({user}@{device}); its token, shown only now:", err=True)
        click.echo(secret)


@token.command("list")
@DATABASE
def token_list(database: str) -> None:
    """Every device, its grants, and whether its token was revoked."""
    from huiyi.hub import Hub

    with clean_errors(), Hub(database, pool_size=1) as hub:
        for row in hub.devices():
            grants = ", ".join(
                f"{ws} ({'+'.join(k for k, on in (('read', r), ('push', p)) if on)})"
                for ws, r, p in row.grants
            )
            state = "revoked" if row.revoked else "live"
            click.echo(f"{row.id}\t{row.user}@{row.name}\t{state}\t{grants}")


@token.command("revoke")
@DATABASE
@click.argument("device_id", type=int)
def token_revoke(database: str, device_id: int) -> None:
    """Revoke a device's token: it is refused from the next request on."""
    from huiyi.hub import Hub

    with clean_errors(), Hub(database, pool_size=1) as hub:
        if not hub.revoke(device_id):
            raise click.UsageError(f"no live device {device_id}")
        click.echo(f"revoked device {device_id}")


@team.command()
@DATABASE
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=50,
    show_default=True,
    help="How many rows to print.",
)
def audit(database: str, limit: int) -> None:
    """Who read what: every search and read the server answered, newest first."""
    from huiyi.hub import Hub

    with clean_errors(), Hub(database, pool_size=1) as hub:
        for row in hub.audit(limit=limit):
            at = datetime.fromtimestamp(row.at / 1000, tz=UTC).isoformat(timespec="seconds")
            who = f"{row.user}@{row.device}"
            shown = ",".join(row.sessions) or "-"
            click.echo(f"{at}\t{who}\t{row.workspace}\t{row.action}\t{row.query}\t{shown}")


@team.command()
@DATABASE
def repair(database: str) -> None:
    """Rebuild the store's kept newest rows of each word and trigram from its events."""
    from huiyi.hub import Hub

    with clean_errors(), Hub(database, pool_size=1) as hub:
        made = hub.repair_lists()
        click.echo(f"rebuilt {made:,} newest-id lists from the events")
