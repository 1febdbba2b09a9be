"""Geometry for the inline SVG pictures of the HTML pages: heatmaps and the histogram.

Plain numbers in, plain view objects out; the templates draw them (autoescaped), so no
markup is ever built by string concatenation here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from grader.report.formatting import as_float

__all__ = ["Bar", "Cell", "Heatmap", "Panel", "color_for", "heatmap_view", "histogram_bars"]

VIRIDIS = (
    (68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 140),
    (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37),
)  # fmt: skip
NAN_FILL = "#c9ced6"
MAX_CELLS = 32
"""Larger matrices are cut to their top-left corner (heatmap_panel already cuts at 16)."""
LEAK_EPS = 1e-6
"""A masked cell whose value is above this got weight it must not have."""


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    x: int
    y: int
    fill: str
    text_fill: str
    value: str
    masked: bool
    leaked: bool


@dataclass(frozen=True)
class Panel:
    label: str
    rows: int
    cols: int
    size: int
    """Side of one cell in px."""
    show_values: bool
    cells: tuple[Cell, ...]
    leaks: int

    @property
    def width(self) -> int:
        return LEFT + self.cols * self.size + 4

    @property
    def height(self) -> int:
        return TOP + self.rows * self.size + 4


LEFT = 40
TOP = 34


@dataclass(frozen=True)
class Heatmap:
    uid: str
    """Unique in the page: the id of this picture's hatch pattern and gradient."""
    title: str
    x_label: str
    y_label: str
    panels: tuple[Panel, ...]
    vmin: str
    vmax: str
    stops: tuple[tuple[str, str], ...]
    """(offset %, color) for the color scale."""
    has_mask: bool


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    x: int
    y: int
    width: int
    height: int


@lru_cache(maxsize=4096)
def color_for(t: float) -> str:
    """Viridis at t in [0, 1], as #rrggbb. Cached: a class's heatmaps repeat few values (0 for
    what a mask hides, 1/n for a row spread evenly), and a report draws hundreds of cells."""
    if math.isnan(t):
        return NAN_FILL
    t = min(1.0, max(0.0, t)) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    f = t - i
    rgb = (round(a + (b - a) * f) for a, b in zip(VIRIDIS[i], VIRIDIS[i + 1]))
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _text_fill(t: float) -> str:
    return "#111" if t > 0.55 else "#fff"


def _matrix(raw: Any) -> list[list[float]]:
    rows = raw if isinstance(raw, list) else []
    return [
        [as_float(v) for v in (row if isinstance(row, list) else [row])[:MAX_CELLS]]
        for row in rows[:MAX_CELLS]
    ]


def _mask(raw: Any, r: int, c: int) -> bool:
    try:
        return bool(raw[r][c])
    except (TypeError, IndexError, KeyError):
        return False


def _value_range(matrices: Sequence[list[list[float]]]) -> tuple[float, float]:
    """0..1 when every value is a probability (so pictures compare); else min..max."""
    finite = [v for m in matrices for row in m for v in row if math.isfinite(v)]
    if all(0.0 <= v <= 1.0 for v in finite):
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _panel(raw: dict[str, Any], matrix: list[list[float]], lo: float, hi: float) -> Panel:
    rows, cols = len(matrix), max((len(r) for r in matrix), default=0)
    size = 34 if max(rows, cols) <= 8 else 18
    cells = []
    for r, row in enumerate(matrix):
        for c, v in enumerate(row):
            t = (v - lo) / (hi - lo) if math.isfinite(v) else math.nan
            masked = _mask(raw.get("masked"), r, c)
            cells.append(
                Cell(
                    row=r,
                    col=c,
                    x=LEFT + c * size,
                    y=TOP + r * size,
                    fill=color_for(t),
                    text_fill=_text_fill(t),
                    value=_short(v),
                    masked=masked,
                    leaked=masked and not abs(v) <= LEAK_EPS,
                )
            )
    leaks = sum(c.leaked for c in cells)
    return Panel(str(raw.get("label", "")), rows, cols, size, size >= 34, tuple(cells), leaks)


def _short(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.3g}"


def heatmap_view(uid: str, data: dict[str, Any]) -> Heatmap:
    """The picture for Evidence(kind="heatmaps"): panels side by side on one color scale."""
    raws = [p for p in data.get("panels", []) if isinstance(p, dict)]
    matrices = [_matrix(p.get("matrix")) for p in raws]
    lo, hi = _value_range(matrices)
    panels = tuple(_panel(p, m, lo, hi) for p, m in zip(raws, matrices))
    stops = tuple((f"{i * 100 // 8}", color_for(i / 8)) for i in range(9))
    return Heatmap(
        uid=uid,
        title=str(data.get("title", "")),
        x_label=str(data.get("x_label", "columns")),
        y_label=str(data.get("y_label", "rows")),
        panels=panels,
        vmin=f"{lo:.3g}",
        vmax=f"{hi:.3g}",
        stops=stops,
        has_mask=any(c.masked for p in panels for c in p.cells),
    )


def histogram_bars(percents: Sequence[float], bins: int = 10, height: int = 120) -> list[Bar]:
    """Counts of scores (in %) per bin of width 100/bins; 100 % falls in the last bin."""
    counts = [0] * bins
    for p in percents:
        counts[min(bins - 1, max(0, int(p * bins // 100)))] += 1
    top = max(counts, default=0) or 1
    step = 100 // bins
    bars = []
    for i, n in enumerate(counts):
        h = round(height * n / top)
        label = f"{i * step}–{(i + 1) * step if i == bins - 1 else (i + 1) * step - 1}"
        bars.append(Bar(label, n, 10 + i * 44, 20 + height - h, 36, h))
    return bars
