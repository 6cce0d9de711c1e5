"""Reading logs: the contract every reader speaks (`base`), the line and fold machinery the JSONL
readers share (`jsonl`, `fold`), the generic JSONL import (`generic`), and the readers of every
harness huiyi knows (each in its own package, `huiyi.harnesses.<name>.reader`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from huiyi.config import Settings
from huiyi.sources.base import Cursor, Reader, ReadResult, SessionChunk


def default_readers(settings: Settings) -> list[Reader]:
    """Readers for every harness huiyi knows (`huiyi.harnesses`), rooted where `settings` say."""
    from huiyi.harnesses import adapters

    readers = []
    for adapter in adapters():
        make: Callable[[Settings], Reader] = adapter.part("reader").reader
        readers.append(make(settings))
    return readers


def generic_reader(paths: Sequence[Path]) -> Reader:
    from huiyi.sources.generic import GenericReader

    return GenericReader(paths)


__all__ = ["Cursor", "ReadResult", "Reader", "SessionChunk", "default_readers", "generic_reader"]
