"""What every `huiyi` command group shares: the error edge, JSON output, workspace options.

The error edge is the one place where huiyi's own errors become what a person sees: one line on
stderr, redacted, with an exit status per kind (`huiyi.errors.EXIT_CODES`: 2 usage, 3 not
found, 4 busy, 5 index unusable, 6 model or endpoint failed, 7 evaluation, 8 disk full, 1
anything else). Faults of the machine that reach the edge unconverted, SQLite finding the index
damaged or a full disk (`huiyi.store.db.fault`), get the same treatment. Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from huiyi.errors import HuiyiError, UsageError, exit_code
from huiyi.recall.render import when
from huiyi.safety.redact import redact
from huiyi.store.db import fault

__all__ = ["clean_errors", "edge", "emit_json", "safe", "when", "workspace_options"]

F = TypeVar("F", bound=Callable[..., Any])


def safe(text: str) -> str:
    """Redact secrets from anything the index gives back before it reaches the terminal."""
    return redact(text).text


class HuiyiClickError(click.ClickException):
    """A huiyi error as click shows it: `Error: <redacted message>`, exit status by kind."""

    def __init__(self, exc: HuiyiError) -> None:
        super().__init__(safe(str(exc)))
        # click declares exit_code as a class constant; each instance carries its own kind
        self.exit_code = exit_code(exc)  # type: ignore[misc]


@contextmanager
def clean_errors() -> Iterator[None]:
    """The CLI's error edge: a usage error shows the usage line (exit 2), every other huiyi
    error one redacted line with its kind's exit status; so do a damaged index and a full disk
    met where no caller turned them into huiyi's errors."""
    try:
        yield
    except UsageError as exc:
        raise click.UsageError(safe(str(exc))) from None
    except HuiyiError as exc:
        raise HuiyiClickError(exc) from None
    except (sqlite3.DatabaseError, OSError) as exc:
        error = fault(exc, None)
        if error is None:
            raise
        raise HuiyiClickError(error) from None


def edge(func: F) -> F:
    """`clean_errors` as a decorator for a command function."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with clean_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def workspace_options(what: str) -> Callable[[F], F]:
    """`--workspace DIR` and `--all` (people only), passed as `workspace` and `all_`; using
    both is a usage error raised by `Huiyi` itself."""

    def decorate(func: F) -> F:
        func = click.option("--all", "all_", is_flag=True, help=f"{what} every workspace.")(func)
        return click.option(
            "--workspace",
            type=click.Path(path_type=Path),
            help=f"{what} this workspace (default: HUIYI_WORKSPACE, else the current directory's).",
        )(func)

    return decorate
