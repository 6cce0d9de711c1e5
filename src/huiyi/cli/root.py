"""The `huiyi` command: parse arguments, call the core, print. No behaviour lives here.

Every command lives in its own module, `huiyi.cli.<command>`, imported only when that command
runs (or its own `--help` is asked for): `COMMANDS` names each command's module and the line
`huiyi --help` shows for it, so listing the commands imports none of them (importing them all
up front would cost every `huiyi --version` the whole CLI).

Everything printed from the index passes the safety exit's redaction first. Known errors become
one line on stderr with the exit status of their kind (`cli.common.clean_errors`); anything else
is a bug and shows a traceback.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click

__all__ = ["COMMANDS", "LazyGroup", "main"]


class Entry(NamedTuple):
    """Where a command is defined (`module:attribute`) and its line in `huiyi --help`."""

    where: str
    help: str


#: Every `huiyi` command, in the order `huiyi --help` lists them.
COMMANDS: dict[str, Entry] = {
    "index": Entry(
        "huiyi.cli.index:index",
        "Read new lines of DSH, Claude Code and Codex logs into the index.",
    ),
    "search": Entry(
        "huiyi.cli.search:search_cmd",
        "Search history in Chinese or English; quote a phrase to match it.",
    ),
    "recall": Entry(
        "huiyi.cli.recall:recall",
        "Print exactly what the agent's recall_history tool returns.",
    ),
    "no-copy": Entry(
        "huiyi.cli.no_copy:no_copy",
        "Keep no text of the conversation in the index (on), or keep it again (off).",
    ),
    "sessions": Entry("huiyi.cli.sessions:sessions", "List sessions, most recently active first."),
    "show": Entry("huiyi.cli.show:show", "Show the original text of one session."),
    "memory": Entry("huiyi.cli.memory:memory", "Show, search and edit the two memory stores."),
    "mcp": Entry("huiyi.cli.mcp:mcp", "Serve the recall and memory tools to agents over MCP."),
    "hook": Entry("huiyi.cli.hook:hook", "Serve one harness hook (stdin in, stdout out)."),
    "install": Entry(
        "huiyi.cli.install:install",
        "Connect huiyi (MCP and hooks) to DSH, Claude Code or Codex.",
    ),
    "agents-md": Entry(
        "huiyi.cli.agents_md:agents_md", "Keep the memory digest block in AGENTS.md up to date."
    ),
    "config": Entry(
        "huiyi.cli.config:config", "Show the settings in effect, or write a config.toml."
    ),
    "doctor": Entry(
        "huiyi.cli.doctor:doctor",
        "What was found, index health and integrity; --repair mends it.",
    ),
    "forget": Entry("huiyi.cli.forget:forget", "Remove a session (or a workspace) from the index."),
    "web": Entry(
        "huiyi.cli.web:web", "Serve the local web page: memory, search, sessions, status."
    ),
    "serve": Entry(
        "huiyi.cli.serve:serve", "Serve the team's shared recall over a PostgreSQL store."
    ),
    "team": Entry("huiyi.cli.team:team", "Join a team server, share workspaces; tokens and audit."),
    "eval": Entry(
        "huiyi.cli.eval:eval_cmd", "Score search (or the recall gate) on a labelled set."
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, listed from `COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attribute = entry.where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry.where} is not a click command")
        command.short_help = entry.help  # the listing's line, also where click shows it
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their lines from `COMMANDS`, without importing any of them."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry.help) for name, entry in COMMANDS.items()])


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--version`: the version the MCP server announces (`manifest.json`, pinned by a test to
    the installed package's), without importing `importlib.metadata`, which is slow to load."""
    if not value or ctx.resilient_parsing:
        return
    from huiyi.policy.manifest import manifest

    click.echo(f"{ctx.find_root().info_name}, version {manifest()['serverInfo']['version']}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and exit.",
)
@click.pass_context
def main(ctx: click.Context) -> None:
    """huiyi (回忆): local memory and recall over your coding agents' session logs."""
    from huiyi.cli.common import CliState, clean_errors
    from huiyi.config import Settings

    with clean_errors():  # a bad HUIYI_* setting is a usage error (exit 2), not a traceback
        ctx.obj = CliState(Settings.from_env())
    ctx.call_on_close(ctx.obj.close)


if __name__ == "__main__":
    main()
