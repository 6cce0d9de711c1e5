"""The `huiyi` command (and `python -m huiyi`): `huiyi mcp` over stdio and `huiyi hook HARNESS
EVENT` go straight to their light servers (`huiyi.transports.stdio_mcp`,
`huiyi.transports.hook_command`), without importing click or the core, so a harness gets its
handshake or its hook answered at once; `huiyi search` in the forms people type is served
without click (`huiyi.cli.quick_search`); every other command (and `--help`, and whatever
those leave) is the click CLI (`huiyi.cli.root`)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Run `huiyi` with the process's arguments. Ctrl-C ends it as click ends a command it
    interrupts: `Aborted!` on stderr, exit status 1, no traceback.

    Everything huiyi creates is its owner's alone (files 0600, folders 0700): the index, the
    logs, the locks and the state hold other people's words and the harnesses' secrets."""
    os.umask(0o077)
    try:
        _dispatch(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")
        sys.exit(1)


def _dispatch(args: list[str]) -> None:
    if args[:1] == ["mcp"]:
        from huiyi.transports.stdio_mcp import main as front

        status = front(args[1:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["hook"]:
        from huiyi.transports.hook_command import main as hook

        status = hook(args[1:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["search"]:
        from huiyi.cli.quick_search import search

        status = search(args[1:])
        if status is not None:
            sys.exit(status)
    from huiyi.cli.root import main as cli

    cli()


if __name__ == "__main__":
    main()
