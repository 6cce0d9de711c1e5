"""The `huiyi` command (and `python -m huiyi`): `huiyi mcp` over stdio goes straight to the light
front (`huiyi.integrations.front`), without importing click or the core, so a harness gets its
handshake answered at once; every other command is the click CLI (`huiyi.cli`)."""

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
    from huiyi.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
