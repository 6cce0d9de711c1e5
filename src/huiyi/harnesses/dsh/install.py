"""`huiyi install dsh`: huiyi's rows in a DSH `cordis.patch.yml`, plus the hooks file its
Claude-Code hooks bridge reads.

DSH reads two patch layers, both hot-reloaded: `$DSH_HOME/cordis.patch.yml` for every profile,
and `$DSH_HOME/profiles/<profile>/cordis.patch.yml` for one (`--profile`). A patch file is a
YAML list of operations; a fresh one holds `[]`, and one that is empty or not a list stops DSH
at boot, so an uninstall that leaves no operation writes `[]` back. huiyi adds one `insert`
operation with two rows, between `# >>> huiyi` and `# <<< huiyi` comment lines (`Block`), so
the person's own operations, rows and comments stay byte for byte:

- `memory-huiyi`, `@deepseek-ai/dsh-mcp-client`: the stdio server, with `HUIYI_HOME` and
  `DSH_HOME` in its `env` (DSH removes every `DSH_*` variable from a server's environment) and
  `cwd: !!js process.cwd()`.
- `hooks-huiyi`, `@deepseek-ai/dsh-hooks-claude-code`: the bridge that runs Claude-Code-style
  command hooks; its `configPath` names `huiyi-hooks.json` next to the patch file, which holds
  SessionStart, UserPromptSubmit and Stop (DSH has no compaction hook). The bridge has no
  per-hook environment, so each command line sets `HUIYI_HOME` and `DSH_HOME` itself.
- `command-huiyi-recall`, this package's `recall_command.mjs` by its absolute path (a patch row
  may name a module file): the person's `/recall WORDS`, registered with DSH's command
  registry, which runs it without the model and shows what it returns (what `recall_history`
  returns). Its config says how to start huiyi; the words reach it as one argument, never
  through a shell. Clients that take typed commands (the TUI, the web client) offer it.

ruamel.yaml (round-trip mode, which reads DSH's `!!js` tag) checks that the file parses and is a
list, and that no row with huiyi's ids stands outside the block (a row written by hand from
older docs would be a second server): such a file is refused, naming the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import YAMLError

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.install.blocks import Block
from huiyi.install.common import (
    HOOKS as ALL_HOOKS,
)
from huiyi.install.common import (
    Change,
    Launch,
    Status,
    hooks_change,
    huiyi_events,
    quiet_json,
    read_text,
)

NAME = "dsh"
SERVER = "huiyi"
ROW_IDS = ("memory-huiyi", "hooks-huiyi", "command-huiyi-recall")
#: the `/recall` plugin DSH loads from this package
RECALL_COMMAND = Path(__file__).resolve().with_name("recall_command.mjs")
HOOKS_FILE = "huiyi-hooks.json"
#: DSH's hook bridge has no compaction event
HOOKS = tuple(h for h in ALL_HOOKS if h.event != "PreCompact")
BLOCK = Block(
    "# >>> huiyi: written by `huiyi install dsh`; `huiyi install dsh --uninstall` removes it",
    "# <<< huiyi",
)
_EMPTY_LIST = re.compile(r"^[ \t]*\[[ \t]*\][ \t]*(?:#[^\n]*)?(?:\r?\n|$)", re.M)
_PROFILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def layer(settings: Settings, profile: str | None) -> Path:
    """The folder of the patch layer: DSH_HOME, or one profile's folder in it."""
    if profile is None:
        return settings.dsh_home
    if not _PROFILE.fullmatch(profile) or ".." in profile:
        raise UsageError(
            f"--profile takes a DSH profile name such as `default` (letters, digits, `.`, `_`, "
            f"`-`), got {profile!r}"
        )
    return settings.dsh_home / "profiles" / profile


def _load(path: Path, text: str) -> Any:
    try:
        return YAML().load(text)
    except YAMLError as exc:
        raise UsageError(
            f"{path} is not valid YAML ({str(exc).splitlines()[0]}); fix it or move it "
            "aside, then run the install again. Nothing was written."
        ) from None


def _rows(path: Path, doc: Any) -> CommentedSeq | None:
    """The operations list (None for an empty file); anything else is refused."""
    if doc is None:
        return None
    if not isinstance(doc, CommentedSeq):
        raise UsageError(
            f"{path} holds a YAML {type(doc).__name__}, but a DSH patch file is a list of "
            "operations (`- insert: ...`); nothing was written"
        )
    return doc


def _foreign_row(path: Path, ops: CommentedSeq) -> None:
    for op in ops:
        rows = op.get("insert") if isinstance(op, dict) else None
        if not isinstance(rows, list):
            continue
        for n, row in enumerate(rows):
            if isinstance(row, dict) and row.get("id") in ROW_IDS:
                line = rows.lc.item(n)[0] + 1 if hasattr(rows, "lc") else "?"
                raise UsageError(
                    f"{path}, line {line}: a row `{row['id']}` that `huiyi install` did not "
                    "write; delete it and run the install again, so that DSH does not load "
                    "huiyi twice. Nothing was written."
                )


def _body(launch: Launch, hooks_path: Path) -> str:
    """huiyi's insert operation. Values are JSON strings: valid YAML, quoted safely."""
    argv = [*launch.mcp_argv(), "--hold-service"]  # its hooks reach HUIYI_HOME read-only
    q = json.dumps
    env = ", ".join(f"{q(k)}: {q(v)}" for k, v in launch.env.items())
    return "\n".join(
        [
            "- insert:",
            f"    - id: {ROW_IDS[0]}",
            "      name: '@deepseek-ai/dsh-mcp-client'",
            "      config:",
            f"        serverName: {SERVER}",
            "        transport: stdio",
            f"        command: {q(argv[0])}",
            f"        args: [{', '.join(q(a) for a in argv[1:])}]",
            f"        env: {{{env}}}",
            "        cwd: !!js process.cwd()",
            f"    - id: {ROW_IDS[1]}",
            "      name: '@deepseek-ai/dsh-hooks-claude-code'",
            "      config:",
            f"        configPath: {q(str(hooks_path))}",
            f"    - id: {ROW_IDS[2]}",
            f"      name: {q(str(RECALL_COMMAND))}",
            "      config:",
            f"        command: {q(argv[0])}",
            f"        args: [{', '.join(q(a) for a in launch.argv[1:])}]",
            f"        env: {{{env}}}",
        ]
    )


def _edit_patch(path: Path, text: str, launch: Launch, hooks_path: Path, *, uninstall: bool) -> str:
    _rows(path, _load(path, text))
    rest = BLOCK.remove(text, path)
    ops = _rows(path, _load(path, rest))
    if uninstall:
        return rest if ops is not None else rest + "[]\n"
    if ops is not None:
        _foreign_row(path, ops)
        if ops and ops.fa.flow_style():
            raise UsageError(
                f"{path} writes its list in flow style (`[...]`); huiyi adds an operation to "
                "a block list (`- insert: ...`). Rewrite it as one (see docs/install.md). "
                "Nothing was written."
            )
        if not ops and BLOCK.find(text, path) is None:
            text = _EMPTY_LIST.sub("", text, count=1)  # `[]` becomes the list of our operation
    new = BLOCK.put(text, _body(launch, hooks_path), path)
    _rows(path, _load(path, new))
    return new


def plan(
    settings: Settings, launch: Launch, *, uninstall: bool = False, profile: str | None = None
) -> list[Change]:
    folder = layer(settings, profile)
    patch_path = folder / "cordis.patch.yml"
    hooks_path = folder / HOOKS_FILE
    launch = launch.with_env(DSH_HOME=str(settings.dsh_home.expanduser().absolute()))

    hooks, _ = hooks_change(hooks_path, launch, NAME, HOOKS, uninstall=uninstall)
    patch_text = read_text(patch_path)
    if uninstall and patch_text is None:
        new_patch = None
    else:
        new_patch = _edit_patch(
            patch_path, patch_text or "", launch, hooks_path, uninstall=uninstall
        )
    return [Change(patch_path, patch_text, new_patch), hooks]


def status(settings: Settings) -> Status:
    """The first layer holding huiyi's block (all profiles first, then each profile)."""
    candidates = [settings.dsh_home / "cordis.patch.yml"]
    profiles = settings.dsh_home / "profiles"
    if profiles.is_dir():
        candidates += sorted(profiles.glob("*/cordis.patch.yml"))
    notes = []
    for path in candidates:
        text = read_text(path) if path.is_file() else None
        try:
            found = text is not None and BLOCK.find(text, path) is not None
        except UsageError as exc:
            notes.append(str(exc))
            continue
        if found:
            hooks_path = path.with_name(HOOKS_FILE)
            return Status(
                NAME,
                mcp=True,
                mcp_path=path,
                hooks=huiyi_events(quiet_json(hooks_path).get("hooks")),
                hooks_path=hooks_path,
                wanted_hooks=tuple(h.event for h in HOOKS),
                notes=tuple(notes),
                commands=("/recall",) if ROW_IDS[2] in (text or "") else (),
            )
    return Status(
        NAME,
        mcp=False,
        mcp_path=candidates[0],
        hooks=(),
        hooks_path=candidates[0].with_name(HOOKS_FILE),
        wanted_hooks=tuple(h.event for h in HOOKS),
        notes=tuple(notes),
    )
