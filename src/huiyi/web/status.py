"""The Status view: a picture of the history (`web.picture`), where each harness's logs were
looked for, sessions and events per source, bad lines by reason, embedding coverage as a bar,
index size, when a log was last read, and where the memory files are.

Drawn from `Huiyi.status()` (doctor's counts without its integrity checks, which read the
whole file) plus the memory stores' paths. While embedding runs (in `huiyi index` or the warm
service), the page's script reloads the coverage block every few seconds, so its bar moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from huiyi.text.dates import when
from huiyi.web.history import SOURCES
from huiyi.web.markup import Markup, h, join, safe
from huiyi.web.pages import Page
from huiyi.web.picture import activity_picture

__all__ = ["activity_section", "status_view"]


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def status_view(
    page: Page,
    status: Mapping[str, Any],
    memory_files: Sequence[Path],
    picture: Markup | None = None,
) -> Markup:
    """The view; `picture` is the activity section (`activity_section`), drawn first."""
    t = page.words
    emb = status["embeddings"]
    embedded, embeddable = int(emb["embedded"]), int(emb["embeddable"])
    share = embedded * 100 // embeddable if embeddable else 0
    running = "1" if embeddable > 0 and embedded < embeddable else "0"
    coverage = h(
        '<section id="coverage" data-running="{}"><h2>{}</h2>'
        '<p><progress max="{}" value="{}" aria-label="{}"></progress> '
        "{}% ({}/{}) · {}</p></section>",
        running,
        t("status.embeddings"),
        max(embeddable, 1),
        embedded,
        t("status.embeddings"),
        share,
        f"{embedded:,}",
        f"{embeddable:,}",
        safe(emb["model"] or t("status.nomodel")),
    )
    rows = join(_source(page, name, data) for name, data in sorted(status["sources"].items()))
    table = h(
        '<section><h2>{}</h2><table class="sources"><thead><tr><th>{}</th><th>{}</th><th>{}</th>'
        "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table></section>",
        t("status.sources"),
        t("status.source"),
        t("status.where"),
        t("status.sessions"),
        t("status.events"),
        t("status.bad"),
        rows,
    )
    facts = [
        (t("status.sessions"), f"{status['sessions']:,}"),
        (t("status.events"), f"{status['events']:,}"),
        (t("status.private"), f"{status['private_sessions']:,}"),
        (t("status.workspaces"), f"{status['workspaces']:,}"),
        (t("status.size"), _mb(int(status["index_bytes"]))),
        (t("status.last"), when(status["last_indexed"] or 0)),
        (t("status.index"), safe(status["index"])),
    ]
    listed = join(h("<dt>{}</dt><dd>{}</dd>", k, v) for k, v in facts)
    demo = status.get("demo")
    notice = (
        h(
            '<p class="notice demo">{}</p>',
            t("status.demo", demo["sessions"], demo["workspace"], demo["remove"]),
        )
        if demo
        else Markup("")
    )
    files = join(h("<li><code>{}</code></li>", safe(str(p))) for p in memory_files)
    return (
        notice
        + (picture or Markup(""))
        + h('<section><h2>{}</h2><dl class="facts">{}</dl></section>', t("status.index"), listed)
        + coverage
        + table
        + h('<section><h2>{}</h2><ul class="files">{}</ul></section>', t("status.memory"), files)
    )


def _source(page: Page, name: str, data: Mapping[str, Any]) -> Markup:
    t = page.words
    roots = join(
        h(
            "<li><code>{}</code> {}</li>",
            safe(r["path"]),
            t("status.found") if r["exists"] else t("status.missing"),
        )
        for r in data.get("roots", ())
    )
    bad = data.get("bad_lines") or {}
    reasons = join(
        h("<li>{}: {}</li>", reason, f"{count:,}") for reason, count in sorted(bad.items())
    )
    return h(
        '<tr><th>{}</th><td data-label="{}"><ul>{}</ul></td><td data-label="{}">{}</td>'
        '<td data-label="{}">{}</td><td data-label="{}"><ul>{}</ul></td></tr>',
        SOURCES.get(name, name),
        t("status.where"),
        roots,
        t("status.sessions"),
        f"{data.get('sessions', 0):,}",
        t("status.events"),
        f"{data.get('events', 0):,}",
        t("status.bad"),
        reasons or "0",
    )


def activity_section(
    page: Page,
    workspaces: Sequence[str],
    chosen: str | None,
    rows: Sequence[tuple[str, str, int]],
    coverage: tuple[int, int],
) -> Markup:
    """The picture of the history (`picture.activity_picture`) under a choice of workspace
    (every workspace by default)."""
    t = page.words
    options = join(
        h(
            '<option value="{}"{}>{}</option>',
            w,
            Markup(" selected" if w == (chosen or "") else ""),
            w or t("status.everywhere"),
        )
        for w in ["", *workspaces]
    )
    form = h(
        '<form class="ws" method="get" action="/status"><label>{} <select name="ws">{}</select>'
        '</label> <button type="submit">{}</button></form>',
        t("status.scope"),
        options,
        t("status.show"),
    )
    return h(
        '<section id="activity"><h2>{}</h2>{}{}</section>',
        t("status.activity"),
        form,
        activity_picture(page, rows, *coverage),
    )
