"""The frame every view shares: the document head, the navigation of the four views (Memory /
Search / Sessions / Status, 记忆 / 搜索 / 会话 / 状态), the language switch and a message line.

Nothing inline: the one script and the one style sheet come from `/static/` on this server, as
the Content-Security-Policy (`guard.CSP`) demands. The CSRF token travels in a `<meta>` tag,
from which the script copies it into the header of every change it sends.
"""

from __future__ import annotations

from dataclasses import dataclass

from huiyi.web.markup import Markup, h, join
from huiyi.web.words import Words

__all__ = ["VIEWS", "Page", "frame", "message"]

#: (name, path) of the four views, in the order the navigation shows them
VIEWS = (
    ("memory", "/memory"),
    ("search", "/search"),
    ("sessions", "/sessions"),
    ("status", "/status"),
)


@dataclass(frozen=True, slots=True)
class Page:
    """What every view needs besides its own data: the interface words and the CSRF token."""

    words: Words
    csrf: str


def message(text: str, *, ok: bool) -> Markup:
    """A line saying what a change did (or why it was refused), read out by screen readers."""
    kind = "ok" if ok else "refused"
    return h('<p class="message {}" role="status">{}</p>', kind, text)


def frame(page: Page, current: str, title: str, body: Markup) -> str:
    """A whole document for the view `current`."""
    t = page.words
    links = join(
        h(
            '<li><a href="{}"{}>{}</a></li>',
            path,
            Markup(' aria-current="page"') if name == current else Markup(""),
            t(f"nav.{name}"),
        )
        for name, path in VIEWS
    )
    other = t.other()
    switch = h(
        '<form class="lang" method="post" action="/lang" data-reload>'
        '<input type="hidden" name="lang" value="{}">'
        '<button type="submit" lang="{}">{}</button></form>',
        other,
        other,
        t("lang.switch"),
    )
    return h(
        '<!doctype html><html lang="{}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="csrf" content="{}"><title>{} · huiyi</title>'
        '<link rel="stylesheet" href="/static/app.css">'
        '<script src="/static/app.js" defer></script></head>'
        '<body data-view="{}"><a class="skip" href="#main">{}</a>'
        '<header><nav aria-label="{}"><span class="brand">回忆 huiyi</span>'
        "<ul>{}</ul>{}</nav></header>"
        '<main id="main" tabindex="-1">{}</main></body></html>',
        t.lang,
        page.csrf,
        title,
        current,
        t("skip"),
        t("nav.label"),
        links,
        switch,
        body,
    )
