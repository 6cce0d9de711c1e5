"""What every installer shares: the planned file changes, their diff, backups and writes, the
command line a harness runs, and the Claude-Code-style hook lists three harnesses read.

An installer never writes while it plans. `plan` functions read the files, parse them (a file
that does not parse is refused with a `UsageError`, so the CLI exits 2 and writes nothing), and
return `Change`s: the text before and after. `apply` then writes each changed file atomically,
after copying the old one to `FILE.huiyi-backup-<YYYYmmdd-HHMMSS>` under HUIYI_HOME/backups, and
only if the
file still holds the text the plan read (a harness rewriting its own config meanwhile makes
the install stop instead of losing that write). `diff` shows the same changes as a unified
diff for `--dry-run`. Running an install twice plans no change the second time.

Which entries are huiyi's is read from the entries themselves, not from a record of our own:
the MCP server named `huiyi`, DSH rows with huiyi's ids, and hooks whose command runs
`huiyi hook` (`is_huiyi_hook`). Everything else in a file is the person's and stays.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from huiyi.config import Settings
from huiyi.errors import HuiyiError, UsageError
from huiyi.files import make_private_dirs

__all__ = [
    "BACKUPS_KEPT",
    "BACKUP_INFIX",
    "Change",
    "HookSpec",
    "Launch",
    "Status",
    "apply",
    "backup_dir",
    "backups_of",
    "command_hook",
    "diff",
    "dump_json",
    "huiyi_events",
    "is_huiyi_hook",
    "load_json",
    "merge_hooks",
    "quiet_json",
    "read_text",
    "set_or_drop",
]

#: a backup is `<file><BACKUP_INFIX><YYYYmmdd-HHMMSS>`, kept under HUIYI_HOME (`backup_dir`)
BACKUP_INFIX = ".huiyi-backup-"
#: backups kept per file, the newest: an install run again and again leaves no pile
BACKUPS_KEPT = 5

#: a hook command that runs `huiyi hook ...` (`/path/huiyi hook`, `python -m huiyi hook`)
_HUIYI_HOOK = re.compile(r"(?:^|[\s/'\"])huiyi['\"]?\s+hook\s")


@dataclass(frozen=True, slots=True)
class Launch:
    """How a harness starts huiyi: the program and its first arguments, plus the environment
    the entry passes (HUIYI_HOME always, so the harness finds the same index as this shell)."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls, settings: Settings, extra_env: Mapping[str, str] | None = None) -> Launch:
        """The Python running this process with `-m huiyi`: the harness then runs exactly the
        huiyi this command is, whichever `huiyi` its PATH would find (or not)."""
        env = {"HUIYI_HOME": str(settings.home.expanduser().absolute())}
        env.update(extra_env or {})
        return cls((sys.executable, "-m", "huiyi"), env)

    def with_env(self, **more: str) -> Launch:
        return Launch(self.argv, {**self.env, **more})

    def mcp_argv(self) -> list[str]:
        return [*self.argv, "mcp"]

    def shell_words(self, *words: str) -> str:
        """A shell command line running huiyi with `words`, the environment in front."""
        assignments = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        return " ".join([*assignments, *(shlex.quote(w) for w in [*self.argv, *words])])

    def hook_command(self, harness: str, event: str) -> str:
        """A shell command line (hooks run through a shell): the environment as assignments
        in front, because no harness's hook entry has an `env` of its own."""
        return self.shell_words("hook", harness, event)


@dataclass(frozen=True, slots=True)
class HookSpec:
    """One hook huiyi wants: the event and its timeout in seconds."""

    event: str
    timeout: int


@dataclass(frozen=True, slots=True)
class Change:
    """One file: its text when the plan read it (None: absent) and the text to write (None:
    delete it)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


#: In every file huiyi owns whole (a `/recall` command): install rewrites only a file that holds
#: it and uninstall deletes only such a file, so a person's own command of that name stays.
OWNED_MARK = "huiyi: written by `huiyi install`"


def owned_file_change(path: Path, text: str, *, uninstall: bool) -> Change:
    """Create, refresh or (uninstalling) delete a file huiyi owns whole; a file of that name
    that is not huiyi's is left exactly as it is."""
    before = read_text(path)
    if before is not None and OWNED_MARK not in before:
        return Change(path, before, before)
    return Change(path, before, None if uninstall else text)


def owns(path: Path) -> bool:
    """Is huiyi's own file there (for `huiyi doctor`)?"""
    try:
        return OWNED_MARK in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def read_text(path: Path) -> str | None:
    """The file's text exactly (CRLF stays CRLF), None when it does not exist; a file that
    cannot be read or is not UTF-8 is refused."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}; nothing was written") from None


def load_json(path: Path, text: str | None) -> dict[str, Any]:
    """A JSON object file as a dict in file order ({} when absent or blank)."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "fix it or move it aside, then run the install again. Nothing was written."
        ) from None
    if not isinstance(data, dict):
        raise UsageError(
            f"{path} holds a JSON {type(data).__name__}, not an object; nothing was written"
        )
    return data


def _indent_of(text: str | None) -> int | str:
    """The indentation the person's file uses (spaces or a tab), else 2."""
    if text:
        match = re.search(r"^\{\s*\n([ \t]+)\S", text)
        if match:
            found = match.group(1)
            return "\t" if found.startswith("\t") else len(found)
    return 2


def dump_json(data: Mapping[str, Any], before: str | None) -> str | None:
    """`data` in the file's own indentation and key order; None (delete the file) when it is
    empty: an empty object tells the harness nothing."""
    if not data:
        return None
    text = json.dumps(data, indent=_indent_of(before), ensure_ascii=False)
    newline = before is None or before.endswith("\n")
    return text + "\n" if newline else text


def is_huiyi_hook(hook: object) -> bool:
    """Whether one hook entry (`{"type": "command", "command": ...}`) is huiyi's."""
    return (
        isinstance(hook, dict)
        and isinstance(hook.get("command"), str)
        and _HUIYI_HOOK.search(hook["command"]) is not None
    )


def merge_hooks(
    hooks: dict[str, Any], wanted: Mapping[str, dict[str, Any]], *, path: Path
) -> dict[str, Any]:
    """A Claude-Code-style `{"<Event>": [{"matcher"?, "hooks": [...]}]}` map with huiyi's hooks
    set to `wanted` (event -> hook entry; empty removes them all), the person's untouched.

    Where huiyi's hook already is, the new one takes its place (so a re-install moves nothing);
    an event without one gets a group of its own at the end. A group left empty by a removal
    goes, and so does an event left without groups.
    """
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; nothing was written")
        placed = False
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            entries = []
            for hook in group["hooks"]:
                if not is_huiyi_hook(hook):
                    entries.append(hook)
                elif event in wanted and not placed:
                    entries.append(wanted[event])
                    placed = True
            if entries or not any(is_huiyi_hook(h) for h in group["hooks"]):
                kept_groups.append({**group, "hooks": entries})
        if event in wanted and not placed:
            kept_groups.append({"hooks": [wanted[event]]})
        if kept_groups or not groups:
            out[event] = kept_groups
    for event, hook in wanted.items():
        if event not in out:
            out[event] = [{"hooks": [hook]}]
    return out


def command_hook(command: str, timeout: int) -> dict[str, Any]:
    """The hook entry Claude Code, Codex and DSH's bridge all read."""
    return {"type": "command", "command": command, "timeout": timeout}


#: the hooks of automatic recall, for harnesses that have all four events (DSH has no
#: PreCompact); Stop ingests the session, so it may take longer
HOOKS = (
    HookSpec("SessionStart", 10),
    HookSpec("UserPromptSubmit", 10),
    HookSpec("PreCompact", 10),
    HookSpec("Stop", 30),
)


def hooks_change(
    path: Path,
    launch: Launch,
    harness: str,
    specs: Sequence[HookSpec],
    *,
    uninstall: bool,
) -> tuple[Change, dict[str, Any]]:
    """The change to a JSON file whose `hooks` key holds a Claude-Code-style hook map (Claude's
    settings.json, Codex's hooks.json, DSH's bridge file), and the hook map it will hold."""
    text = read_text(path)
    data = load_json(path, text)
    wanted = (
        {}
        if uninstall
        else {
            h.event: command_hook(launch.hook_command(harness, h.event), h.timeout) for h in specs
        }
    )
    hooks = merge_hooks(data.get("hooks") or {}, wanted, path=path)
    return Change(path, text, dump_json(set_or_drop(data, "hooks", hooks), text)), hooks


def diff(changes: Iterable[Change]) -> str:
    """A unified diff of every change (`/dev/null` for a file created or deleted)."""
    parts: list[str] = []
    for change in changes:
        if not change.changed:
            continue
        name = str(change.path)
        parts.extend(
            difflib.unified_diff(
                (change.before or "").splitlines(keepends=True),
                (change.after or "").splitlines(keepends=True),
                fromfile=name if change.before is not None else "/dev/null",
                tofile=name if change.after is not None else "/dev/null",
            )
        )
    return "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)


@dataclass(frozen=True, slots=True)
class Written:
    """What `apply` did to one file."""

    path: Path
    action: str  # "created", "updated", "deleted"
    backup: Path | None


def backup_dir(backups: Path, path: Path) -> Path:
    """Where the backups of `path` go: a folder of its own under `backups` (HUIYI_HOME's),
    named by the file and a digest of where it is, so two `settings.json` never meet."""
    where = hashlib.sha256(str(path.absolute()).encode("utf-8")).hexdigest()[:10]
    return backups / f"{path.name}-{where}"


def backups_of(backups: Path, path: Path) -> list[Path]:
    """The backups of `path` kept under `backups`, oldest first."""
    return sorted(backup_dir(backups, path).glob(f"{path.name}{BACKUP_INFIX}*"))


def apply(
    changes: Sequence[Change], *, backups: Path, now: datetime | None = None
) -> list[Written]:
    """Write every changed file (a backup of the old one first, under `backups`, the newest
    `BACKUPS_KEPT` of each file kept); a file that changed since the plan read it stops the
    install before anything is written. Backups live in HUIYI_HOME, not beside the files: a
    project or `~/.dsh` gets no copies of the memory digest or of a harness's tokens."""
    todo = [c for c in changes if c.changed]
    for change in todo:
        if read_text(change.path) != change.before:
            raise HuiyiError(
                f"{change.path} changed while huiyi was installing (its harness may be "
                "running); nothing was written: run the command again"
            )
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    done = []
    for change in todo:
        backup = _backup(change.path, stamp, backups) if change.before is not None else None
        if change.after is None:
            change.path.unlink()
            done.append(Written(change.path, "deleted", backup))
        else:
            _write(change.path, change.after)
            done.append(Written(change.path, "created" if backup is None else "updated", backup))
    return done


def _backup(path: Path, stamp: str, backups: Path) -> Path:
    folder = backup_dir(backups, path)
    make_private_dirs(folder)
    target = folder / f"{path.name}{BACKUP_INFIX}{stamp}"
    n = 1
    while os.path.lexists(target):  # a link there, even a dangling one, is never written through
        n += 1
        target = folder / f"{path.name}{BACKUP_INFIX}{stamp}-{n}"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(path.read_bytes())
    for old in backups_of(backups, path)[:-BACKUPS_KEPT]:
        old.unlink(missing_ok=True)
    return target


def _write(path: Path, text: str) -> None:
    """Atomically, keeping the file's permissions (a new file is owner-only: harness configs
    carry tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True, slots=True)
class Status:
    """What `huiyi doctor` shows for one harness: is the MCP entry there, which of huiyi's hooks
    are, and where each was looked for."""

    harness: str
    mcp: bool
    mcp_path: Path
    hooks: tuple[str, ...]
    hooks_path: Path
    wanted_hooks: tuple[str, ...]
    notes: tuple[str, ...] = ()
    #: the commands huiyi installed there (`/recall`)
    commands: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "mcp": self.mcp,
            "mcp_path": str(self.mcp_path),
            "hooks": list(self.hooks),
            "hooks_complete": set(self.wanted_hooks) <= set(self.hooks),
            "hooks_path": str(self.hooks_path),
            "notes": list(self.notes),
            "commands": list(self.commands),
        }


def huiyi_events(hooks: object) -> tuple[str, ...]:
    """The events of a Claude-Code-style hook map that hold a huiyi hook, in file order."""
    if not isinstance(hooks, dict):
        return ()
    return tuple(
        event
        for event, groups in hooks.items()
        if isinstance(groups, list)
        and any(
            isinstance(g, dict) and any(is_huiyi_hook(h) for h in g.get("hooks") or [])
            for g in groups
        )
    )


def quiet_json(path: Path) -> dict[str, Any]:
    """For status only: the file as a dict, {} when it is absent, unreadable or not JSON."""
    try:
        return load_json(path, read_text(path))
    except UsageError:
        return {}


def set_or_drop(data: Mapping[str, Any], key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `data` with `key` set to `value` in its place, or without `key` when `value`
    is empty (what an uninstall leaves behind)."""
    out = dict(data)
    if value:
        out[key] = dict(value)
    else:
        out.pop(key, None)
    return out
