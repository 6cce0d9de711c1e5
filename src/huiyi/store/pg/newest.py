"""The newest rows of each trigram, kept in the server process between searches.

The fuzzy layer asks, for each query trigram, for its newest `cap` rows (`Index.fuzzy_postings`).
Read from the GIN index, that costs the trigram's whole posting list, in proportion to the
history (at a million events, 10-40 ms for a common trigram, up to 24 of them a search). The
answer changes only when rows come or go, so it is kept: `NewestGrams` holds, per (trigrams,
workspace, cap), the newest ids as of the highest id its statement saw, and a *tail*: the
trigrams and workspace of every row written since the process began watching. A lookup is the
tail's matches above the entry's id followed by the entry's ids, the first `cap` of them: the
same rows the statement would give, read from memory.

Why that is exact:
- rows come with ids above every visible one: each writer takes the `lex_totals` row lock
  before it allocates ids (`writes.Writer`), so commits are in id order and the visible rows
  are always every id up to the highest (less the removed ones);
- rows go, or change workspace, only through writes that count them in `lex_totals.removed`
  (`writes._DROP`, `Writer._apply`); when that count moved since the last look, everything
  kept is dropped;
- each look (`sync`) reads the rows written since the last one and the count in one statement
  (one snapshot), and an entry records the highest id of its own statement's snapshot.
Memory is bounded: at most `ENTRIES` entries (least recently used go first) and `TAIL_ROWS`
rows in the tail. When the tail would outgrow that, its oldest half goes: the watch then
begins above the newest row dropped, and only the entries read as of an older id go with it
(a busy server keeps what it read lately instead of starting over every `TAIL_ROWS` rows).
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

#: entries kept (each at most `cap` ids: 3.2 kB for the fuzzy layer's 400)
ENTRIES = 20_000
#: rows written since the watch began that the tail holds before it begins again
TAIL_ROWS = 20_000

#: the removals count and the highest id, then the rows above `%s` (one snapshot)
SYNC = (
    "SELECT -1::bigint AS id, NULL::text AS workspace, NULL::text[] AS grams, removed "
    "FROM lex_totals UNION ALL "
    "SELECT -2, NULL, NULL, (SELECT coalesce(max(id), 0) FROM events) UNION ALL "
    "(SELECT id, workspace, grams, 0 FROM events WHERE id > %s AND grams IS NOT NULL "
    "ORDER BY id LIMIT %s)"
)

Key = tuple[tuple[str, ...], str | None, int]
#: runs the statement of the misses: (index into the asked, id) rows and the highest id seen
Reader = Callable[[Sequence[tuple[list[str], str | None]], int], tuple[list[tuple[int, int]], int]]


class NewestGrams:
    """The newest `cap` ids of each (trigrams, workspace), kept (see the module docstring)."""

    def __init__(self, *, entries: int = ENTRIES, tail_rows: int = TAIL_ROWS) -> None:
        self.max_entries = entries
        self.max_tail = tail_rows
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, tuple[int, array[int]]] = OrderedDict()
        self._tail: dict[str, array[int]] = {}
        self._workspace_of: dict[int, str] = {}
        self._start = -1  # the tail holds every row above this id (-1: not watching)
        self._seen = -1  # and every row up to this one
        self._removed = -1
        self._generation = 0  # moves with each reset: a read begun before one is not kept

    def _reset(self, highest: int, removed: int) -> None:
        self._entries.clear()
        self._tail.clear()
        self._workspace_of.clear()
        self._start = self._seen = highest
        self._removed = removed
        self._generation += 1

    def sync(self, conn: Any) -> None:
        """Read what was written or removed since the last look (one statement)."""
        with self._lock:
            after = self._seen if self._start >= 0 else 2**62
            rows = conn.execute(SYNC, (after, self.max_tail + 1)).fetchall()
            removed = highest = 0
            fresh: list[tuple[int, str, list[str]]] = []
            for rowid, workspace, grams, n in rows:
                if rowid == -1:
                    removed = int(n)
                elif rowid == -2:
                    highest = int(n)
                else:
                    fresh.append((int(rowid), workspace, grams))
            if self._start < 0 or removed != self._removed or len(fresh) > self.max_tail:
                self._reset(highest, removed)
                return
            if len(self._workspace_of) + len(fresh) > self.max_tail:
                self._trim(len(self._workspace_of) + len(fresh) - self.max_tail)
            for rowid, workspace, grams in fresh:
                self._workspace_of[rowid] = workspace
                for gram in set(grams):
                    self._tail.setdefault(gram, array("q")).append(rowid)
            self._seen = max(self._seen, highest)

    def _trim(self, at_least: int) -> None:
        """Drop the tail's oldest half of rows (more if `at_least` asks): the tail then holds
        every row above the newest one dropped, so the entries read as of an id below it are
        stale (read again when asked) and the ones read since stay as they are."""
        held = list(self._workspace_of)  # ids in the order they came: ascending
        drop = min(len(held), max(len(held) // 2, at_least))
        if drop == 0:
            return
        cutoff = held[drop - 1]
        for rowid in held[:drop]:
            del self._workspace_of[rowid]
        for gram in list(self._tail):
            ids = self._tail[gram]
            keep = bisect.bisect_right(ids, cutoff)
            if keep == len(ids):
                del self._tail[gram]
            elif keep:
                del ids[:keep]
        self._start = cutoff
        for key in [k for k, (as_of, _) in self._entries.items() if as_of < cutoff]:
            del self._entries[key]

    def _from_tail(self, grams: Sequence[str], workspace: str | None, above: int) -> list[int]:
        """Ids above `above` in the tail holding every one of `grams`, newest first."""
        lists = [self._tail.get(g) for g in grams]
        if not lists or any(found is None for found in lists):
            return []
        first, *rest = sorted((found for found in lists if found is not None), key=len)
        others = [set(found) for found in rest]
        out = []
        for rowid in reversed(first):
            if rowid <= above:
                break
            if all(rowid in other for other in others) and (
                workspace is None or self._workspace_of.get(rowid) == workspace
            ):
                out.append(rowid)
        return out

    def _stale(self, entry: tuple[int, array[int]] | None) -> bool:
        return entry is None or entry[0] < self._start

    def newest(
        self, asked: Sequence[tuple[list[str], str | None]], cap: int, read: Reader
    ) -> list[tuple[int, int]]:
        """(index into `asked`, id) of the newest `cap` rows of each; the ones not kept are
        read with `read` (one statement for all of them) and kept."""
        keys: list[Key] = [(tuple(grams), workspace, cap) for grams, workspace in asked]
        with self._lock:
            found: dict[Key, tuple[int, array[int]] | None] = {
                key: self._entries.get(key) for key in keys
            }
            missing = [n for n, key in enumerate(keys) if self._stale(found[key])]
            generation = self._generation
        if missing:
            wanted = list(dict.fromkeys(keys[n] for n in missing))
            rows, highest = read([(list(k[0]), k[1]) for k in wanted], cap)
            ids: dict[int, array[int]] = {n: array("q") for n in range(len(wanted))}
            for n, rowid in rows:
                ids[n].append(rowid)
            with self._lock:
                for n, key in enumerate(wanted):
                    entry = (highest, array("q", sorted(ids[n], reverse=True)))
                    found[key] = entry
                    if generation == self._generation and highest >= self._start >= 0:
                        self._entries[key] = entry
                        self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        out: list[tuple[int, int]] = []
        with self._lock:
            for n, key in enumerate(keys):
                got = found[key]
                assert got is not None
                as_of, kept = got
                if key in self._entries:
                    self._entries.move_to_end(key)
                newer = self._from_tail(key[0], key[1], as_of) if as_of >= self._start else []
                for rowid in [*newer, *kept][:cap]:
                    out.append((n, rowid))
        return out


#: the removals count and the highest id: the first two rows of `NewestRows`'s statements
HEADER = (
    "SELECT -1, removed FROM lex_totals UNION ALL "
    "SELECT -2, (SELECT coalesce(max(id), 0) FROM events) UNION ALL "
)
#: a kept entry this many ids behind the highest is read again whole, not from its id up
LAG_IDS = 20_000

RowsKey = tuple[str | None, str | None, int]
#: runs a statement of (index, id) rows and its parameters
Runner = Callable[[str, list[Any]], list[tuple[int, int]]]


class NewestRows:
    """The newest `cap` ids of each (tsquery, workspace), kept with the snapshot they were read
    in (its highest id and removals count): a lookup reads only the rows above that id, by the
    primary key, and keeps the merge. The same reasoning as `NewestGrams` (the module
    docstring) makes it exact; when the removals count moved, everything kept is dropped."""

    def __init__(self, *, entries: int = ENTRIES, lag: int = LAG_IDS) -> None:
        self.max_entries = entries
        self.lag = lag
        self._lock = threading.Lock()
        self._entries: OrderedDict[RowsKey, tuple[int, int, array[int]]] = OrderedDict()

    def newest(
        self,
        asked: Sequence[tuple[str | None, str | None]],
        cap: int,
        top: int,
        *,
        newer: Callable[[Sequence[tuple[str | None, str | None, int]], int], tuple[str, list[Any]]],
        whole: Callable[[Sequence[tuple[str | None, str | None]], int], tuple[str, list[Any]]],
        run_newer: Runner,
        run_whole: Runner,
    ) -> list[tuple[int, int]]:
        """(index into `asked`, id) of the newest `cap` rows of each. `newer` builds the
        statement of the rows above each kept entry's id ((tsquery, workspace, above), cap),
        `whole` the one of the rest ((tsquery, workspace), cap); `run_newer` runs the first
        after `HEADER`, `run_whole` the second with `HEADER`'s rows first, from the same
        snapshot. `top`: the highest id as lately read."""
        keys: list[RowsKey] = [(tsquery, workspace, cap) for tsquery, workspace in asked]
        unique = list(dict.fromkeys(keys))
        with self._lock:
            kept = {key: self._entries.get(key) for key in unique}
        result: dict[RowsKey, array[int]] = {}
        fresh = [k for k in unique if (e := kept[k]) is not None and top - e[0] <= self.lag]
        if fresh:
            asks = []
            for key in fresh:
                entry = kept[key]
                assert entry is not None
                asks.append((key[0], key[1], entry[0]))
            query, params = newer(asks, cap)
            removed, highest, found = _split(run_newer(HEADER + query, params), len(fresh))
            with self._lock:
                for n, key in enumerate(fresh):
                    entry = kept[key]
                    assert entry is not None
                    if entry[1] != removed:
                        self._entries.clear()
                        continue
                    ids = array("q", [*sorted(found[n], reverse=True), *entry[2]][:cap])
                    result[key] = ids
                    self._keep(key, (highest, removed, ids))
        missing = [key for key in unique if key not in result]
        if missing:
            query, params = whole([(k[0], k[1]) for k in missing], cap)
            removed, highest, found = _split(run_whole(query, params), len(missing))
            with self._lock:
                for n, key in enumerate(missing):
                    ids = array("q", sorted(found[n], reverse=True))
                    result[key] = ids
                    self._keep(key, (highest, removed, ids))
        return [(n, rowid) for n, key in enumerate(keys) for rowid in result[key]]

    def _keep(self, key: RowsKey, entry: tuple[int, int, array[int]]) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


def _split(rows: list[tuple[int, int]], parts: int) -> tuple[int, int, list[list[int]]]:
    """(removals count, highest id, each part's ids) of a statement begun with `HEADER`."""
    removed = highest = 0
    found: list[list[int]] = [[] for _ in range(parts)]
    for n, value in rows:
        if n == -1:
            removed = int(value)
        elif n == -2:
            highest = int(value)
        else:
            found[int(n)].append(int(value))
    return removed, highest, found
