"""Charts of chapter 01: P1's depth scaling law (fit parts, bootstrap, outlier cut, profile)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from layerlab.book.plots._style import _legend, log_axis, scale_for
from layerlab.depth import scaling

__all__ = [
    "depth_part_slider", "other_parts", "bootstrap_histogram", "cut_scan_chart", "profile_chart",
    "adam_path_chart", "aspect_chart",
]


def depth_part_slider(parts: pd.DataFrame, default_cut: int = 40) -> alt.Chart:
    """Fig. 2f's depth panel with a selector over the outlier cut; each cut shows its own fit."""
    cuts = [int(c) for c in sorted(parts["cut"].unique())]
    cut = alt.param(name="cut", value=default_cut if default_cut in cuts else cuts[0],
                    bind=alt.binding_radio(options=cuts, name="points excluded (outlier cut): "))
    base = alt.Chart(parts, title="Depth part of the loss vs depth (P1 Fig. 2f), per outlier cut")
    x = alt.X("ell:Q", scale=alt.Scale(type="log", base=2), title="depth ℓ (layers, log₂)")
    y_title = "depth part of the loss: L − width − data − L0 (nats)"
    pts = base.mark_circle(size=40, opacity=0.6).encode(
        x=x, y=alt.Y("depth_part:Q", title=y_title),
        color=alt.Color("m:Q", scale=alt.Scale(type="log", scheme="viridis"), title="width m",
                        legend=_legend()),
        tooltip=["cut", "ell", "m", alt.Tooltip("D:Q", format=".3s"),
                 alt.Tooltip("loss:Q", format=".4f"), alt.Tooltip("depth_part:Q", format=".4f")])
    line = base.mark_line(color="black").encode(
        x=x, y=alt.Y("depth_term:Q", title=y_title),
        tooltip=[alt.Tooltip("alpha_l:Q", format=".3f", title="α_ℓ")])
    return (pts + line).add_params(cut).transform_filter(alt.datum.cut == cut)


def other_parts(parts: pd.DataFrame) -> alt.HConcatChart:
    """Width and data parts beside the depth part, for one fit."""
    panels = []
    for name, field, title, fmt in (("width", "m", "width m (log₂)", "d"),
                                    ("data", "D", "tokens D (log₂)", ".2s")):
        base = alt.Chart(parts, title=f"{name.capitalize()} part").properties(width=230, height=230)
        x = alt.X(f"{field}:Q", scale=alt.Scale(type="log", base=2), title=title,
                  axis=alt.Axis(format=fmt))
        y_title = f"{name} part of the loss (nats)"
        panels.append(
            base.mark_circle(size=30, opacity=0.5).encode(x=x, y=alt.Y(f"{name}_part:Q", title=y_title))
            + base.mark_line(color="black").encode(x=x, y=alt.Y(f"{name}_term:Q", title=y_title)))
    return alt.hconcat(*panels)


def bootstrap_histogram(values: pd.Series, lo: float, hi: float, marks: dict[str, float]) -> alt.Chart:
    """Histogram of bootstrap α_ℓ with its 95 % interval shaded and reference values marked."""
    # labels with the digits the bins need: 2 decimals on bins 0.002 wide repeat every label
    finite = pd.Series(values, dtype=float).dropna()
    span = float(finite.max() - finite.min()) if len(finite) > 1 else 0.0
    digits = int(min(6, max(1, -np.floor(np.log10(span / 50))))) if span > 0 else 2
    title = "depth exponent α_ℓ"
    axis = alt.Axis(format=f".{digits}f")
    hist = alt.Chart(pd.DataFrame({"alpha_l": values}), title="Bootstrap distribution of α_ℓ").mark_bar(
        opacity=0.7).encode(x=alt.X("alpha_l:Q", bin=alt.Bin(maxbins=50), title=title, axis=axis),
                            y=alt.Y("count():Q", title="bootstrap resamples (count)"))
    band = alt.Chart(pd.DataFrame({"lo": [lo], "hi": [hi]})).mark_rect(opacity=0.12, color="green").encode(
        x=alt.X("lo:Q", title=title, axis=axis), x2="hi:Q")
    rules = alt.Chart(pd.DataFrame({"what": list(marks), "alpha_l": list(marks.values())})).mark_rule(
        strokeWidth=2).encode(x=alt.X("alpha_l:Q", title=title, axis=axis),
                              color=alt.Color("what:N", title=None, scale=scale_for(marks),
                                              legend=_legend(2)),
                              tooltip=["what", alt.Tooltip("alpha_l:Q", format=".3f")])
    return (band + hist + rules).properties(height=240)


def cut_scan_chart(scan: pd.DataFrame,
                   band: tuple[float, float] = scaling.HEADLINE_BAND) -> alt.Chart:
    """α_ℓ ± SE against the number of points excluded, for both recipes."""
    base = alt.Chart(scan.assign(lo=scan["alpha_l"] - scan["alpha_l_se"],
                                 hi=scan["alpha_l"] + scan["alpha_l_se"]),
                     title="α_ℓ against the outlier cut (±1 Jacobian SE)")
    x = alt.X("cut:Q", title="points excluded (paper: 40)")
    # every layer titles the y axis alike: Vega-Lite joins differing titles ("lo, α_ℓ")
    y_title = "depth exponent α_ℓ (±1 SE)"
    color = alt.Color("recipe:N", scale=scale_for(scan["recipe"]), legend=_legend())
    shade = alt.Chart(pd.DataFrame({"lo": [band[0]], "hi": [band[1]]})).mark_rect(
        opacity=0.1, color="gray").encode(y=alt.Y("lo:Q", title=y_title), y2="hi:Q")
    lines = base.mark_line(point=True).encode(
        x=x, y=alt.Y("alpha_l:Q", title=y_title), color=color,
        tooltip=["cut", "n_points", "recipe", alt.Tooltip("alpha_l:Q", format=".3f"),
                 alt.Tooltip("alpha_l_se:Q", format=".3f")])
    bars = base.mark_errorbar().encode(x=x, y=alt.Y("lo:Q", title=y_title), y2="hi:Q", color=color)
    # zoom on the data layer: a scale binding on the shade (no x field) makes Vega warn
    return shade + bars + lines.interactive()


def profile_chart(profile: pd.DataFrame, threshold: float = 3.84) -> alt.Chart:
    """Likelihood-ratio profile of α_ℓ: how little the fit cares where α_ℓ sits."""
    base = alt.Chart(profile, title="Profile of the fit over α_ℓ (others refitted at each value)")
    line = base.mark_line(point=True).encode(
        x=alt.X("alpha_l:Q", title="depth exponent α_ℓ (held fixed)"),
        y=alt.Y("lr_stat:Q", title="likelihood ratio n · ln(RSS / RSS_min)",
                scale=alt.Scale(domain=[0, 30], clamp=True)),
        tooltip=[alt.Tooltip("alpha_l:Q", format=".2f"), alt.Tooltip("lr_stat:Q", format=".2f"),
                 alt.Tooltip("objective:Q", format=".6f")])
    rule = alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[4, 4], color="red").encode(
        y=alt.Y("y:Q", title="likelihood ratio n · ln(RSS / RSS_min)"))
    return (line + rule).interactive()


def adam_path_chart(path: pd.DataFrame, converged: float) -> alt.Chart:
    """α_ℓ after n Adam steps of the paper recipe, against the converged optimum."""
    base = alt.Chart(path, title="The paper recipe's α_ℓ depends on how long Adam runs")
    line = base.mark_line(point=True).encode(
        x=alt.X("steps:Q", scale=alt.Scale(type="log"), title="Adam steps (paper: 5×10⁴; log scale)",
                axis=log_axis(path["steps"])),
        y=alt.Y("alpha_l:Q", title="depth exponent α_ℓ", scale=alt.Scale(zero=False)),
        tooltip=["steps", alt.Tooltip("alpha_l:Q", format=".4f"),
                 alt.Tooltip("objective:Q", format=".7f")])
    rule = alt.Chart(pd.DataFrame({"converged": [converged]})).mark_rule(
        strokeDash=[4, 4], color="black").encode(y=alt.Y("converged:Q", title="depth exponent α_ℓ"),
                                                tooltip=[alt.Tooltip("converged:Q", format=".4f")])
    return line + rule


def aspect_chart(optimal: pd.DataFrame, actual: pd.DataFrame) -> alt.Chart:
    """Width/depth ratio: the fit's optimum against the shapes Chinchilla trained."""
    x = alt.X("N:Q", scale=alt.Scale(type="log"), title="non-embedding parameters N = 12 m² ℓ (log scale)",
              axis=log_axis(optimal["N"], actual["N"]))
    y = alt.Y("aspect:Q", scale=alt.Scale(type="log"), title="width / depth  m / ℓ (log scale)",
              axis=log_axis(optimal["aspect"], actual["aspect"]))
    opt = alt.Chart(optimal.assign(what="optimum of the fitted law")).mark_line(color="black").encode(
        x=x, y=y,
        tooltip=[alt.Tooltip("N:Q", format=".2s"), alt.Tooltip("aspect:Q", format=".1f"),
                 alt.Tooltip("m:Q", format=".0f"), alt.Tooltip("ell:Q", format=".1f")])
    pts = alt.Chart(actual, title="Width/depth ratio: fitted optimum vs Chinchilla's models").mark_circle(
        size=60, opacity=0.7).encode(x=x, y=y, tooltip=["m", "ell", alt.Tooltip(
            "N:Q", format=".2s"), alt.Tooltip("aspect:Q", format=".1f")])
    return (pts + opt).interactive()
