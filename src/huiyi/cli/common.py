"""What every `huiyi` command group shares: the root's state (settings, and the index opened on
first use), the error edge, JSON output, workspace options, printing hits.

The root command reads and checks the settings once (`CliState`); a command that needs the index
takes it with `pass_huiyi`, which imports the core and opens it then. So a command served
without the core (`huiyi --version`, `huiyi search` answered by the warm service) never pays
for importing it.

The error edge is the one place where huiyi's own errors become what a person sees: one line on
stderr, redacted, with an exit status per kind (`huiyi.errors.EXIT_CODES`: 2 usage, 3 not
found, 4 busy, 5 index unusable, 6 model or endpoint failed, 7 evaluation, 8 disk full, 1
anything else). Faults of the machine that reach the edge unconverted, SQLite finding the index
damaged or a full disk (`huiyi.store.db.fault`), get the same treatment. Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from huiyi.cli.output import hit_json, hit_lines, json_text, safe
from huiyi.config import Settings
from huiyi.errors import (
    EmbeddingError,
    HuiyiError,
    NotFoundError,
    SettingsError,
    UsageError,
    exit_code,
)
from huiyi.policy.protocol import failure_of
from huiyi.text.dates import when

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = [
    "CliState",
    "FileProgress",
    "clean_errors",
    "edge",
    "emit_json",
    "hit_json",
    "pass_huiyi",
    "print_hits",
    "safe",
    "when",
    "workspace_options",
]

F = TypeVar("F", bound=Callable[..., Any])


class CliState:
    """The root command's object: the settings, and the index (`Huiyi`) opened on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._huiyi: Huiyi | None = None

    def huiyi(self) -> Huiyi:
        if self._huiyi is None:
            from huiyi.api import Huiyi

            self._huiyi = Huiyi(settings=self.settings)
        return self._huiyi

    def close(self) -> None:
        if self._huiyi is not None:
            self._huiyi.close()


def pass_huiyi(func: F) -> F:
    """`click.pass_obj` for a command that uses the index: it gets the root's `Huiyi` (opened
    now), or the `Huiyi` a caller handed over as `obj` (tests invoke a command on its own)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        obj = click.get_current_context().obj
        return func(obj.huiyi() if isinstance(obj, CliState) else obj, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class HuiyiClickError(click.ClickException):
    """A huiyi error as click shows it: `Error: <redacted message>`, exit status by kind."""

    def __init__(self, exc: HuiyiError) -> None:
        super().__init__(safe(str(exc)))
        # click declares exit_code as a class constant; each instance carries its own kind
        self.exit_code = exit_code(exc)  # type: ignore[misc]


#: what a person who named an unknown session can do next
SESSIONS_HINT = "`huiyi sessions --all` lists the sessions you can open"


@contextmanager
def clean_errors() -> Iterator[None]:
    """The CLI's error edge: a usage error shows the usage line (exit 2), every other huiyi
    error (a bad setting too, exit 2) one redacted line with its kind's exit status, an unknown
    session with the command that lists them; so do a damaged index and a full disk
    met where no caller turned them into huiyi's errors (`protocol.failure_of`)."""
    try:
        yield
    except SettingsError as exc:
        # a bad setting (an unusable HUIYI_HOME among them) is no misuse of the command line:
        # its one line, without the usage banner, still exit 2
        raise HuiyiClickError(exc) from None
    except UsageError as exc:
        raise click.UsageError(safe(str(exc))) from None
    except Exception as exc:
        failure = failure_of(exc)
        if failure is None:
            raise
        error = failure.error()
        if isinstance(error, SettingsError):
            raise HuiyiClickError(error) from None
        if isinstance(error, UsageError):
            raise click.UsageError(safe(str(error))) from None
        if isinstance(error, NotFoundError):
            error = NotFoundError(
                f"{error}; `huiyi sessions --all` lists the sessions you can open"
            )
        raise HuiyiClickError(error) from None


def edge(func: F) -> F:
    """`clean_errors` as a decorator for a command function."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with clean_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def judge_notes(judge: Callable[[], object]) -> None:
    """Run `judge` (the meaning detector over memory notes without a kept verdict); a
    detector that cannot run is said on stderr, and the rules still decide."""
    try:
        judge()
    except EmbeddingError as exc:
        click.echo(f"warning: the meaning detector did not run ({safe(str(exc))})", err=True)


def emit_json(data: Any) -> None:
    click.echo(json_text(data))


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


def print_hits(hits: Sequence[Mapping[str, Any]]) -> None:
    """Search hits (`Hit.as_dict`), two lines each: where, then the snippet."""
    click.echo("\n".join(hit_lines(hits)))


class FileProgress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, source: str, done: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        width = 24
        filled = width * done // total
        bar = "█" * filled + "░" * (width - filled)
        end = "\n" if done == total else ""
        click.echo(f"\r{source:<7} {bar} {done}/{total} files", err=True, nl=False)
        if end:
            click.echo("", err=True)
