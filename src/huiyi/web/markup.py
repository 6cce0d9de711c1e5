"""Escaped HTML, built in Python: a value is text unless this module made it markup.

No template engine: the views are small, and one rule is easier to check than an engine's
settings. `Markup` is a `str` that is already HTML; `h(template, *values)` fills a literal
template's `{}` with values, escaping every one that is not `Markup`; `join` glues markup. Text
from the index passes the safety exit (`safe`) before it gets here, so what reaches the page is
redacted first and escaped second: never rendered as HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from huiyi.safety.exit import redact

__all__ = ["Markup", "esc", "h", "highlight", "join", "safe"]


class Markup(str):
    """A string that is already HTML (made by this module from escaped parts)."""

    __slots__ = ()

    def __add__(self, other: str) -> Markup:
        """Markup followed by `other`, escaped unless it is markup too."""
        return Markup(str.__add__(self, esc(other)))


def safe(text: str) -> str:
    """Text from the index or the memory files after the safety exit (secrets masked)."""
    return redact(text).text


def esc(value: object) -> Markup:
    """`value` as HTML: markup stays, anything else is escaped text (quotes too)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def h(template: str, *values: object) -> Markup:
    """`template` (a literal written in this package, never data) with its `{}` filled by
    `values`, each escaped unless it is `Markup`."""
    return Markup(template.format(*(esc(v) for v in values)))


def join(parts: Iterable[object], sep: str = "") -> Markup:
    return Markup(sep.join(esc(p) for p in parts))


def highlight(text: str, words: Sequence[str]) -> Markup:
    """`text` escaped, with every case-insensitive occurrence of `words` in `<mark>`."""
    wanted = sorted({w for w in words if w.strip()}, key=len, reverse=True)
    if not wanted:
        return esc(text)
    pattern = re.compile("|".join(re.escape(w) for w in wanted), re.IGNORECASE)
    out: list[Markup] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(esc(text[last : match.start()]))
        out.append(h("<mark>{}</mark>", match.group()))
        last = match.end()
    out.append(esc(text[last:]))
    return join(out)
