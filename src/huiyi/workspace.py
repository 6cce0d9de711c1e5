"""A session's workspace: the git root above its working directory, else the directory itself.

Workspaces are the unit of scope for every read an agent makes, so the rule is kept in one
place. Paths are compared as normalised absolute strings; a directory that no longer exists (a
log copied from another machine) is its own workspace.
"""

from __future__ import annotations

import os

# `hashlib.blake2b` is this built-in module's; importing `hashlib` loads OpenSSL first, about
# 2.5 ms of every search and hook process
from _blake2 import blake2b
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=4096)
def workspace_of(cwd: str) -> str:
    """The git root above `cwd` (a `.git` file or directory), else `cwd` normalised."""
    if not cwd:
        return ""
    path = Path(os.path.normpath(os.path.expanduser(cwd)))
    if not path.is_absolute():
        return str(path)
    for candidate in (path, *path.parents):
        try:
            if (candidate / ".git").exists():
                return str(candidate)
        except OSError:
            break
    return str(path)


def resolve(directory: str | os.PathLike[str]) -> str:
    """The workspace of a directory a person or a setting names (`~` expanded, made absolute)."""
    return workspace_of(os.path.abspath(os.path.expanduser(os.fspath(directory))))


def scope_token(workspace: str) -> str:
    """A full-text token that stands for one workspace (see store.migrations)."""
    return "w" + blake2b(workspace.encode("utf-8"), digest_size=8).hexdigest()


#: Private-use characters (U+E000..U+F8FF) never occur in folded text people write.
_PUA, _PUA_SIZE = 0xE000, 6400


def fuzzy_scope_token(workspace: str) -> str:
    """One trigram (three private-use characters) that stands for a workspace in the fuzzy
    index, whose `detail=none` tables allow no column filters and no multi-token phrases."""
    n = int.from_bytes(blake2b(workspace.encode("utf-8"), digest_size=8).digest(), "big")
    chars = []
    for _ in range(3):
        n, digit = divmod(n, _PUA_SIZE)
        chars.append(chr(_PUA + digit))
    return "".join(chars)
