"""One package per harness: everything huiyi knows about each agent harness it reads.

    harnesses/base.py          the `Adapter` record and how a harness's parts load
    harnesses/<name>/          one harness: its `ADAPTER`, and one module per job
        reader.py              its logs into sessions and events (the sources layer)
        caller.py              which of its sessions is calling a tool (for caller binding)
        install.py             its config files: the MCP row and hooks `huiyi install` writes

`ADAPTERS` is the registry: adding a harness is one package and one name in `PACKAGES`.
Nothing here imports a harness's parts; each layer loads the part it needs
(`Adapter.part`), so a hook that names a harness imports no reader and no installer.
"""

from __future__ import annotations

from importlib import import_module

from huiyi.errors import UsageError
from huiyi.harnesses.base import Adapter

__all__ = ["ADAPTERS", "NAMES", "Adapter", "adapters", "by_name", "by_source"]

#: the harness packages, in the order `huiyi doctor` lists them
PACKAGES = ("dsh", "claude_code", "codex")

ADAPTERS: tuple[Adapter, ...] = tuple(
    import_module(f"huiyi.harnesses.{package}").ADAPTER for package in PACKAGES
)
#: the names `huiyi install` and `huiyi hook` take
NAMES = tuple(adapter.name for adapter in ADAPTERS)


def adapters() -> tuple[Adapter, ...]:
    """Every harness of the registry, in its order (read at each call: layers that iterate the
    harnesses ask here rather than keep a copy)."""
    return ADAPTERS


def by_name(name: str) -> Adapter:
    """The harness `huiyi install NAME` / `huiyi hook NAME` means; a `UsageError` names the
    ones there are."""
    for adapter in ADAPTERS:
        if adapter.name == name:
            return adapter
    raise UsageError(f"unknown harness {name!r}; choose one of {', '.join(NAMES)}")


def by_source(source: str) -> Adapter | None:
    """The harness whose sessions carry this source name in the index (`claude`)."""
    return next((a for a in ADAPTERS if a.source == source), None)
