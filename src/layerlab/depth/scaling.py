"""P1's decomposed scaling law fitted to Chinchilla's training runs (Fig. 2f, App. B):

    L(m, ℓ, D) = c_m / m^α_m + c_ℓ / ℓ^α_ℓ + c_D / D^α_D + L0

Two recipes solve the same objective, 100 × mean (ln L − ln L̂)² over the points kept after the
outlier cut:

- `paper`: the authors' procedure exactly (`liuyz0/DepthScaling`, `Scaling/fit-5.ipynb`): their
  units (ℓ' = 100 ℓ, D' = D / 10^6), Adam for 50,000 full-batch steps from their fixed start with
  their per-parameter learning rates, Jacobian standard errors from linear-space residuals.
- `converged`: Levenberg–Marquardt run to convergence from several starts.

All solvers are batched: B fits at once, each with its own weight per point (weights 0/1 select
subsets, multinomial counts make bootstrap resamples), so a 1000-resample bootstrap, an outlier-
cut scan or a set of held-out splits is one vectorised solve.

Used by chapters 01 and 11.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from layerlab import claims, paper, paths
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS

PARAMS = ("ln_c_m", "ln_c_l", "ln_c_D", "alpha_m", "alpha_l", "alpha_D", "L0")
DEPTH_UNIT = 100.0  # the paper fits ℓ' = 100 ℓ ...
TOKEN_UNIT = 1e6  # ... and D' = D / 10^6 (m stays raw)
PAPER_START = np.array([np.log(200.0), np.log(200.0), np.log(10.0), 1.0, 1.0, 0.33, 1.69])
PAPER_LR = np.array([5e-3, 5e-3, 5e-3, 5e-4, 5e-4, 5e-4, 5e-3])
PAPER_STEPS = 50_000
PAPER_EXCLUDED = 40  # points at or above the 40th-largest loss are dropped: 203 of 245 remain
ALL_FREE = np.ones(7, dtype=bool)
NO_DEPTH_TERM = np.array([True, False, True, True, False, True, True])
_OFF = -60.0  # ln c_ℓ for a switched-off depth term (exp(-60) ≈ 1e-26)


# --- data -----------------------------------------------------------------------------------
def load_chinchilla() -> pd.DataFrame:
    """The 245 Chinchilla runs (Epoch AI's extraction, with P1's width/depth per run).

    Columns: N (parameters), C (FLOP), loss, D = C / (6N) tokens, m (d_model), ell (layers).
    """
    raw = pd.read_csv(paths.data_dir() / "get_fitting_data_chinchilla.csv")
    data = pd.DataFrame({
        "N": raw["model_size"], "C": raw["FLOP"], "loss": raw["loss"],
        "D": raw["num_tokens"], "m": raw["d_model"].astype(int), "ell": raw["n_layers"].astype(int),
    })
    if len(data) != 245 or not np.allclose(data["D"], data["C"] / (6 * data["N"]), rtol=1e-9):
        raise ValueError("get_fitting_data_chinchilla.csv is not the expected 245-run file")
    return data


def outlier_mask(loss: np.ndarray, n_excluded: int = PAPER_EXCLUDED) -> np.ndarray:
    """Keep points whose loss is strictly below the `n_excluded`-th largest loss (the paper's
    rule; ties with it are dropped too). `n_excluded=0` keeps everything."""
    loss = np.asarray(loss, dtype=float)
    if n_excluded <= 0:
        return np.ones(loss.shape, dtype=bool)
    threshold = np.sort(loss)[::-1][n_excluded - 1]
    return loss < threshold


@dataclass(frozen=True)
class Design:
    """Log features in the paper's units and log loss, for one set of points."""

    X: np.ndarray  # [n, 3]: ln m, ln ℓ', ln D'
    y: np.ndarray  # [n]: ln loss
    loss: np.ndarray  # [n]
    depth_offset: int = 0

    @property
    def n(self) -> int:
        """Number of runs: the n of the SEs' s² = Σ r² / (n − 7)."""
        return len(self.y)


def design(data: pd.DataFrame, depth_offset: int = 0) -> Design:
    """`depth_offset=2` is P1's ℓ−2 variant (first and last block not counted)."""
    ell = data["ell"].to_numpy(float) - depth_offset
    if (ell <= 0).any():
        raise ValueError(f"depth_offset={depth_offset} leaves non-positive depths")
    X = np.column_stack([np.log(data["m"].to_numpy(float)), np.log(DEPTH_UNIT * ell),
                         np.log(data["D"].to_numpy(float) / TOKEN_UNIT)])
    loss = data["loss"].to_numpy(float)
    return Design(X=X, y=np.log(loss), loss=loss, depth_offset=depth_offset)


# --- the model and its derivatives (batched over B parameter vectors) ------------------------
def terms(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Width, depth and data terms, shape [B, n, 3]."""
    theta = np.atleast_2d(theta)
    log_c, alpha = theta[:, :3], theta[:, 3:6]
    return np.exp(log_c[:, None, :] - alpha[:, None, :] * X[None, :, :])


def predict(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """L̂, shape [B, n]."""
    theta = np.atleast_2d(theta)
    return terms(theta, X).sum(-1) + theta[:, 6:7]


def jacobian(theta: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L̂ [B, n] and ∂L̂/∂θ [B, n, 7] (linear loss space)."""
    t = terms(theta, X)
    J = np.concatenate([t, -t * X[None], np.ones(t.shape[:2] + (1,), dtype=t.dtype)], axis=-1)
    return t.sum(-1) + np.atleast_2d(theta)[:, 6:7], J


def objective(theta: np.ndarray, d: Design, w: np.ndarray) -> np.ndarray:
    """100 × weighted mean of (ln L − ln L̂)², shape [B]; NaN-safe (bad regions give inf)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rho = d.y[None] - np.log(predict(theta, d.X))
        value = 100 * (w * rho**2).sum(-1) / w.sum(-1)
    return np.where(np.isfinite(value), value, np.inf)


def _log_residual_and_jacobian(theta, d: Design):
    Lhat, J = jacobian(theta, d.X)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = d.y[None] - np.log(Lhat)
    return rho, J / Lhat[..., None]  # ∂ ln L̂ / ∂θ


# --- solvers --------------------------------------------------------------------------------
def adam(d: Design, w: np.ndarray, theta0: np.ndarray, *, steps: int = PAPER_STEPS,
         lr: np.ndarray = PAPER_LR, free: np.ndarray = ALL_FREE, betas=(0.9, 0.999),
         eps: float = 1e-8, dtype=np.float32, record: tuple[int, ...] = ()) -> np.ndarray:
    """Full-batch Adam on the objective with PyTorch's update rule, B fits at once.

    float32 by default, as the authors' PyTorch run: in this flat valley the precision moves
    α_ℓ in the third digit (float64 stops at 1.196 instead of 1.201), which the chapter shows.
    With `record`, returns the parameters after each listed step instead, shape [len, B, 7].
    """
    X, y = d.X.astype(dtype), d.y.astype(dtype)
    dd = Design(X=X, y=y, loss=d.loss.astype(dtype), depth_offset=d.depth_offset)
    w = w.astype(dtype)
    theta = np.array(np.broadcast_to(theta0, (w.shape[0], 7)), dtype=dtype)
    lr, free = np.asarray(lr, dtype=dtype), np.asarray(free, dtype=dtype)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    scale = dtype(200.0) / w.sum(-1, keepdims=True)  # d/dθ of 100 Σwρ²/Σw = −200 ΣwρJ/Σw
    b1, b2 = dtype(betas[0]), dtype(betas[1])
    snapshots = []
    for step in range(1, steps + 1):
        rho, J = _log_residual_and_jacobian(theta, dd)
        grad = -scale * np.einsum("bn,bnk->bk", w * rho, J) * free
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad**2
        theta -= lr * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + dtype(eps))
        if step in record:
            snapshots.append(theta.astype(float))
    return np.stack(snapshots) if record else theta.astype(float)


def levenberg_marquardt(d: Design, w: np.ndarray, theta0: np.ndarray, *,
                        free: np.ndarray = ALL_FREE, max_iter: int = 500,
                        rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares in log space, to convergence, B fits at once.

    Returns the parameters [B, 7] and a flag per fit: True where the Gauss–Newton step from the
    final point would lower the objective by less than `rtol` of its value (a stationary point),
    False where the fit stalled elsewhere or `max_iter` ran out.
    """
    B = w.shape[0]
    theta = np.array(np.broadcast_to(theta0, (B, 7)), dtype=float)
    obj = objective(theta, d, w)
    lam = np.full(B, 1e-3)
    active = np.isfinite(obj)
    fixed = np.diag((~free).astype(float))  # keeps the system regular for fixed parameters
    for _ in range(max_iter):
        idx = np.flatnonzero(active)  # converged fits drop out: later iterations get cheaper
        if idx.size == 0:
            break
        A, g = _normal_equations(theta[idx], d, w[idx], free)
        diag = np.einsum("bii->bi", A)
        delta = _solve(A + lam[idx, None, None] * (diag[:, :, None] * np.eye(7)) + fixed, g)
        trial_obj = objective(theta[idx] + delta, d, w[idx])
        better = trial_obj < obj[idx]
        gain = np.where(better, (obj[idx] - trial_obj) / np.maximum(obj[idx], 1e-300), 0.0)
        theta[idx[better]] += delta[better]
        obj[idx[better]] = trial_obj[better]
        lam[idx] = np.where(better, np.maximum(lam[idx] * 0.3, 1e-12),
                            np.minimum(lam[idx] * 10, 1e16))
        active[idx] = ~((better & (gain < 1e-14)) | (lam[idx] >= 1e16))
    A, g = _normal_equations(theta, d, w, free)
    predicted = np.einsum("bi,bi->b", g, _solve(A + fixed, g))  # GN decrease of Σ w ρ²
    total = (obj / 100) * w.sum(-1)
    # relative to the objective, with an absolute floor for (near-)exact fits where it is ~0
    converged = np.isfinite(obj) & (predicted <= rtol * total + 1e-20 * w.sum(-1))
    return theta, converged


def _normal_equations(theta, d: Design, w, free):
    rho, J = _log_residual_and_jacobian(theta, d)
    J = J * free
    JW = J * w[..., None]
    return np.matmul(JW.transpose(0, 2, 1), J), np.einsum("bni,bn->bi", JW, rho)


def _solve(A: np.ndarray, g: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        try:
            return np.linalg.solve(A, g[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a degenerate resample; the pseudo-inverse still steps
            return np.einsum("bij,bj->bi", np.linalg.pinv(A), g)


def multi_start(n_starts: int, seed: int = 0) -> np.ndarray:
    """The paper's start plus `n_starts − 1` random ones around it (exponents in [0.3, 2])."""
    rng = np.random.default_rng(seed)
    starts = np.tile(PAPER_START, (n_starts, 1))
    starts[1:, :3] += rng.uniform(-3, 3, size=(n_starts - 1, 3))
    starts[1:, 3:6] = rng.uniform(0.3, 2.0, size=(n_starts - 1, 3))
    starts[1:, 6] = rng.uniform(1.0, 2.0, size=n_starts - 1)
    return starts


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


def kept(data: pd.DataFrame, n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """The runs left after the outlier cut (`outlier_mask`), re-indexed from 0: 203 of the
    245 at the paper's cut."""
    return data[outlier_mask(data["loss"].to_numpy(), n_excluded)].reset_index(drop=True)


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


# --- what the fit implies ---------------------------------------------------------------------
def parts(fit_: Fit, data: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2f: for every point, its loss minus the other fitted terms and L0 ("depth part",
    and likewise the width and data parts), beside the fitted term itself."""
    d = design(data, fit_.depth_offset)
    theta = np.array(fit_.extra["theta"])
    t = terms(theta, d.X)[0]
    resid = d.loss - t.sum(-1) - theta[6]
    out = data[["m", "ell", "D", "loss"]].copy()
    for i, name in enumerate(("width", "depth", "data")):
        out[f"{name}_part"] = resid + t[:, i]
        out[f"{name}_term"] = t[:, i]
    return out


def size_exponent(alpha_m: float, alpha_l: float) -> float:
    """Exponent of N in the width+depth loss at the optimal shape, N = 12 m² ℓ fixed:
    the optimum scales as N^(−α_m α_ℓ / (α_m + 2 α_ℓ)); N^(−1/3) when both exponents are 1."""
    return -alpha_m * alpha_l / (alpha_m + 2 * alpha_l)


def optimal_shape(fit_: Fit, N: np.ndarray) -> pd.DataFrame:
    """Width and depth minimising c_m/m^α_m + c_ℓ/ℓ^α_ℓ at N = 12 m² ℓ non-embedding parameters
    (closed form: α_m c_m m^−α_m = 2 α_ℓ c_ℓ ℓ^−α_ℓ at the optimum)."""
    a, b = fit_.params["alpha_m"], fit_.params["alpha_l"]
    c_m, c_l = fit_.raw["c_m"], fit_.raw["c_l"]
    N = np.asarray(N, dtype=float)
    m = (a * c_m / (2 * b * c_l) * (N / 12) ** b) ** (1 / (a + 2 * b))
    ell = N / (12 * m**2)
    return pd.DataFrame({"N": N, "m": m, "ell": ell, "aspect": m / ell,
                         "width_term": c_m / m**a, "depth_term": c_l / ell**b})


def chinchilla_shapes(data: pd.DataFrame) -> pd.DataFrame:
    """The distinct (m, ℓ) configurations Chinchilla trained, with N = 12 m² ℓ and m/ℓ."""
    shapes = data[["m", "ell"]].drop_duplicates().sort_values(["m", "ell"]).reset_index(drop=True)
    shapes["N"] = 12.0 * shapes["m"] ** 2 * shapes["ell"]
    shapes["aspect"] = shapes["m"] / shapes["ell"]
    return shapes


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


# --- the paper's numbers and the verdicts -----------------------------------------------------
# As reported by the authors' notebook outputs (liuyz0/DepthScaling, Scaling/fit-5.ipynb and
# fit-8.ipynb at commit 07360e3) and the paper's headline. Shown only as "paper reported"; the
# bands the verdicts use are declared in `layerlab.depth.declarations` (VERDICTS.md §3).
PAPER_REPORTED = {**paper.P1_FIT.value, "headline_alpha_l": paper.P1_ALPHA_L.value,
                  "headline_pm": paper.P1_ALPHA_L_PM.value}
# the headline's band, as declared (the paper's 95 % interval: 1.2 ± 1.96 × 0.3), for charts
HEADLINE_BAND = (DECLARATIONS["P1-C4-headline"].band.lo, DECLARATIONS["P1-C4-headline"].band.hi)


def compare_with_paper(paper_fit: Fit) -> pd.DataFrame:
    """Our run of the authors' recipe beside their reported values, parameter by parameter."""
    p, se = paper_fit.params, paper_fit.se
    ours = {"n_points": paper_fit.n_points, "alpha_l": p["alpha_l"], "alpha_l_se": se["alpha_l"],
            "alpha_m": p["alpha_m"], "alpha_m_se": se["alpha_m"], "alpha_D": p["alpha_D"],
            "alpha_D_se": se["alpha_D"], "L0": p["L0"], "L0_se": se["L0"], "c_m": p["c_m"],
            "c_l": p["c_l"], "c_D": p["c_D"], "objective": paper_fit.objective,
            "mae": paper_fit.mae, "rel_mae": paper_fit.rel_mae}
    rows = [{"quantity": k, "paper reported": PAPER_REPORTED[k], "ours": v,
             "difference": v - PAPER_REPORTED[k]} for k, v in ours.items()]
    return pd.DataFrame(rows).set_index("quantity")


CHAPTER = "01_depth_scaling_law"
UNIT = "Chinchilla (Epoch AI extraction, the authors' kept runs)"  # the one unit in scope


def _interval(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return percentile_interval(values) if len(values) else (float("nan"), float("nan"))


def _intervals(boot: pd.DataFrame) -> tuple[float, float, float]:
    ok = boot[boot["converged"]]
    lo, hi = _interval(ok["alpha_l"].to_numpy())
    return lo, hi, float(ok["alpha_l"].std())


def _rerun_precondition(fit_: Fit, *, depth_offset: int = 0) -> str | None:
    """Is this the authors' recipe on the authors' 203 points? (None when it is.)"""
    cut = fit_.extra.get("n_excluded", PAPER_EXCLUDED)
    steps = fit_.extra.get("steps", PAPER_STEPS)
    if cut != PAPER_EXCLUDED:
        return f"the cut excludes {cut} points, not the paper's {PAPER_EXCLUDED}"
    if fit_.n_points != PAPER_REPORTED["n_points"]:
        return (f"the cut kept {fit_.n_points} points, not the paper's "
                f"{PAPER_REPORTED['n_points']}: not the authors' data")
    if fit_.recipe != "paper" or steps != PAPER_STEPS:
        return (f"the fit is the {fit_.recipe!r} recipe with {steps:,} Adam steps, not the "
                f"authors' {PAPER_STEPS:,}")
    if fit_.depth_offset != depth_offset:
        return f"the fit counts depth as ℓ − {fit_.depth_offset}, not ℓ − {depth_offset}"
    return None


def _shape_unit(decl, point: float, values: np.ndarray, what: str,
                secondary: dict | None = None):
    """One unit from a statistic's shape-bootstrap values: its 95 % interval beside the converged
    point, with the declared precondition (converged resamples; an interval narrower than the
    band, unless it already lies clear of it)."""
    lo, hi = _interval(values)
    if not np.isfinite(lo):
        return Unit(name=UNIT, primary=None,
                    precondition="no shape-bootstrap resample converged")
    est = Estimate(float(point), lo, hi)
    band = decl.band
    pre = None
    if hi - lo > band.hi - band.lo and band.test(est) != "fail":
        pre = (f"the 95 % interval over shapes for {what} [{lo:.3f}, {hi:.3f}] is wider than the "
               f"band {band.text('.3g')}: these data cannot place it inside the band")
    return Unit(name=UNIT, primary=est, precondition=pre, secondary=secondary or {})


def _decided(claim_id: str, units: list[Unit], *, ours: str, setting: str,
             numbers: dict | None = None) -> claims.Claim:
    """The one decision procedure (`claims.decide`) on the claim's declaration and units."""
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def assess_outlier_cut(paper_fit: Fit, setting: str):
    """P1-C1: the paper's cut keeps 203 of 245 runs (a count: exact)."""
    cut = paper_fit.extra.get("n_excluded", PAPER_EXCLUDED)
    pre = None if cut == PAPER_EXCLUDED else f"the cut excludes {cut}, not the paper's 40"
    unit = Unit(name=UNIT, primary=Estimate.exact(float(paper_fit.n_points)), precondition=pre)
    return _decided("P1-C1-outlier-cut", [unit], ours=f"{paper_fit.n_points} points kept",
                    setting=setting, numbers={"n_points": paper_fit.n_points, "excluded": cut})


def assess_paper_recipe(paper_fit: Fit, setting: str):
    """P1-C2: the authors' recipe re-run gives their α_ℓ and its SE (to the printed precision)."""
    p, se = paper_fit.params, paper_fit.se
    R = PAPER_REPORTED
    unit = Unit(name=UNIT, primary=Estimate.exact(p["alpha_l"]),
                precondition=_rerun_precondition(paper_fit),
                secondary={"standard error": Estimate.exact(se["alpha_l"])})
    return _decided("P1-C2-alpha-l-paper-recipe", [unit],
                    ours=f"{p['alpha_l']:.4f} ± {se['alpha_l']:.4f} (Δ from the authors' output "
                         f"{p['alpha_l'] - R['alpha_l']:+.4f}, SE {se['alpha_l'] - R['alpha_l_se']:+.4f})",
                    setting=setting, numbers={"alpha_l": p["alpha_l"], "se": se["alpha_l"],
                                              "n_points": paper_fit.n_points})


def assess_other_exponents(paper_fit: Fit, setting: str):
    """P1-C3: α_m (primary), α_D and L0 of the same re-run."""
    p = paper_fit.params
    unit = Unit(name=UNIT, primary=Estimate.exact(p["alpha_m"]),
                precondition=_rerun_precondition(paper_fit),
                secondary={"alpha_D": Estimate.exact(p["alpha_D"]), "L0": Estimate.exact(p["L0"])})
    return _decided("P1-C3-other-exponents", [unit],
                    ours=f"α_m {p['alpha_m']:.4f}, α_D {p['alpha_D']:.4f}, L0 {p['L0']:.4f}",
                    setting=setting, numbers={k: p[k] for k in ("alpha_m", "alpha_D", "L0")})


def assess_headline(converged: Fit, boot: pd.DataFrame, shape_boot: pd.DataFrame,
                    scan: pd.DataFrame, huber: Fit, setting: str):
    """P1-C4: α_ℓ = 1.2 ± 0.3, the ± a standard error, so the paper's 95 % interval 1.2 ± 0.588
    is the band; the converged fit's 95 % interval over model shapes must lie inside it. The
    per-run bootstrap, the Huber fit and the outlier cuts are shown beside it."""
    lo, hi, sd = _intervals(boot)
    ok_s = shape_boot[shape_boot["converged"]]
    slo, shi = _interval(ok_s["alpha_l"].to_numpy())
    ssd = float(ok_s["alpha_l"].std())
    near = scan[(scan["recipe"] == "converged") & scan["cut"].between(20, 60)]
    decl = DECLARATIONS["P1-C4-headline"]
    unit = _shape_unit(decl, converged.alpha_l, ok_s["alpha_l"].to_numpy(), "α_ℓ")
    return _decided(
        "P1-C4-headline", [unit],
        ours=f"converged {converged.alpha_l:.2f}; bootstrap over shapes 95 % [{slo:.2f}, "
             f"{shi:.2f}] (over runs [{lo:.2f}, {hi:.2f}]); Huber {huber.alpha_l:.2f}; cuts "
             f"20–60: {near['alpha_l'].min():.2f}–{near['alpha_l'].max():.2f}",
        setting=setting,
        numbers={"converged": converged.alpha_l, "boot_lo": lo, "boot_hi": hi, "boot_sd": sd,
                 "shape_lo": slo, "shape_hi": shi, "shape_sd": ssd, "huber": huber.alpha_l,
                 "cuts_min": float(near["alpha_l"].min()),
                 "cuts_max": float(near["alpha_l"].max()),
                 "shape_converged": int(len(ok_s)), "shape_resamples": int(len(shape_boot)),
                 "band_lo": decl.band.lo, "band_hi": decl.band.hi})


def assess_ensemble(boot: pd.DataFrame, shape_boot: pd.DataFrame, setting: str,
                    converged: Fit | None = None):
    """P1-C5: α_ℓ ≈ 1 (ensemble averaging) rather than ≥ 2 (procedural): the converged α_ℓ's
    interval over shapes against a band ending halfway to 2. Without `converged` the point is
    the median of the shape resamples (the interval alone decides)."""
    lo, hi, _ = _intervals(boot)
    ok_s = shape_boot[shape_boot["converged"]]
    values = ok_s["alpha_l"].to_numpy()
    slo, shi = _interval(values)
    point = converged.alpha_l if converged is not None else float(np.median(values)) if len(
        values) else float("nan")
    unit = _shape_unit(DECLARATIONS["P1-C5-ensemble-not-procedural"], point, values, "α_ℓ")
    return _decided("P1-C5-ensemble-not-procedural", [unit],
                    ours=f"bootstrap over shapes 95 % [{slo:.2f}, {shi:.2f}]; over runs "
                         f"[{lo:.2f}, {hi:.2f}]",
                    setting=setting,
                    numbers={"boot_lo": lo, "boot_hi": hi, "shape_lo": slo, "shape_hi": shi,
                             "point": point})


def assess_minus_two(minus2: Fit, setting: str):
    """P1-C6: the ℓ − 2 variant of the authors' recipe (to the printed precision)."""
    R = PAPER_REPORTED
    unit = Unit(name=UNIT, primary=Estimate.exact(minus2.alpha_l),
                precondition=_rerun_precondition(minus2, depth_offset=2),
                secondary={"standard error": Estimate.exact(minus2.se["alpha_l"])})
    return _decided("P1-C6-minus-two-variant", [unit],
                    ours=f"{minus2.alpha_l:.3f} ± {minus2.se['alpha_l']:.3f} (Δ from the "
                         f"authors' output {minus2.alpha_l - R['alpha_l_minus2']:+.4f})",
                    setting=setting, numbers={"alpha_l": minus2.alpha_l,
                                              "se": minus2.se["alpha_l"]})


def assess_size_exponent(converged: Fit, setting: str, shape_boot: pd.DataFrame | None = None):
    """P1-C7: the model-size exponent α_m α_ℓ / (α_m + 2 α_ℓ) at the optimal shape (1/3 for unit
    exponents) with the growth exponent of the optimal m/ℓ as secondary (0 when m ∝ ℓ), both with
    intervals over model shapes. Without `shape_boot` there is no interval: not testable."""
    a, b = converged.params["alpha_m"], converged.params["alpha_l"]
    size_exp = -size_exponent(a, b)
    aspect = (b - a) / (a + 2 * b)
    numbers = {"size_exponent": size_exp, "aspect_exponent": aspect}
    if shape_boot is None:
        unit = Unit(name=UNIT, primary=None, precondition="no bootstrap over shapes given")
        ours = f"N^(−{size_exp:.3f}) from the converged exponents"
    else:
        ok = shape_boot[shape_boot["converged"]]
        am, al = ok["alpha_m"].to_numpy(float), ok["alpha_l"].to_numpy(float)
        sizes, aspects = am * al / (am + 2 * al), (al - am) / (am + 2 * al)
        alo, ahi = _interval(aspects)
        unit = _shape_unit(DECLARATIONS["P1-C7-size-exponent"], size_exp, sizes,
                           "the size exponent",
                           secondary={"m ∝ ℓ": Estimate(aspect, alo, ahi)} if np.isfinite(alo)
                           else {})
        slo, shi = _interval(sizes)
        ours = (f"N^(−{size_exp:.3f}) from the converged exponents, 95 % over shapes "
                f"[{slo:.3f}, {shi:.3f}]; optimal m/ℓ ∝ N^{aspect:.3f} [{alo:.3f}, {ahi:.3f}]")
        numbers |= {"size_lo": slo, "size_hi": shi, "aspect_lo": alo, "aspect_hi": ahi}
    return _decided("P1-C7-size-exponent", [unit], ours=ours, setting=setting, numbers=numbers)


def assess(paper_fit: Fit, converged: Fit, boot: pd.DataFrame, scan: pd.DataFrame,
           minus2: Fit, setting: str, *, shape_boot: pd.DataFrame, huber: Fit) -> list:
    """The chapter's claims, each from its own function and decided by `claims.decide` against
    its declaration (`layerlab.depth.declarations`)."""
    return [assess_outlier_cut(paper_fit, setting), assess_paper_recipe(paper_fit, setting),
            assess_other_exponents(paper_fit, setting),
            assess_headline(converged, boot, shape_boot, scan, huber, setting),
            assess_ensemble(boot, shape_boot, setting, converged),
            assess_minus_two(minus2, setting),
            assess_size_exponent(converged, setting, shape_boot)]


def parts_by_cut(data: pd.DataFrame, scan: pd.DataFrame, recipe: str = "converged") -> pd.DataFrame:
    """Fig. 2f's depth part for the points kept at each outlier cut, under that cut's own fit
    (long format: cut, ell, depth_part, depth_term), for the interactive cut slider."""
    frames = []
    for _, row in scan[scan["recipe"] == recipe].iterrows():
        theta = row[list(PARAMS)].to_numpy(float)
        points = kept(data, int(row["cut"]))
        fit_ = Fit(recipe, {}, {}, len(points), 0.0, 0.0, 0.0, extra={"theta": theta.tolist()})
        part = parts(fit_, points)[["ell", "m", "D", "loss", "depth_part", "depth_term"]]
        part.insert(0, "cut", int(row["cut"]))
        part["alpha_l"] = theta[4]
        frames.append(part)
    return pd.concat(frames, ignore_index=True)


def recipes_table(fits: dict[str, Fit]) -> pd.DataFrame:
    """Parameters (± SE) and fit quality of several fits side by side."""
    rows = {}
    for label, f in fits.items():
        col = {k: f"{f.params[k]:.4f} ± {f.se[k]:.4f}" for k in ("alpha_l", "alpha_m", "alpha_D", "L0")}
        col |= {"c_m": f"{f.params['c_m']:.2f}", "c_l (ℓ' = 100ℓ)": f"{f.params['c_l']:.2f}",
                "c_D (D' = D/1e6)": f"{f.params['c_D']:.4f}", "objective": f"{f.objective:.7f}",
                "mean |residual|": f"{f.mae:.4f}", "points": f.n_points}
        rows[label] = col
    return pd.DataFrame(rows)


def held_out_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (and spread) over splits of the test error with and without the depth term."""
    test = table[table["part"] == "test"]
    return test.groupby("model").agg(
        test_mse_log_loss=("mse_log_loss", "mean"), sd_over_splits=("mse_log_loss", "std"),
        test_rel_mae=("rel_mae", "mean"), alpha_l_mean=("alpha_l", "mean"),
        alpha_l_sd=("alpha_l", "std"))


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


# --- chapter 01's results through the results cache ------------------------------------------------
def _encode(value: Any) -> dict[str, Any]:
    if isinstance(value, Fit):
        return {"fit": value.to_dict()}
    if isinstance(value, pd.DataFrame):
        return {"frame": {"columns": [str(c) for c in value.columns],
                          "index": value.index.tolist(), "index_name": value.index.name,
                          "data": value.to_numpy(dtype=object).tolist()}}
    raise TypeError(f"cannot store {type(value).__name__}: a Fit or a DataFrame")


def _decode(stored_: dict[str, Any]) -> Any:
    if "fit" in stored_:
        return Fit.from_dict(stored_["fit"])
    f = stored_["frame"]
    frame = pd.DataFrame(f["data"], columns=f["columns"], index=f["index"]).infer_objects()
    frame.index.name = f["index_name"]
    return frame


def stored(profile: str, name: str, compute: Callable[[], Any], **key: Any) -> Any:
    """`compute()` (a fit or a table of chapter 01) cached under `name` and the settings in
    `key`, with the Chinchilla CSV's hash: a re-execution reads the stored numbers, so the page is
    the same on every machine (float32 Adam over 50,000 steps is not bit-reproducible across
    CPUs). The value is always the stored round trip, computed or read."""
    from layerlab import results

    value = results.Cache(profile).cached("depth_scaling", {"name": name, **key},
                                          lambda: _encode(compute()))
    return _decode(value)
