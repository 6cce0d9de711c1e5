"""Regular expressions compiled on first use, once per process.

`re` compiles a pattern in Python code, and a character class over a large range is set code
point by code point: the CJK class is slow to compile wherever it occurs. The tokeniser, the
redactor and the threat scan hold enough such patterns that compiling them at import slowed
every process, `huiyi --version` included, though most commands use few of them and many use
none. `lazy` defers each compile to the first call; later calls are one lookup in
a C-level cache, so the hot paths (redaction on every exit, tokenising every indexed event) pay
nothing measurable for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = ["lazy"]


def lazy(source: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A function that returns `re.compile(source, flags)`, compiled on its first call."""

    @functools.cache
    def compiled() -> re.Pattern[str]:
        return re.compile(source, flags)

    return compiled
