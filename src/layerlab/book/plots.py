"""Altair chart builders with one look. Charts are Vega-Lite specs rendered client-side, so
tooltips, legends and selections work in the static HTML with no kernel. Keep data aggregated:
every row is inlined into the page.

Used by every chapter (00–11).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.depth import scaling

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
    "gtt": "#f58518", "gtt, paper's steps": "#ffbf79",
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
            color=alt.Color("model:N", legend=_legend(2)),
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
        y=alt.Y("mean_norm:Q", scale=alt.Scale(type="log"), title="mean norm ‖h_l‖ (log scale)",
                axis=log_axis(table["mean_norm"])),
        color=alt.Color("model:N", legend=_legend(2)),
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


# --- chapters 02 and 03: hidden-state geometry ----------------------------------------------------
def layer_profiles(table: pd.DataFrame, metric_title: str, *, log: bool = False,
                   reference: float | None = None) -> alt.Chart:
    """Mean (line) and interquartile band of a per-layer metric vs normalised depth, one colour per
    model; selectors switch the last-layer convention and the token set client-side."""
    conv = alt.param(name="convention", value="last block's output", bind=alt.binding_radio(
        options=sorted(table["convention"].unique()), name="last state: "))
    toks = alt.param(name="tokenset", value="positions ≥ 1", bind=alt.binding_radio(
        options=sorted(table["tokens"].unique()), name="tokens: "))
    pick = alt.selection_point(fields=["model"], bind="legend")
    base = alt.Chart(table, title=f"{metric_title} by layer").transform_filter(
        (alt.datum.convention == conv) & (alt.datum.tokens == toks))
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    y_axis = log_axis(table["q25"], table["q75"], table["mean"]) if log else alt.Axis()
    y_title = f"{metric_title}, log scale" if log else metric_title
    x = alt.X("depth:Q", title="normalised depth (layer / number of layers)")
    # the band draws no legend of its own (its legend resolved apart, and disabled): the legend
    # shows the lines' colours, not pale fills, and the legend click lives on the lines
    band = base.mark_area(opacity=0.12).encode(x=x, y=alt.Y("q25:Q", scale=y_scale, title=y_title,
                                                            axis=y_axis), y2="q75:Q",
                                               color=alt.Color("model:N", legend=None),
                                               opacity=alt.condition(pick, alt.value(0.15), alt.value(0.02)))
    line = base.mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=x, y=alt.Y("mean:Q", title=y_title, scale=y_scale, axis=y_axis),
        color=alt.Color("model:N", legend=_legend(3)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["model", "layers", "index", alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("median:Q", format=".3f"), alt.Tooltip("q25:Q", format=".3f"),
                 alt.Tooltip("q75:Q", format=".3f")]).add_params(pick)
    layers = [band, line]
    if reference is not None:
        layers.append(alt.Chart(pd.DataFrame({"y": [reference]})).mark_rule(
            strokeDash=[4, 4], color="gray").encode(y=alt.Y("y:Q", title=y_title, axis=y_axis)))
    return alt.layer(*layers).add_params(conv, toks).resolve_legend(color="independent").interactive()


def depth_scaling_points(summary: pd.DataFrame, column: str, title: str,
                         fit: dict[str, float] | None = None,
                         reference: pd.DataFrame | None = None) -> alt.Chart:
    """A middle-layer quantity against depth on log–log axes: the family as a line with its fitted
    slope, the pretrained models as labelled points, optionally a reference curve."""
    data = summary.reset_index()
    data["kind"] = np.where(data["family"], "depth family (trained here)", "pretrained")
    kinds = scale_for(data["kind"])
    x = alt.X("layers:Q", scale=alt.Scale(type="log", base=2), title="depth ℓ (blocks, log₂)")
    shown = [data[column]] + ([reference[column]] if reference is not None else [])
    y = alt.Y(f"{column}:Q", scale=alt.Scale(type="log"), title=f"{title}, log scale",
              axis=log_axis(*shown))
    pts = alt.Chart(data, title=f"{title} vs depth").mark_point(size=80, filled=True).encode(
        x=x, y=y, shape=alt.Shape("kind:N", title=None, scale=alt.Scale(domain=kinds.domain),
                                  legend=_legend()),
        color=alt.Color("kind:N", title=None, scale=kinds, legend=_legend()),
        tooltip=["model", "layers", alt.Tooltip(f"{column}:Q", format=".4f")])
    layers = [pts]
    if fit is not None and np.isfinite(fit.get("slope", np.nan)):
        fam = data[data["family"] & (data["layers"] >= 4)]
        grid = np.geomspace(fam["layers"].min(), fam["layers"].max(), 20)
        line = pd.DataFrame({"layers": grid, column: np.exp(fit["intercept"]) * grid ** fit["slope"]})
        layers.append(alt.Chart(line).mark_line(color="black").encode(x=x, y=y))
    if reference is not None:
        layers.append(alt.Chart(reference).mark_line(strokeDash=[5, 4], color="firebrick").encode(
            x=x, y=y, tooltip=[alt.Tooltip(f"{column}:Q", format=".3f")]))
    return alt.layer(*layers).interactive()


def family_loss_chart(curves: pd.DataFrame) -> alt.Chart:
    """Validation loss of each family member against training tokens."""
    return alt.Chart(curves, title="Depth family: validation loss while training").mark_line(
        point=True).encode(
        x=alt.X("tokens:Q", title="training tokens (bytes)", axis=alt.Axis(format="~s")),
        y=alt.Y("val_loss:Q", title="validation loss (nats per byte)", scale=alt.Scale(zero=False)),
        color=alt.Color("depth:O", title="blocks", legend=_legend()),
        strokeDash=alt.StrokeDash("seed:N", title="seed", legend=_legend()),
        tooltip=["depth", "seed", "step", "tokens", alt.Tooltip("val_loss:Q", format=".4f")]
    ).interactive()


def family_final_chart(losses: pd.DataFrame) -> alt.Chart:
    """Final validation loss against depth: one point per seed, the line through the seed means."""
    x = alt.X("depth:Q", scale=alt.Scale(type="log", base=2), title="depth ℓ (blocks, log₂)")
    y = alt.Y("val_loss:Q", title="final validation loss (nats per byte)", scale=alt.Scale(zero=False))
    base = alt.Chart(losses, title="Does depth buy loss? Final validation loss by depth")
    pts = base.mark_point(size=60, filled=True).encode(
        x=x, y=y, shape=alt.Shape("seed:N", legend=_legend()),
        tooltip=["depth", "seed", alt.Tooltip("val_loss:Q", format=".4f")])
    line = base.mark_line(color="black").encode(
        x=x, y=alt.Y("mean(val_loss):Q", title="final validation loss (nats per byte)",
                     scale=alt.Scale(zero=False)))
    return line + pts.interactive()


def control_chart(table: pd.DataFrame, statistic: str, title: str) -> alt.Chart:
    """One statistic per model, trained beside untrained, with 95 % bootstrap intervals over
    sequences: a signature both show says nothing about training."""
    t = table[table["statistic"] == statistic]
    long = pd.concat([t.assign(condition=c, value=t[c], lo=t[f"{c}_lo"], hi=t[f"{c}_hi"])
                      for c in ("trained", "untrained")], ignore_index=True)
    long = long[["model", "layers", "condition", "value", "lo", "hi"]]
    order = list(t.sort_values(["layers", "model"])["model"])
    base = alt.Chart(long, title=title)
    y = alt.Y("model:N", sort=order, title=None)
    color = alt.Color("condition:N", title=None, scale=scale_for(long["condition"]), legend=_legend())
    pts = base.mark_point(filled=True, size=70).encode(
        x=alt.X("value:Q", title=title, scale=alt.Scale(zero=False)), y=y,
        color=color,
        yOffset="condition:N",
        tooltip=["model", "layers", "condition", alt.Tooltip("value:Q", format=".3f"),
                 alt.Tooltip("lo:Q", format=".3f"), alt.Tooltip("hi:Q", format=".3f")])
    bars = base.mark_rule().encode(x=alt.X("lo:Q", title=title), x2="hi:Q", y=y,
                                   yOffset="condition:N", color=color)
    return (bars + pts).properties(height=alt.Step(14))


def slope_chart(seq_means: pd.DataFrame, column: str, title: str,
                slopes: dict[str, dict]) -> alt.Chart:
    """A middle-layer statistic of every family member (each seed) against depth, trained and
    untrained, log–log, with each condition's fitted line."""
    x = alt.X("layers:Q", scale=alt.Scale(type="log", base=2), title="depth ℓ (blocks, log₂)")
    y = alt.Y("value:Q", scale=alt.Scale(type="log"), title=f"{title}, log scale",
              axis=log_axis(seq_means["value"]))
    color = alt.Color("condition:N", title=None, scale=scale_for(seq_means["condition"]),
                      legend=_legend())
    pts = alt.Chart(seq_means, title=f"{title} vs depth: trained and untrained family").mark_point(
        size=60, filled=True).encode(x=x, y=y, color=color,
                                     tooltip=["model", "layers", "condition",
                                              alt.Tooltip("value:Q", format=".4f")])
    lines = []
    for condition in ("trained", "untrained"):
        fit = slopes[condition]
        fam = seq_means[(seq_means["condition"] == condition) & (seq_means["layers"] >= 4)]
        if np.isfinite(fit.get("slope", np.nan)) and len(fam):
            grid = np.geomspace(fam["layers"].min(), fam["layers"].max(), 20)
            lines.append(pd.DataFrame({"layers": grid, "condition": condition,
                                       "value": np.exp(fit["intercept"]) * grid ** fit["slope"]}))
    layers = [pts]
    if lines:
        layers.append(alt.Chart(pd.concat(lines)).mark_line().encode(x=x, y=y, color=color))
    return alt.layer(*layers).interactive()


def lens_chart(curves: pd.DataFrame) -> alt.Chart:
    """Last-block lens: mean CE of the next token against the share of blocks used; dashed: the
    untrained twin; pick a model in the legend."""
    pick = alt.selection_point(fields=["model"], bind="legend")
    return alt.Chart(curves, title="Last-block lens: next-token cross-entropy by depth").mark_line(
        point=alt.OverlayMarkDef(size=14)).encode(
        x=alt.X("depth:Q", title="blocks before the last one, as a share of the stack"),
        y=alt.Y("mean:Q", title="cross-entropy (nats)"),
        color=alt.Color("model:N", legend=_legend(3)),
        strokeDash=alt.StrokeDash("condition:N", title=None, legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.12)),
        tooltip=["model", "condition", "layer", alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("q25:Q", format=".3f"), alt.Tooltip("q75:Q", format=".3f")]
    ).add_params(pick).interactive()


def tracing_heatmap(effects: pd.DataFrame, title: str) -> alt.Chart:
    """Mean normalised indirect effect of restoring one (block, position) state, by position
    group and normalised depth."""
    from layerlab.depth.tracing import POSITION_GROUPS

    return alt.Chart(effects, title=title).mark_rect().encode(
        x=alt.X("depth:O", title="normalised depth l/L (bin centre)", axis=alt.Axis(format=".2f")),
        y=alt.Y("group:N", sort=list(POSITION_GROUPS), title=None),
        color=alt.Color("effect:Q", scale=alt.Scale(scheme="purples", domain=[0, 1], clamp=True),
                        title="restored share", legend=_legend()),
        tooltip=["group", alt.Tooltip("depth:Q", format=".2f"),
                 alt.Tooltip("effect:Q", format=".3f"), "facts"]).properties(width=360, height=150)


def bulk_vs_context(table: pd.DataFrame) -> alt.Chart:
    """Bulk fraction against context length, with and without a BOS token, beside 1 − 1/T (what
    a minority made only of the first position would give) and the paper's 99.6 %."""
    long = pd.concat([
        table.assign(series=np.where(table["bos"], "bulk, BOS at position 0", "bulk, text from position 0"),
                     value=table["bulk_fraction"]),
        table[~table["bos"]].assign(series="bulk without position 0",
                                    value=table["bulk_fraction_without_position0"]),
        table[~table["bos"]].drop_duplicates("T").assign(model="(reference)", series="1 − 1/T",
                                                          value=lambda d: 1 - 1 / d["T"]),
    ], ignore_index=True)
    x = alt.X("T:Q", scale=alt.Scale(type="log", base=2), title="context length T (tokens)")
    line = alt.Chart(long, title="Bulk fraction against context length").mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title="bulk fraction", scale=alt.Scale(zero=False)),
        color=alt.Color("series:N", legend=_legend(2)),
        strokeDash=alt.StrokeDash("model:N", legend=_legend(2)),
        tooltip=["model", "series", "T", alt.Tooltip("value:Q", format=".4f"),
                 alt.Tooltip("minority_position0_share:Q", format=".2f")])
    ref = alt.Chart(pd.DataFrame({"y": [paper.P1_BULK_FRACTION.value]})).mark_rule(
        strokeDash=[4, 4], color="gray").encode(y=alt.Y("y:Q", title="bulk fraction"))
    return ref + line.interactive()


def local_slope_chart(slopes: pd.DataFrame) -> alt.Chart:
    """Local exponent −Δlog loss/Δlog ℓ per pair of student depths: a straight power law is a
    flat line; the bands mark 1 (averaging) and 2 (Euler steps)."""
    pick = alt.selection_point(fields=["sweep"], bind="legend")
    line = alt.Chart(slopes, title="Local exponents between consecutive student depths").mark_line(
        point=True).encode(
        x=alt.X("to:Q", scale=alt.Scale(type="log", base=2),
                title="depth of the deeper student of the pair (layers, log₂)"),
        y=alt.Y("slope:Q", title="local exponent −Δlog loss / Δlog ℓ"),
        color=alt.Color("sweep:N", legend=_legend(3)),
        strokeDash=alt.StrokeDash("teacher:N", legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["sweep", "pair", alt.Tooltip("slope:Q", format=".2f")]).add_params(pick)
    ref = alt.Chart(pd.DataFrame({"y": [1.0, 2.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(
        y=alt.Y("y:Q", title="local exponent −Δlog loss / Δlog ℓ"))
    return ref + line.interactive()


def token_scatter(sample: pd.DataFrame, title: str) -> alt.Chart:
    """PC1–PC2 scatter of sampled tokens, the minority drawn on top; hover for the token."""
    return alt.Chart(sample, title=title).mark_circle(size=28).encode(
        x=alt.X("pc1:Q", title="first principal component (PC1)"),
        y=alt.Y("pc2:Q", title="second principal component (PC2)"),
        color=alt.Color("group:N", scale=scale_for(["bulk", "minority"]), legend=_legend()),
        opacity=alt.condition(alt.datum.group == "minority", alt.value(0.95), alt.value(0.35)),
        order=alt.Order("group:O"),  # ordinal: "minority" sorts after "bulk", drawn on top
        tooltip=["token", "position", alt.Tooltip("norm_mid:Q", format=".1f", title="mid-depth norm"),
                 alt.Tooltip("pc1:Q", format=".3f"), alt.Tooltip("pc2:Q", format=".3f"), "group"],
    ).interactive()


def progress_profiles(arrays: dict, sample: pd.DataFrame, n: int = 40) -> alt.Chart:
    """Progress s_l against layer for a few bulk and minority tokens: even vs early stopping."""
    rows = []
    for group in ("bulk", "minority"):
        idx = sample.index[sample["group"] == group][:n]
        for i in idx:
            for layer, s in enumerate(arrays["progress"][i]):
                rows.append({"token_index": int(i), "group": group, "layer": layer, "s": float(s),
                             "token": str(arrays["token_text"][i])})
    data = pd.DataFrame(rows)
    return alt.Chart(data, title="Progress s_l of sampled tokens (0 = embedding, 1 = output)").mark_line(
        opacity=0.5).encode(x=alt.X("layer:Q", title="layer"),
                            y=alt.Y("s:Q", title="progress s_l (0 = embedding, 1 = output)"),
                            detail="token_index:N",
                            color=alt.Color("group:N", scale=scale_for(["bulk", "minority"]),
                                            legend=_legend()),
                            tooltip=["token", "group"]).interactive()


# --- chapter 04: toy teacher-student networks -------------------------------------------------
def warmup_chart(table: pd.DataFrame) -> alt.Chart:
    """Error against ℓ for averaging ℓ noisy estimates and for ℓ Euler steps (log–log)."""
    return alt.Chart(table, title="Two ways to use ℓ layers").mark_line(point=True).encode(
        x=alt.X("depth:Q", scale=alt.Scale(type="log", base=2),
                title="ℓ (estimates averaged or Euler steps, log₂)"),
        y=alt.Y("error:Q", scale=alt.Scale(type="log"), title="squared error (log scale)",
                axis=log_axis(table["error"])),
        color=alt.Color("mechanism:N", title=None, scale=scale_for(table["mechanism"]),
                        legend=_legend()),
        tooltip=["mechanism", "depth", alt.Tooltip("error:Q", format=".2e")]).interactive()


def toy_loss_chart(losses: pd.DataFrame) -> alt.Chart:
    """Final test loss against student depth, one line per sweep; pick a sweep in the legend."""
    pick = alt.selection_point(fields=["sweep"], bind="legend")
    return alt.Chart(losses, title="Student test loss vs depth (log–log)").mark_line(point=True).encode(
        x=alt.X("depth:Q", scale=alt.Scale(type="log", base=2), title="student depth ℓ (layers, log₂)"),
        y=alt.Y("test_loss:Q", scale=alt.Scale(type="log"), title="test loss (log scale)",
                axis=log_axis(losses["test_loss"])),
        color=alt.Color("sweep:N", legend=_legend(3)),
        strokeDash=alt.StrokeDash("teacher:N", legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["sweep", "depth", alt.Tooltip("test_loss:Q", format=".3e")]).add_params(pick).interactive()


def alpha_vs_temperature(final: pd.DataFrame) -> alt.Chart:
    """Final α_ℓ (± SE of the fit) against the teacher temperature, KL sweeps."""
    data = final.assign(lo=final["alpha"] - final["alpha_se"], hi=final["alpha"] + final["alpha_se"])
    base = alt.Chart(data, title="α_ℓ vs teacher temperature (KL objective)")
    x = alt.X("temperature:Q", scale=alt.Scale(type="log"), title="teacher temperature T (log scale)",
              axis=log_axis(data["temperature"]))
    # every layer titles the y axis alike: Vega-Lite joins differing titles ("lo, α_ℓ")
    y_title = "depth exponent α_ℓ (±1 SE)"
    color = alt.Color("teacher:N", scale=scale_for(data["teacher"]), legend=_legend())
    pts = base.mark_line(point=True).encode(x=x, y=alt.Y("alpha:Q", title=y_title), color=color,
                                            detail="seed:N",
                                            tooltip=["sweep", alt.Tooltip("alpha:Q", format=".2f"),
                                                     alt.Tooltip("alpha_se:Q", format=".2f")])
    bars = base.mark_errorbar().encode(x=x, y=alt.Y("lo:Q", title=y_title), y2="hi:Q", color=color,
                                       detail="seed:N")
    ones = alt.Chart(pd.DataFrame({"y": [1.0, 2.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(
        y=alt.Y("y:Q", title=y_title))
    return ones + bars + pts.interactive()


def alpha_vs_steps(alphas: pd.DataFrame) -> alt.Chart:
    """α_ℓ fitted at every evaluation step: how the exponent develops with training."""
    pick = alt.selection_point(fields=["sweep"], bind="legend")
    return alt.Chart(alphas, title="α_ℓ during training").mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"), y=alt.Y("alpha:Q", title="depth exponent α_ℓ"),
        color=alt.Color("sweep:N", legend=_legend(3)),
        strokeDash=alt.StrokeDash("teacher:N", legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["sweep", "step", alt.Tooltip("alpha:Q", format=".2f")]).add_params(pick).interactive()


def signature_chart(rows: pd.DataFrame) -> alt.Chart:
    """Middle-layer θ(Δh_l, Δh_{l+1}) of trained students and their teachers."""
    return alt.Chart(rows, title="Consecutive-update angle in the middle layers").mark_bar().encode(
        x=alt.X("network:N", title=None, sort=None),
        y=alt.Y("middle_theta_dh:Q", title="middle-layer angle θ(Δh_l, Δh_{l+1}) (rad)"),
        color=alt.Color("teacher:N", scale=scale_for(rows["teacher"]), legend=_legend()),
        column=alt.Column("teacher:N", title=None),
        tooltip=["network", alt.Tooltip("middle_theta_dh:Q", format=".3f")]).properties(width=220)


# --- chapter 05: the importance map ------------------------------------------------------------
SIGN_COLORS = alt.Scale(domain=["worse (deg > 0)", "better (deg < 0)"], range=["#4c78a8", "#e45756"])


def _signed(df: pd.DataFrame, floor: float) -> pd.DataFrame:
    """|degradation| (floored, for a log axis) and its sign as a legend label."""
    return df.assign(abs_deg=df["deg"].abs().clip(lower=floor),
                     sign=np.where(df["deg"] < 0, "better (deg < 0)", "worse (deg > 0)"))


def importance_bars(table: pd.DataFrame) -> alt.Chart:
    """Degradation per layer on a log scale of |deg|, coloured by sign; radio buttons pick the
    evaluation set and a dropdown the ablation method. Hover a bar for PPL, CI and class."""
    df = _signed(table, floor=1e-3)
    sets = sorted(df["set"].unique())
    methods = list(dict.fromkeys(df["method"]))
    # the opening view must have rows: a method the default set was actually ablated with
    in_default = list(dict.fromkeys(df.loc[df["set"] == sets[-1], "method"]))
    default = "neighbour_average" if "neighbour_average" in in_default else in_default[0]
    pick_set = alt.param(name="evalset", value=sets[-1],
                         bind=alt.binding_radio(options=sets, name="evaluation set: "))
    pick_method = alt.param(name="method", value=default,
                            bind=alt.binding_select(options=methods, name="ablation: "))
    return (
        alt.Chart(df, title="Perplexity degradation when one layer is ablated (log |deg %|)")
        .mark_bar()
        .encode(
            x=alt.X("layer:O", title="layer (0-based)"),
            # bars on a log axis need an explicit base (the default, a stack from 0, draws
            # bars of zero height) and no stacking
            y=alt.Y("abs_deg:Q", scale=alt.Scale(type="log", domainMin=1e-2), stack=None,
                    title="|degradation| % (log scale)", axis=log_axis()),
            y2=alt.datum(1e-2),
            color=alt.Color("sign:N", scale=SIGN_COLORS, title=None, legend=_legend()),
            tooltip=["set", "method", "layer", "class", alt.Tooltip("ppl:Q", format=",.2f"),
                     alt.Tooltip("deg:Q", format="+,.1f", title="deg %"),
                     alt.Tooltip("lo:Q", format="+,.1f", title="CI low"),
                     alt.Tooltip("hi:Q", format="+,.1f", title="CI high")],
        )
        .add_params(pick_set, pick_method)
        .transform_filter((alt.datum.set == pick_set) & (alt.datum.method == pick_method))
        .properties(width=620)
    )


def _highlight_lines(table: pd.DataFrame, title: str, x: alt.X, series: str, columns: int,
                     tooltip: list, width: int) -> alt.Chart:
    """log10 PPL lines, one colour per `series` and one dash per evaluation set; clicking the
    legend highlights a series (the shape chapters 05 and 06 share)."""
    pick = alt.selection_point(fields=[series], bind="legend")
    return (
        alt.Chart(table, title=title)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("log10_ppl:Q", title="log10 perplexity"),
            color=alt.Color(f"{series}:N", legend=_legend(columns)),
            strokeDash=alt.StrokeDash("set:N", title="evaluation set", legend=_legend()),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
            tooltip=tooltip,
        )
        .add_params(pick)
        .properties(width=width)
    )


def method_lines(table: pd.DataFrame) -> alt.Chart:
    """log10 PPL per layer, one line per ablation method; click the legend to highlight."""
    return _highlight_lines(
        table, "Ablation methods compared (log10 perplexity by layer)",
        alt.X("layer:Q", title="layer (0-based)"), "method", 2,
        ["set", "method", "layer", alt.Tooltip("ppl:Q", format=",.2f"),
         alt.Tooltip("deg:Q", format="+,.1f")], 620)


def anchor_scatter(points: pd.DataFrame, metric: str, title: str) -> alt.Chart:
    """Neighbour-average degradation (log) against a removal-based layer metric, layer labels."""
    base = alt.Chart(points, title=title).encode(
        x=alt.X(f"{metric}:Q", title=_title(metric)),
        y=alt.Y("abs_deg:Q", scale=alt.Scale(type="log"),
                title="|degradation|, neighbour average (%, log scale)", axis=log_axis(points["abs_deg"])),
        tooltip=["layer", alt.Tooltip(f"{metric}:Q", format=".4f"),
                 alt.Tooltip("deg:Q", format="+,.1f")],
    )
    return base.mark_circle(size=60) + base.mark_text(dx=9, fontSize=10).encode(text="layer:N")


# --- chapter 06: manipulation strategies -------------------------------------------------------
def strategy_bars(joint: pd.DataFrame) -> alt.Chart:
    """Degradation of each strategy on the target set (log |deg|), one panel row per set."""
    df = _signed(joint, floor=1e-2)
    return (
        alt.Chart(df, title="Strategies applied to the target set jointly (log |deg %|)")
        .mark_bar()
        .encode(
            y=alt.Y("strategy:N", sort="-x", title=None),
            x=alt.X("abs_deg:Q", scale=alt.Scale(type="log", domainMin=1e-1), stack=None,
                    title="|degradation| % (log scale)", axis=log_axis()),
            x2=alt.datum(1e-1),  # the base of the bars on a log axis (see importance_bars)
            color=alt.Color("sign:N", scale=SIGN_COLORS, title=None, legend=_legend()),
            row=alt.Row("set:N", title=None),
            tooltip=["set", "strategy", alt.Tooltip("ppl:Q", format=",.2f"),
                     alt.Tooltip("deg:Q", format="+,.1f", title="deg %"),
                     alt.Tooltip("lo:Q", format="+,.1f", title="CI low"),
                     alt.Tooltip("hi:Q", format="+,.1f", title="CI high")],
        )
        .properties(width=460, height=alt.Step(20))
    )


def single_layer_heatmap(single: pd.DataFrame) -> alt.Chart:
    """Each strategy on each target layer alone: degradation % (symmetric log colour)."""
    sets = sorted(single["set"].unique())
    pick_set = alt.param(name="single_set", value=sets[-1],
                         bind=alt.binding_radio(options=sets, name="evaluation set: "))
    return (
        alt.Chart(single, title="Each strategy on one layer at a time (degradation %)")
        .mark_rect()
        .encode(
            x=alt.X("layer:O", title="layer (0-based)"), y=alt.Y("strategy:N", title=None),
            color=alt.Color("deg:Q", scale=alt.Scale(type="symlog", scheme="redblue",
                                                     reverse=True, domainMid=0),
                            title="degradation %", legend=_legend()),
            tooltip=["set", "strategy", "layer", alt.Tooltip("deg:Q", format="+,.1f"),
                     alt.Tooltip("lo:Q", format="+,.1f", title="CI low"),
                     alt.Tooltip("hi:Q", format="+,.1f", title="CI high")],
        )
        .add_params(pick_set)
        .transform_filter(alt.datum.set == pick_set)
        .properties(width=480, height=alt.Step(24))
    )


def alpha_sweep(alpha: pd.DataFrame) -> alt.Chart:
    """Degradation vs the scale factor α for three scopes, with CI bands."""
    base = alt.Chart(alpha, title="Scaling W ← α·W: degradation vs α").encode(
        x=alt.X("alpha:Q", title="weight scale factor α", scale=alt.Scale(zero=False)))
    # the band draws no legend of its own (legends resolved apart): the legend shows the lines'
    # colours, not pale fills
    band = base.mark_area(opacity=0.2).encode(y=alt.Y("lo:Q", title="degradation %"), y2="hi:Q",
                                              color=alt.Color("scope:N", legend=None), detail="set:N")
    line = base.mark_line(point=True).encode(
        y=alt.Y("deg:Q", title="degradation %"), color=alt.Color("scope:N", legend=_legend()),
        strokeDash=alt.StrokeDash("set:N", title="evaluation set", legend=_legend()),
        tooltip=["set", "scope", "alpha", alt.Tooltip("deg:Q", format="+,.1f"),
                 alt.Tooltip("lo:Q", format="+,.1f"), alt.Tooltip("hi:Q", format="+,.1f")])
    return (band + line).resolve_legend(color="independent").properties(width=520)


def removal_curve(k: pd.DataFrame) -> alt.Chart:
    """log10 PPL after editing the k least important layers, one line per strategy (dashes:
    the set); click the legend to highlight a strategy."""
    return _highlight_lines(
        k, "Editing the k least important layers: log10 perplexity vs k",
        alt.X("k:Q", title="layers edited k (least important first)"), "strategy", 3,
        ["set", "strategy", "k", "layers removed", alt.Tooltip("ppl:Q", format=",.2f"),
         alt.Tooltip("deg:Q", format="+,.1f", title="deg %")], 560)


# --- chapter 07: weight predictability ---------------------------------------------------------
def r2_vs_alpha(ridge: pd.DataFrame, paper_r2: float = paper.P2_RIDGE_R2.value) -> alt.Chart:
    """Ridge R² against the regularisation α, in-sample vs forward split, one line per type."""
    df = ridge[(ridge["stack"] == "real") & ridge["protocol"].isin(["in_sample", "forward"])]
    df = df.assign(r2_shown=df["r2"].clip(lower=-0.5))
    pick = alt.selection_point(fields=["type"], bind="legend")
    lines = alt.Chart(df, title="Ridge R² vs α: in-sample (solid) vs forward split (dashed)").mark_line(
        point=True).encode(
        x=alt.X("alpha:Q", scale=alt.Scale(type="log"), title="ridge regularisation α (log scale)",
                axis=log_axis(df["alpha"])),
        y=alt.Y("r2_shown:Q", title="R² (clipped at −0.5)"),
        color=alt.Color("type:N", legend=_legend(5)),
        strokeDash=alt.StrokeDash("protocol:N", legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["type", "protocol", alt.Tooltip("alpha:Q", format=".3g"),
                 alt.Tooltip("r2:Q", format=".4f"), alt.Tooltip("cosine:Q", format=".4f")],
    ).add_params(pick)
    rule = alt.Chart(pd.DataFrame({"r2": [paper_r2]})).mark_rule(strokeDash=[4, 4], color="gray").encode(
        y=alt.Y("r2:Q", title="R² (clipped at −0.5)"), tooltip=[alt.Tooltip("r2:Q", title="paper reported")])
    return (lines + rule).properties(width=560)


def paradox_chart(paradox: pd.DataFrame) -> alt.Chart:
    """Perplexity after replacing k layers by a substitute (log scale), per evaluation set."""
    return (
        alt.Chart(paradox, title="Replacing k layers: ridge predictions vs mean and random controls")
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", title="layers replaced (k)"),
            y=alt.Y("ppl:Q", scale=alt.Scale(type="log"), title="perplexity (log scale)",
                    axis=log_axis(paradox["ppl"])),
            color=alt.Color("substitute:N", legend=_legend()),
            strokeDash=alt.StrokeDash("set:N", title="evaluation set", legend=_legend()),
            tooltip=["set", "substitute", "k", "layers", alt.Tooltip("ppl:Q", format=",.2f"),
                     alt.Tooltip("deg:Q", format="+,.1f", title="deg %")],
        )
        .properties(width=480)
    )


# --- chapter 08: delta correlations -------------------------------------------------------------
def delta_lines(per_pair: pd.DataFrame) -> alt.Chart:
    """corr(Δ_l, Δ_{l+1}) per layer pair and tensor type; a dropdown picks the stack (real
    weights or a control); the dashed line is −1/2, the value for uncorrelated layers."""
    df = per_pair[per_pair["type"] != "synthetic"]
    stacks = list(dict.fromkeys(df["stack"]))
    pick_stack = alt.param(name="stack", value=stacks[0],
                           bind=alt.binding_select(options=stacks, name="weights: "))
    pick = alt.selection_point(fields=["type"], bind="legend")
    lines = alt.Chart(df, title="Correlation of consecutive weight deltas, per layer pair").mark_line(
        point=True).encode(
        x=alt.X("pair:Q", title="layer l of the pair (Δ_l = W_{l+1} − W_l against Δ_{l+1})"),
        y=alt.Y("delta_corr:Q", title="correlation corr(Δ_l, Δ_{l+1})", scale=alt.Scale(domain=[-1, 1])),
        color=alt.Color("type:N", legend=_legend(5)),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.12)),
        tooltip=["type", "stack", "pair", alt.Tooltip("delta_corr:Q", format="+.4f")],
    ).add_params(pick_stack, pick).transform_filter(alt.datum.stack == pick_stack)
    rule = alt.Chart(pd.DataFrame({"y": [-0.5]})).mark_rule(strokeDash=[4, 4], color="gray").encode(
        y=alt.Y("y:Q", title="correlation corr(Δ_l, Δ_{l+1})"))
    return (lines + rule).properties(width=560)


def delta_summary_dots(summary: pd.DataFrame) -> alt.Chart:
    """Mean delta correlation per type: the real weights beside each null and the prediction."""
    cols = [c for c in summary.columns if c not in ("real min", "real max", "adjacent_corr",
                                                    "predicted_stationary")]
    long = summary[cols].reset_index().melt(id_vars="type", var_name="stack", value_name="mean")
    return (
        alt.Chart(long.dropna(), title="Mean delta correlation: real weights vs nulls")
        .mark_point(filled=True, size=80)
        .encode(
            y=alt.Y("type:N", sort=list(summary.index), title=None),
            x=alt.X("mean:Q", scale=alt.Scale(domain=[-1, 1]), title="mean correlation corr(Δ_l, Δ_{l+1})"),
            color=alt.Color("stack:N", legend=_legend(2)),
            shape=alt.Shape("stack:N", legend=_legend(2)),
            tooltip=["type", "stack", alt.Tooltip("mean:Q", format="+.4f")],
        )
        .properties(width=480, height=alt.Step(24))
    )


# --- chapter 09: recovery ----------------------------------------------------------------------
def recovery_curves(curves: pd.DataFrame, base: float) -> alt.Chart:
    """PPL relative to the unedited model while the damaged layer is fine-tuned; a dropdown picks
    the condition (σ fixed, or σ calibrated so every layer starts equally damaged)."""
    df = curves.assign(ratio=curves["ppl"] / base)
    conds = list(dict.fromkeys(df["condition"]))
    pick = alt.param(name="condition", value=conds[0],
                     bind=alt.binding_select(options=conds, name="condition: "))
    hl = alt.selection_point(fields=["layer"], bind="legend")
    # one line per run: layers repeated with another seed get their own line
    extra = {"detail": "seed:N"} if "seed" in df.columns else {}
    return (
        alt.Chart(df, title="Recovery after noise: PPL / base PPL during fine-tuning")
        .mark_line(point=True)
        .encode(
            **extra,
            x=alt.X("step:Q", title="fine-tuning step"),
            y=alt.Y("ratio:Q", scale=alt.Scale(type="log"), title="perplexity / unedited perplexity (log scale)",
                    axis=log_axis(df["ratio"])),
            # layers in order: neighbouring layers in neighbouring colours of one sequential scheme
            color=alt.Color("layer:O", scale=alt.Scale(scheme="viridis"), legend=_legend(7)),
            opacity=alt.condition(hl, alt.value(1.0), alt.value(0.15)),
            tooltip=["condition", "layer", "step", alt.Tooltip("ppl:Q", format=",.2f"),
                     alt.Tooltip("ratio:Q", format=".3f")],
        )
        .add_params(pick, hl)
        .transform_filter(alt.datum.condition == pick)
        .properties(width=520)
    )


# --- chapter 10: growth training ----------------------------------------------------------------
def growth_curves(bands: pd.DataFrame) -> alt.Chart:
    """Validation loss against a chosen budget measure, mean over seeds with min–max bands;
    radio buttons pick the data regime and a dropdown the x axis."""
    measures = ["step", "layer_steps", "flops", "seconds", "tokens"]
    long = bands.melt(id_vars=["regime", "arm", "val_loss", "lo", "hi", "count"],
                      value_vars=measures, var_name="measure", value_name="budget")
    regimes = sorted(long["regime"].unique())
    pick_regime = alt.param(name="regime", value=regimes[0],
                            bind=alt.binding_radio(options=regimes, name="data: "))
    pick_measure = alt.param(name="measure", value="layer_steps",
                             bind=alt.binding_select(options=measures, name="budget axis: "))
    base = alt.Chart(long, title="Validation loss vs budget (mean over seeds, min–max band)").encode(
        x=alt.X("budget:Q", title="budget spent (measure chosen below)"))
    arms = scale_for(long["arm"])
    # the band draws no legend of its own (legends resolved apart): the legend shows the lines'
    # colours, not pale fills
    band = base.mark_area(opacity=0.15).encode(y=alt.Y("lo:Q", title="validation loss (nats)"),
                                               y2="hi:Q", color=alt.Color("arm:N", scale=arms, legend=None))
    line = base.mark_line(point=True).encode(
        y=alt.Y("val_loss:Q", title="validation loss (nats)"),
        color=alt.Color("arm:N", scale=arms, legend=_legend(3)),
        tooltip=["regime", "arm", "measure", alt.Tooltip("budget:Q", format=".4s"),
                 alt.Tooltip("val_loss:Q", format=".4f"), alt.Tooltip("lo:Q", format=".4f"),
                 alt.Tooltip("hi:Q", format=".4f"), "count"])
    return ((band + line).resolve_legend(color="independent").add_params(pick_regime, pick_measure)
            .transform_filter((alt.datum.regime == pick_regime) & (alt.datum.measure == pick_measure))
            .properties(width=560))


# --- chapter 11: verdicts -----------------------------------------------------------------------
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
