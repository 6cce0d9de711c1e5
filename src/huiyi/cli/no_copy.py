"""`huiyi no-copy on|off`: switch the index between keeping no text and keeping it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from huiyi.cli.common import clean_errors, pass_huiyi

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["no_copy"]


@click.command("no-copy")
@click.argument("state", type=click.Choice(["on", "off"]))
@pass_huiyi
def no_copy(hy: Huiyi, state: str) -> None:
    """Keep no text of the conversation in the index (on), or keep it again (off).

    On removes every kept text, title and first message and vacuums the file: text is read
    from the logs when it is shown, and a log that is gone leaves nothing. Off reads the text
    back from the logs that still exist. Set keepText in config.toml to match.
    """
    with clean_errors():
        done = hy.switch_no_copy(state == "on")
    before, after = done["bytes_before"] / 1e6, done["bytes_after"] / 1e6
    size = f"the index went from {before:.1f} MB to {after:.1f} MB"
    if state == "on":
        click.echo(
            f"no-copy mode on: removed the text of {done['texts']:,} events and "
            f"{done['titles']:,} session titles, and vacuumed the file; {size}"
        )
        click.echo("text is now read from the logs when it is shown; set keepText = false")
    else:
        click.echo(
            f"no-copy mode off: read the text of {done['texts']:,} events back from their logs; "
            f"{done['gone']:,} events whose log is gone or changed stay without text; {size}"
        )
        click.echo("set keepText = true (or remove it) in config.toml to match")
