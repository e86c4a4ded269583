"""Charts of chapter 11: every claim's verdict and the two papers' layer measures side by side."""

from __future__ import annotations

import altair as alt
import pandas as pd

from layerlab import claims
from layerlab.book.plots._style import ABS_LOG_TITLES, _legend, _title, log_axis

__all__ = [
    "VERDICT_COLORS", "verdict_chart", "cross_paper_scatter",
]


VERDICT_COLORS = alt.Scale(domain=list(claims.VERDICT_COLOURS),
                           range=list(claims.VERDICT_COLOURS.values()))


def verdict_chart(t: pd.DataFrame) -> alt.Chart:
    """One mark per claim, grouped by chapter; radio buttons pick the paper, the legend the
    verdict; hover for the paper's number, ours and the tolerance."""
    df = t.assign(short=t["statement"].str.slice(0, 70))
    papers = ["both", *sorted(df["paper"].unique())]
    pick_paper = alt.param(name="paper_pick", value="both",
                           bind=alt.binding_radio(options=papers, name="paper: "))
    pick_verdict = alt.selection_point(fields=["verdict"], bind="legend")
    return (
        alt.Chart(df, title="Every claim, by chapter and verdict")
        .mark_square(size=160)
        .encode(
            x=alt.X("chapter:N", title=None, axis=alt.Axis(labelAngle=-35)),
            y=alt.Y("id:N", title=None, sort=list(df["id"])),
            color=alt.Color("verdict:N", scale=VERDICT_COLORS, legend=_legend()),
            opacity=alt.condition(pick_verdict, alt.value(1.0), alt.value(0.1)),
            tooltip=["id", "short", "paper_value", "ours", "rule", "verdict", "setting"],
        )
        .add_params(pick_paper, pick_verdict)
        .transform_filter((pick_paper == "both") | (alt.datum.paper == pick_paper))
        .properties(width=420, height=alt.Step(14))
    )


def cross_paper_scatter(layers: pd.DataFrame, x: str, y: str, title: str) -> alt.Chart:
    df = layers.assign(abs_y=layers[y].abs().clip(lower=1e-3))
    base = alt.Chart(df, title=title).encode(
        x=alt.X(f"{x}:Q", title=_title(x)),
        y=alt.Y("abs_y:Q", scale=alt.Scale(type="log"), title=ABS_LOG_TITLES.get(y, f"|{_title(y)}| (log scale)"),
                axis=log_axis(df["abs_y"])),
        tooltip=["layer", alt.Tooltip(f"{x}:Q", format=".4f"), alt.Tooltip(f"{y}:Q", format="+,.1f")])
    return base.mark_circle(size=60) + base.mark_text(dx=9, fontSize=10).encode(text="layer:N")
