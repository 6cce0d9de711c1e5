"""One root exception for everything huiyi raises on purpose.

    HuiyiError                 anything huiyi reports to a person or an agent
    ├── UsageError             a bad argument; the message says what to pass instead
    ├── NotFoundError          unknown, private or out-of-scope ids (one message for all three)
    ├── IndexBusyError         another process holds the index writer lock for too long
    ├── SourceError            a log file or sources root that cannot be read
    └── StoreError             the index database is unusable (corrupt, newer schema)

Entry points turn these into clean messages; anything else is a bug and fails loudly.
"""

from __future__ import annotations


class HuiyiError(Exception):
    """Root of every error huiyi raises on purpose."""


class UsageError(HuiyiError):
    """A bad argument: the message says what to do instead."""


class NotFoundError(HuiyiError):
    """An id that does not exist, is private, or lies outside the workspace."""


class IndexBusyError(HuiyiError):
    """Another process kept the single-writer lock longer than we were willing to wait."""


class SourceError(HuiyiError):
    """A log file or a sources root that cannot be read."""


class StoreError(HuiyiError):
    """The index database cannot be used."""
