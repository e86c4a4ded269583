"""The look every chapter's charts share: palette, legends, log axes, axis titles, the theme."""

from __future__ import annotations

import altair as alt
import numpy as np

__all__ = [
    "WIDTH", "HEIGHT", "CATEGORY", "PALETTE", "scale_for", "POWER_OF_TEN_LABELS", "log_axis",
    "COLUMN_TITLES", "ABS_LOG_TITLES",
]

WIDTH = 480
HEIGHT = 300

# The category colours: Vega's tableau20, its ten saturated colours first (a chart of up to ten
# series looks as with tableau10) and their light partners after, so that charts of more than
# ten series (chapter 04's 14 toy sweeps) do not repeat a colour.
_TABLEAU20 = ("4c78a8 9ecae9 f58518 ffbf79 54a24b 88d27a b79a20 f2cf5b 439894 83bcb6 "
              "e45756 ff9d98 79706e bab0ac d67195 fcbfd2 b279a2 d6a5c9 9e765f d8b5a5").split()
CATEGORY = [f"#{c}" for c in _TABLEAU20[0::2] + _TABLEAU20[1::2]]

# One colour per recurring name, the same in every chart of the book (chapter 01's two bootstrap
# histograms once coloured "converged" blue in one and orange in the next: colours were handed
# out in the order of each chart's own legend). Related names share a hue: the paper recipe and
# GTT in orange, the converged fit and uniform training in blue; chapter 04's teachers in the
# colours of the mechanisms they stand for (independent: averaging, tied: Euler steps).
PALETTE: dict[str, str] = {
    # chapter 01: the two fit recipes and the reference exponents
    "paper": "#f58518", "paper recipe": "#f58518",
    "converged": "#4c78a8",
    "ensemble averaging: 1": "#54a24b", "Euler steps: 2": "#b279a2",
    # chapters 02 and 03: model roles and token groups
    "trained": "#4c78a8", "untrained": "#f58518",
    "depth family (trained here)": "#4c78a8", "pretrained": "#e45756",
    "bulk": "#4c78a8", "minority": "#e45756",
    # chapter 04: teachers and the mechanisms they stand for
    "independent": "#54a24b", "average of ℓ noisy estimates": "#54a24b",
    "tied": "#b279a2", "ℓ Euler steps of a smooth flow": "#b279a2",
    # chapters 05-07: evaluation sets
    "E0": "#439894", "E1": "#b79a20",
    # chapter 10: growth arms (uniform in blues, GTT in oranges)
    "uniform": "#4c78a8", "uniform same budget": "#9ecae9", "uniform 50% budget": "#9ecae9",
    "gtt": "#f58518", "gtt, paper's steps": "#ffbf79", "gtt, uniform's steps": "#b85a0d",
    "G_stack": "#54a24b", "random schedule": "#79706e",
}
# for names PALETTE does not know: the category colours it does not use, in the order given
_SPARE = [c for c in CATEGORY if c not in PALETTE.values()]


def scale_for(names) -> alt.Scale:
    """A colour scale with an explicit domain and range: each name in PALETTE keeps its colour
    whatever else the chart shows, in PALETTE's order (so legends list them alike); other
    names follow in the order given, in colours PALETTE does not use."""
    given = list(dict.fromkeys(str(n) for n in names))
    known = [n for n in PALETTE if n in given]
    other = [n for n in given if n not in PALETTE]
    spare = [_SPARE[i % len(_SPARE)] for i in range(len(other))]
    return alt.Scale(domain=known + other, range=[PALETTE[n] for n in known] + spare)


def _legend(columns: int | None = None, **kw) -> alt.Legend:
    """A legend below the plot (charts stay narrow on phones), in `columns` columns."""
    if columns is not None:
        kw["columns"] = columns
    return alt.Legend(orient="bottom", **kw)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_EXP = "floor(log(datum.value) / LN10 + 1e-6)"
_MANTISSA = f"round(datum.value / pow(10, {_EXP}) * 100) / 100"
_POWERS = "[" + ", ".join(f"'10{str(n).translate(_SUPERSCRIPT)}'" for n in range(-30, 31)) + "]"
# labels of a base-10 log axis in one notation: 10ⁿ, and m×10ⁿ for a labelled tick between
# powers; ticks Vega leaves unlabelled (datum.label empty) stay so
POWER_OF_TEN_LABELS = (f"datum.label == '' ? '' : ({_MANTISSA} == 1 ? {_POWERS}[{_EXP} + 30] : "
                       f"format({_MANTISSA}, '~g') + '×' + {_POWERS}[{_EXP} + 30])")


def log_axis(*values, **kw) -> alt.Axis:
    """Axis of a base-10 log scale whose labels share one notation (Vega's default mixes
    '100,000,000,000' with '1e+12'): powers of ten as 10ⁿ when the data span two decades or
    more (or reach 10⁵ or below 10⁻³), plain numbers for a narrower span. `values`: the columns
    the axis shows, to pick the notation; none: 10ⁿ."""
    v = np.concatenate([np.asarray(x, dtype=float).ravel() for x in values]) if values else np.array([])
    v = v[np.isfinite(v) & (v > 0)]
    wide = (not len(v) or v.max() / v.min() >= 100 or v.max() >= 1e5 or v.min() < 1e-3)
    if wide:
        return alt.Axis(labelExpr=POWER_OF_TEN_LABELS, tickCount=5, **kw)
    return alt.Axis(format="~g", **kw)


# axis titles for the columns charts are handed by name (never the raw column name)
COLUMN_TITLES = {
    "theta": "angle θ(h_l, h_l+1) (rad)",
    "rel_update": "relative update size ‖Δh‖/‖h‖",
    "block_influence": "Block Influence 1 − cos(h_l, h_l+1)",
    "angular_distance": "angular distance arccos(cos(h_l, h_l+1))/π",
    "skip deg %": "degradation when skipped (%)",
    "neighbour-average deg %": "degradation, neighbour average (%)",
}
# the same, for an axis of absolute values on a log scale
ABS_LOG_TITLES = {
    "skip deg %": "|degradation| when skipped (%, log scale)",
    "neighbour-average deg %": "|degradation|, neighbour average (%, log scale)",
}


def _title(column: str) -> str:
    return COLUMN_TITLES.get(column, column.replace("_", " "))


@alt.theme.register("layerlab", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "view": {"continuousWidth": WIDTH, "continuousHeight": HEIGHT, "stroke": None},
            "axis": {"labelFontSize": 12, "titleFontSize": 13, "grid": True, "gridOpacity": 0.4},
            "legend": {"labelFontSize": 12, "titleFontSize": 13, "orient": "bottom"},
            "title": {"fontSize": 15, "anchor": "start"},
            "range": {"category": CATEGORY},
        }
    }
