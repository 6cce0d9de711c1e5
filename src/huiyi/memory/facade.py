"""`Memory`: the two stores of one workspace behind one object, for every entry point.

The CLI, the MCP tools, the web page and `Huiyi.memory` all go through this class, so the
rules (lock, re-read, budget, scan, archive) live in one place. It holds no file contents
between calls: every call reads the files fresh, because a person or another agent may have
changed them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from huiyi.config import Settings
from huiyi.errors import EmbeddingError, UsageError
from huiyi.memory import lifecycle, ops, render, search
from huiyi.memory.config import (
    MemoryConfig,
    StorePaths,
    Target,
    memory_root,
    parse_target,
    store_paths,
)
from huiyi.memory.ops import Operation, Outcome
from huiyi.memory.search import MemoryHit
from huiyi.memory.store import (
    AfterRead,
    Change,
    Plan,
    Snapshot,
    Store,
    entry_key,
    now_ms,
    transact,
)
from huiyi.memory.verdicts import Verdicts

if TYPE_CHECKING:
    from huiyi.safety.meaning import Meaning


class Memory:
    """The user store and (when a workspace is known) that workspace's memory store.

    Limits and the archive age come from `settings.memory` unless `config` overrides them.
    """

    def __init__(
        self,
        settings: Settings,
        workspace: str | None,
        *,
        config: MemoryConfig | None = None,
        clock: Callable[[], int] = now_ms,
        meaning: Callable[[], Meaning | None] | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace or None
        self.config = config or settings.memory
        self.clock = clock
        #: the embedding model's intent detector for scanned writes, built when a scan needs it
        #: (None: the rules alone)
        self.meaning = meaning

    # --- stores ---------------------------------------------------------------------------

    def targets(self) -> list[Target]:
        """The stores this object can reach: always user, memory when a workspace is known."""
        return [Target.USER, Target.MEMORY] if self.workspace else [Target.USER]

    def store(self, target: Target | str) -> Store:
        target = parse_target(target) if isinstance(target, str) else target
        paths = store_paths(self.settings.home, target, self.workspace)
        return Store(target, paths, self.config.limit(target), self.workspace)

    def snapshot(self, target: Target | str) -> Snapshot:
        return self.store(target).read()

    def entries(self, target: Target | str) -> list[str]:
        return self.snapshot(target).entries

    # --- writes ---------------------------------------------------------------------------

    def add(self, target: Target | str, content: str, *, scan: bool = True) -> Outcome:
        return self.apply([Operation("add", self._target(target), content=content)], scan=scan)

    def replace(
        self, target: Target | str, old_text: str, content: str, *, scan: bool = True
    ) -> Outcome:
        op = Operation("replace", self._target(target), content=content, old_text=old_text)
        return self.apply([op], scan=scan)

    def remove(self, target: Target | str, old_text: str) -> Outcome:
        return self.apply([Operation("remove", self._target(target), old_text=old_text)])

    def apply(
        self,
        operations: Sequence[Operation],
        *,
        scan: bool = True,
        after_read: AfterRead | None = None,
        exact: bool = False,
    ) -> Outcome:
        """Apply operations as one all-or-nothing change.

        `scan=False` is for a person's own edits (the web page): budgeted, not scanned.
        `exact=True` (the web page too): each `old_text` is a whole entry as the person saw
        it; if it changed meanwhile the change is refused, never applied to the new text.
        `after_read` is a test seam called between reading and writing the files.
        """
        stores = {t: self.store(t) for t in dict.fromkeys(op.target for op in operations)}
        meaning = self.meaning() if scan and self.meaning is not None else None
        outcome = ops.run_operations(
            stores,
            operations,
            scan=scan,
            now=self.clock(),
            after_read=after_read,
            exact=exact,
            meaning=meaning,
        )
        if outcome.ok and meaning is not None:
            # the new entries, and any hand edit met on the way, for the hooks; the write is
            # done, so a detector that cannot run leaves them to the next process that can
            with contextlib.suppress(EmbeddingError):
                self.judge()
        return outcome

    def _target(self, target: Target | str) -> Target:
        parsed = parse_target(target) if isinstance(target, str) else target
        if parsed is Target.MEMORY and not self.workspace:
            store_paths(self.settings.home, parsed, None)  # raises the UsageError
        return parsed

    # --- reading ---------------------------------------------------------------------------

    def render(self, *, leave_out: Collection[str] = ()) -> str:
        """The block for the model: deterministic bytes for the same files (the stores and the
        kept verdicts; the detector itself is never run here, so a hook loads no model).
        `leave_out`: stores the model already gets another way (a digest a harness reads at
        session start)."""
        snapshots = [self.snapshot(t) for t in self.targets() if t not in leave_out]
        return render.render(snapshots, self.verdicts())

    def render_store(self, target: Target | str) -> str:
        """One store's block, as `render` shows it."""
        return render.render_store(self.snapshot(target), self.verdicts())

    def blocked(self, entry: str) -> str | None:
        """The rule that hides `entry` from the model (the rules, else a kept verdict)."""
        return render.blocked(entry, self.verdicts())

    # --- the meaning detector's verdicts ---------------------------------------------------

    def verdicts(self) -> Verdicts | None:
        """The kept verdicts of this process's meaning detector, or None without one. Builds
        the detector's id, never its model."""
        meaning = self.meaning() if self.meaning is not None else None
        return Verdicts(self.settings.home, meaning.detector_id) if meaning is not None else None

    def judge(self, *, every_store: bool = False) -> Judged:
        """Judge with the meaning detector every entry (current and archived) the rules let
        through and no verdict is kept for, and keep the verdicts (`huiyi.memory.verdicts`).
        The stores of this object, or with `every_store` every store under HUIYI_HOME (every
        workspace's). Loads the model only when an entry needs it."""
        snapshots = (
            [store.read() for store in every_store_of(self.settings)]
            if every_store
            else [self.snapshot(t) for t in self.targets()]
        )
        texts = [t for s in snapshots if not s.damage for t in (*s.entries, *s.archived)]
        meaning = self.meaning() if self.meaning is not None else None
        if meaning is None:
            return Judged(len(texts), 0, 0, len(_unjudged_by_rules(texts)), detector=False)
        verdicts = Verdicts(self.settings.home, meaning.detector_id)
        new = verdicts.judge(texts, meaning)
        return Judged(
            len(texts),
            len(new),
            sum(1 for rule in new.values() if rule),
            len(verdicts.unjudged(texts)),
            detector=True,
        )

    def search(self, query: str, limit: int = 5, *, record: bool = True) -> SearchResult:
        """Rank current and archived entries of both stores; record hits on what is returned."""
        if not query.strip():
            raise UsageError("memory search needs a query")
        snapshots = [self.snapshot(t) for t in self.targets()]
        now = self.clock()
        hits, searched = search.rank(query, snapshots, now, limit)
        if record and hits:
            self._record_hits(hits, now)
        archived = sum(len(s.archived) for s in snapshots)
        return SearchResult(query, hits, searched, archived)

    def _record_hits(self, hits: Sequence[MemoryHit], now: int) -> None:
        for target in dict.fromkeys(h.target for h in hits):
            texts = {h.text for h in hits if h.target is target}
            store = self.store(target)

            def plan(
                snaps: dict[Target, Snapshot], store: Store = store, texts: set[str] = texts
            ) -> Plan[None]:
                snap = snaps[store.target]
                used = {entry_key(t) for t in texts}
                hits_now = ops.new_hits(snap.hits, snap.entries, snap.archived, now, used)
                return Plan(None, {store.target: Change(hits=hits_now)})

            transact([store], plan)

    # --- lifecycle -------------------------------------------------------------------------

    def sweep(self) -> dict[Target, list[str]]:
        """Archive entries unused for `archive_days`; returns what moved, per store."""
        moved: dict[Target, list[str]] = {}
        for target in self.targets():
            store = self.store(target)
            plan = lifecycle.plan_sweep(store, self.config.archive_days, self.clock())
            done = transact([store], plan)
            if done:
                moved[target] = done
        return moved

    def archive(self, target: Target | str, old_text: str) -> Outcome:
        store = self.store(self._target(target))
        return transact([store], lifecycle.plan_move(store, old_text, self.clock(), restore=False))

    def restore(self, target: Target | str, old_text: str) -> Outcome:
        store = self.store(self._target(target))
        return transact([store], lifecycle.plan_move(store, old_text, self.clock(), restore=True))


@dataclass(frozen=True, slots=True)
class Judged:
    """What one `Memory.judge` did."""

    #: entries looked at (current and archived)
    notes: int
    #: judged by the detector now, and how many of those it refused
    judged: int
    refused: int
    #: entries the rules let through that still have no verdict (all of them without a
    #: detector: the hooks judge them by the rules alone)
    waiting: int
    #: whether this process has the meaning detector
    detector: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "notes": self.notes,
            "judged_now": self.judged,
            "refused_now": self.refused,
            "await_detector": self.waiting,
            "detector": self.detector,
        }


def _unjudged_by_rules(texts: Sequence[str]) -> list[str]:
    from huiyi.safety import threats

    return [t for t in dict.fromkeys(texts) if t.strip() and not threats.scan(t)]


def stores_digest(settings: Settings) -> bytes:
    """A digest of every store's files under `settings.home` (`every_store_of`: each store's
    current and archive file, by path and content): what `huiyi index --watch` compares to
    judge the notes again only when one of them changed. A file that cannot be read counts by
    its error, so it is looked at again once it can be."""
    digest = hashlib.blake2b(digest_size=16)
    for store in every_store_of(settings):
        for path in (store.paths.main, store.paths.archive):
            digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
            try:
                raw = path.read_bytes()
            except FileNotFoundError:
                raw = b"-"
            except OSError as exc:
                raw = f"!{exc.errno}".encode()
            digest.update(len(raw).to_bytes(8, "big") + raw)
    return digest.digest()


def every_store_of(settings: Settings) -> list[Store]:
    """The user store and every workspace's memory store under `settings.home`, whichever
    workspace they belong to (`WORKSPACE` names it; a store is read without it)."""
    user = store_paths(settings.home, Target.USER, None)
    stores = [Store(Target.USER, user, settings.memory.limit(Target.USER), None)]
    root = memory_root(settings.home) / "workspaces"
    try:
        directories = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        directories = []
    limit = settings.memory.limit(Target.MEMORY)
    for directory in directories:
        paths = StorePaths.at(directory, "memory")
        if paths.main.is_file() or paths.archive.is_file():
            stores.append(Store(Target.MEMORY, paths, limit, None))
    return stores


class SearchResult:
    """Ranked entries plus what was searched (for an honest "nothing found")."""

    def __init__(self, query: str, hits: list[MemoryHit], searched: int, archived: int) -> None:
        self.query = query
        self.hits = hits
        self.searched = searched
        self.archived = archived

    def as_dict(self) -> dict[str, object]:
        return {
            "query": self.query,
            "searched": self.searched,
            "archived": self.archived,
            "hits": [h.as_dict() for h in self.hits],
        }
