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


# --- chapter 01: the depth scaling law ----------------------------------------------------------
def depth_part_slider(parts: pd.DataFrame, default_cut: int = 40) -> alt.Chart:
    """Fig. 2f's depth panel with a selector over the outlier cut; each cut shows its own fit."""
    cuts = [int(c) for c in sorted(parts["cut"].unique())]
    cut = alt.param(name="cut", value=default_cut if default_cut in cuts else cuts[0],
                    bind=alt.binding_radio(options=cuts, name="points excluded (outlier cut): "))
    base = alt.Chart(parts, title="Depth part of the loss vs depth (P1 Fig. 2f), per outlier cut")
    x = alt.X("ell:Q", scale=alt.Scale(type="log", base=2), title="depth ℓ (layers, log₂)")
    pts = base.mark_circle(size=40, opacity=0.6).encode(
        x=x, y=alt.Y("depth_part:Q", title="L − width term − data term − L0"),
        color=alt.Color("m:Q", scale=alt.Scale(type="log", scheme="viridis"), title="width m"),
        tooltip=["cut", "ell", "m", alt.Tooltip("D:Q", format=".3s"),
                 alt.Tooltip("loss:Q", format=".4f"), alt.Tooltip("depth_part:Q", format=".4f")])
    line = base.mark_line(color="black").encode(
        x=x, y="depth_term:Q", tooltip=[alt.Tooltip("alpha_l:Q", format=".3f", title="α_ℓ")])
    return (pts + line).add_params(cut).transform_filter(alt.datum.cut == cut)


def other_parts(parts: pd.DataFrame) -> alt.HConcatChart:
    """Width and data parts beside the depth part, for one fit."""
    panels = []
    for name, field, title, fmt in (("width", "m", "width m (log₂)", "d"),
                                    ("data", "D", "tokens D (log₂)", ".2s")):
        base = alt.Chart(parts, title=f"{name.capitalize()} part").properties(width=230, height=230)
        x = alt.X(f"{field}:Q", scale=alt.Scale(type="log", base=2), title=title,
                  axis=alt.Axis(format=fmt))
        panels.append(
            base.mark_circle(size=30, opacity=0.5).encode(x=x, y=alt.Y(f"{name}_part:Q",
                                                                       title=f"{name} part"))
            + base.mark_line(color="black").encode(x=x, y=f"{name}_term:Q"))
    return alt.hconcat(*panels)


def bootstrap_histogram(values: pd.Series, lo: float, hi: float, marks: dict[str, float]) -> alt.Chart:
    """Histogram of bootstrap α_ℓ with its 95 % interval shaded and reference values marked."""
    hist = alt.Chart(pd.DataFrame({"alpha_l": values}), title="Bootstrap distribution of α_ℓ").mark_bar(
        opacity=0.7).encode(x=alt.X("alpha_l:Q", bin=alt.Bin(maxbins=50), title="α_ℓ"),
                            y=alt.Y("count():Q", title="resamples"))
    band = alt.Chart(pd.DataFrame({"lo": [lo], "hi": [hi]})).mark_rect(opacity=0.12, color="green").encode(
        x="lo:Q", x2="hi:Q")
    rules = alt.Chart(pd.DataFrame({"what": list(marks), "alpha_l": list(marks.values())})).mark_rule(
        strokeWidth=2).encode(x="alpha_l:Q", color=alt.Color("what:N", title=None),
                              tooltip=["what", alt.Tooltip("alpha_l:Q", format=".3f")])
    return (band + hist + rules).properties(height=240)


def cut_scan_chart(scan: pd.DataFrame, band: tuple[float, float] = (0.9, 1.5)) -> alt.Chart:
    """α_ℓ ± SE against the number of points excluded, for both recipes."""
    base = alt.Chart(scan.assign(lo=scan["alpha_l"] - scan["alpha_l_se"],
                                 hi=scan["alpha_l"] + scan["alpha_l_se"]),
                     title="α_ℓ against the outlier cut (±1 Jacobian SE)")
    x = alt.X("cut:Q", title="points excluded (paper: 40)")
    shade = alt.Chart(pd.DataFrame({"lo": [band[0]], "hi": [band[1]]})).mark_rect(
        opacity=0.1, color="gray").encode(y="lo:Q", y2="hi:Q")
    lines = base.mark_line(point=True).encode(
        x=x, y=alt.Y("alpha_l:Q", title="α_ℓ"), color=alt.Color("recipe:N"),
        tooltip=["cut", "n_points", "recipe", alt.Tooltip("alpha_l:Q", format=".3f"),
                 alt.Tooltip("alpha_l_se:Q", format=".3f")])
    bars = base.mark_errorbar().encode(x=x, y="lo:Q", y2="hi:Q", color="recipe:N")
    return (shade + bars + lines).interactive()


def profile_chart(profile: pd.DataFrame, threshold: float = 3.84) -> alt.Chart:
    """Likelihood-ratio profile of α_ℓ: how little the fit cares where α_ℓ sits."""
    base = alt.Chart(profile, title="Profile of the fit over α_ℓ (others refitted at each value)")
    line = base.mark_line(point=True).encode(
        x=alt.X("alpha_l:Q", title="α_ℓ (held fixed)"),
        y=alt.Y("lr_stat:Q", title="n · ln(RSS / RSS_min)", scale=alt.Scale(domain=[0, 30], clamp=True)),
        tooltip=[alt.Tooltip("alpha_l:Q", format=".2f"), alt.Tooltip("lr_stat:Q", format=".2f"),
                 alt.Tooltip("objective:Q", format=".6f")])
    rule = alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[4, 4], color="red").encode(
        y="y:Q")
    return (line + rule).interactive()


def adam_path_chart(path: pd.DataFrame, converged: float) -> alt.Chart:
    """α_ℓ after n Adam steps of the paper recipe, against the converged optimum."""
    base = alt.Chart(path, title="The paper recipe's α_ℓ depends on how long Adam runs")
    line = base.mark_line(point=True).encode(
        x=alt.X("steps:Q", scale=alt.Scale(type="log"), title="Adam steps (paper: 50,000)"),
        y=alt.Y("alpha_l:Q", title="α_ℓ", scale=alt.Scale(zero=False)),
        tooltip=["steps", alt.Tooltip("alpha_l:Q", format=".4f"),
                 alt.Tooltip("objective:Q", format=".7f")])
    rule = alt.Chart(pd.DataFrame({"converged": [converged]})).mark_rule(
        strokeDash=[4, 4], color="black").encode(y="converged:Q",
                                                tooltip=[alt.Tooltip("converged:Q", format=".4f")])
    return line + rule


def aspect_chart(optimal: pd.DataFrame, actual: pd.DataFrame) -> alt.Chart:
    """Width/depth ratio: the fit's optimum against the shapes Chinchilla trained."""
    opt = alt.Chart(optimal.assign(what="optimum of the fitted law")).mark_line(color="black").encode(
        x=alt.X("N:Q", scale=alt.Scale(type="log"), title="non-embedding parameters N = 12 m² ℓ"),
        y=alt.Y("aspect:Q", scale=alt.Scale(type="log"), title="width / depth  m / ℓ"),
        tooltip=[alt.Tooltip("N:Q", format=".2s"), alt.Tooltip("aspect:Q", format=".1f"),
                 alt.Tooltip("m:Q", format=".0f"), alt.Tooltip("ell:Q", format=".1f")])
    pts = alt.Chart(actual, title="Width/depth ratio: fitted optimum vs Chinchilla's models").mark_circle(
        size=60, opacity=0.7).encode(x="N:Q", y="aspect:Q", tooltip=["m", "ell", alt.Tooltip(
            "N:Q", format=".2s"), alt.Tooltip("aspect:Q", format=".1f")])
    return (pts + opt).interactive()
