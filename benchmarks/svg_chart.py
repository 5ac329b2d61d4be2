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


def line_chart(title: str, x_label: str, y_label: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """series: name -> [(x, y), ...] with x > 0 (a log2 axis); y on a linear axis from 0."""
    points = [p for pts in series.values() for p in pts]
    xs = sorted({x for x, _ in points})
    x_low, x_high = math.log2(xs[0]), math.log2(xs[-1])
    y_ticks = _ticks(0.0, max(y for _, y in points))
    y_high = y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        span = (x_high - x_low) or 1.0
        return LEFT + (math.log2(x) - x_low) / span * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - y / y_high * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>']
    for y in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{LEFT + plot_w}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_label(y)}</text>')
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{TOP}" x2="{px(x):.1f}" y2="{TOP + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{_label(x)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_label)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{colour}"/>' for x, y in sorted(pts)]
        ly = TOP + 10 + 16 * i
        out.append(f'<line x1="{LEFT + plot_w + 12}" y1="{ly}" x2="{LEFT + plot_w + 30}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + plot_w + 34}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def bar_chart(title: str, y_label: str, groups: dict[str, dict[str, float]]) -> str:
    """groups: group label -> {series name: y}; a bar per series in each group, y on a linear
    axis from 0 (a series missing from a group leaves its place empty). A label's words after
    the first go on a second line."""
    names = list(dict.fromkeys(name for bars in groups.values() for name in bars))
    y_ticks = _ticks(0.0, max(y for bars in groups.values() for y in bars.values()))
    y_high = y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    group_w = plot_w / max(len(groups), 1)
    bar_w = 0.8 * group_w / max(len(names), 1)

    def py(y: float) -> float:
        return TOP + plot_h - y / y_high * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>']
    for y in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{LEFT + plot_w}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_label(y)}</text>')
    for g, (label, bars) in enumerate(groups.items()):
        left = LEFT + g * group_w + 0.1 * group_w
        for i, name in enumerate(names):
            if name in bars:
                x, top = left + i * bar_w, py(bars[name])
                out.append(f'<rect class="bar" x="{x:.1f}" y="{top:.1f}" width="{bar_w:.1f}" '
                           f'height="{TOP + plot_h - top:.1f}" fill="{COLOURS[i % len(COLOURS)]}"/>')
        first, _, second = label.partition(" ")
        centre = LEFT + (g + 0.5) * group_w
        out.append(f'<text x="{centre:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" font-size="10">'
                   f'{escape(first)}<tspan x="{centre:.1f}" dy="13">{escape(second)}</tspan></text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_label)}</text>')
    for i, name in enumerate(names):
        ly = TOP + 10 + 16 * i
        out.append(f'<rect x="{LEFT + plot_w + 12}" y="{ly - 5}" width="18" height="10" '
                   f'fill="{COLOURS[i % len(COLOURS)]}"/>')
        out.append(f'<text x="{LEFT + plot_w + 34}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
