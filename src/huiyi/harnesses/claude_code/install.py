"""`huiyi install claude-code`: the MCP server and the hooks where Claude Code reads them.

- The server goes to `mcpServers.huiyi` in `~/.claude.json` (user scope, exactly what
  `claude mcp add --scope user huiyi -e ... -- ...` writes: `type`, `command`, `args`, `env`).
  With `CLAUDE_CONFIG_DIR` set, Claude Code keeps that file at `$CLAUDE_CONFIG_DIR/.claude.json`
  instead, and so do we.
- The hooks go to `settings.json` in the config dir (`~/.claude/settings.json`):
  SessionStart, UserPromptSubmit, PreCompact and Stop, each `huiyi hook claude-code <Event>`.
- `/recall WORDS` goes to `commands/recall.md` in the config dir: a custom command whose shell
  block runs `huiyi recall` and hands its output (what the `recall_history` tool returns) to
  the model with the prompt. Claude Code pastes the typed words into the block unquoted, so
  they reach huiyi on stdin through a quoted here-document, never as shell words; only a
  person can run it (`disable-model-invocation`). A `recall.md` of the person's own is left.

`~/.claude.json` is Claude Code's own state file (projects, tips, counters) and Claude rewrites
it while it runs: only the `huiyi` key is touched, and `apply` refuses to write if the file
changed after it was read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.install.common import (
    HOOKS,
    OWNED_MARK,
    Change,
    Launch,
    Status,
    dump_json,
    hooks_change,
    huiyi_events,
    load_json,
    owned_file_change,
    owns,
    quiet_json,
    read_text,
    set_or_drop,
)

NAME = "claude-code"
SERVER = "huiyi"


def paths(settings: Settings) -> tuple[Path, Path]:
    """(the file with the user-scope MCP servers, the user settings file)."""
    config_dir = settings.claude_config_dir
    if config_dir is not None:
        return config_dir / ".claude.json", config_dir / "settings.json"
    default_dir = settings.claude_dirs[-1]  # HOME/.claude
    return default_dir.parent / ".claude.json", default_dir / "settings.json"


#: Ends the typed words in the command's here-document (a line of exactly this, typed, would
#: end them early: the words go on one line, and the rest would be a shell command the
#: person typed into their own shell).
_WORDS_END = "END_OF_RECALL_WORDS"


def command_path(settings: Settings) -> Path:
    config_dir = settings.claude_config_dir or settings.claude_dirs[-1]
    return config_dir / "commands" / "recall.md"


def recall_command(launch: Launch) -> str:
    """The text of `commands/recall.md`."""
    run = launch.shell_words("recall", "--stdin")
    return (
        "---\n"
        "description: Search this workspace's history with huiyi (what recall_history returns)\n"
        "argument-hint: WORDS\n"
        f"allowed-tools: Bash({run}:*)\n"
        "disable-model-invocation: true\n"
        f"# {OWNED_MARK} claude-code; `huiyi install claude-code --uninstall` removes it\n"
        "---\n"
        "The person asked huiyi to recall `$ARGUMENTS` from this workspace's history. What it "
        "found is below, marked as recalled data: answer from it, and say so plainly when it "
        "found nothing.\n\n"
        "```!\n"
        f"{run} <<'{_WORDS_END}'\n"
        "$ARGUMENTS\n"
        f"{_WORDS_END}\n"
        "```\n"
    )


def server_entry(launch: Launch) -> dict[str, Any]:
    argv = launch.mcp_argv()
    return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": dict(launch.env)}


def plan(
    settings: Settings, launch: Launch, *, uninstall: bool = False, profile: str | None = None
) -> list[Change]:
    """The file changes that install (or uninstall) huiyi here; `profile` is not used."""
    state_path, settings_path = paths(settings)
    state_text = read_text(state_path)
    state = load_json(state_path, state_text)
    servers = state.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise UsageError(f"{state_path}: `mcpServers` is not an object; nothing was written")
    servers = dict(servers)
    if uninstall:
        servers.pop(SERVER, None)
    else:
        servers[SERVER] = server_entry(launch)  # in place when it was there already
    new_state = set_or_drop(state, "mcpServers", servers)
    hooks, _ = hooks_change(settings_path, launch, NAME, HOOKS, uninstall=uninstall)
    command = owned_file_change(command_path(settings), recall_command(launch), uninstall=uninstall)
    return [Change(state_path, state_text, dump_json(new_state, state_text)), hooks, command]


def status(settings: Settings) -> Status:
    state_path, settings_path = paths(settings)
    servers = quiet_json(state_path).get("mcpServers")
    return Status(
        NAME,
        mcp=isinstance(servers, dict) and SERVER in servers,
        mcp_path=state_path,
        hooks=huiyi_events(quiet_json(settings_path).get("hooks")),
        hooks_path=settings_path,
        wanted_hooks=tuple(h.event for h in HOOKS),
        commands=("/recall",) if owns(command_path(settings)) else (),
    )
