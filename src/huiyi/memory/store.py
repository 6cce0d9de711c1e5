"""One bounded store on disk: the file format, the cross-process lock, atomic writes, backups
and the hit records.

The format is meant for people first: UTF-8 text, entries separated by a line holding only
`§` (surrounding spaces allowed), blank space around entries ignored. A store is written back in
one canonical form (`entry\\n§\\nentry\\n`), and its size (`usage`) is the length in characters of
the entries joined by `\\n§\\n`, so what the header shows is what the file holds.

Writes never lose an update. `transact` takes every involved store's lock (an exclusive
`flock` on `<store>.lock`, in a fixed order), reads the files fresh, lets the caller plan a
change, then reads the files once more right before replacing them: if a person saved the file
in an editor in between (editors do not take our lock) the plan is thrown away and made again on
the new text. Each file is replaced atomically (temp file in the same directory, fsync, rename,
fsync of the directory), so a reader sees the old file or the new one, never half of one; a
full disk is a `DiskFullError` that leaves the old file in place.

A file that no longer parses (not UTF-8, NUL bytes, or an entry longer than the whole limit,
which usually means the `§` lines were lost) is copied to `backups/` with a timestamp and
reported as damaged; the operations refuse to rewrite a damaged store instead of guessing.

Hit records (`<store>.hits.json`) are derived data: how often an entry was used and when, keyed
by a hash of its text. A missing or broken hits file is simply started again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Generic, TypeVar

from huiyi.errors import BusyError
from huiyi.files import atomic_write, make_private_dirs
from huiyi.lock import file_lock
from huiyi.memory.config import StorePaths, Target

SEPARATOR = "§"
JOINER = f"\n{SEPARATOR}\n"

DAY_MS = 86_400_000

#: How long a writer waits for another process's lock before giving up.
LOCK_TIMEOUT_S = 15.0

R = TypeVar("R")


def parse_entries(text: str) -> list[str]:
    """Entries of a store file: chunks between `§` lines, stripped, empty chunks dropped."""
    entries: list[str] = []
    chunk: list[str] = []
    for line in text.removeprefix("\ufeff").split("\n"):
        line = line.rstrip("\r")
        if line.strip() == SEPARATOR:
            _flush(chunk, entries)
            chunk = []
        else:
            chunk.append(line)
    _flush(chunk, entries)
    return entries


def _flush(chunk: list[str], entries: list[str]) -> None:
    entry = "\n".join(chunk).strip()
    if entry:
        entries.append(entry)


def format_entries(entries: Sequence[str]) -> str:
    """The canonical file text for `entries`."""
    return JOINER.join(entries) + "\n" if entries else ""


def usage_of(entries: Sequence[str]) -> int:
    """Characters the entries take, separators included."""
    return len(JOINER.join(entries))


def entry_key(entry: str) -> str:
    """A stable key for one entry's text (hit records are keyed by it)."""
    return hashlib.sha256(entry.encode("utf-8")).hexdigest()[:20]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class HitRecord:
    """How often an entry was used and when (epoch ms); `first` is when it was first seen."""

    hits: int = 0
    last: int = 0
    first: int = 0

    @property
    def last_used(self) -> int:
        return max(self.last, self.first)


@dataclass(slots=True)
class Snapshot:
    """One store as read from disk."""

    target: Target
    limit: int
    entries: list[str]
    archived: list[str]
    hits: dict[str, HitRecord]
    damage: str | None = None
    main_raw: bytes | None = None
    archive_raw: bytes | None = None

    @property
    def usage(self) -> int:
        return usage_of(self.entries)


@dataclass(slots=True)
class Change:
    """What a plan wants written for one store; None leaves that file alone."""

    entries: list[str] | None = None
    archived: list[str] | None = None
    hits: dict[str, HitRecord] | None = None


@dataclass(slots=True)
class Plan(Generic[R]):
    """The result a caller returns, plus the changes to write (none: nothing is written)."""

    result: R
    changes: dict[Target, Change] = field(default_factory=dict)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _decode(raw: bytes | None, what: str) -> tuple[str, str | None]:
    if raw is None:
        return "", None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", f"{what} is not valid UTF-8 (byte {exc.start})"
    if "\x00" in text:
        return "", f"{what} contains NUL bytes"
    return text.removeprefix("\ufeff"), None


class Store:
    """One store's files, with its limit."""

    def __init__(self, target: Target, paths: StorePaths, limit: int, workspace: str | None):
        self.target = target
        self.paths = paths
        self.limit = limit
        self.workspace = workspace

    def read(self) -> Snapshot:
        """Read and parse the store, its archive and its hit records (no lock needed)."""
        main_raw = _read_bytes(self.paths.main)
        archive_raw = _read_bytes(self.paths.archive)
        text, damage = _decode(main_raw, self.paths.main.name)
        archive_text, archive_damage = _decode(archive_raw, self.paths.archive.name)
        entries = parse_entries(text)
        if damage is None:
            longest = max((len(e) for e in entries), default=0)
            if longest > self.limit:
                damage = (
                    f"{self.paths.main.name} has an entry of {longest:,} chars, longer than the "
                    f"whole {self.limit:,}-char limit (are the § separator lines missing?)"
                )
        return Snapshot(
            target=self.target,
            limit=self.limit,
            entries=entries,
            archived=parse_entries(archive_text),
            hits=self._read_hits(),
            damage=damage or archive_damage,
            main_raw=main_raw,
            archive_raw=archive_raw,
        )

    def _read_hits(self) -> dict[str, HitRecord]:
        raw = _read_bytes(self.paths.hits)
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
            records = data["entries"]
            return {
                str(key): HitRecord(int(rec["hits"]), int(rec["last"]), int(rec["first"]))
                for key, rec in records.items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}  # derived data: start again rather than fail

    def unchanged_since(self, snapshot: Snapshot) -> bool:
        """True when neither text file changed since `snapshot` was read."""
        return (
            _read_bytes(self.paths.main) == snapshot.main_raw
            and _read_bytes(self.paths.archive) == snapshot.archive_raw
        )

    def ensure_dir(self) -> None:
        directory = self.paths.main.parent
        if not directory.exists():
            make_private_dirs(directory)
        if self.workspace and self.target is Target.MEMORY:
            marker = directory / "WORKSPACE"
            if not marker.exists():
                atomic_write(marker, (self.workspace + "\n").encode("utf-8"))

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        self.ensure_dir()
        with file_lock(
            self.paths.lock, timeout=timeout, what=f"the {self.target.value} memory store"
        ):
            yield

    def write(self, change: Change) -> None:
        """Write what `change` holds (call with the lock held)."""
        if change.entries is not None:
            atomic_write(self.paths.main, format_entries(change.entries).encode("utf-8"))
        if change.archived is not None:
            atomic_write(self.paths.archive, format_entries(change.archived).encode("utf-8"))
        if change.hits is not None:
            payload = {
                "version": 1,
                "entries": {
                    key: {"hits": rec.hits, "last": rec.last, "first": rec.first}
                    for key, rec in sorted(change.hits.items())
                },
            }
            atomic_write(self.paths.hits, json.dumps(payload, indent=1).encode("utf-8"))

    def backup(self, snapshot: Snapshot) -> Path | None:
        """Keep a timestamped copy of the damaged file (once per distinct content)."""
        source = self.paths.main if snapshot.main_raw is not None else self.paths.archive
        raw = snapshot.main_raw if snapshot.main_raw is not None else snapshot.archive_raw
        if raw is None:
            return None
        backups = self.paths.backups
        make_private_dirs(backups)
        for existing in sorted(backups.glob(f"{source.name}.*.bak"), reverse=True):
            if existing.read_bytes() == raw:
                return existing
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        path = backups / f"{source.name}.{stamp}.bak"
        atomic_write(path, raw)
        return path


#: Test seam: called after the files were read and before the plan is written.
AfterRead = Callable[[], None]


def transact(
    stores: Sequence[Store],
    plan: Callable[[dict[Target, Snapshot]], Plan[R]],
    *,
    after_read: AfterRead | None = None,
    attempts: int = 20,
) -> R:
    """Lock `stores`, read them, plan, and write the plan unless a file changed meanwhile.

    A file changed by someone who does not take our lock (a person's editor) between the read
    and the write makes the plan run again on the new text, so that edit is never overwritten.
    """
    ordered = sorted(stores, key=lambda s: s.target.value)
    with contextlib.ExitStack() as stack:
        for store in ordered:
            stack.enter_context(store.locked())
        for _ in range(attempts):
            snapshots = {store.target: store.read() for store in ordered}
            if after_read is not None:
                after_read()
            planned = plan(snapshots)
            if not planned.changes:
                return planned.result
            if not all(s.unchanged_since(snapshots[s.target]) for s in ordered):
                continue
            for store in ordered:
                change = planned.changes.get(store.target)
                if change is not None:
                    store.write(change)
            return planned.result
    raise BusyError("the memory files kept changing while we tried to write; try again")
