"""`huiyi hook HARNESS EVENT` as click shows it: its `--help`, and a mistyped harness or event.

The `huiyi` entry point hands a well-formed hook straight to the hook command
(`huiyi.transports.hook_command`) without importing click; what reaches this command runs the
same code."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from huiyi.harnesses import NAMES
from huiyi.harnesses.hookform import EVENTS

if TYPE_CHECKING:
    pass

__all__ = ["hook"]


@click.command()
@click.argument("harness", type=click.Choice(list(NAMES)))
@click.argument("event", type=click.Choice(list(EVENTS)))
def hook(harness: str, event: str) -> None:
    """Serve one harness hook: its JSON on stdin, what the model gets on stdout (docs/hooks.md)."""
    from huiyi.transports.hook_command import run

    sys.exit(run(harness, event, sys.stdin.buffer, sys.stdout))
