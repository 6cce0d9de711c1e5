"""The Status view's picture of the history: messages per day per source over the last active
month of a workspace (or of every one), with how much of it is embedded, drawn here as SVG.

Drawn on the server so the page needs no chart script and loads nothing from elsewhere (the
page's CSP allows neither); colours and sizes are SVG attributes, not inline styles, which the
CSP would refuse. The drawing is 360 units wide, about a phone's width, and scales up to the
page's width, so its labels stay readable on a phone. Every bar carries a `<title>` (the
browser's tooltip, and what a screen reader reads), and the figure says in words what it shows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, timedelta

from huiyi.web.history import SOURCES
from huiyi.web.markup import Markup, h, join
from huiyi.web.pages import Page

__all__ = ["COLOURS", "DAYS", "MIN_DAYS", "activity_picture"]

#: how many days the picture shows at most, ending on the last active day, and at least
DAYS, MIN_DAYS = 30, 7
#: a colour per source (the badges' hues, darker so a thin bar still reads)
COLOURS = {"dsh": "#1f6feb", "claude": "#c2570c", "codex": "#1a7f37"}
_OTHER = "#6e7781"
#: the drawing's size in SVG units, and where the bars stand
_W, _H = 360, 194
_LEFT, _RIGHT, _TOP, _BOTTOM = 30, 6, 34, 150


def _days(rows: Sequence[tuple[str, str, int]]) -> list[str]:
    """The days drawn: up to `DAYS` ending on the last active one, from the first active day
    among them (at least `MIN_DAYS`), so a short history is not a strip of empty days."""
    last = date.fromisoformat(max(day for day, _, _ in rows))
    window = [(last - timedelta(days=n)).isoformat() for n in range(DAYS - 1, -1, -1)]
    first = min(day for day, _, _ in rows if day >= window[0])
    return window[min(window.index(first), DAYS - MIN_DAYS) :]


def activity_picture(
    page: Page, rows: Sequence[tuple[str, str, int]], embedded: int, embeddable: int
) -> Markup:
    """The figure: stacked bars of messages per day by source (`Huiyi.activity`), a legend
    with each source's total, the date range, and a bar of the embedded share."""
    t = page.words
    if not rows:
        return h('<p class="empty">{}</p>', t("status.noactivity"))
    days = _days(rows)
    per_day: dict[str, dict[str, int]] = defaultdict(dict)
    totals: dict[str, int] = defaultdict(int)
    for day, source, n in rows:
        if day in days:
            per_day[day][source] = n
            totals[source] += n
    sources = [s for s in COLOURS if s in totals] + sorted(s for s in totals if s not in COLOURS)
    peak = max((sum(v.values()) for v in per_day.values()), default=1) or 1
    width = (_W - _LEFT - _RIGHT) / len(days)
    bars = []
    for i, day in enumerate(days):
        y = float(_BOTTOM)
        for source in sources:
            n = per_day.get(day, {}).get(source, 0)
            if not n:
                continue
            tall = (_BOTTOM - _TOP) * n / peak
            y -= tall
            bars.append(
                h(
                    '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>',
                    f"{_LEFT + i * width + 0.5:.1f}",
                    f"{y:.1f}",
                    f"{max(width - 1, 1):.1f}",
                    f"{tall:.1f}",
                    COLOURS.get(source, _OTHER),
                    t("status.bar", day, SOURCES.get(source, source), f"{n:,}"),
                )
            )
    legend = []
    x = float(_LEFT)
    for source in sources:
        label = f"{SOURCES.get(source, source)} {totals[source]:,}"
        legend.append(
            h(
                '<rect x="{}" y="8" width="10" height="10" fill="{}"></rect>'
                '<text x="{}" y="17" class="legend">{}</text>',
                f"{x:.0f}",
                COLOURS.get(source, _OTHER),
                f"{x + 14:.0f}",
                label,
            )
        )
        x += 14 + 7.2 * len(label) + 12
    share = embedded / embeddable if embeddable else 0.0
    axis = h(
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#8c959f"></line>'
        '<text x="{}" y="{}" text-anchor="end" class="tick">{}</text>'
        '<text x="{}" y="{}" text-anchor="end" class="tick">0</text>'
        '<text x="{}" y="{}" class="tick">{}</text>'
        '<text x="{}" y="{}" text-anchor="end" class="tick">{}</text>',
        _LEFT,
        _BOTTOM,
        _W - _RIGHT,
        _BOTTOM,
        _LEFT - 4,
        _TOP + 9,
        f"{peak:,}",
        _LEFT - 4,
        _BOTTOM,
        _LEFT,
        _BOTTOM + 13,
        days[0][5:],
        _W - _RIGHT,
        _BOTTOM + 13,
        days[-1][5:],
    )
    span = _W - _LEFT - _RIGHT
    coverage = h(
        '<rect x="{}" y="184" width="{}" height="8" fill="#d8dee4"></rect>'
        '<rect x="{}" y="184" width="{}" height="8" fill="#8250df"></rect>'
        '<text x="{}" y="180" class="tick">{}</text>',
        _LEFT,
        span,
        _LEFT,
        f"{span * share:.1f}",
        _LEFT,
        t("status.embedded", f"{share:.0%}", f"{embedded:,}", f"{embeddable:,}"),
    )
    described = t(
        "status.picture",
        days[0],
        days[-1],
        ", ".join(f"{SOURCES.get(s, s)} {totals[s]:,}" for s in sources),
        f"{share:.0%}",
    )
    svg = h(
        '<svg class="activity" viewBox="0 0 {} {}" role="img" aria-labelledby="activity-title">'
        '<title id="activity-title">{}</title>{}{}{}{}</svg>',
        _W,
        _H,
        described,
        join(legend),
        join(bars),
        axis,
        coverage,
    )
    return h('<figure class="activity">{}<figcaption>{}</figcaption></figure>', svg, described)
