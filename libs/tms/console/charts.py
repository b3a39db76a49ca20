"""Small SVG charts drawn on the server: trends with operation markers, and bar histograms.

No script and no style attribute: colours come from classes in the console's stylesheet, so
the pages keep a strict Content-Security-Policy. Every text put into the SVG is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH = 640
HEIGHT = 160
PAD_LEFT = 56
PAD_RIGHT = 8
PAD_TOP = 10
PAD_BOTTOM = 22
BAR_HEIGHT = 14
BAR_GAP = 4
LABEL_WIDTH = 240


@dataclass(frozen=True)
class Marker:
    t: float  # seconds since the epoch
    label: str
    ok: bool


def _fmt(v: float) -> str:
    if abs(v) >= 1e9:
        return f"{v / 1e9:.1f}G"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.1f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.2f}"


def trend(title: str, points: Sequence[tuple[float, float]], markers: Sequence[Marker] = (),
          t_range: tuple[float, float] | None = None) -> Markup:
    """A line chart of ``points`` (epoch seconds, value) with vertical ``markers``."""
    label = escape(title)
    if not points:
        return Markup('<p class="muted">{}: no figures in this window</p>').format(label)
    ts = [p[0] for p in points]
    vs = [p[1] for p in points]
    t0, t1 = t_range or (min(ts), max(ts))
    if t1 <= t0:
        t1 = t0 + 1
    v0, v1 = 0.0, max(vs) if max(vs) > 0 else 1.0
    plot_w = WIDTH - PAD_LEFT - PAD_RIGHT
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(t: float) -> float:
        return PAD_LEFT + (t - t0) / (t1 - t0) * plot_w

    def y(v: float) -> float:
        return PAD_TOP + plot_h - (v - v0) / (v1 - v0) * plot_h

    path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{label}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{label}</title>",
        f'<line class="axis" x1="{PAD_LEFT}" y1="{PAD_TOP + plot_h}" x2="{WIDTH - PAD_RIGHT}" '
        f'y2="{PAD_TOP + plot_h}"/>',
        f'<text class="tick" x="{PAD_LEFT - 4}" y="{PAD_TOP + 8}" text-anchor="end">'
        f"{_fmt(v1)}</text>",
        f'<text class="tick" x="{PAD_LEFT - 4}" y="{PAD_TOP + plot_h}" text-anchor="end">0</text>',
    ]
    for m in markers:
        if t0 <= m.t <= t1:
            cls = "marker" if m.ok else "marker bad"
            parts.append(f'<line class="{cls}" x1="{x(m.t):.1f}" y1="{PAD_TOP}" '
                         f'x2="{x(m.t):.1f}" y2="{PAD_TOP + plot_h}"><title>'
                         f"{escape(m.label)}</title></line>")
    parts.append(f'<polyline class="series" points="{path}"/>')
    for t, v in points[-1:]:
        parts.append(f'<circle class="last" cx="{x(t):.1f}" cy="{y(v):.1f}" r="3">'
                     f"<title>{_fmt(v)}</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))


def bars(rows: Sequence[tuple[str, float, float]], unit: str = "files") -> Markup:
    """A horizontal bar per row: (label, total, flagged part), longest first as given."""
    if not rows:
        return Markup('<p class="muted">no partitions reported</p>')
    top = max(r[1] for r in rows) or 1.0
    bar_w = WIDTH - LABEL_WIDTH - 60
    h = len(rows) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    parts = [f'<svg class="chart bars" viewBox="0 0 {WIDTH} {h}" role="img" '
             f'aria-label="{escape(unit)} per partition" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, total, flagged) in enumerate(rows):
        yy = BAR_GAP + i * (BAR_HEIGHT + BAR_GAP)
        w_total = total / top * bar_w
        w_flag = min(flagged, total) / top * bar_w
        shown = label if len(label) <= 38 else label[:37] + "…"
        parts.append(f'<text class="tick" x="{LABEL_WIDTH - 6}" y="{yy + BAR_HEIGHT - 3}" '
                     f'text-anchor="end">{escape(shown)}<title>{escape(label)}</title></text>')
        parts.append(f'<rect class="bar" x="{LABEL_WIDTH}" y="{yy}" width="{w_total:.1f}" '
                     f'height="{BAR_HEIGHT}"/>')
        parts.append(f'<rect class="bar flagged" x="{LABEL_WIDTH}" y="{yy}" '
                     f'width="{w_flag:.1f}" height="{BAR_HEIGHT}"/>')
        parts.append(f'<text class="tick" x="{LABEL_WIDTH + w_total + 4:.1f}" '
                     f'y="{yy + BAR_HEIGHT - 3}">{_fmt(total)} ({_fmt(flagged)} small)</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
