"""Chapter 04's exponents: α_ℓ fitted to a sweep's losses over student depths, the local slopes
between consecutive depths, the t intervals the verdicts take over teacher seeds, and the
analytic warm-up (ensemble averaging's 1/ℓ, Euler integration's 1/ℓ²) the sweeps are read
against."""

from __future__ import annotations

import math

import numpy as np

from layerlab.claims import Estimate


def fit_alpha(depths, losses) -> tuple[float, float]:
    """α_ℓ from least squares of log loss on log depth (no floor: the teacher is realisable),
    with its standard error; P1's procedure as reconstructed in research/paper1.md §5.3."""
    x = np.log(np.asarray(depths, dtype=float))
    y = np.log(np.asarray(losses, dtype=float))
    A = np.column_stack([np.ones_like(x), x])
    coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
    n = len(x)
    if n > 2:
        s2 = float(((y - A @ coef) ** 2).sum()) / (n - 2)
        se = math.sqrt(s2 * np.linalg.inv(A.T @ A)[1, 1])
    else:
        se = float("nan")
    return float(-coef[1]), se


def t_interval(point: float, se: float, df: float) -> Estimate | None:
    """`point` ± the 97.5 % t quantile × `se` (None without a finite SE or a degree of freedom)."""
    from scipy import stats

    if not (np.isfinite(point) and np.isfinite(se) and df >= 1):
        return None
    half = float(stats.t.ppf(0.975, df)) * float(se)
    return Estimate(float(point), float(point) - half, float(point) + half)


def mean_interval(values) -> Estimate | None:
    """The mean with its t interval over independent values (None below two)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return None
    return t_interval(float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))), len(v) - 1)


def local_slopes(depths, losses) -> list[dict[str, float]]:
    """−Δlog loss / Δlog ℓ for each consecutive pair of student depths: where a single power
    law over all depths bends, these show it (the exponent at the deep end is P1's regime)."""
    d = np.asarray(depths, dtype=float)
    y = np.log(np.asarray(losses, dtype=float))
    return [{"from": int(d[i]), "to": int(d[i + 1]),
             "slope": float(-(y[i + 1] - y[i]) / (np.log(d[i + 1]) - np.log(d[i])))}
            for i in range(len(d) - 1)]


def euler_error(depths, *, seed: int = 0) -> list[float]:
    """Squared error of ℓ Euler steps for a smooth linear flow h' = A h over unit time: ∝ 1/ℓ²."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((8, 8)) / math.sqrt(8)
    h0 = rng.standard_normal(8)
    evals, evecs = np.linalg.eig(A)
    exact = np.real(evecs @ np.diag(np.exp(evals)) @ np.linalg.solve(evecs, h0))
    out = []
    for ell in depths:
        h = h0.copy()
        for _ in range(ell):
            h = h + A @ h / ell
        out.append(float(((h - exact) ** 2).sum()))
    return out


def averaging_error(depths, *, trials: int = 4000, seed: int = 0) -> list[float]:
    """Mean squared error of the average of ℓ independent noisy estimates: ∝ 1/ℓ."""
    rng = np.random.default_rng(seed)
    return [float((rng.standard_normal((trials, ell)).mean(1) ** 2).mean()) for ell in depths]
