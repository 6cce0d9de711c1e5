"""`huiyi install`: connect huiyi (MCP and hooks) to DSH, Claude Code or Codex.

Only parsing and printing live here; what is written where is `huiyi.install` and each
harness's own installer rows (`huiyi.harnesses.<name>.install`); what `huiyi doctor` shows of
what is installed where is `cli.doctor`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import edge, pass_huiyi
from huiyi.cli.output import safe
from huiyi.errors import UsageError
from huiyi.install import HARNESSES, Change, Launch, apply, diff, plan

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["install", "write_changes"]


def _env_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not key.replace("_", "").isalnum():
            raise UsageError(f"--env takes KEY=VALUE, e.g. HUIYI_EMBEDDER=none (got {pair!r})")
        out[key.strip()] = value
    return out


def write_changes(changes: list[Change], dry_run: bool, backups: Path) -> None:
    """Show `changes` as a diff (`dry_run`), or write them, their backups under `backups`
    first; one line per file either way."""
    if dry_run:
        # the files may hold the user's keys (`ANTHROPIC_API_KEY` in settings.json, a token in
        # config.toml): the diff passes the same redaction as everything else printed
        shown = safe(diff(changes))
        click.echo(shown or "nothing to change", nl=not shown)
        click.echo("(--dry-run: nothing was written)")
        return
    done = {w.path: w for w in apply(changes, backups=backups)}
    for change in changes:
        written = done.get(change.path)
        if written is None:
            click.echo(f"unchanged  {change.path}")
            continue
        backup = f" (backup: {written.backup})" if written.backup else ""
        click.echo(f"{written.action:<10} {change.path}{backup}")


@click.command("install")
@click.argument("harness", type=click.Choice(HARNESSES))
@click.option("--dry-run", is_flag=True, help="Show the changes as a unified diff; write nothing.")
@click.option("--uninstall", is_flag=True, help="Remove huiyi's entries; leave everything else.")
@click.option(
    "--profile",
    help="DSH only: write the profile's cordis.patch.yml instead of the one for all profiles.",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="KEY=VALUE",
    help="One more variable for huiyi's entries (repeatable), e.g. HUIYI_EMBEDDER=none.",
)
@pass_huiyi
@edge
def install(
    hy: Huiyi,
    harness: str,
    dry_run: bool,
    uninstall: bool,
    profile: str | None,
    env: tuple[str, ...],
) -> None:
    """Write huiyi's MCP server and hooks into a harness's config (idempotent, with backups)."""
    launch = Launch.current(hy.settings, _env_pairs(env))
    changes = plan(harness, hy.settings, launch, uninstall=uninstall, profile=profile)
    write_changes(changes, dry_run, hy.settings.backups_path)
    if not dry_run and not uninstall:
        click.echo(f"huiyi runs as: {' '.join(launch.mcp_argv())}")
