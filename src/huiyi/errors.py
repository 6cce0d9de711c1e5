"""One root exception for everything huiyi raises on purpose.

    HuiyiError                 anything huiyi reports to a person or an agent
    ├── UsageError             a bad argument; the message says what to pass instead
    │   └── SettingsError      a bad HUIYI_* value; the message names it and the allowed range
    │       └── HomeError      HUIYI_HOME cannot be made or used (one line, never the usage)
    ├── NotFoundError          unknown, private or out-of-scope ids (one message for all three)
    ├── BusyError              another process held a lock (index writer, memory store) too long
    ├── StoreError             the index database is unusable (corrupt, newer schema)
    │   └── AnnError           an approximate index file beside it is damaged or unreadable
    ├── DiskFullError          the disk (or the user's quota) is full: a write was not done, and
    │                          what was written before it is intact
    ├── EmbeddingError         the embedding model cannot be loaded or did not answer
    ├── ExtractionError        the memory extraction endpoint failed or answered nonsense
    └── EvalError              an evaluation could not be set up honestly
        └── LayerUnavailable   one search layer could not run for an evaluation

Entry points turn these into clean messages, each kind with its own exit code (`EXIT_CODES`);
anything else is a bug and fails loudly.
"""

from __future__ import annotations


class HuiyiError(Exception):
    """Root of every error huiyi raises on purpose."""


class UsageError(HuiyiError):
    """A bad argument: the message says what to do instead."""


class SettingsError(UsageError):
    """A setting (environment variable or config value) out of its allowed range."""


class HomeError(SettingsError):
    """`HUIYI_HOME` cannot be created or used (a path under a file, a read-only place): the
    message names the path and the reason."""


class NotFoundError(HuiyiError):
    """An id that does not exist, is private, or lies outside the workspace."""


class BusyError(HuiyiError):
    """Another process kept a lock (the index writer, a memory store) longer than we waited."""


class StoreError(HuiyiError):
    """The index database cannot be used."""


class AnnError(StoreError):
    """A file of the semantic layer's approximate index is damaged, foreign or unreadable
    (`huiyi doctor --repair` builds it again from the vectors)."""


class DiskFullError(HuiyiError):
    """No space was left for a write (SQLite's "database or disk is full", `ENOSPC`, `EDQUOT`).

    Raised only where the write was undone (a rolled-back transaction, a temporary file that
    was never renamed), so the message can say that nothing written before was lost."""


class EmbeddingError(HuiyiError):
    """The embedder could not be loaded or did not answer."""


class ExtractionError(HuiyiError):
    """The memory extraction endpoint failed or answered something unusable."""


class EvalError(HuiyiError):
    """An evaluation that cannot be run honestly (a scope bug, an index that failed)."""


class LayerUnavailable(EvalError):
    """One search layer did not run, so an evaluation of it would be meaningless."""


#: The CLI's exit status for each kind (the most specific class wins); documented in the README.
EXIT_CODES: dict[type[HuiyiError], int] = {
    UsageError: 2,
    NotFoundError: 3,
    BusyError: 4,
    StoreError: 5,
    EmbeddingError: 6,
    ExtractionError: 6,
    EvalError: 7,
    DiskFullError: 8,
    HuiyiError: 1,
}


def exit_code(exc: HuiyiError) -> int:
    """The exit status for `exc`: that of its nearest class in `EXIT_CODES`."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1
