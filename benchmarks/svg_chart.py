"""Line and bar charts as SVG text, from the standard library alone: make_page.py's
plots. The same data gives the same bytes (no dates, ids or renderer
versions in the file), so the page's test compares the plots as it compares
the tables, on any machine, with no plotting package installed."""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 150, 36, 48
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def _ticks(low: float, high: float) -> list[float]:
    """About five round values covering [low, high]."""
    step = 10 ** math.floor(math.log10(max(high - low, 1e-9) / 5))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= 6:
            step *= factor
            break
    first = math.floor(low / step) * step
    return [first + i * step for i in range(int(math.ceil((high - first) / step)) + 1)]


def _label(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.0e}"


PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def _opening(title: str, y_ticks: list[float]):
    """A chart's SVG up to its plot: the ground, the title, y's grid lines and labels; and the
    pixel row of a y value (a linear axis from 0 to the last tick)."""
    def py(y: float) -> float:
        return TOP + PLOT_H - y / y_ticks[-1] * PLOT_H

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>']
    for y in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{LEFT + PLOT_W}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_label(y)}</text>')
    return out, py


def _closing(out: list[str], y_label: str, names: list[str], mark) -> str:
    """The rest: the plot's frame, y's label, a legend entry per name (mark(colour, y): its
    sample), and the end of the SVG."""
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#444"/>')
    out.append(f'<text x="14" y="{TOP + PLOT_H / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + PLOT_H / 2:.1f})">{escape(y_label)}</text>')
    for i, name in enumerate(names):
        ly = TOP + 10 + 16 * i
        out.append(mark(COLOURS[i % len(COLOURS)], ly))
        out.append(f'<text x="{LEFT + PLOT_W + 34}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def line_chart(title: str, x_label: str, y_label: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """series: name -> [(x, y), ...] with x > 0 (a log2 axis); y on a linear axis from 0."""
    points = [p for pts in series.values() for p in pts]
    xs = sorted({x for x, _ in points})
    x_low, x_high = math.log2(xs[0]), math.log2(xs[-1])
    out, py = _opening(title, _ticks(0.0, max(y for _, y in points)))

    def px(x: float) -> float:
        span = (x_high - x_low) or 1.0
        return LEFT + (math.log2(x) - x_low) / span * PLOT_W

    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{TOP}" x2="{px(x):.1f}" y2="{TOP + PLOT_H}" stroke="#eee"/>')
        out.append(f'<text x="{px(x):.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{_label(x)}</text>')
    out.append(f'<text x="{LEFT + PLOT_W / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>')
    for i, pts in enumerate(series.values()):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{colour}"/>' for x, y in sorted(pts)]
    return _closing(out, y_label, list(series), lambda colour, ly: (
        f'<line x1="{LEFT + PLOT_W + 12}" y1="{ly}" x2="{LEFT + PLOT_W + 30}" y2="{ly}" '
        f'stroke="{colour}" stroke-width="2"/>'))


def bar_chart(title: str, y_label: str, groups: dict[str, dict[str, float]]) -> str:
    """groups: group label -> {series name: y}; a bar per series in each group, y on a linear
    axis from 0 (a series missing from a group leaves its place empty). A label's words after
    the first go on a second line."""
    names = list(dict.fromkeys(name for bars in groups.values() for name in bars))
    out, py = _opening(title, _ticks(0.0, max(y for bars in groups.values() for y in bars.values())))
    group_w = PLOT_W / max(len(groups), 1)
    bar_w = 0.8 * group_w / max(len(names), 1)
    for g, (label, bars) in enumerate(groups.items()):
        left = LEFT + g * group_w + 0.1 * group_w
        for i, name in enumerate(names):
            if name in bars:
                x, top = left + i * bar_w, py(bars[name])
                out.append(f'<rect class="bar" x="{x:.1f}" y="{top:.1f}" width="{bar_w:.1f}" '
                           f'height="{TOP + PLOT_H - top:.1f}" fill="{COLOURS[i % len(COLOURS)]}"/>')
        first, _, second = label.partition(" ")
        centre = LEFT + (g + 0.5) * group_w
        out.append(f'<text x="{centre:.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle" font-size="10">'
                   f'{escape(first)}<tspan x="{centre:.1f}" dy="13">{escape(second)}</tspan></text>')
    return _closing(out, y_label, names, lambda colour, ly: (
        f'<rect x="{LEFT + PLOT_W + 12}" y="{ly - 5}" width="18" height="10" fill="{colour}"/>'))
