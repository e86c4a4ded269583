"""The solvers of chapter 01's fits: full-batch Adam (the authors' recipe) and Levenberg–Marquardt
to convergence, both batched (B fits at once, each with its own weight per point), and the
random starts around the paper's.
"""

from __future__ import annotations

import numpy as np

from layerlab.depth.scaling.law import (
    ALL_FREE,
    PAPER_LR,
    PAPER_START,
    PAPER_STEPS,
    Design,
    _log_residual_and_jacobian,
    objective,
)


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
