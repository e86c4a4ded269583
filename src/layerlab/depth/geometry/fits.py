"""Chapter 02's statistics on the measurements: the log–log slope of a middle-layer statistic on
depth (`depth_slope`; `control_slopes` for the trained and untrained family and their
difference), the 1/ℓ reference of procedural assembly, the fit of the family's loss on depth,
the bootstrap of a mean over sequences, and the positive control's estimate at a depth
(`positive_estimate`, the smooth stream under the models' bootstrap)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from layerlab.claims import Estimate
from layerlab.depth.geometry.measurement import smooth_stream

__all__ = ["depth_slope", "procedural_curve", "procedural_reference", "loss_depth_fit",
           "bootstrap_mean", "control_slopes", "positive_estimate"]


def depth_slope(summary: pd.DataFrame, column: str = "middle_theta", *,
                min_layers: int = 4, family_only: bool = True) -> dict[str, float]:
    """OLS slope of log(column) on log(layers) with its standard error and 95 % interval
    (statsmodels); P1 predicts −1 (update size ∝ 1/ℓ). Only the depth family by default (one
    width, one data set, one budget); members with fewer than `min_layers` blocks have no middle
    worth the name and are left out. NaN when fewer than 3 distinct depths remain. `depths`:
    the depths the fit used."""
    import statsmodels.api as sm

    use = summary[(summary["layers"] >= min_layers) & summary[column].notna()]
    if family_only:
        use = use[use["family"]]
    # the depths the slope reads: a precondition on the family is judged on these (VERDICTS §2)
    depths = sorted(int(d) for d in use["layers"].unique())
    if len(depths) < 3:
        return {"slope": np.nan, "se": np.nan, "lo": np.nan, "hi": np.nan, "n": len(use),
                "intercept": np.nan, "depths": depths}
    X = sm.add_constant(np.log(use["layers"].to_numpy(float)), has_constant="add")
    fit = sm.OLS(np.log(use[column].to_numpy(float)), X).fit()
    lo, hi = fit.conf_int(0.05)[1]
    return {"slope": float(fit.params[1]), "se": float(fit.bse[1]), "lo": float(lo),
            "hi": float(hi), "n": len(use), "intercept": float(fit.params[0]), "depths": depths}


def procedural_curve(summary: pd.DataFrame, column: str = "middle_theta_dh",
                     min_layers: int = 4) -> pd.DataFrame | None:
    """The 1/ℓ prediction of procedural assembly for `column`, anchored at the shallowest family
    member with a middle, over the depths of the profile; None without such a member."""
    fam = summary[summary["family"] & (summary["layers"] >= min_layers)].sort_values("layers")
    if fam.empty:
        return None
    anchor = fam.iloc[0]
    grid = np.geomspace(anchor["layers"], max(summary["layers"].max(), anchor["layers"] + 1), 20)
    return pd.DataFrame({"layers": grid, column: procedural_reference(
        grid, anchor["layers"], anchor[column])})


def procedural_reference(layers, anchor_layers: float, anchor_value: float) -> np.ndarray:
    """What procedural assembly predicts for θ(Δh_l, Δh_{l+1}): blocks as Euler steps of a
    smooth flow take steps ∝ 1/ℓ along a curve, so consecutive step directions differ by an
    angle ∝ 1/ℓ. Anchored at one measured model: value × anchor_layers / ℓ."""
    return anchor_value * anchor_layers / np.asarray(layers, dtype=float)


def loss_depth_fit(losses: pd.DataFrame) -> dict[str, float]:
    """Fit val_loss = c / ℓ^α + L∞ over the family (scipy); with five depths the floor and the
    exponent trade off, so the SEs matter as much as the values."""
    from scipy.optimize import curve_fit

    means = losses.groupby("depth")["val_loss"].mean()  # over seeds
    ell = means.index.to_numpy(float)
    y = means.to_numpy(float)
    if len(ell) < 4:
        return {"alpha": np.nan, "alpha_se": np.nan, "floor": np.nan, "c": np.nan}
    try:
        popt, pcov = curve_fit(lambda x, c, a, f: c / x**a + f, ell, y,
                               p0=(y[0] - y[-1] + 0.1, 1.0, y[-1] - 0.05), maxfev=20000)
    except RuntimeError:
        return {"alpha": np.nan, "alpha_se": np.nan, "floor": np.nan, "c": np.nan}
    se = np.sqrt(np.diag(pcov))
    return {"c": float(popt[0]), "alpha": float(popt[1]), "alpha_se": float(se[1]),
            "floor": float(popt[2])}


def bootstrap_mean(values: np.ndarray, *, n: int = 2000, seed: int = 0) -> np.ndarray:
    """Bootstrap distribution of the mean of `values` (resampling the sequences)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    return values[rng.integers(0, len(values), size=(n, len(values)))].mean(1)


def _interval(draws: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def control_slopes(seq: pd.DataFrame, column: str, min_layers: int = 4) -> dict[str, dict]:
    """`depth_slope` of one statistic over the family members (every seed), trained and
    untrained, and their difference with a normal-approximation 95 % interval."""
    out = {}
    for trained, label in ((True, "trained"), (False, "untrained")):
        per = (seq[seq["family"] & (seq["trained"] == trained)]
               .groupby("model").agg(layers=("layers", "first"), value=(column, "mean")))
        summary = per.rename(columns={"value": column}).assign(family=True)
        out[label] = depth_slope(summary, column, min_layers=min_layers)
    t, u = out["trained"], out["untrained"]
    diff = t["slope"] - u["slope"]
    se = float(np.hypot(t["se"], u["se"]))
    out["difference"] = {"slope": diff, "se": se, "lo": diff - 1.96 * se, "hi": diff + 1.96 * se}
    return out


def positive_estimate(layers: int, *, n: int = 2000):
    """The smooth stream's middle θ(Δh) at `layers` blocks with the models' bootstrap (its mean
    over sequences, the same resamples and percentiles as `control_table`)."""
    values = smooth_stream(layers)
    lo, hi = _interval(bootstrap_mean(values, n=n, seed=1))
    return Estimate(float(values.mean()), lo, hi)
