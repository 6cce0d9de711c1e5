"""The `huiyi` command (and `python -m huiyi`): `huiyi mcp` over stdio and `huiyi hook HARNESS
EVENT` go straight to their light fronts (`huiyi.integrations.front`, `.hook_front`), without
importing click or the core, so a harness gets its handshake or its hook answered at once;
`huiyi search` in the forms people type is served without click (`huiyi.cli_front`); every
other command (and `--help`, and whatever a front leaves) is the click CLI (`huiyi.cli`)."""

from __future__ import annotations

import sys


def main() -> None:
    """Run `huiyi` with the process's arguments."""
    args = sys.argv[1:]
    if args[:1] == ["mcp"]:
        from huiyi.integrations.front import main as front

        status = front(args[1:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["hook"]:
        from huiyi.integrations.hook_front import main as hook

        status = hook(args[1:])
        if status is not None:
            sys.exit(status)
    if args[:1] == ["search"]:
        from huiyi.cli_front import search

        status = search(args[1:])
        if status is not None:
            sys.exit(status)
    from huiyi.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
