"""The memory panel: the user store and a workspace's store side by side, each with its budget
bar and its entries as cards; add, edit in place, delete (after a confirm), search current and
archived entries, restore from the archive.

A person's changes go through the same `Memory` object as the model's (lock, fresh re-read,
budget, atomic write), without the threat scan, as in the CLI. The page names an entry by the
hash of its whole text (`entry_key`), never by a piece of it: an edit or a delete applies only
while that exact entry is still there (`Memory.apply(exact=True)`), so a change the model or an
editor made meanwhile is never silently overwritten; the person is told and sees the new text.

The panel carries a version (a hash of the store files as read); the page's script asks for
the version every few seconds and reloads the panel when it moved, so changes made by the
model or in the files show up without a reload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from huiyi.memory import (
    CHANGED,
    Memory,
    MemoryHit,
    Operation,
    Outcome,
    Snapshot,
    Target,
    entry_key,
    percent,
)
from huiyi.safety.exit import redact
from huiyi.text.tokenize import parse_query
from huiyi.web.markup import Markup, h, highlight, join, safe
from huiyi.web.pages import Page

__all__ = ["ACTIONS", "Panel", "change", "panel", "read_panel", "version"]

#: what the panel's forms may ask for
ACTIONS = ("add", "edit", "delete", "restore")


@dataclass(frozen=True, slots=True)
class Panel:
    """The stores as read for one rendering, and what was searched for in them."""

    workspace: str | None
    snapshots: Sequence[Snapshot]
    query: str = ""
    hits: Sequence[MemoryHit] = ()


def version(snapshots: Sequence[Snapshot]) -> str:
    """A short hash of the store files as read: it moves whenever any of them changed."""
    digest = hashlib.sha256()
    for snap in snapshots:
        for raw in (snap.main_raw, snap.archive_raw):
            digest.update(b"\x00" if raw is None else b"\x01" + raw)
    return digest.hexdigest()[:16]


def read_panel(memory: Memory, query: str = "") -> Panel:
    """Both stores (the user's, and the workspace's when one is known) read fresh, and the
    search of their current and archived entries when `query` holds words."""
    snapshots = [memory.snapshot(t) for t in memory.targets()]
    hits = memory.search(query, limit=20, record=False).hits if query.strip() else []
    return Panel(memory.workspace, snapshots, query, hits)


def change(memory: Memory, action: str, target: str, key: str, content: str) -> Outcome:
    """Apply one change a person asked for on the page; `key` names an existing entry (edit,
    delete: a current one; restore: an archived one) by `entry_key` of its whole text."""
    if action == "add":
        return memory.apply([Operation("add", Target(target), content=content)], scan=False)
    snap = memory.snapshot(target)
    pool = snap.archived if action == "restore" else snap.entries
    entry = next((e for e in pool if entry_key(e) == key), None)
    if entry is None:
        return Outcome(False, CHANGED, reason="changed")
    if action == "restore":
        return memory.restore(target, entry)
    if action == "edit":
        op = Operation("replace", Target(target), content=content, old_text=entry)
    else:
        op = Operation("remove", Target(target), old_text=entry)
    return memory.apply([op], scan=False, exact=True)


# -- rendering ---------------------------------------------------------------------------------


def panel(page: Page, data: Panel, notice: Markup | None = None) -> Markup:
    """The panel: search box, a message, the two stores side by side, search results."""
    t = page.words
    search = h(
        '<form class="memsearch" method="get" action="/memory" role="search">'
        '<input type="hidden" name="ws" value="{}">'
        '<label>{} <input type="search" name="q" value="{}"></label>'
        '<button type="submit">{}</button></form>',
        data.workspace or "",
        t("memory.search"),
        data.query,
        t("search.go"),
    )
    results = _results(page, data) if data.query.strip() else Markup("")
    stores = join(_store(page, data.workspace, snap) for snap in data.snapshots)
    return h(
        '<section id="memory-panel" data-version="{}" data-ws="{}">{}{}{}'
        '<div class="stores">{}</div></section>',
        version(data.snapshots),
        data.workspace or "",
        search,
        notice or "",
        results,
        stores,
    )


def _hidden(workspace: str | None, target: str, key: str = "") -> Markup:
    return h(
        '<input type="hidden" name="ws" value="{}"><input type="hidden" name="target" '
        'value="{}"><input type="hidden" name="key" value="{}">',
        workspace or "",
        target,
        key,
    )


def _store(page: Page, workspace: str | None, snap: Snapshot) -> Markup:
    t = page.words
    target = snap.target.value
    used = percent(snap.usage, snap.limit)
    where = (
        h('<p class="where">{}</p>', safe(workspace or "")) if snap.target is Target.MEMORY else ""
    )
    damaged = h('<p class="message refused">{}</p>', safe(snap.damage)) if snap.damage else ""
    cards = join(_card(page, workspace, target, entry) for entry in snap.entries)
    archived = join(_archived(page, workspace, target, entry) for entry in snap.archived)
    return h(
        '<section class="store" data-target="{}" aria-labelledby="h-{}">'
        '<h2 id="h-{}">{}</h2>{}'
        '<p class="budget-line"><meter min="0" max="{}" value="{}" high="{}" optimum="0" '
        'aria-label="{}"></meter> <span class="budget">{}% — {}/{} {}</span></p>{}'
        '<div class="cards">{}</div>'
        '<form class="add" method="post" action="/memory/add">{}'
        '<label>{}<textarea name="content" rows="3" required></textarea></label>'
        '<button type="submit">{}</button></form>'
        '<details class="archive"><summary>{} ({})</summary>{}</details></section>',
        target,
        target,
        target,
        t(f"memory.{target}"),
        where,
        snap.limit,
        snap.usage,
        snap.limit * 9 // 10,
        t("memory.budget"),
        used,
        f"{snap.usage:,}",
        f"{snap.limit:,}",
        t("memory.chars"),
        damaged,
        cards or h('<p class="empty">{}</p>', t("memory.none")),
        _hidden(workspace, target),
        t("memory.new"),
        t("memory.add"),
        t("memory.archive"),
        len(snap.archived),
        archived or h('<p class="empty">{}</p>', t("memory.none")),
    )


def _card(page: Page, workspace: str | None, target: str, entry: str) -> Markup:
    t = page.words
    shown = redact(entry)
    key = entry_key(entry)
    if shown.count:  # the page would write the masks back: edit the file instead
        edit = h('<p class="note">{}</p>', t("memory.secret"))
    else:
        edit = h(
            '<details class="edit"><summary>{}</summary>'
            '<form method="post" action="/memory/edit">{}'
            '<label class="sr">{}<textarea name="content" rows="4" required>{}</textarea></label>'
            '<button type="submit">{}</button></form></details>',
            t("memory.edit"),
            _hidden(workspace, target, key),
            t("memory.edit"),
            entry,
            t("memory.save"),
        )
    delete = h(
        '<details class="delete"><summary>{}</summary>'
        '<form method="post" action="/memory/delete">{}<span>{}</span> '
        '<button type="submit" class="danger">{}</button></form></details>',
        t("memory.delete"),
        _hidden(workspace, target, key),
        t("memory.confirm"),
        t("memory.really"),
    )
    return h(
        '<article class="card" data-key="{}"><p class="text">{}</p>'
        '<div class="actions">{}{}</div></article>',
        key,
        shown.text,
        edit,
        delete,
    )


def _restore(page: Page, workspace: str | None, target: str, entry: str) -> Markup:
    return h(
        '<form method="post" action="/memory/restore">{}<button type="submit">{}</button></form>',
        _hidden(workspace, target, entry_key(entry)),
        page.words("memory.restore"),
    )


def _archived(page: Page, workspace: str | None, target: str, entry: str) -> Markup:
    return h(
        '<article class="card archived"><p class="text">{}</p>{}</article>',
        safe(entry),
        _restore(page, workspace, target, entry),
    )


def _results(page: Page, data: Panel) -> Markup:
    t = page.words
    if not data.hits:
        return h('<p class="empty" role="status">{}</p>', t("memory.nohits"))
    words = parse_query(data.query).surface_words()
    items = join(
        h(
            '<li class="card{}"><span class="badge">{}</span>{} '
            '<span class="text">{}</span>{}</li>',
            " archived" if hit.archived else "",
            t(f"memory.{hit.target.value}"),
            h(' <span class="badge">{}</span>', t("memory.archived")) if hit.archived else "",
            highlight(safe(hit.text), words),
            _restore(page, data.workspace, hit.target.value, hit.text) if hit.archived else "",
        )
        for hit in data.hits
    )
    return h(
        '<section class="memhits" aria-label="{}"><ol>{}</ol></section>', t("memory.hits"), items
    )
