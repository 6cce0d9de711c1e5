"""A workspace's name on the team server: its normalised git remote, the same on every machine.

`git@github.com:org/repo.git`, `ssh://git@github.com/org/repo`, `https://github.com/org/repo`
and `https://user@GitHub.com/org/repo.git/` all name `github.com/org/repo`: the host in lower
case, no user, password or port, the path without `.git` or a trailing slash. The remote read
is `origin` (else the first remote) of the workspace's `.git/config` (a `.git` file pointing
to the real git directory, as in a worktree, is followed); no `git` process runs.

A workspace with no remote has no name another machine could share: it is named by its path
on this machine (`local:<machine>:<path>`), so it never meets a teammate's directory of the
same name.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from huiyi.config import machine_name

__all__ = ["normalise_remote", "remote_of", "workspace_name"]

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")
_URL = re.compile(
    r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?(?P<host>[^/:]+)(?::\d*)?(?P<path>/.*)?$", re.I
)


def normalise_remote(url: str) -> str | None:
    """`host/org/repo` for a git remote URL, or None when it names no host and path."""
    url = url.strip()
    found = _URL.match(url) or _SCP.match(url)
    if found is None:
        return None
    host = found.group("host").lower()
    path = (found.group("path") or "").strip("/")
    path = re.sub(r"\.git$", "", path).strip("/")
    if not host or not path:
        return None
    return f"{host}/{path}"


def _git_dir(workspace: Path) -> Path | None:
    dot = workspace / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"^gitdir:\s*(.+)$", text, re.M)
        if found:
            target = Path(found.group(1).strip())
            target = target if target.is_absolute() else (workspace / target)
            # a worktree's git directory keeps its config in the main one (`commondir`)
            common = target / "commondir"
            if common.is_file():
                target = target / common.read_text(encoding="utf-8").strip()
            return target.resolve()
    return None


def remote_of(workspace: str) -> str | None:
    """The normalised remote of the git repository at `workspace` (origin, else the first)."""
    try:
        git_dir = _git_dir(Path(workspace))
        if git_dir is None:
            return None
        config = configparser.ConfigParser(strict=False, interpolation=None)
        config.read(git_dir / "config", encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    remotes = [s for s in config.sections() if s.startswith('remote "')]
    remotes.sort(key=lambda s: s != 'remote "origin"')
    for section in remotes:
        url = config.get(section, "url", fallback=None)
        if url and (name := normalise_remote(url)):
            return name
    return None


def machine() -> str:
    """This machine's name, as a workspace without a remote is qualified by it."""
    return machine_name()


def workspace_name(workspace: str) -> str:
    """What the team server calls this machine's `workspace` (see the module docstring)."""
    return remote_of(workspace) or f"local:{machine()}:{workspace}"
