"""What a harness adapter is: the record each harness package declares, and how its parts load.

Each harness (DSH, Claude Code, Codex) is one package under `huiyi.harnesses` holding all that
huiyi knows of it. Its `__init__` declares an `Adapter`: names, and which of its modules does
which job. The modules are named for their jobs and each stands in the layer of that job:

    reader     reads its logs into sessions and events (`huiyi.sources.base.Reader`)
    caller     finds the calling session of a tool call in its logs (for caller binding)
    install    the MCP row and the hooks `huiyi install <name>` writes, and their status

A part is imported only when it is used (`Adapter.part`), so naming every harness costs a hook
or a search nothing: the package's `__init__` imports this module alone.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import NamedTuple

from huiyi.harnesses.hookform import CLAUDE_STYLE, HookForm

__all__ = ["Adapter"]


class Adapter(NamedTuple):
    """One harness, as every layer of huiyi sees it."""

    #: the name `huiyi install` and `huiyi hook` take (`claude-code`)
    name: str
    #: the source name its sessions carry in the index (`claude`)
    source: str
    #: the harness's own name, for people (`Claude Code`)
    title: str
    #: the package holding its parts (`huiyi.harnesses.claude_code`)
    package: str
    #: how its hooks read their input and write what the model gets
    hooks: HookForm = CLAUDE_STYLE
    #: whether `huiyi install NAME --profile P` means something for it (DSH's profiles)
    profiles: bool = False
    #: whether the memory block goes with the session's first prompt rather than its start
    #: (DSH runs SessionStart detached, so what it answers misses the first request)
    memory_with_first_prompt: bool = False
    #: whether it reads memory digests of its own at session start (an `agents` part that
    #: says which stores a session already has: `digested(settings, workspace)`)
    reads_digests: bool = False

    def part(self, job: str) -> ModuleType:
        """The module that does `job` (`reader`, `caller`, `install`) for this harness."""
        return import_module(f"{self.package}.{job}")
