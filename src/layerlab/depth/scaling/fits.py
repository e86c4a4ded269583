"""Chapter 01's fitted laws: the `Fit` record, the paper's Jacobian standard errors, `fit` by
either recipe (`paper` or `converged`), and two independent fits of the same law beside them
(scipy's MINPACK on the same objective, and a Huber loss).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from layerlab.depth.scaling.law import (
    DEPTH_UNIT,
    PAPER_EXCLUDED,
    PAPER_START,
    PAPER_STEPS,
    PARAMS,
    TOKEN_UNIT,
    Design,
    design,
    jacobian,
    kept,
    objective,
    predict,
)
from layerlab.depth.scaling.solvers import adam, levenberg_marquardt, multi_start


# --- results --------------------------------------------------------------------------------
@dataclass
class Fit:
    """A fitted law. `params` hold α's and L0 plus c's in the paper's units (c_ℓ for ℓ' = 100ℓ,
    c_D for D' = D/10^6); `raw` holds c_ℓ, c_D for ℓ in layers and D in tokens."""

    recipe: str
    params: dict[str, float]
    se: dict[str, float]
    n_points: int
    objective: float
    mae: float
    rel_mae: float
    depth_offset: int = 0
    raw: dict[str, float] = field(default_factory=dict)
    cov: list[list[float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def alpha_l(self) -> float:
        """The depth exponent α_ℓ, the number P1's depth claim is about (the same in the
        paper's units and in raw ones: rescaling ℓ changes only c_ℓ)."""
        return self.params["alpha_l"]

    def to_dict(self) -> dict[str, Any]:
        """Every field, for the results cache (JSON-ready: `cov` is nested lists, θ a list)."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Fit":
        """A Fit back from `to_dict`'s form, as a cached result stores it."""
        return cls(**d)


def standard_errors(theta: np.ndarray, d: Design) -> tuple[np.ndarray, np.ndarray]:
    """The paper's Jacobian SEs: r = L − L̂ (linear space), s² = Σ r² / (n − 7),
    Cov = s² (JᵀJ)⁻¹ with J = ∂r/∂θ. Returns (SE [7], Cov [7, 7])."""
    Lhat, J = jacobian(theta[None], d.X)
    r = d.loss - Lhat[0]
    s2 = (r**2).sum() / (d.n - 7)
    cov = s2 * np.linalg.inv(J[0].T @ J[0])
    return np.sqrt(np.diag(cov)), cov


def summarise(theta: np.ndarray, d: Design, recipe: str, **extra: Any) -> Fit:
    """The Fit of one parameter vector θ (`PARAMS` order, paper's units) on `d`: the c's
    exponentiated and also in raw units, the paper's Jacobian SEs and covariance, the objective
    and the mean absolute and relative error in loss; θ and `extra` go to `Fit.extra`."""
    se, cov = standard_errors(theta, d)
    Lhat = predict(theta, d.X)[0]
    ln_c = dict(zip(("c_m", "c_l", "c_D"), theta[:3]))
    params = {"c_m": float(np.exp(ln_c["c_m"])), "c_l": float(np.exp(ln_c["c_l"])),
              "c_D": float(np.exp(ln_c["c_D"])), "alpha_m": float(theta[3]),
              "alpha_l": float(theta[4]), "alpha_D": float(theta[5]), "L0": float(theta[6])}
    ses = dict(zip(PARAMS, map(float, se)))
    raw = {"c_m": params["c_m"], "c_l": params["c_l"] / DEPTH_UNIT ** params["alpha_l"],
           "c_D": params["c_D"] * TOKEN_UNIT ** params["alpha_D"]}
    return Fit(recipe=recipe, params=params,
               se={"alpha_m": ses["alpha_m"], "alpha_l": ses["alpha_l"], "alpha_D": ses["alpha_D"],
                   "L0": ses["L0"], "ln_c_m": ses["ln_c_m"], "ln_c_l": ses["ln_c_l"],
                   "ln_c_D": ses["ln_c_D"]},
               n_points=d.n, objective=float(objective(theta, d, np.ones((1, d.n)))[0]),
               mae=float(np.abs(d.loss - Lhat).mean()),
               rel_mae=float((np.abs(d.loss - Lhat) / d.loss).mean()),
               depth_offset=d.depth_offset, raw=raw, cov=cov.tolist(),
               extra={"theta": theta.tolist(), **extra})


def fit(data: pd.DataFrame, recipe: str = "paper", *, n_excluded: int = PAPER_EXCLUDED,
        depth_offset: int = 0, steps: int = PAPER_STEPS, n_starts: int = 16,
        seed: int = 0, dtype=np.float32) -> Fit:
    """Fit the law to the points kept after the outlier cut (see the module docstring)."""
    points = kept(data, n_excluded)
    if len(points) < 10:
        raise ValueError(f"only {len(points)} points left after excluding {n_excluded}")
    d = design(points, depth_offset)
    w = np.ones((1, d.n))
    if recipe == "paper":
        theta = adam(d, w, PAPER_START, steps=steps, dtype=dtype)[0]
        return summarise(theta, d, "paper", steps=steps, n_excluded=n_excluded,
                         dtype=np.dtype(dtype).name)
    if recipe == "converged":
        starts = multi_start(n_starts, seed)
        thetas, ok = levenberg_marquardt(d, np.ones((n_starts, d.n)), starts)
        objs = objective(thetas, d, np.ones((n_starts, d.n)))
        best = int(np.argmin(objs))
        if not ok[best]:
            raise RuntimeError("the best of the starts is not a converged fit; raise max_iter")
        same = ok & (objs <= objs[best] * (1 + 1e-8) + 1e-18)
        return summarise(thetas[best], d, "converged", n_excluded=n_excluded, n_starts=n_starts,
                         starts_converged=int(ok.sum()), starts_at_best=int(same.sum()),
                         alpha_l_at_best_starts=thetas[same, 4].tolist())
    raise ValueError(f"unknown recipe {recipe!r}; use 'paper' or 'converged'")


def fit_scipy(data: pd.DataFrame, start: Fit, *, n_excluded: int = PAPER_EXCLUDED) -> Fit:
    """An independent check of the converged fit: scipy's Levenberg–Marquardt (MINPACK) on the
    same residuals, with tolerances tight enough to reach the same stationary point."""
    from scipy.optimize import least_squares

    d = design(kept(data, n_excluded), start.depth_offset)
    sol = least_squares(lambda th: d.y - np.log(predict(th, d.X)[0]),
                        np.array(start.extra["theta"]) + 0.05, method="lm",
                        xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=20_000)
    return summarise(sol.x, d, "scipy least_squares (LM)", n_excluded=n_excluded,
                     scipy_status=int(sol.status))


def fit_huber(data: pd.DataFrame, start: Fit, *, delta: float = 1e-3,
              n_excluded: int = PAPER_EXCLUDED) -> Fit:
    """The same law fitted with a Huber loss (δ = 10⁻³) on the log-loss residuals, the choice of
    Hoffmann et al. and of Besiroglu et al.'s Chinchilla replication: large residuals count
    linearly, so a few badly fitted runs pull the exponents less. scipy's trust-region solver,
    started at the converged least-squares fit and at the authors' start; the better objective
    wins."""
    from scipy.optimize import least_squares

    d = design(kept(data, n_excluded), start.depth_offset)

    def residual(th):
        return d.y - np.log(np.clip(predict(th, d.X)[0], 1e-12, None))

    best = None
    for theta0 in (np.array(start.extra["theta"]), PAPER_START.astype(float)):
        sol = least_squares(residual, theta0, loss="huber", f_scale=delta, method="trf",
                            xtol=1e-14, ftol=1e-14, gtol=1e-14, max_nfev=20_000)
        if best is None or sol.cost < best.cost:
            best = sol
    return summarise(best.x, d, f"Huber (δ = {delta:g}) on log loss", n_excluded=n_excluded,
                     huber_delta=delta, scipy_status=int(best.status),
                     huber_cost=float(best.cost))
