"""Altair chart builders with one look. Charts are Vega-Lite specs rendered client-side, so
tooltips, legends and selections work in the static HTML with no kernel. Keep data aggregated:
every row is inlined into the page."""

from __future__ import annotations

import altair as alt
import pandas as pd

WIDTH = 480
HEIGHT = 300


@alt.theme.register("layerlab", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "view": {"continuousWidth": WIDTH, "continuousHeight": HEIGHT, "stroke": None},
            "axis": {"labelFontSize": 12, "titleFontSize": 13, "grid": True, "gridOpacity": 0.4},
            "legend": {"labelFontSize": 12, "titleFontSize": 13},
            "title": {"fontSize": 15, "anchor": "start"},
            "range": {"category": {"scheme": "tableau10"}},
        }
    }


def perplexity_bars(table: pd.DataFrame) -> alt.Chart:
    """Perplexity per corpus, one bar per model; click a legend entry to highlight a model."""
    pick = alt.selection_point(fields=["model"], bind="legend")
    return (
        alt.Chart(table, title="Perplexity on held-out text (lower is better)")
        .mark_bar()
        .encode(
            y=alt.Y("corpus:N", title=None),
            yOffset="model:N",
            x=alt.X("perplexity:Q", title="perplexity"),
            color=alt.Color("model:N", legend=alt.Legend(orient="bottom", columns=2)),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.25)),
            tooltip=["model", "corpus", alt.Tooltip("perplexity:Q", format=".2f"),
                     "predicted_tokens:Q"],
        )
        .add_params(pick)
        .properties(height=alt.Step(max(22, 16 * table["model"].nunique())))
    )


def norm_lines(table: pd.DataFrame) -> alt.Chart:
    """Mean residual-stream norm vs normalised depth; the final-norm point drawn apart."""
    base = alt.Chart(table, title="Residual-stream norm by layer (mean over positions ≥ 1)")
    enc = dict(
        x=alt.X("depth:Q", title="layer / number of layers"),
        y=alt.Y("mean_norm:Q", scale=alt.Scale(type="log"), title="mean ‖h_l‖ (log scale)"),
        color=alt.Color("model:N", legend=alt.Legend(orient="bottom", columns=2)),
        tooltip=["model", "layer:Q", "state", alt.Tooltip("mean_norm:Q", format=".2f")],
    )
    lines = base.transform_filter(alt.datum.state == "residual stream").mark_line(point=True).encode(**enc)
    normed = base.transform_filter(alt.datum.state == "after final norm").mark_point(
        shape="diamond", size=120, filled=True).encode(**enc)
    return (lines + normed).interactive()
