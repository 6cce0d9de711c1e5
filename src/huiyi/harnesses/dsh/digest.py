"""`huiyi agents-md sync`: the memory digest for DSH without hooks.

DSH reads `$DSH_HOME/AGENTS.md` and a project's `AGENTS.md`/`AGENTS.local.md` once at session
start, so a block of memory written there reaches the model with no hook at all. This module
keeps that block:

- `$DSH_HOME/AGENTS.md` (read in every project) gets the **user** store: who the user is.
- `<project>/AGENTS.local.md` (`--project DIR`; keep it out of git) gets that workspace's
  **memory** store: the agent's notes about the project.

The block is the store as `huiyi.memory.render` shows it to the model (header with the budget,
entries between `§` lines, a poisoned entry shown as blocked), redacted, and bounded to
`MAX_DIGEST_CHARS` characters: past the bound whole entries are left out and a line says how
many, so the file never grows with the store's limit. It sits between two marker lines
(`Block`); everything outside them is the person's and is never touched, line endings (CRLF)
included. A file with damaged markers is refused, not guessed at. The same memory gives the
same bytes (no clock in the block), so a sync that finds nothing new writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.harnesses.dsh.agents import DIGEST_BEGIN, DIGEST_END
from huiyi.install.blocks import Block
from huiyi.install.common import Change, read_text
from huiyi.memory import JOINER, Memory, Target
from huiyi.safety.exit import redact
from huiyi.workspace import resolve

__all__ = ["BLOCK", "MAX_DIGEST_CHARS", "digest", "plan", "target"]

#: the most characters the block's body holds (the stores' default limits fit whole)
MAX_DIGEST_CHARS = 4000

BLOCK = Block(DIGEST_BEGIN, DIGEST_END)

_INTRO = {
    Target.USER: "Notes huiyi keeps about the user (edit them with `huiyi memory`).",
    Target.MEMORY: "Notes huiyi keeps about this project (edit them with `huiyi memory`).",
}


def target(settings: Settings, project: Path | None) -> tuple[Path, Target, str | None]:
    """(the file, the store it digests, the workspace) for DSH_HOME or a project."""
    if project is None:
        return settings.dsh_home / "AGENTS.md", Target.USER, None
    workspace = resolve(project)
    return Path(project).absolute() / "AGENTS.local.md", Target.MEMORY, workspace


def digest(
    settings: Settings,
    store: Target,
    workspace: str | None,
    memory: Callable[[str | None], Memory] | None = None,
) -> str:
    """The block's body: the rendered store, redacted, cut to whole entries within the bound.
    `memory` (a workspace's `Memory` with the meaning detector, `Huiyi.workspace_memory`)
    judges every entry first, so the digest blocks what the hooks block
    (`huiyi.memory.verdicts`)."""
    if memory is None:
        mem = Memory(settings, workspace)
    else:
        mem = memory(workspace)
        mem.judge()
    rendered = mem.render_store(store)
    if not rendered:
        return f"{_INTRO[store]}\n(no entries yet)"
    text = redact(rendered).text
    if len(text) > MAX_DIGEST_CHARS:
        text = _cut(text)
    return f"{_INTRO[store]}\n{text}"


def _cut(text: str) -> str:
    """Whole entries up to the bound, then a line saying how many were left out."""
    parts = text.split(JOINER)
    kept = len(parts)
    while kept > 1:
        kept -= 1
        note = f"\n({len(parts) - kept} more entries left out: this digest holds at most "
        note += f"{MAX_DIGEST_CHARS:,} characters; the memory tools see them all)"
        body = JOINER.join(parts[:kept])
        if len(body) + len(note) <= MAX_DIGEST_CHARS:
            return body + note
    return parts[0][: MAX_DIGEST_CHARS - 40] + "\n(cut: one entry is over the bound)"


def plan(
    settings: Settings,
    project: Path | None,
    *,
    remove: bool = False,
    memory: Callable[[str | None], Memory] | None = None,
) -> Change:
    """The change to the digest file (a no-op when it already holds this digest)."""
    path, store, workspace = target(settings, project)
    if project is not None and not Path(project).is_dir():
        raise UsageError(f"--project must be an existing directory (got {project})")
    before = read_text(path)
    text = before or ""
    if remove:
        after = BLOCK.remove(text, path)
        return Change(path, before, after or None)  # a file that held only the block goes
    return Change(path, before, BLOCK.put(text, digest(settings, store, workspace, memory), path))
