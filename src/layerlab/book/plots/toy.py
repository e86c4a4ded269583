"""Charts of chapters 02 and 04: the depth family's training and the toy teacher-student sweeps."""

from __future__ import annotations

import altair as alt
import pandas as pd

from layerlab.book.plots._style import _legend, log_axis, scale_for

__all__ = [
    "family_loss_chart", "family_final_chart", "warmup_chart", "toy_loss_chart",
    "local_slope_chart", "alpha_vs_temperature", "alpha_vs_steps", "signature_chart",
]


# --- chapter 02: the depth family's training --------------------------------------------------
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


def alpha_vs_temperature(final: pd.DataFrame) -> alt.Chart:
    """Final α_ℓ (± SE of the fit) against the teacher temperature, KL sweeps."""
    final = final[["sweep", "teacher", "temperature", "seed", "alpha", "alpha_se"]]  # what it draws
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
    alphas = alphas[["sweep", "teacher", "step", "alpha"]]  # the page keeps only what it draws
    return alt.Chart(alphas, title="α_ℓ during training").mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"), y=alt.Y("alpha:Q", title="depth exponent α_ℓ"),
        color=alt.Color("sweep:N", legend=_legend(3)),
        strokeDash=alt.StrokeDash("teacher:N", legend=_legend()),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=["sweep", "step", alt.Tooltip("alpha:Q", format=".2f")]).add_params(pick).interactive()


def signature_chart(rows: pd.DataFrame) -> alt.Chart:
    """Middle-layer θ(Δh_l, Δh_{l+1}) of trained students and their teachers."""
    rows = rows[["network", "teacher", "middle_theta_dh"]]  # the page keeps only what it draws
    return alt.Chart(rows, title="Consecutive-update angle in the middle layers").mark_bar().encode(
        x=alt.X("network:N", title=None, sort=None),
        y=alt.Y("middle_theta_dh:Q", title="middle-layer angle θ(Δh_l, Δh_{l+1}) (rad)"),
        color=alt.Color("teacher:N", scale=scale_for(rows["teacher"]), legend=_legend()),
        column=alt.Column("teacher:N", title=None),
        tooltip=["network", alt.Tooltip("middle_theta_dh:Q", format=".3f")]).properties(width=220)
