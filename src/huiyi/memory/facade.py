"""`Memory`: the two stores of one workspace behind one object, for every entry point.

The CLI, the MCP tools, the web page and `Huiyi.memory` all go through this class, so the
rules (lock, re-read, budget, scan, archive) live in one place. It holds no file contents
between calls: every call reads the files fresh, because a person or another agent may have
changed them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from huiyi.config import Settings
from huiyi.errors import UsageError
from huiyi.memory import lifecycle, ops, render, search
from huiyi.memory.config import MemoryConfig, Target, parse_target, store_paths
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
        return ops.run_operations(
            stores,
            operations,
            scan=scan,
            now=self.clock(),
            after_read=after_read,
            exact=exact,
            meaning=self.meaning() if scan and self.meaning is not None else None,
        )

    def _target(self, target: Target | str) -> Target:
        parsed = parse_target(target) if isinstance(target, str) else target
        if parsed is Target.MEMORY and not self.workspace:
            store_paths(self.settings.home, parsed, None)  # raises the UsageError
        return parsed

    # --- reading ---------------------------------------------------------------------------

    def render(self, *, leave_out: Collection[str] = ()) -> str:
        """The block for the model: deterministic bytes for the same files. `leave_out`: stores
        the model already gets another way (a digest a harness reads at session start)."""
        return render.render([self.snapshot(t) for t in self.targets() if t not in leave_out])

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
