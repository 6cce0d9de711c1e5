"""The memory digest DSH reads without hooks: where it lives and how to tell it is there.

DSH reads `$DSH_HOME/AGENTS.md` and a project's `AGENTS.local.md` once at session start.
`huiyi agents-md sync` keeps a digest of the user store in the first and of the workspace's
store in the second, between the two marker lines below (`harnesses/dsh/digest.py` writes it).
A session that reads such a digest already has that store in front of the model, so the
hooks leave it out of their memory block rather than send it twice (`digested`).
"""

from __future__ import annotations

from pathlib import Path

from huiyi.config import Settings

__all__ = ["DIGEST_BEGIN", "DIGEST_END", "digest_files", "digested"]

DIGEST_BEGIN = "<!-- >>> huiyi-memory-digest (`huiyi agents-md sync` rewrites this block) -->"
DIGEST_END = "<!-- <<< huiyi-memory-digest -->"


def digest_files(settings: Settings, workspace: str | None) -> dict[str, Path]:
    """Per memory store (`user`, `memory`), the file DSH reads that would hold its digest."""
    files = {"user": settings.dsh_home / "AGENTS.md"}
    if workspace is not None:
        files["memory"] = Path(workspace) / "AGENTS.local.md"
    return files


def digested(settings: Settings, workspace: str | None) -> frozenset[str]:
    """The stores whose digest DSH reads for a session in `workspace` (a whole marker line of
    each kind in the file); a file that cannot be read holds none."""
    found = set()
    for store, path in digest_files(settings, workspace).items():
        try:
            lines = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
        except (OSError, UnicodeDecodeError):
            continue
        if DIGEST_BEGIN in lines and DIGEST_END in lines:
            found.add(store)
    return frozenset(found)
