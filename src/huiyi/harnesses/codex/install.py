"""`huiyi install codex`: the MCP server in `config.toml`, the hooks in `hooks.json`, and the
trust Codex wants before it runs a hook.

`$CODEX_HOME/config.toml` (default `~/.codex`), edited with tomlkit so comments, order and the
person's own tables stay as they are:

- `[mcp_servers.huiyi]` with `command`, `args`, `env`, `startup_timeout_sec` and
  `tool_timeout_sec`, and `[mcp_servers.huiyi.tools.memory] approval_mode = "approve"`: Codex
  0.171 refuses a writing MCP tool under approval policy "never" unless the entry approves it.
- `mcp_optional_startup_grace_ms` at the top level, only when absent: `codex exec` waits about
  1 s for MCP servers before its first request otherwise (`startup_timeout_sec` does not change
  that). The line carries a `# huiyi` comment so `--uninstall` knows it added it.
- `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."`
  for each huiyi hook. Codex 0.171 runs a user hook only when its state holds the hash of the
  hook's normalised definition (what reviewing it in the TUI records); the hash is the SHA-256
  of the compact, key-sorted JSON of `{"event_name": <snake_case event>, "hooks": [{"type":
  "command", "command", "timeout", "async": false}]}`. Running `huiyi install codex` is the
  person's consent to huiyi's hooks; the person's own hooks keep whatever trust they had.

`$CODEX_HOME/hooks.json` holds the hooks in the Claude Code shape (the `hooks` feature is on
by default in 0.171, no flag needed): SessionStart, UserPromptSubmit, PreCompact, Stop.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.install.blocks import Block
from huiyi.install.common import (
    HOOKS,
    Change,
    Launch,
    Status,
    hooks_change,
    huiyi_events,
    is_huiyi_hook,
    quiet_json,
    read_text,
)

NAME = "codex"
SERVER = "huiyi"
#: how long `codex exec` waits for MCP servers before its first request, when we set it
STARTUP_GRACE_MS = 5000
STARTUP_TIMEOUT_S = 20
TOOL_TIMEOUT_S = 60
GRACE_KEY = "mcp_optional_startup_grace_ms"


def paths(settings: Settings) -> tuple[Path, Path]:
    return settings.codex_home / "config.toml", settings.codex_home / "hooks.json"


def event_label(event: str) -> str:
    """`PreCompact` -> `pre_compact`: how Codex names an event in trust keys and hashes."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_hash(event: str, hook: dict[str, Any]) -> str:
    """The `trusted_hash` Codex computes for one command hook in a group without matcher."""
    handler = {
        "type": "command",
        "command": hook["command"],
        "timeout": max(int(hook.get("timeout") or 600), 1),
        "async": bool(hook.get("async", False)),
    }
    identity = {"event_name": event_label(event), "hooks": [handler]}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def trust_keys(hooks_path: Path, hooks: object) -> dict[str, str]:
    """`[hooks.state]` key -> trusted hash, for every huiyi hook in a hook map."""
    found: dict[str, str] = {}
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            entries = group.get("hooks") if isinstance(group, dict) else None
            for h, hook in enumerate(entries if isinstance(entries, list) else []):
                if is_huiyi_hook(hook):
                    key = f"{hooks_path}:{event_label(event)}:{g}:{h}"
                    found[key] = trust_hash(event, hook)
    return found


def _parse(path: Path, text: str | None) -> TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except ParseError as exc:
        raise UsageError(
            f"{path} is not valid TOML ({exc}); fix it or move it aside, then run the "
            "install again. Nothing was written."
        ) from None


BLOCK = Block(
    "# >>> huiyi: written by `huiyi install codex`; `huiyi install codex --uninstall` removes it",
    "# <<< huiyi",
)
#: the top-level line huiyi adds when the key is absent (top-level keys must precede tables,
#: so it cannot live in the block at the end of the file)
GRACE_LINE = f"{GRACE_KEY} = {STARTUP_GRACE_MS}  # huiyi: so `codex exec` waits for MCP servers"
_OUR_GRACE = re.compile(rf"^{GRACE_KEY} = \d+ +# huiyi:[^\n]*\n?", re.M)


def _body(launch: Launch, trust: dict[str, str]) -> str:
    """huiyi's tables as TOML text: the server, its memory tool's approval, the hook trust."""
    argv = launch.mcp_argv()
    server = tomlkit.table()
    server["command"] = argv[0]
    server["args"] = argv[1:]
    env = tomlkit.inline_table()
    env.update(launch.env)
    server["env"] = env
    server["startup_timeout_sec"] = STARTUP_TIMEOUT_S
    server["tool_timeout_sec"] = TOOL_TIMEOUT_S
    memory = tomlkit.table()
    memory["approval_mode"] = "approve"
    server["tools"] = _super({"memory": memory})
    doc = tomlkit.document()
    doc["mcp_servers"] = _super({SERVER: server})
    states = {}
    for key, value in trust.items():
        state = tomlkit.table()
        state["trusted_hash"] = value
        states[key] = state
    if states:
        doc["hooks"] = _super({"state": _super(states)})
    return tomlkit.dumps(doc).strip("\n")


def _super(items: dict[str, Any]) -> Table:
    table = tomlkit.table(is_super_table=True)
    table.update(items)
    return table


def _edit_config(
    path: Path, text: str, launch: Launch, trust: dict[str, str], *, uninstall: bool
) -> str:
    _parse(path, text)  # a file that does not parse is refused before anything else
    text = _OUR_GRACE.sub("", text, count=1)
    if uninstall:
        return BLOCK.remove(text, path)
    rest = _parse(path, BLOCK.remove(text, path))
    servers = rest.get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        raise UsageError(
            f"{path} already has an [mcp_servers.{SERVER}] table that `huiyi install` did not "
            "write; delete it (and its [mcp_servers.huiyi.tools.memory]) and run the install "
            "again, so that Codex does not see two. Nothing was written."
        )
    if GRACE_KEY not in rest:
        text = GRACE_LINE + ("\r\n" if "\r\n" in text else "\n") + text
    text = BLOCK.put(text, _body(launch, trust), path)
    try:
        tomlkit.parse(text)
    except ParseError as exc:
        raise UsageError(
            f"huiyi's tables would clash with what {path} holds ({exc}); nothing was written"
        ) from None
    return text


def plan(
    settings: Settings, launch: Launch, *, uninstall: bool = False, profile: str | None = None
) -> list[Change]:
    """The file changes that install (or uninstall) huiyi here; `profile` is not used."""
    config_path, hooks_path = paths(settings)
    hooks, new_hooks = hooks_change(hooks_path, launch, NAME, HOOKS, uninstall=uninstall)
    config_text = read_text(config_path)
    new_config = _edit_config(
        config_path,
        config_text or "",
        launch,
        trust_keys(hooks_path, new_hooks),
        uninstall=uninstall,
    )
    # a file left empty by an uninstall held nothing but what huiyi wrote
    return [Change(config_path, config_text, new_config or None), hooks]


def status(settings: Settings) -> Status:
    config_path, hooks_path = paths(settings)
    try:
        doc = _parse(config_path, read_text(config_path))
    except UsageError:  # doctor reports, it does not refuse: an unreadable file shows as absent
        doc = tomlkit.document()
    servers = doc.get("mcp_servers")
    hooks = quiet_json(hooks_path).get("hooks")
    hooks_state = (
        doc.get("hooks", {}).get("state", {}) if isinstance(doc.get("hooks"), dict) else {}
    )
    untrusted = [
        key.rsplit(":", 3)[1]
        for key, value in trust_keys(hooks_path, hooks).items()
        if not (
            isinstance(hooks_state.get(key), dict) and hooks_state[key].get("trusted_hash") == value
        )
    ]
    notes = (
        (f"hooks not trusted by Codex ({', '.join(untrusted)}): run `huiyi install codex` again",)
        if untrusted
        else ()
    )
    return Status(
        NAME,
        mcp=isinstance(servers, dict) and SERVER in servers,
        mcp_path=config_path,
        hooks=huiyi_events(hooks),
        hooks_path=hooks_path,
        wanted_hooks=tuple(h.event for h in HOOKS),
        notes=notes,
    )
