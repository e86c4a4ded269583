"""Charts of chapters 00, 02, 03: the models, hidden-state geometry, lens, tracing, token clusters."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from layerlab import paper
from layerlab.book.plots._style import _legend, log_axis, scale_for

__all__ = [
    "perplexity_bars", "norm_lines", "layer_profiles", "depth_scaling_points", "control_chart",
    "slope_chart", "lens_chart", "tracing_heatmap", "bulk_vs_context", "token_scatter",
    "progress_profiles",
]


# --- chapter 00: the models and their data ----------------------------------------------------
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


# --- chapter 02: hidden-state geometry --------------------------------------------------------
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


# --- chapter 03: token clusters ---------------------------------------------------------------
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
