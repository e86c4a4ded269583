"""Charts of chapters 05-10: P2's importance, strategies, ridge, deltas, recovery, growth."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from layerlab import paper
from layerlab.book.plots._style import _legend, _title, log_axis, scale_for

__all__ = [
    "SIGN_COLORS", "importance_bars", "method_lines", "anchor_scatter", "strategy_bars",
    "single_layer_heatmap", "alpha_sweep", "removal_curve", "r2_vs_alpha", "paradox_chart",
    "delta_lines", "delta_summary_dots", "recovery_curves", "growth_curves",
]


# --- chapter 05: the importance map -----------------------------------------------------------
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


# --- chapter 06: manipulation strategies ------------------------------------------------------
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


# --- chapter 07: weight predictability --------------------------------------------------------
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


# --- chapter 08: delta correlations -----------------------------------------------------------
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


# --- chapter 09: recovery ---------------------------------------------------------------------
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


# --- chapter 10: growth training --------------------------------------------------------------
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
