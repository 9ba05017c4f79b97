"""The picture at the top of ``inspect --html``: view tokens per request against the budget, compactions marked.

One inline SVG, no scripts: a filled line of the tokens each request sent, a dashed budget line, and at each
compaction a vertical drop from the view it would have sent to the view it sent, with a numbered marker that
links to the compaction's detail section (``#compaction-N``). A tooltip (SVG ``<title>``) gives the figures.
Very long sessions are thinned to one point per pixel column (the view only grows between compactions, so the
last point of a column keeps the shape); compaction points are always kept. A view far over the budget (one huge
tool output) is drawn at the top edge rather than flattening the rest of the picture.

The chart is drawn twice, in a wide and a narrow frame, and CSS shows one: an SVG scales its text with its width,
so the wide frame's 11 px labels would shrink to 3 px on a 390 px phone; the narrow frame is drawn about as wide
as a phone shows it, so its labels stay near their nominal size there.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    """The chart's geometry in SVG units: the box, the plot's margins inside it, and how many x ticks."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    x_ticks: int
    css_class: str
    y_label: bool = True


WIDE = Frame(1160, 250, 58, 18, 24, 36, 8, "view-chart")
NARROW = Frame(360, 230, 40, 10, 22, 34, 4, "view-chart-narrow", y_label=False)
"""For screens narrower than ``NARROW_BELOW_PX``: drawn at about the width a phone shows it."""
NARROW_BELOW_PX = 640
CLIP_AT_BUDGETS = 2.0
"""The y axis stops at this many budgets; a larger view is drawn at the top edge."""

CSS = (
    """
.chart{margin:.4em 0 .2em}.chart svg{width:100%;height:auto;display:block;font:11px system-ui,sans-serif}
.chart-legend{margin:.1em 0 .8em;color:#444}.chart-legend i{display:inline-block;width:1.6em;height:.5em;
margin:0 .35em 0 .9em;vertical-align:middle}.chart-legend i.view{background:#3b6fb6}
.chart-legend i.budget{border-top:2px dashed #c0392b;height:0}.chart-legend i.compaction{background:#e67e22;width:.6em;
height:.6em;border-radius:50%}
"""
    f".chart svg.{NARROW.css_class}{{display:none}}@media (max-width:{NARROW_BELOW_PX}px)"
    f"{{.chart svg.{WIDE.css_class}{{display:none}}.chart svg.{NARROW.css_class}{{display:block}}}}\n"
)


@dataclass(frozen=True)
class Mark:
    number: int
    at_message: int
    tokens_before: int
    tokens_after: int


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def nice_step(span: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def short(tokens: float) -> str:
    """``8k``, ``1.5m``, ``750``: an axis label."""
    for size, suffix in ((1_000_000, "m"), (1_000, "k")):
        if tokens >= size:
            value = tokens / size
            return f"{value:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{tokens:g}"


def render_chart(
    requests: list[tuple[int, int]], marks: list[Mark], budget: int, messages: int, frame: Frame = WIDE
) -> str:
    """The SVG for ``requests`` ((message index, tokens sent) per request) and the compactions ``marks``."""
    width, height, left, top = frame.width, frame.height, frame.left, frame.top
    plot_w, plot_h = width - left - frame.right, height - top - frame.bottom
    last = max(messages - 1, 1)
    peak = max([budget, *(t for _, t in requests), *(m.tokens_before for m in marks)])
    step = nice_step(min(peak, CLIP_AT_BUDGETS * budget) * 1.05)
    ymax = step * math.ceil(min(peak, CLIP_AT_BUDGETS * budget) * 1.05 / step)

    def x(index: float) -> float:
        return left + plot_w * min(max(index, 0), last) / last

    def y(tokens: float) -> float:
        return top + plot_h * (1 - min(tokens, ymax) / ymax)

    parts = [
        f'<svg class="{frame.css_class}" role="img" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>View tokens per request against the budget of {budget:,} tokens; {len(marks)} compaction(s)</title>",
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fafbfd" stroke="#ccd"/>',
    ]
    tick = 0.0
    while tick <= ymax + 1e-9:
        ty = y(tick)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#e4e6ee"/>')
        parts.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#555">{short(tick)}</text>')
        tick += step
    xstep = max(1, int(nice_step(last, frame.x_ticks)))
    for index in range(0, last + 1, xstep):
        tx = x(index)
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" stroke="#888"/>')
        parts.append(f'<text x="{tx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" fill="#555">{index}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" fill="#333">'
        "message after which the request was made</text>"
    )
    if frame.y_label:  # the narrow frame has no room beside its tick labels; the legend says what y is
        parts.append(
            f'<text x="12" y="{top + plot_h / 2:.0f}" text-anchor="middle" fill="#333" '
            f'transform="rotate(-90 12 {top + plot_h / 2:.0f})">tokens sent</text>'
        )

    by_request: dict[int, list[Mark]] = {}
    for mark in marks:
        by_request.setdefault(mark.at_message, []).append(mark)
    points: list[tuple[float, float]] = []
    for n, (index, tokens) in enumerate(requests):
        here = by_request.get(index, [])
        if not here and n + 1 < len(requests) and round(x(requests[n + 1][0]) * 2) == round(x(index) * 2):
            continue  # thinned: the next request lands in the same half-pixel column
        for mark in here:
            points += [(x(index), y(mark.tokens_before)), (x(index), y(mark.tokens_after))]
        points.append((x(index), y(tokens)))
    if points:
        line = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        base = top + plot_h
        parts.append(
            f'<polygon points="{points[0][0]:.1f},{base} {line} {points[-1][0]:.1f},{base}" fill="#3b6fb6" '
            'fill-opacity=".15" stroke="none"/>'
        )
        parts.append(f'<polyline class="view" points="{line}" fill="none" stroke="#3b6fb6" stroke-width="1.6"/>')

    by = y(budget)
    parts.append(
        f'<line class="budget" x1="{left}" x2="{left + plot_w}" y1="{by:.1f}" y2="{by:.1f}" stroke="#c0392b" '
        'stroke-width="1.5" stroke-dasharray="6 4"/>'
        f'<text x="{left + 6}" y="{by - 5:.1f}" fill="#c0392b">budget {budget:,}</text>'
    )
    label_x = -1e9
    for mark in marks:
        mx = x(mark.at_message)
        over = " (drawn at the top edge)" if mark.tokens_before > ymax else ""
        parts.append(
            f'<a class="mark" href="#compaction-{mark.number}"><title>Compaction {mark.number} at message '
            f"{mark.at_message}: {mark.tokens_before:,} → {mark.tokens_after:,} tokens{over}</title>"
            f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#e67e22" stroke-opacity=".45" '
            'stroke-dasharray="2 3"/>'
            f'<circle cx="{mx:.1f}" cy="{y(mark.tokens_before):.1f}" r="4" fill="#e67e22"/>'
        )
        if mx - label_x >= 18:
            parts.append(f'<text x="{mx:.1f}" y="{top - 7}" text-anchor="middle" fill="#b35a00">{mark.number}</text>')
            label_x = mx
        parts.append("</a>")
    parts.append("</svg>")
    return "".join(parts)


def chart_section(requests: list[tuple[int, int]], marks: list[Mark], budget: int, messages: int) -> str:
    """The chart in its figure (wide and narrow frames; CSS shows the one that fits) with a one-line legend."""
    return (
        '<figure class="chart" id="chart">'
        + render_chart(requests, marks, budget, messages, WIDE)
        + render_chart(requests, marks, budget, messages, NARROW)
        + '<figcaption class="chart-legend"><i class="view"></i>view tokens each request sent (at a compaction, the '
        "line first rises to the view it would have sent)"
        f'<i class="budget"></i>budget ({budget:,})<i class="compaction"></i>compaction: the dot is the view '
        "before it, the drop what it cut; its number links to the details</figcaption></figure>"
    )
