"""How well chapter 01's data determine the law: the bootstraps over runs and over model shapes,
percentile intervals, the outlier-cut scan, held-out splits, the identifiability diagnostics,
the profile over α_ℓ and the Adam recipe's path towards the optimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from layerlab.depth.scaling.fits import Fit, standard_errors
from layerlab.depth.scaling.law import (
    _OFF,
    ALL_FREE,
    NO_DEPTH_TERM,
    PAPER_EXCLUDED,
    PAPER_START,
    PAPER_STEPS,
    PARAMS,
    Design,
    design,
    jacobian,
    kept,
    objective,
    outlier_mask,
    predict,
)
from layerlab.depth.scaling.solvers import adam, levenberg_marquardt


# --- uncertainty and robustness ---------------------------------------------------------------
def bootstrap(data: pd.DataFrame, reference: Fit, *, n_resamples: int = 1000, seed: int = 0,
              n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """Resample the kept points with replacement (multinomial counts as weights) and refit each
    resample to convergence, warm-started at `reference`. One row per resample."""
    d = design(kept(data, n_excluded), reference.depth_offset)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(d.n, np.full(d.n, 1 / d.n), size=n_resamples).astype(float)
    thetas, ok = levenberg_marquardt(d, w, np.array(reference.extra["theta"]))
    out = pd.DataFrame(thetas, columns=PARAMS)
    out["converged"] = ok
    return out


def shape_bootstrap(data: pd.DataFrame, reference: Fit, *, n_resamples: int = 1000,
                    seed: int = 0, n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """The bootstrap over model shapes: the kept runs come from far fewer (width, depth) shapes
    than runs, and runs of one shape share its depth, so they are not independent evidence
    about α_ℓ. Resample the shapes with replacement, take every run of each drawn shape, refit
    to convergence. One row per resample."""
    points = kept(data, n_excluded)
    d = design(points, reference.depth_offset)
    shape = points.groupby(["m", "ell"]).ngroup().to_numpy()
    n_shapes = int(shape.max()) + 1
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_shapes, np.full(n_shapes, 1 / n_shapes), size=n_resamples)
    w = counts[:, shape].astype(float)  # a run's weight: how often its shape was drawn
    thetas, ok = levenberg_marquardt(d, w, np.array(reference.extra["theta"]))
    out = pd.DataFrame(thetas, columns=PARAMS)
    out["converged"] = ok
    out["depths_drawn"] = [int(len(np.unique(points["ell"].to_numpy()[w_ > 0]))) for w_ in w]
    return out


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap values (2.5th and 97.5th
    percentiles at 0.95)."""
    lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def cut_scan(data: pd.DataFrame, cuts=(1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100), *,
             steps: int = PAPER_STEPS, depth_offset: int = 0) -> pd.DataFrame:
    """α_ℓ (and every parameter) for each outlier cut, by both recipes, each batch in one solve."""
    d = design(data, depth_offset)
    w = np.stack([outlier_mask(d.loss, c) for c in cuts]).astype(float)
    paper = adam(d, w, PAPER_START, steps=steps)
    conv, ok = levenberg_marquardt(d, w, paper)
    rows = []
    for i, cut in enumerate(cuts):
        sub = Design(d.X[w[i] > 0], d.y[w[i] > 0], d.loss[w[i] > 0], depth_offset)
        for recipe, theta in (("paper", paper[i]), ("converged", conv[i])):
            se, _ = standard_errors(theta, sub)
            rows.append({"cut": cut, "n_points": int(w[i].sum()), "recipe": recipe,
                         **dict(zip(PARAMS, theta)), "alpha_l_se": float(se[4]),
                         "converged": bool(ok[i]) if recipe == "converged" else None})
    return pd.DataFrame(rows)


def held_out(data: pd.DataFrame, *, n_splits: int = 10, test_fraction: float = 0.2,
             seed: int = 0, n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """Random train/test splits of the kept points; converged fits on train of the full law and
    of the law without the depth term; test error of each. Does the depth term predict?"""
    d = design(kept(data, n_excluded))
    rng = np.random.default_rng(seed)
    test = np.zeros((n_splits, d.n), dtype=bool)
    for i in range(n_splits):
        test[i, rng.choice(d.n, int(round(test_fraction * d.n)), replace=False)] = True
    rows = []
    for model, free in (("with depth term", ALL_FREE), ("without depth term", NO_DEPTH_TERM)):
        start = PAPER_START.copy()
        if not free[1]:
            start[1] = _OFF
        theta, _ = levenberg_marquardt(d, (~test).astype(float), start, free=free)
        pred = predict(theta, d.X)
        for i in range(n_splits):
            for part, mask in (("train", ~test[i]), ("test", test[i])):
                err = np.log(d.loss[mask]) - np.log(pred[i, mask])
                rows.append({"split": i, "model": model, "part": part,
                             "mse_log_loss": float((err**2).mean()),
                             "rel_mae": float((np.abs(d.loss[mask] - pred[i, mask])
                                               / d.loss[mask]).mean()),
                             "alpha_l": float(theta[i, 4]) if free[1] else None})
    return pd.DataFrame(rows)


def identifiability(fit_: Fit, data: pd.DataFrame) -> dict[str, Any]:
    """Linearised diagnostics at the fit (statsmodels): the parameter correlation matrix, the
    variance inflation factor of each column of the Jacobian, and its condition number."""
    from statsmodels.stats.outliers_influence import variance_inflation_factor

    d = design(kept(data, fit_.extra.get("n_excluded", PAPER_EXCLUDED)), fit_.depth_offset)
    _, J = jacobian(np.array(fit_.extra["theta"])[None], d.X)
    J = J[0]
    cov = np.array(fit_.cov)
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    Js = (J - J.mean(0)) / J.std(0).clip(1e-300)  # centred and scaled: VIF of the slopes
    Js[:, 6] = 1.0  # L0's column is constant: it plays the intercept
    vif = {p: float(variance_inflation_factor(Js, i)) for i, p in enumerate(PARAMS) if i != 6}
    return {"corr": pd.DataFrame(corr, index=PARAMS, columns=PARAMS), "vif": vif,
            "condition_number": float(np.linalg.cond(J / np.linalg.norm(J, axis=0)))}


def adam_path(data: pd.DataFrame, checkpoints=(1_000, 5_000, 10_000, 20_000, 50_000, 100_000,
                                               200_000)) -> pd.DataFrame:
    """The paper recipe's parameters and objective after each number of Adam steps: how far
    50,000 steps are from the optimum of the same objective."""
    d = design(kept(data))
    w = np.ones((1, d.n))
    snaps = adam(d, w, PAPER_START, steps=max(checkpoints), record=tuple(checkpoints))[:, 0]
    out = pd.DataFrame(snaps, columns=PARAMS)
    out.insert(0, "steps", list(checkpoints))
    out["objective"] = objective(snaps, d, np.ones((len(snaps), d.n)))
    return out


def profile_alpha_l(data: pd.DataFrame, grid=np.linspace(0.5, 2.5, 41), *,
                    start: Fit | None = None, n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """Profile of the objective over α_ℓ: at each fixed α_ℓ every other parameter is refitted to
    convergence (one batched solve). The likelihood-ratio statistic n ln(RSS/RSS_min) of a
    Gaussian model in log loss gives the profile interval (χ²₁: 3.84 for 95 %)."""
    d = design(kept(data, n_excluded))
    grid = np.asarray(grid, dtype=float)
    theta0 = np.tile(np.array(start.extra["theta"]) if start else PAPER_START, (len(grid), 1))
    theta0[:, 4] = grid
    free = ALL_FREE.copy()
    free[4] = False
    theta, ok = levenberg_marquardt(d, np.ones((len(grid), d.n)), theta0, free=free)
    obj = objective(theta, d, np.ones((len(grid), d.n)))
    out = pd.DataFrame({"alpha_l": grid, "objective": obj, "converged": ok,
                        "ln_c_l": theta[:, 1], "alpha_m": theta[:, 3]})
    out["lr_stat"] = d.n * np.log(out["objective"] / out["objective"].min())
    return out


def profile_interval(profile: pd.DataFrame, threshold: float = 3.84) -> tuple[float, float]:
    """The α_ℓ range where the profile's likelihood-ratio statistic stays below `threshold`."""
    inside = profile.loc[profile["lr_stat"] <= threshold, "alpha_l"]
    return float(inside.min()), float(inside.max())
