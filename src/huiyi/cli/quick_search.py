"""`huiyi search` without click, for the forms people type.

Importing click, with what it imports (uuid, platform, datetime, gettext), is a large part of
every short `huiyi` process (`benchmarks/bench_startup.py` measures it). Search is what a person
runs most, so `huiyi search ...` tries this first (`huiyi.__main__`), as `huiyi mcp` and `huiyi
hook` go to their own servers. It takes the forms click would read the same way: words,
`--workspace DIR`, `--all`, `--limit N`, `--layer L`, `--json`, each option spelled `--name
VALUE` or `--name=VALUE`, anywhere among the words, and `--` before words that start with a
dash. It builds the same request (`transports.cli_client`) and prints the same text
(`cli.output`) as the click command (`cli.search.search_cmd`).

Everything else goes to click, which parses and reports as it always does: `-h`/`--help`, an
option it does not know, a value it would have to judge (a limit that is no number, a
value that starts with a dash), settings that do not load, and a usage error the core finds
(click shows it with the usage line). So does output click would print differently: escape
sequences, which click strips when stdout is not a terminal, and a stdout that does not take
UTF-8. Any other error of the search (a busy or damaged index, a full disk) this front reports
itself, as click's error edge would (`cli.common.clean_errors`: `Error: <redacted message>` on
stderr, the exit status of its kind), rather than have click run the search again and wait on a
busy index a second time. `tests/test_startup.py` holds the front to the click
command's options and output.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from huiyi.cli.output import safe, search_text
from huiyi.config import Settings
from huiyi.errors import HuiyiError, UsageError, exit_code
from huiyi.policy.protocol import failure_of
from huiyi.transports import cli_client

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["DEFAULT_LAYER", "DEFAULT_LIMIT", "OPTIONS", "Search", "parse", "search"]

#: the options of `huiyi search`, and whether each takes a value (`cli.search.search_cmd`)
OPTIONS = {
    "--workspace": True,
    "--all": False,
    "--limit": True,
    "--layer": True,
    "--json": False,
    "--verbose": False,
}
DEFAULT_LIMIT = 10
DEFAULT_LAYER = "hybrid"


class Search(NamedTuple):
    """One `huiyi search` as typed."""

    query: str
    workspace: Path | None
    all_workspaces: bool
    limit: int
    layer: str
    as_json: bool
    verbose: bool


def parse(args: Sequence[str]) -> Search | None:
    """The search `args` (after `search`) ask for, or None when click should read them."""
    words: list[str] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            words.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, equals, value = arg.partition("=")
        takes_value = OPTIONS.get(name)
        if takes_value is None or (equals and not takes_value):
            return None
        if not takes_value:
            flags.add(name)
            continue
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None
        values[name] = value
    try:
        limit = int(values.get("--limit", DEFAULT_LIMIT))
    except ValueError:
        return None
    if not words:
        return None
    workspace = values.get("--workspace")
    return Search(
        query=" ".join(words),
        workspace=Path(workspace) if workspace is not None else None,
        all_workspaces="--all" in flags,
        limit=limit,
        layer=values.get("--layer", DEFAULT_LAYER),
        as_json="--json" in flags,
        verbose="--verbose" in flags,
    )


def search(args: Sequence[str]) -> int | None:
    """Serve `huiyi search ARGS` and return its exit status, or None to leave it to click."""
    asked = parse(args)
    if asked is None or not _utf8(sys.stdout):
        return None
    opened: list[Huiyi] = []

    def huiyi() -> Huiyi:
        from huiyi.api import Huiyi

        opened.append(Huiyi(settings=settings))
        return opened[-1]

    try:
        settings = Settings.from_env()
    except HuiyiError:
        return None  # click reports settings that do not load, as for every command
    try:
        request = cli_client.search_request(
            settings,
            asked.query,
            workspace=asked.workspace,
            all_workspaces=asked.all_workspaces,
            limit=asked.limit,
            layer=asked.layer,
        )
        text = search_text(
            cli_client.reply(settings, request, huiyi), as_json=asked.as_json, verbose=asked.verbose
        )
    except UsageError:
        return None  # click shows it with the usage line
    except Exception as exc:
        failure = failure_of(exc)
        if failure is None:
            raise  # a bug, with its traceback
        return _failed(failure.error())
    finally:
        for hy in opened:
            hy.close()
    if "\x1b" in text:
        return None
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`huiyi search ... | head -1`): exit 1 quietly, as click does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def _failed(exc: HuiyiError) -> int:
    """Report a failed search as click's error edge does; returns its exit status."""
    sys.stderr.write(f"Error: {safe(str(exc))}\n")
    return exit_code(exc)


def _utf8(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None)
    try:
        return isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False
