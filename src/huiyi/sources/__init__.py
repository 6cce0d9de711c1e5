"""Log readers, one module per harness, all speaking the contract in `base`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from huiyi.config import Settings
from huiyi.sources.base import Cursor, Reader, ReadResult, SessionChunk


def default_readers(settings: Settings) -> list[Reader]:
    """Readers for every harness huiyi knows, rooted where `settings` says."""
    from huiyi.sources.claude import ClaudeReader
    from huiyi.sources.codex import CodexReader
    from huiyi.sources.dsh import DshReader

    return [
        DshReader(settings.dsh_home),
        ClaudeReader(settings.claude_dirs),
        CodexReader(settings.codex_home),
    ]


def generic_reader(paths: Sequence[Path]) -> Reader:
    from huiyi.sources.generic import GenericReader

    return GenericReader(paths)


__all__ = ["Cursor", "ReadResult", "Reader", "SessionChunk", "default_readers", "generic_reader"]
